"""One batched generation for the LLM players of many environments stepped at once.

A frozen LLM user sits inside each env (``LLMPlayer`` in the user seat) and asks its backend for a reply
from inside ``env.step``, one conversation at a time. ``BatchingBackend`` wraps that backend so that a
trainer stepping N envs gets one ``chat`` call over all the users that speak in that round:

    batching = BatchingBackend(TransformersBackend(model, tokenizer))
    user = LLMPlayer(batching)                       # the same player in every env
    results = batching.run([lambda: env.step(a) for env, a in ...])   # steps concurrently, batches the chats

``run`` steps each callable in a worker thread; a worker that reaches ``chat`` parks its conversations;
once every worker is parked or done, the parked conversations are generated in one call (in the order
of the callables, so a run replays), and the workers go on. Outside ``run``, ``chat`` goes straight to
the backend. The batch's seed is the first parked request's (each request's seed comes from its env's
generator, so the batch is seeded by the envs as a single call would be).

``tokens`` and ``seconds`` count what it generated, for a trainer's tokens per second by role.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from scope_envs.agents.llm.backends import Backend


class BatchStopped(RuntimeError):
    """What a worker's ``chat`` raises once ``run`` was interrupted (its caller sees the interruption)."""


def _stop(requests: list[dict]) -> None:
    """Answer each request not yet done with ``BatchStopped``, so no parked worker waits for a reply."""
    for r in requests:
        if not r["done"]:
            r["error"], r["done"] = BatchStopped("the batched step was stopped"), True


class BatchingBackend(Backend):
    """A backend whose ``chat`` calls made during ``run`` are generated together (see the module)."""

    def __init__(self, backend):
        self.backend = backend
        self.tokenizer = getattr(backend, "tokenizer", None)
        self.tokens, self.seconds, self.calls, self.batch_sizes = 0, 0.0, 0, []
        self._cond = threading.Condition()
        self._local = threading.local()
        self._running = 0
        self._parked: list[dict] = []
        self._stopped = False  # run() was interrupted: a worker's chat raises instead of parking

    def chat(self, conversations, *, max_new_tokens=256, temperature=1.0, seed=None):
        slot = getattr(self._local, "slot", None)
        if slot is None:  # not inside run(): one call, as the backend would serve it
            return self._generate(conversations, max_new_tokens, temperature, seed)
        request = {"slot": slot, "conversations": conversations, "max_new_tokens": max_new_tokens,
                   "temperature": temperature, "seed": seed, "done": False, "out": None, "error": None}
        with self._cond:
            if self._stopped:
                raise BatchStopped("the batched step was stopped")
            self._parked.append(request)
            self._running -= 1
            self._cond.notify_all()
            while not request["done"]:
                self._cond.wait()
        if request["error"] is not None:
            raise request["error"]
        return request["out"]

    def _generate(self, conversations, max_new_tokens, temperature, seed):
        import time

        t0 = time.perf_counter()
        out = self.backend.chat(conversations, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
        self.seconds += time.perf_counter() - t0
        self.tokens += sum(len(g.token_ids) for g in out)
        self.calls += 1
        self.batch_sizes.append(len(conversations))
        return out

    def _flush(self):
        """Generate every parked request, one call per (max_new_tokens, temperature), in slot order."""
        parked, self._parked = sorted(self._parked, key=lambda r: r["slot"]), []
        # each released worker runs again from now, not from when it wakes: one that woke first and chatted again
        # would otherwise be generated alone, before the others had woken
        self._running += len(parked)
        by_setting: dict[tuple, list[dict]] = {}
        for r in parked:
            by_setting.setdefault((r["max_new_tokens"], r["temperature"]), []).append(r)
        try:
            for (max_new, temperature), requests in by_setting.items():
                conversations = [c for r in requests for c in r["conversations"]]
                try:
                    out = self._generate(conversations, max_new, temperature, requests[0]["seed"])
                    at = 0
                    for r in requests:
                        r["out"], at = out[at:at + len(r["conversations"])], at + len(r["conversations"])
                except Exception as e:  # the workers re-raise it where the env called chat
                    for r in requests:
                        r["error"] = e
                for r in requests:
                    r["done"] = True
        finally:  # Ctrl-C or SIGTERM inside a generation: no worker is left waiting for it
            _stop(parked)

    def run(self, tasks: list) -> list:
        """Call every task (a zero-argument callable) concurrently, batching their ``chat`` calls; returns
        their results in order (the first exception raised, if any, after all have finished)."""
        if not tasks:
            return []
        results: list = [None] * len(tasks)
        errors: list = [None] * len(tasks)
        finished = [0]

        def work(i, task):
            self._local.slot = i
            try:
                results[i] = task()
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                errors[i] = e
            finally:
                self._local.slot = None
                with self._cond:
                    self._running -= 1
                    finished[0] += 1
                    self._cond.notify_all()

        with self._cond:
            self._running, self._stopped = len(tasks), False
        # one worker per task: a parked worker holds its thread, and every task must reach its chat
        with ThreadPoolExecutor(max_workers=len(tasks)) as pool:
            for i, task in enumerate(tasks):
                pool.submit(work, i, task)
            try:
                with self._cond:
                    while finished[0] < len(tasks):
                        while self._running > 0:
                            self._cond.wait()
                        if self._parked:
                            self._flush()
                            self._cond.notify_all()
                        elif finished[0] < len(tasks):
                            self._cond.wait()
            except BaseException:  # Ctrl-C, SIGTERM: release the parked workers, or the pool's exit waits forever
                with self._cond:
                    self._stopped = True
                    parked, self._parked = self._parked, []
                    self._running += len(parked)
                    _stop(parked)
                    self._cond.notify_all()
                raise
        for e in errors:
            if e is not None:
                raise e
        return results

    def generate_ids(self, prompts, **kwargs):
        return self.backend.generate_ids(prompts, **kwargs)

    def render(self, messages, add_generation_prompt=True):
        return self.backend.render(messages, add_generation_prompt)

    def load_weights(self, model) -> None:
        self.backend.load_weights(model)
