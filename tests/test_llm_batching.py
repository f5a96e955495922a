"""BatchingBackend (agents/llm/batching.py): the users' chats of one round in one call, and an interrupted round
(Ctrl-C, SIGTERM) that leaves no worker waiting."""

import threading

import pytest

from scope_envs.agents.llm.backends import Backend, Generation
from scope_envs.agents.llm.batching import BatchingBackend


class Counting(Backend):
    """Replies "n<k>" to the k-th conversation of a call; ``interrupt_on``: that call raises KeyboardInterrupt, as
    a SIGTERM delivered inside a generation does (scope-envs turns SIGTERM into one)."""

    def __init__(self, interrupt_on=None):
        self.calls, self.interrupt_on = 0, interrupt_on

    def chat(self, conversations, *, max_new_tokens=256, temperature=1.0, seed=None):
        self.calls += 1
        if self.calls == self.interrupt_on:
            raise KeyboardInterrupt
        return [Generation(f"n{k}") for k in range(len(conversations))]


def ask(batching, turns):
    def task():
        return [batching.chat([[{"role": "user", "content": "hi"}]])[0].text for _ in range(turns)]
    return task


def test_the_first_chats_of_a_round_are_one_call_in_task_order():
    batching = BatchingBackend(Counting())
    replies = batching.run([ask(batching, 2) for _ in range(4)])
    assert [r[0] for r in replies] == ["n0", "n1", "n2", "n3"] and batching.batch_sizes[0] == 4
    assert sum(batching.batch_sizes) == 8


def test_every_round_is_one_call_over_every_worker_in_task_order():
    """A released worker counted as running only once it woke: one that woke first and chatted again was generated
    alone, before the others had woken, so the later calls of a round held fewer conversations (and which ones
    depended on the threads' timing)."""
    for _ in range(20):
        batching = BatchingBackend(Counting())
        replies = batching.run([ask(batching, 3) for _ in range(8)])
        assert batching.batch_sizes == [8, 8, 8]
        assert replies == [[f"n{i}"] * 3 for i in range(8)]


@pytest.mark.parametrize("interrupt_on", [1, 2])
def test_an_interrupted_round_releases_every_worker(interrupt_on):
    """The interruption propagated out of the round while the parked workers waited for a reply that never came,
    so leaving the thread pool waited forever: train-llm hung on SIGTERM until SIGKILL."""
    batching = BatchingBackend(Counting(interrupt_on))
    raised = []

    def round_():
        try:
            batching.run([ask(batching, 3) for _ in range(5)])
        except BaseException as e:  # noqa: BLE001
            raised.append(e)

    before = threading.active_count()
    runner = threading.Thread(target=round_, daemon=True)
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "run() did not return after the interruption"
    assert len(raised) == 1 and isinstance(raised[0], KeyboardInterrupt)
    assert threading.active_count() == before  # every worker ended
    assert batching.run([ask(batching, 1)]) == [["n0"]]  # the next round is served again
