"""The batched engines: Persuasion for Good (``P4GVecEnv``), CooperBench (``CooperBenchVecEnv``) and tau^2-bench's
act game (``Tau2VecEnv``), each game's rules as arrays over the slots (tau2's over each task compiled once,
``scope_envs.games.tau2.compiled``)."""

from __future__ import annotations

import numpy as np

from scope_envs.core.game import Drawn
from scope_envs.games.cooperbench.game import CooperBenchGame
from scope_envs.games.p4g.batched import P4GBatch, card_row, split_cards
from scope_envs.games.p4g.game import P4GGame
from scope_envs.games.tau2.act_game import Tau2ActGame
from scope_envs.games.tau2.behaviour import TRAITS as CARD_TRAITS
from scope_envs.core.env import LEARNABLE
from scope_envs.vec.batched import BatchedVecEnv, power

# the batched models that play the game's reference (their cards' traits moved up by the cooperation, ``kind[2]``)
REFERENCE_KINDS = ("reference", "vs_reference")


class P4GVecEnv(BatchedVecEnv):
    """Persuasion for Good batched (``scope_envs.games.p4g.batched``)."""

    game_type = P4GGame

    def make_batch(self, game):
        return P4GBatch(self.num_envs, game.max_turns, game.user_reward)

    def deal(self, i, env, sim, persona, rng):
        if env.game.persona is not persona:  # p4g's reset draws nothing: the scalar game keeps the card in step
            env.game.reset(persona, rng)
        return card_row(persona, self.batch.track_proxy)  # (the held-out terms only where a proxy may play)

    def deal_many(self, idx, split, persona, rng):
        if persona is not None:
            self.batch.reset(idx, card_row(persona, self.batch.track_proxy))
            self.persona[idx], self.persona_id[idx] = persona, persona.id
            return
        table = split_cards(split, self.batch.track_proxy)
        # ``personas.sample``, all at once
        pick = rng.integers(len(table["ids"]), size=len(idx))
        self.batch.reset(idx, table["rows"][pick])
        self.persona[idx], self.persona_id[idx] = table["personas"][pick], table["ids"][pick]

    def sync_scalar(self, i):
        super().sync_scalar(i)
        game = self._u[i].game
        if game.persona is not self.persona[i]:
            game.reset(self.persona[i], self.rng_of(i))

    def simulators(self):
        from scope_envs.agents.p4g import HumanProxyPersuadee, ReferencePersuadee

        return ReferencePersuadee, HumanProxyPersuadee

    def proxy_is_batched(self, proxy) -> bool:
        """``P4GBatch.human_proxy_reply`` computes the default assumptions only."""
        from scope_envs.games.p4g import human_proxy

        return vars(proxy) == {"assumptions": human_proxy.DEFAULT}

    def reference(self, kind, idx, legal):
        return self.batch.reference_reply(idx, legal, kind[2])

    def proxy_reply(self, idx, legal):
        return self.batch.human_proxy_reply(idx, legal)

    def reply_weights(self, kind, idx, legal):
        if kind[0] == "reference":
            return self.batch.reference_weights(idx, legal, kind[2], kind[1])
        return self.batch.human_proxy_weights(idx, legal)

    def settle(self, ended):
        """The gift a stated amount becomes (``P4GGame.apply``): the simulator's follow-through."""
        b = self.batch
        actual = b.intended(ended)
        follows = self.follows[ended]
        for j in (follows.nonzero()[0].tolist() if np.count_nonzero(follows) else ()):
            i = int(ended[j])
            actual[j] = float(self.seated(i).follow_through(float(actual[j]), self.rng_of(i)))
        b.settle(ended, actual)

    def public_private(self, i, role):
        b = self.batch
        stated = float(b.intended(np.array([i]))[0]) if b.stated[i] >= 0 else None
        return {"stated": stated, "final": bool(b.final[i]), "persuader_turns": int(b.turns[i])}, {}


