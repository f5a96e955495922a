"""The tau2 act surface: ``Tau2ActGame``, both roles play dialogue acts.

The act tables are in ``dialogue_acts.py``. The agent's ``lookup:j`` / ``execute:j`` / ``instruct:j`` name the
j-th read / write / phone candidate (masked when there is none), so tool arguments are never free; ``confirm:j``
asks the user to confirm the j-th write candidate; every other act is a message, rendered in words by
``realize.py`` (the first wording, so that tau^2's COMMUNICATE check reads the agent's answers).

A write needs the customer's yes: ``execute:j`` is legal only once the user confirmed write candidate j
(``confirm:j`` answered with ``confirm``), as the domain policies require explicit confirmation before any change.
A customer who declines (``deny``) or leaves (``stop``) at the confirmation blocks the write; the agent may ask
again. This rule is the act surface's world for every user (reference, collapsed, co-trained and held-out alike);
on the text surface the agent writes its tool calls itself and nothing gates them, as upstream.

The game is a batch of one of ``batched.Tau2Batch``, which is the one definition of the act surface's rules
(what each act does to the dialogue state, the candidates, the legal acts, the features, the outcome and the
rewards). On top it keeps what the batch does not: the episode's task, goal and world (the domain database, on
which the calls the batch made run again for their words), the transcript, and the dialogue state read back from
the batch's row into the scalar game's fields (``done``, ``told``, ``stated``, ...), which the users' views
(``user_state``), the words (``realize``) and scripted agents read.
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.game import ONE, InGameError
from scope_envs.games.tau2 import realize
from scope_envs.games.tau2.batched import ROLES, Tau2Batch, card_rows
from scope_envs.games.tau2.dialogue_acts import AGENT_ACTS, USER_ACTS
from scope_envs.games.tau2.evaluate import evaluate
from scope_envs.games.tau2.game import AGENT, TRUNCATIONS, USER, Tau2Game, Tau2Turn


class Tau2ActGame(Tau2Game):
    batch: Tau2Batch | None = None  # built by the first ``reset`` (which ``Tau2Game.__init__`` makes)

    def acts(self, role):
        return AGENT_ACTS if role == AGENT else USER_ACTS

    def understand(self, role, text):
        raise InGameError("the tau2 act game reads acts, not text")

    def reset(self, persona, rng) -> None:
        super().reset(persona, rng)  # the task, its world and goal, the opening's transcript, the episode seed
        if self.batch is None:
            self.batch = Tau2Batch([self])
        # the batch's own ``Tasks`` (``TASKS`` unless this game was copied or unpickled: then the copy of it that
        # came with the batch, whose rows the batch's arrays name)
        tasks = self.batch.tasks
        row = tasks.of(self)
        self._table = tasks.tables[row]
        self.batch.start(ONE, [persona], [self.episode_seed], *card_rows([persona]), rows=[row])
        self._turn: dict = {}
        self._read_row()

    # -- the state, read from the batch's row ---------------------------------------------------------------
    def _read(self, key, compute):
        value = self._turn.get(key)
        if value is None:
            value = self._turn[key] = compute()
        return value

    def _read_row(self) -> None:
        """The scalar game's fields of the dialogue state, as the batch's row holds them."""
        vars(self).update(self.batch.fields(0, self._table.calls))

    def candidates(self):
        def compute():
            calls = self._table.calls
            return {kind: [calls[u] for u in row[0].tolist() if u >= 0]
                    for kind, row in zip(("read", "write", "phone"), self.batch.candidates())}
        return self._read("candidates", compute)

    def legal(self, role):
        index = ROLES.index(role)
        return self._read(("legal", role), lambda: self.batch.legal(index, self.batch.active())[0]).copy()

    def features(self, role):
        return self._read(("features", role), lambda: self.batch.features(ROLES.index(role))[0]).copy()

    def outcome(self):
        return {key: float(value[0]) for key, value in self.batch.outcome(ONE).items()}

    def rewards(self):
        agent, user = self.batch.rewards(ONE)
        return {AGENT: float(agent[0]), USER: float(user[0])}

    def agent_score(self) -> float:
        return float(self.batch.agent_score(ONE)[0])

    # -- a turn ----------------------------------------------------------------------------------------------
    def apply(self, role: str, act: int, text: str = "") -> None:
        self._check_turn(role)
        if not self.legal(role)[act]:
            raise ValueError(f"tau2: {role} act {self.acts(role)[act]!r} is illegal now")
        kind = AGENT_ACTS[act].partition(":")[0] if role == AGENT else USER_ACTS[act]
        says = kind not in ("lookup", "execute", "phone_action")  # (a call's words are the call)
        words = text or (self.agent_text(act) if role == AGENT and says else "")  # (a confirmation names the call)
        b = self.batch
        ended = len(b.apply(ROLES.index(role), ONE, np.array([act])))
        self._turn = {}
        if b.made[0] >= 0:  # the call the act made runs on the world too, for its words in the transcript
            call = self._table.calls[b.made[0]]
            content, error = self.world.call(call.name, call.arguments, call.requestor, call.key())
            self.history.append(Tau2Turn.of_call(role, act, call.name, call.arguments, content, error))
        self._read_row()
        if says:  # a user's words say the state after its act (the values it told)
            self.history.append(Tau2Turn(role, act, words if role == AGENT else text or self.user_text(act)))
        if ended:
            self._ended()

    def _ended(self) -> None:
        """The evaluation's report of the episode (with an NL judge, whose reward is the episode's)."""
        agent_texts = [t.text for t in self.history if t.role == AGENT and t.call is None]
        transcript = self.chat(AGENT) if self.judge is not None else None
        self.reward_info = evaluate(self.world, agent_texts, self.termination, self.judge, transcript)
        if self.judge is not None and self.termination not in TRUNCATIONS:
            self.batch.reward[0] = self.reward_info["reward"]
        self._turn = {}

    # ------------------------------------------------------------ text
    def agent_text(self, act: int, rng: np.random.Generator | None = None) -> str:
        return realize.agent(self, act, rng)

    def realize(self, role, act, rng):
        return self.agent_text(act, rng) if role == AGENT else self.user_text(act, rng)
