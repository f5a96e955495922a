"""The rules over a goal's calls as integers (``scope_envs.games.tau2.goal_rows``), which the scalar tau2 game and
its batch both play: the agent's candidates and whether the user's goal is met, on goals written by hand."""

import numpy as np
import pytest

from scope_envs.games.tau2 import goal_rows
from scope_envs.games.tau2.dialogue_acts import IDENTITY_SLOTS
from scope_envs.games.tau2.goals import Call, Goal

S = len(IDENTITY_SLOTS)


def goal_row():
    """One goal: lookups 0 and 1 (grounded by tokens 0 and 1), identity reads (slot 0 told right: 2, mistyped: 3;
    slot 1 right: 4), record read 5, requests 6 (token 2) and 7, the decoy 8 (token 3), phone actions 9, 9, 10."""
    ids = np.full((1, S, 3), -1, np.int64)
    ids[0, 0, 1:], ids[0, 1, 1] = (2, 3), 4
    need = np.zeros((1, 11), np.uint64)
    need[0, [0, 1, 6, 8]] = [1, 2, 4, 8]
    return dict(lookups=np.array([[0, 1]]), identity_reads=ids, records=np.array([[5]]),
                requests=np.array([[6, 7]]), decoy=np.array([8]), phones=np.array([[9, 9, 10]]), need=need)


def state(**kw):
    s = dict(called=0, revealed=0, told={}, details_given=False, stated=False, decoy_open=False)
    s.update(kw)
    told = np.zeros((1, S), np.int64)
    order = np.full((1, S), -1, np.int64)
    for j, (slot, how) in enumerate(s.pop("told").items()):
        told[0, slot], order[0, j] = how, slot
    one = lambda v, dtype=bool: np.array([v], dtype)  # noqa: E731
    return dict(called=one(s["called"], np.uint64), revealed=one(s["revealed"], np.uint64), told=told,
                told_order=order, details_given=one(s["details_given"]), stated=one(s["stated"]),
                decoy_open=one(s["decoy_open"]))


def cands(k=(5, 3, 3), **kw):
    reads, writes, phones = goal_rows.candidates(**goal_row(), **state(**kw), k_read=k[0], k_write=k[1],
                                                 k_phone=k[2])
    return [[u for u in row[0].tolist() if u >= 0] for row in (reads, writes, phones)]


def test_a_lookup_is_a_candidate_once_grounded_and_until_made():
    assert cands() == [[], [], []]
    assert cands(revealed=0b01)[0] == [0]
    assert cands(revealed=0b11)[0] == [0, 1]
    assert cands(revealed=0b11, called=0b01)[0] == [1]


def test_identity_reads_follow_the_order_told_and_how_each_was_told():
    assert cands(told={1: 1, 0: 2})[0] == [4, 3]
    assert cands(told={0: 1, 1: 1})[0] == [2, 4]
    assert cands(told={0: 1, 1: 1}, details_given=True)[0] == [2, 4, 5]
    assert cands(revealed=0b11, told={0: 1, 1: 1}, details_given=True, k=(3, 3, 3))[0] == [0, 1, 2]


def test_writes_need_the_request_stated_and_grounded_the_open_decoy_first():
    assert cands(revealed=0b100)[1] == []
    assert cands(stated=True)[1] == [7]
    assert cands(stated=True, revealed=0b100)[1] == [6, 7]
    assert cands(stated=True, revealed=0b1100, decoy_open=True)[1] == [8, 6, 7]
    assert cands(stated=True, revealed=0b1100, decoy_open=True, k=(5, 2, 3))[1] == [8, 6]
    assert cands(stated=True, revealed=0b1100, decoy_open=True, called=1 << 6)[1] == [8, 7]


def test_phone_actions_once_stated_each_once():
    assert cands()[2] == []
    assert cands(stated=True)[2] == [9, 10]
    assert cands(stated=True, called=1 << 9)[2] == [10]


def test_rows_are_independent():
    a, b = state(revealed=0b11, stated=True), state(told={1: 1}, details_given=True, called=0b10)
    both = {k: np.concatenate([a[k], b[k]]) for k in a}
    g = {k: np.concatenate([v, v]) for k, v in goal_row().items()}
    together = goal_rows.candidates(**g, **both, k_read=5, k_write=3, k_phone=3)
    for r, alone in enumerate((a, b)):
        one = goal_rows.candidates(**goal_row(), **alone, k_read=5, k_write=3, k_phone=3)
        assert all((x[r] == y[0]).all() for x, y in zip(together, one))


def test_satisfied_and_requests_pending():
    def sat(needs_none=False, requests=0b1, phones=0b10, questions=False, forbidden=False, called=0, stated=False,
            denied=0, answered=False):
        return bool(goal_rows.satisfied(np.bool_(needs_none), np.uint64(requests), np.uint64(phones),
                                        np.bool_(questions), np.bool_(forbidden), called=np.uint64(called),
                                        stated=np.bool_(stated), denied=denied, answered=np.bool_(answered)))

    assert not sat(called=0b01) and sat(called=0b11)
    assert not sat(called=0b11, questions=True) and sat(called=0b11, questions=True, answered=True)
    assert not sat(needs_none=True) and sat(needs_none=True, stated=True)
    assert not sat(needs_none=True, stated=True, forbidden=True) and sat(needs_none=True, stated=True,
                                                                          forbidden=True, denied=1)
    pending = goal_rows.requests_pending(np.array([0b11, 0b11], np.uint64), np.array([0b01, 0b111], np.uint64))
    assert pending.tolist() == [True, False]


def test_goal_calls_index_a_goal_and_refuse_one_too_large():
    calls = [Call("get_order", {"order_id": f"#w{i}"}, "assistant", "read") for i in range(3)]
    calls += [Call("cancel_order", {"order_id": "#w0"}, "assistant", "write")]
    goal = Goal("retail", "t0", calls, identity={}, details={})
    gc = goal_rows.GoalCalls(goal, {"get_order", "cancel_order"})
    assert [gc.calls[u].name for u in gc.lookups] == ["get_order"] * 3 and gc.requests == [3]
    assert gc.tokens == ["#w0", "#w1", "#w2"] and gc.need[3] == gc.need[0] == 1
    assert gc.called({calls[1].key(), "not a goal call"}) == 1 << gc.index[calls[1].key()]
    assert gc.tokens_in(" order #w2 and #w0") == 0b101
    tools = {"get_order", "cancel_order"}
    assert goal_rows.goal_calls(goal, tools) is goal_rows.goal_calls(goal, tools)  # kept on the goal
    big = Goal("retail", "big", [Call("get_order", {"order_id": f"#w{i}"}, "assistant", "read")
                                 for i in range(goal_rows.MAX_CALLS + 1)], identity={}, details={})
    with pytest.raises(ValueError, match="'big' is too large"):
        goal_rows.GoalCalls(big, {"get_order"})


def test_the_told_slots_as_rows_keep_their_order_and_how():
    items = (("phone", "ok"), ("user_id", "slip"))
    told, order = goal_rows.told_rows(items)
    assert told.tolist() == [2, 0, 0, 1] and order.tolist() == [3, 0, -1, -1]
    assert goal_rows.told_items(told, order) == items
    assert goal_rows.told_items(*goal_rows.told_rows(())) == ()