class CooperBenchVecEnv(BatchedVecEnv):
    """CooperBench batched (``scope_envs.games.cooperbench.batched``)."""

    game_type = CooperBenchGame
    replies_by_row = True  # ``styles.policy`` and ``power``: elementwise

    def make_batch(self, game):
        from scope_envs.games.cooperbench.batched import CooperBenchBatch

        self.traits = np.zeros((self.num_envs, 5))
        self.task_id = np.full(self.num_envs, None, object)
        self.task_index = np.zeros(self.num_envs, np.int64)  # (into its split's tasks: ``sync_scalar``)
        self._own_styles: dict = {}
        batch = CooperBenchBatch(self.num_envs, game.max_turns, game.user_reward)
        self.coins = {k: np.zeros((self.num_envs, *np.shape(v))) for k, v in batch.coins("", "").items()}
        return batch

    def deal(self, i, env, sim, persona, rng):
        from scope_envs.games.cooperbench.styles import TRAITS

        game = env.game
        game.reset(persona, rng)  # draws the task from the slot's generator
        self.task_id[i] = game.task.id
        code = -1 if sim is None else self._kind(sim, env.user_sampler)  # the kind as the engine keeps it
        kind = None if code < 0 else self._kinds[code]
        if kind is not None and kind[0] in REFERENCE_KINDS:
            c = kind[2]  # ``agents.cooperbench._cooperative``: every trait moved up by the cooperation
            self.traits[i] = [min(1.0, persona.traits[t] + c) if c else persona.traits[t] for t in TRAITS]
        elif kind is not None and kind[0] == "human_proxy":
            self.traits[i] = [persona.traits[t] for t in TRAITS]
            for k, v in self.batch.coins(persona.id, game.task.id).items():
                self.coins[k][i] = v
        return {"needs": game.task.needs, "talk": persona.traits.get("talk", 0.5)}

    def deal_many(self, idx, split, persona, rng):
        from scope_envs.games.cooperbench.batched import (
            split_styles,
            split_tasks,
            style_table,
        )
        from scope_envs.games.cooperbench.game import task_split

        if persona is None:
            styles = split_styles(split)
            # ``styles.sample``, all at once
            drawn = rng.integers(len(styles["ids"]), size=len(idx))
        else:
            if id(persona) not in self._own_styles:  # ``_own`` keeps the card, hence its id
                self._own_styles[id(persona)] = style_table((persona,))
            styles, drawn = self._own_styles[id(persona)], np.zeros(len(idx), np.int64)
            split = task_split(persona)
        tasks = split_tasks(split)
        # ``CooperBenchGame.reset``'s task
        task = rng.integers(len(tasks["ids"]), size=len(idx))
        self.batch.reset_needs(idx, tasks["needs"][task], styles["talk"][drawn])
        self.persona[idx], self.persona_id[idx] = styles["personas"][drawn], styles["ids"][drawn]
        self.task_id[idx], self.task_index[idx] = tasks["ids"][task], task
        kinds = self.kind[idx]
        for code in np.unique(kinds).tolist():
            if code < 0:  # a learnable user: no policy to parameterize
                continue
            sel = kinds == code
            kind, traits = self._kinds[code], styles["traits"][drawn[sel]]
            if kind[0] in REFERENCE_KINDS:
                c = kind[2]
                traits = np.minimum(1.0, traits + c) if c else traits
            elif kind[0] == "human_proxy":
                for j, (i, p, t) in enumerate(zip(idx[sel].tolist(), drawn[sel].tolist(), task[sel].tolist())):
                    for k, v in self.batch.coins(styles["ids"][p], tasks["ids"][t]).items():
                        self.coins[k][i] = v
            self.traits[idx[sel]] = traits

    def sync_scalar(self, i):
        super().sync_scalar(i)
        game = self._u[i].game
        if game.persona is not self.persona[i] or game.task.id != self.task_id[i]:
            game.reset(self.persona[i], Drawn(int(self.task_index[i])))

    def simulators(self):
        from scope_envs.agents.cooperbench import HumanProxyPartner, ReferencePartner

        return ReferencePartner, HumanProxyPartner

    def reply_weights(self, kind, idx, legal):
        if kind[0] == "reference":  # ``sharpen`` unnormalized (``decide`` is zero off the legal acts)
            return power(self.reference(kind, idx, legal), kind[1])
        return self.reply(kind, idx, legal)

    def reference(self, kind, idx, legal):
        return self.batch.decide(idx, legal, self.traits[idx], None)

    def proxy_reply(self, idx, legal):
        return self.batch.decide(idx, legal, self.traits[idx], {k: v[idx] for k, v in self.coins.items()})

    def public_private(self, i, role):
        return self.batch.public(i), self.batch.private(i, role, self.task_id[i])


