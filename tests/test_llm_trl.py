"""The TRL adapter: our text surface as a GRPOTrainer ``environment_factory``."""

from __future__ import annotations

import pytest
from llm_fixtures import _one_thread, tiny_dir  # noqa: F401

from scope_envs.train.llm.trl import ScopeEnvironment, environment_factory


def test_adapter_plays_an_episode_through_its_tool():
    env = environment_factory("p4g-frozen", max_turns=2)()
    opening = env.reset(seed=3)
    assert "persuader" in opening and "send_message" in opening
    reply = env.send_message("Hello! Would you like to donate to Save the Children?")
    assert reply and "over" not in reply
    reply = env.send_message("Even a small amount helps. How much would you like to donate?")
    assert "The conversation is over" in reply and "intended=" in reply
    assert env.get_reward() == pytest.approx(float(reply.split("actual=")[1].split(",")[0]))
    assert env.send_message("hello?") == "The conversation is over."
    env.reset(seed=3)  # a new episode from the same instance (TRL pools and resets them)
    assert env.get_reward() == 0.0


def test_the_adapter_refuses_the_held_out_population():
    """TRL's factory built an env of ``p4g-heldout``, the population every policy is evaluated against."""
    with pytest.raises(ValueError, match="p4g-heldout is the held-out population every policy is evaluated against"):
        environment_factory("p4g-heldout")()


def test_adapter_reports_in_game_errors_to_the_model():
    env = ScopeEnvironment("p4g-frozen", max_turns=2)
    env.reset(seed=0)
    assert "[error] empty message" in env.send_message("   ")


def test_adapter_needs_players_for_other_live_agents():
    env = ScopeEnvironment("p4g-cotrain", max_turns=1, others={"user_0": lambda obs, info, rng: "No. [DONATE $0] Bye."})
    env.reset(seed=0)
    assert "The conversation is over" in env.send_message("Would you donate?")
    with pytest.raises(ValueError, match="user_0 is a live agent"):
        bare = ScopeEnvironment("p4g-cotrain", max_turns=1)
        bare.reset(seed=0)
        bare.send_message("Would you donate?")


def test_trl_grpo_trainer_accepts_the_adapter(tiny_dir, tmp_path):
    pytest.importorskip("trl")
    pytest.importorskip("datasets")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    tok = AutoTokenizer.from_pretrained(tiny_dir, local_files_only=True)
    tok.chat_template = qwen2_5_chat_template  # a tool-calling template TRL knows how to parse
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, local_files_only=True)
    args = GRPOConfig(output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=8, max_tool_calling_iterations=2, use_cpu=True, report_to="none",
                      save_strategy="no", logging_steps=1)
    trainer = GRPOTrainer(model=model, processing_class=tok, args=args,
                          environment_factory=environment_factory("p4g-frozen", max_turns=2))
    assert [t.__name__ for t in trainer.tools] == ["send_message"]  # only the tool; reset/get_reward are not tools
    trainer.train()
    logged = trainer.state.log_history[0]
    assert "rewards/ScopeEnvironment/mean" in logged
