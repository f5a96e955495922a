"""The people split's parts (``personas.params(part)``): each p4g model reads its own part's fit, and nothing the
training side runs reaches the held-out part (issue 49: a held-out person's data is unreachable from training)."""

import copy

import numpy as np
import pytest

import scope_envs
from scope_envs.agents.p4g import EmpiricalPersuader
from scope_envs.bench.methods import method_setup
from scope_envs.games.p4g import batched, human_proxy, personas, reference
from scope_envs.train.act_ppo import PPOConfig, PPOTrainer


class HeldOutRead(AssertionError):
    pass


class Poisoned(dict):
    """A part's parameters that raise on any read: the held-out part, where training must not look."""

    def _read(self, *args, **kwargs):
        raise HeldOutRead("the held-out part of the people split was read")

    __getitem__ = get = __contains__ = __iter__ = keys = items = values = _read


@pytest.fixture
def heldout_poisoned():
    shipped = personas.params("heldout")
    personas.set_params(Poisoned(), "heldout")
    try:
        yield
    finally:
        personas.set_params(shipped, "heldout")


def train(method: str, batched: bool = True) -> PPOTrainer:
    env_id, kwargs, overrides = method_setup("p4g", method)
    trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=0, total_steps=400, batched=batched,
                                   **{**overrides, "num_envs": 8, "episodes_per_iter": 8, "bc_episodes": 10,
                                      "bc_steps": 2}))
    trainer.train()
    return trainer


TRAINED = ["frozen", "uncollapsed", "grounded", "vs", "rotation", "cotrain", "population", "selfplay",
           "cotrain-realism", "population-realism"]


@pytest.mark.parametrize("method", TRAINED)
def test_training_reads_nothing_of_the_held_out_part(method, heldout_poisoned):
    """Every trained row's training (its behaviour clone, rollouts on the batched and the loop engine, its users'
    updates) runs with the held-out part's parameters made unreadable."""
    trainer = train(method)
    assert trainer.agent_steps >= 400
    train(method, batched=False)


@pytest.mark.parametrize("env_id", ["p4g-frozen", "p4g-vs", "p4g-grounded", "p4g-rotation"])
def test_the_training_envs_read_nothing_of_the_held_out_part(env_id, heldout_poisoned):
    """The scalar env on both surfaces, and a vec env dealing train cards, with the held-out part unreadable."""
    for surface in ("act", "text"):
        env = scope_envs.make(env_id, surface=surface)
        obs, _ = env.reset(seed=1)
        for _ in range(40):
            if not env.agents:
                break
            if surface == "act":
                acts = {a: int(np.flatnonzero(obs[a]["action_mask"])[-1]) for a in env.agents}
            else:
                acts = {a: "Would you donate to Save the Children?" for a in env.agents}
            obs, *_ = env.step(acts)
    vec = scope_envs.make_vec(env_id, num_envs=4)
    obs, _ = vec.reset(seed=0)
    for _ in range(30):
        obs, *_ = vec.step({"agent_0": np.argmax(obs["agent_0"]["action_mask"], 1)})


def test_the_poison_finds_a_held_out_read(heldout_poisoned):
    """The check can fail: the ceiling trains against the held-out proxy by design, and so does the held-out
    regime's env."""
    with pytest.raises(HeldOutRead):
        train("oracle")
    with pytest.raises(HeldOutRead):
        vec = scope_envs.make_vec("p4g-heldout", num_envs=2)
        vec.reset(seed=0)
        for _ in range(20):
            vec.step({"agent_0": np.full(2, 1)})


def shifted(part: str, key: str = "propensity", by: float = 1.0) -> dict:
    new = copy.deepcopy(personas.params(part))
    new[key]["intercept"] += by
    return new


@pytest.mark.parametrize("part", personas.PARTS)
def test_each_model_reads_its_own_part(part):
    """A change to one part's fit moves that side's models only: the held-out proxy (scalar and batched terms) and
    held-out cards for "heldout"; the reference model, its batched terms and train cards for "train"."""
    card_before = personas.persona("heldout", 5)
    before = {"proxy": human_proxy.neutral(), "reference": reference.neutral(),
              "row": batched.card_terms(card_before).copy(), "train card": personas.persona("train", 5).traits,
              "heldout card": personas.persona("heldout", 5).traits}
    shipped = personas.params(part)
    new = shifted(part)
    new["persona_model"] = copy.deepcopy(shipped["persona_model"])
    new["persona_model"]["mean"] = [m + 0.5 for m in shipped["persona_model"]["mean"]]
    personas.set_params(new, part)
    try:
        moved = part == "heldout"
        assert (human_proxy.neutral() == pytest.approx(before["proxy"] + 1.0)) is moved
        assert (reference.neutral() == pytest.approx(before["reference"] + 1.0)) is not moved
        terms = batched.card_terms(copy.copy(card_before))  # the same card, its terms computed afresh
        assert (terms["proxy"] != before["row"]["proxy"]) is moved
        assert (terms["reference"] != before["row"]["reference"]) is not moved
        assert (personas.persona("heldout", 5).traits != before["heldout card"]) is moved
        assert (personas.persona("train", 5).traits != before["train card"]) is not moved
    finally:
        personas.set_params(shipped, part)
    assert human_proxy.neutral() == before["proxy"] and reference.neutral() == before["reference"]


def test_a_part_must_be_named():
    with pytest.raises(ValueError, match="part must be one of"):
        personas.params("everyone")
    with pytest.raises(ValueError, match="part must be one of"):
        personas.set_params({}, "test")
    with pytest.raises(ValueError, match="part must be one of"):
        EmpiricalPersuader("all")
    # each part reads its own fit (its people's numbers)
    assert personas.params("train")["real"]["n"] != personas.params("heldout")["real"]["n"]