def slot_traits(sim, persona) -> list:
    """The ``TRAITS`` a built-in user plays in a slot: its style card's, else the dealt card's, moved toward the
    modal card by its cooperation (``ReferenceUser.reference``); the held-out proxy plays the dealt card."""
    return rule_traits(*traits_rule(sim), persona)


def rule_traits(style, cooperation: float, persona) -> list:
    """``slot_traits`` of a user whose ``traits_rule`` is (``style``, ``cooperation``)."""
    from scope_envs.agents.tau2 import cooperative_traits  # players sit above games: here, not in games/
    from scope_envs.games.tau2.user_state import TRAITS

    traits = style.traits if style is not None else persona.traits
    if cooperation:
        traits = cooperative_traits(traits, cooperation)
    return [traits[k] for k in TRAITS] if traits else [0.0] * len(TRAITS)


def traits_rule(sim) -> tuple:
    """What ``slot_traits`` makes of ``sim``: (its style card, None for the dealt card's; its cooperation)."""
    from scope_envs.agents.tau2 import ReferenceUser

    return (sim.style, sim.cooperation) if isinstance(sim, ReferenceUser) else (None, 0.0)


TRAITS_KEPT = 50_000  # (style, cooperation, card) -> a reply model's traits
RULES_KEPT = 1_000  # the traits tables, one per (style, cooperation) and split


class Tau2VecEnv(BatchedVecEnv):
    """tau^2-bench's act game batched (``scope_envs.games.tau2.batched``): the rules as arrays over the slots, the
    world's answers (tool calls, policy checks, the evaluation) asked once per task and state and kept."""

    game_type = Tau2ActGame
    replies_by_row = True  # the user state's rules and ``power``: elementwise

    @classmethod
    def supports(cls, envs) -> bool:
        # an NL judge reads the whole transcript: such games run on the scalar envs
        return super().supports(envs) and all(e.unwrapped.game.judge is None for e in envs)

    def __init__(self, envs):
        super().__init__(envs)
        self.batch.seat = self.seat  # the user's features are built only where a learnable user sits
        first = self._u[0].game
        # every slot's scenario is dealt at once where the slots' games deal from the same tasks
        self._one_game = all(u.game.domains == first.domains and
                             all(u.game.data[d] is first.data[d] for d in first.domains) for u in self._u)
        self._traits: dict = {}
        # each (slot, member)'s traits rule (into ``_rules``; -1: worked out slot by slot), the
        # rules' traits per card of each split, the member whose simulator is each slot's ``user_player`` (-1:
        # not known), and the task rows of the tasks dealt (per split, a row per domain and task)
        n = self.num_envs
        self._rule = np.full((n, 1), -1, np.int64)
        self._rules: list[tuple] = []
        self._rule_tables: dict[tuple, np.ndarray] = {}
        self._player = np.full(n, -1, np.int64)
        self._dealt: dict[str, np.ndarray] = {}

    def make_batch(self, game):
        from scope_envs.games.tau2.batched import Tau2Batch

        return Tau2Batch([e.unwrapped.game for e in self.envs])

    def deal(self, i, env, sim, persona, rng):
        # the episode seed, the one draw of the scalar game's ``reset``, from the slot's generator
        self.batch.begin(i, persona, int(rng.integers(2**31)))
        self._player[i] = -1  # (its ``user_player`` was set by the caller)
        self.batch.traits[i] = self._slot_traits(sim, persona, stable=False)
        return None

    def _slot_traits(self, sim, card, stable: bool) -> list:
        """``slot_traits``, kept per style, cooperation and card: few of each. A card is named by its object, so
        only a ``stable`` one (the lru-cached ``behaviour.card``, a simulator's own) is kept; a style card makes
        the dealt one irrelevant."""
        style, cooperation = traits_rule(sim)
        if style is None and not stable:
            return slot_traits(sim, card)
        key = (id(style), cooperation, id(card) if style is None else None)
        hit = self._traits.get(key)
        if hit is None or hit[0] is not style or (style is None and hit[1] is not card):
            if len(self._traits) > TRAITS_KEPT:  # (members replaced over a long run bring new styles)
                self._traits.clear()
            hit = self._traits[key] = (style, card, slot_traits(sim, card))
        return hit[2]

    def deal_many(self, idx, split, persona, rng):
        from scope_envs.games.tau2.batched import card_rows, card_table
        from scope_envs.games.tau2.behaviour import card, card_split

        k, side = len(idx), card_split(split)
        cards = rows = None
        game = self._u[int(idx[0])].game
        if persona is not None:  # a simulator's own card: every slot plays it
            personas, ids = [persona] * k, [persona.id] * k
        elif self._one_game:  # ``sample_persona``'s distribution, all at once
            domain, task, cards = game.sample_scenarios(rng, split, k)
        else:
            personas = [self._u[i].game.sample_persona(rng, split) for i in idx.tolist()]
            ids = [p.id for p in personas]
        # each episode's seed, the one draw of the scalar game's ``reset``
        seeds = rng.integers(2**31, size=k)
        if cards is not None:  # the scenarios by indices: built only where read (``Tau2Batch.game``)
            personas, ids = np.full(k, None, object), game.scenario_ids(split, domain, task, cards)
            rows = self._task_rows(game, idx, split, domain, task, cards, seeds)
        members = self.member[idx]
        self._seat_players(idx, members)
        b = self.batch
        if cards is not None and (rule := self._rule[idx, members]).min() >= 0:
            for code in np.unique(rule).tolist():  # (usually one)
                mine = rule == code
                b.traits[idx[mine]] = self._rule_table(code, side)[cards[mine]]
        else:
            envs, stable = self._u, persona is not None or cards is not None
            b.traits[idx] = [self._slot_traits(envs[i].game.user_player,
                                               personas[j] if cards is None else card(side, int(cards[j])), stable)
                             for j, i in enumerate(idx.tolist())]
        if cards is None:
            card_rows_, disclose = card_rows(personas)
        else:
            card_rows_ = card_table(side)[cards]
            disclose = card_rows_[:, CARD_TRAITS.index("disclose")]
        b.start(idx, personas, seeds.tolist(), card_rows_, disclose, rows)
        if cards is not None:
            b.drawn[idx], b.drawn_split[idx] = np.stack([domain, task, cards], 1), split
        self.persona[idx] = personas  # (None where built only when read: ``batch.game(i).persona``)
        self.persona_id[idx] = ids

    def _task_rows(self, game, idx, split, domain, task, cards, seeds) -> np.ndarray:
        """The task rows (``Tasks``) of the tasks ``sample_scenarios`` drew for slots ``idx``, kept per split; a
        task not compiled yet is compiled on the first slot dealt it, with its episode seed, as slot by slot."""
        table = self._dealt.get(split)
        if table is None:
            table = self._dealt[split] = np.full(
                (len(game.domains), max(1, *(len(game._tasks(d, split)) for d in game.domains))), -1, np.int64)
        rows = table[domain, task]
        if rows.min() < 0:
            games = self.batch.games
            for j in np.flatnonzero(rows < 0).tolist():
                d, t = int(domain[j]), int(task[j])
                if table[d, t] < 0:
                    p = game.scenario_at(split, d, t, int(cards[j]))
                    table[d, t] = self.batch.tasks.row_for(games[int(idx[j])], p, int(seeds[j]))
            rows = table[domain, task]
        return rows

    def _seat_players(self, idx, members) -> None:
        """Each slot's scalar game gets its member as ``user_player``, where it has another (as ``_deal_one``)."""
        stale = self._player[idx] != members
        if stale.any():
            for i, m in zip(idx[stale].tolist(), members[stale].tolist()):
                sim = self._u[i].members[m]
                self._u[i].game.user_player = None if sim == LEARNABLE else sim
            self._player[idx[stale]] = members[stale]

    def _rosters(self, idx):
        """``BatchedVecEnv._rosters``, and each (slot, member)'s traits rule (``traits_rule``) where the members
        changed."""
        changed = super()._rosters(idx)
        for i in changed:
            members = self._u[i].members
            if len(members) > self._rule.shape[1]:
                self._rule = np.pad(self._rule, ((0, 0), (0, len(members) - self._rule.shape[1])),
                                    constant_values=-1)
            self._rule[i, : len(members)] = [self._rule_code(None if m == LEARNABLE else m) for m in members]
            self._player[i] = -1
        return changed

    def _rule_code(self, sim) -> int:
        """The index of ``sim``'s traits rule in ``_rules`` (the rule holds its style card, hence its id), or -1
        once ``RULES_KEPT`` are kept."""
        style, cooperation = traits_rule(sim)
        for j, (s, c) in enumerate(self._rules):
            if s is style and c == cooperation:
                return j
        if len(self._rules) >= RULES_KEPT:
            return -1
        self._rules.append((style, cooperation))
        return len(self._rules) - 1

    def _rule_table(self, code: int, side: str) -> np.ndarray:
        """The traits of rule ``code`` on each behaviour card of ``side`` (``rule_traits``), a row per card."""
        from scope_envs.games.tau2.behaviour import SPLIT_SIZES, card

        table = self._rule_tables.get((code, side))
        if table is None:
            style, cooperation = self._rules[code]
            table = self._rule_tables[(code, side)] = np.array(
                [rule_traits(style, cooperation, card(side, c)) for c in range(SPLIT_SIZES[side])], float)
        return table

    def simulators(self):
        from scope_envs.agents.tau2 import HumanProxyUser, ReferenceUser

        return ReferenceUser, HumanProxyUser

    def proxy_is_batched(self, proxy) -> bool:
        """``Tau2Batch.human_proxy_reply`` computes the default assumptions only."""
        from scope_envs.games.tau2 import human_proxy

        return vars(proxy) == {"assumptions": human_proxy.DEFAULT}

    def reference(self, kind, idx, legal):
        return self.batch.reference_reply(idx, legal)

    def proxy_reply(self, idx, legal):
        return self.batch.human_proxy_reply(idx, legal)

    def reply_weights(self, kind, idx, legal):
        if kind[0] == "reference":  # ``sharpen`` unnormalized (the reference is zero off the legal acts)
            return power(self.reference(kind, idx, legal), kind[1])
        return self.reply(kind, idx, legal)

    def public_private(self, i, role):
        game = self.batch.game(i)
        return game.info(), game.private(self.role_names[role])

    def view(self, i, role, legal, observation=False):
        """The scalar env's own view (its history carries the turns' words, tool calls and results), its game
        brought to the slot's state."""
        self.batch.game(i)
        return self._u[i].view(self.role_names[role], observation=observation)

    def _final(self, ended):
        final = super()._final(ended)
        # the user's turns of a task's opening (a conversation it starts in) come first
        b = self.batch
        for i in ended[b.tasks.user_opens[b.task[ended]]].tolist():
            final["user_acts"][i] = b.user_acts(i)
        return final

    def step(self, actions):
        """``BatchedVecEnv.step``, with tau2's truncations (``max_steps``, ``max_tool_errors``): a game cut short by
        its own limits truncates rather than terminates, as in the scalar env."""
        obs, rewards, terms, truncs, infos = super().step(actions)
        ended = infos["_final_info"]
        if ended.any():
            cut = ended & self.batch.cut
            if cut.any():
                for a in terms:
                    truncs[a] |= terms[a] & cut
                    terms[a] &= ~cut
        return obs, rewards, terms, truncs, infos


BATCHED = (P4GVecEnv, CooperBenchVecEnv, Tau2VecEnv)
