"""What ``diagnose`` plays: probe states (the reference drives, the diagnosed simulator answers in its
shadow), on-policy episodes (the diagnosed simulator drives), and, for p4g, the real dialogues' states.

* **Probe states.** ``probe_states`` plays ``episodes`` seeded episodes in which the training-side reference
  model (sharpening 1, the dealt train card) holds the user seat and a fixed probe agent the other seat.
  At every user turn the diagnosed simulator is asked too, on the same view, with its own generator, and
  its answer is recorded but not played: every simulator is asked at the *same* states. Exact simulators
  (those that override ``Simulator.distribution``) give their distribution and ``samples`` draws from it;
  black-box ones (``act`` only, or a text player) give ``samples`` answers, a text player's messages read
  with the game's NLU on the live game (``game.understand``), an unreadable message being a counted
  in-game error. A simulator with a card of its own (``persona``: the frozen simulators' modal card) is
  shown that card, as the env would deal it. On every ``persona_every``-th state the question is asked
  again under each of ``cards`` train cards (the card swapped into the view; tau2: the behaviour card's
  traits, the task kept).
* **Episodes.** ``play`` seats a simulator in ``<game>-frozen`` (``user=``) against the same probe agent
  for seeded episodes and records each episode's user act path, its replies, its outcome and the env's
  count of the simulator's in-game errors; an exception raised by the simulator ends that episode and is
  counted.
* **Real states** (p4g, with the data). ``real_dialogues`` reads the 300 annotated dialogues: per turn
  the persuader's last labelled act and the persuadee's first labelled reply (the pairs ``fit.py``'s
  response table counts); the person's survey row is the card. ``real_states`` replays each dialogue's
  turns in a ``P4GGame`` (a stated amount is the person's actual donation's bin) and asks the simulator
  at each state; a real reply the game's rules forbid (a goodbye before any amount) ends that replay.

Probe agents (fixed, not learned): p4g ``EmpiricalPersuader`` (the real persuaders' per-turn strategy
mix); cooperbench the ``ScriptedTeammate``, tau2 the ``OracleAgent``, each replaced by a uniformly random
legal act with probability ``EXPLORE`` so that the states vary. On the text surface the agent's act is
written out by the game's realizer (tau2: ``oracle_text``).
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

import scope_envs
from scope_envs.core.game import InGameError, Persona
from scope_envs.core.simulator import Simulator, View, sample
from scope_envs.core.surfaces import MAX_MESSAGE_CHARS, check_message
from scope_envs.games import build, game_spec, load

EXPLORE = 0.25
MAX_STEPS = 400  # agent turns per episode, a guard against a game that never ends
KEPT_ERRORS = 5  # distinct error messages kept for the report


class FatalSimulatorError(RuntimeError):
    """The simulator cannot be asked at all (an endpoint that stopped answering): stop, say why in one line."""


def exact(sim: Simulator) -> bool:
    """True when ``sim`` states its distribution (overrides ``Simulator.distribution``) and plays acts."""
    return not sim.plays_text and type(sim).distribution is not Simulator.distribution


def said(error: BaseException) -> str:
    """An exception in one phrase: its type, and its message where it has one."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


@dataclass
class Errors:
    """In-game errors of the diagnosed simulator: how many, and the first few distinct messages."""

    count: int = 0
    messages: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        self.count += 1
        if message not in self.messages and len(self.messages) < KEPT_ERRORS:
            self.messages.append(message[:300])


class Asker:
    """Asks the diagnosed simulator for its answer at a view: ``(distribution or None, counts of draws)``."""

    def __init__(self, sim: Simulator, n_acts: int, samples: int, rng: np.random.Generator, sampled: bool = False):
        self.sim, self.n_acts, self.samples, self.rng = sim, n_acts, samples, rng
        self.exact = exact(sim) and not sampled
        self.errors = Errors()
        self.asked = 0

    def view(self, view: View, game=None, persona: Persona | None = None) -> View:
        """The view the simulator sees: its own card if it has one, else ``persona`` if given."""
        card = self.sim.persona if self.sim.persona is not None else persona
        if card is None or card is view.persona:
            return view
        instructions = view.instructions
        if game is not None:
            old, game.persona = game.persona, card
            try:
                instructions = game.instructions(game.user_role)
            finally:
                game.persona = old
        return replace(view, persona=card, instructions=instructions)

    def __call__(self, view: View, game) -> tuple[np.ndarray | None, np.ndarray]:
        counts = np.zeros(self.n_acts)
        if self.exact:
            self.asked += 1
            try:
                q = np.asarray(self.sim.distribution(view), dtype=float)
                if q.shape != (self.n_acts,) or not np.all(np.isfinite(q)) or q.min() < 0 or q.sum() <= 0:
                    raise ValueError(f"distribution() returned {q.shape} values that are not a distribution "
                                     f"over the {self.n_acts} acts")
                q = np.where(view.legal, q, 0.0)
                if q.sum() <= 0:
                    raise ValueError("distribution() puts no mass on a legal act")
                q = q / q.sum()
            except FatalSimulatorError:
                raise
            except Exception as e:  # the user's simulator: an in-game error, counted
                self.errors.add(f"distribution: {said(e)}")
                return None, counts
            for _ in range(self.samples):
                counts[sample(q, self.rng)] += 1
            return q, counts
        for _ in range(self.samples):
            self.asked += 1
            act = self._one(view, game)
            if act is not None:
                counts[act] += 1
        return None, counts

    def _one(self, view: View, game) -> int | None:
        from scope_envs.agents.llm.backends import BackendError

        try:
            if self.sim.plays_text:
                text = check_message(self.sim.reply(view, self.rng), MAX_MESSAGE_CHARS)
                act = game.understand(game.user_role, text)
            else:
                act = self.sim.act(view, self.rng)
            act = int(act)
            if not 0 <= act < self.n_acts or not view.legal[act]:
                raise InGameError(f"act {act} is not legal here")
            return act
        except BackendError as e:
            raise FatalSimulatorError(str(e)) from None
        except InGameError as e:
            self.errors.add(f"unreadable or illegal reply: {e}")
        except Exception as e:  # the user's simulator raised: counted, the diagnosis goes on
            self.errors.add(said(e))
        return None


def own_card(sim: Simulator) -> Persona | None:
    """The card a simulator declares it always plays: ``Simulator.persona`` (p4g, cooperbench), or a tau2
    reference user's fixed behaviour card (``style``); None for one that plays the dealt card."""
    card = sim.persona if sim.persona is not None else getattr(sim, "style", None)
    return card if isinstance(card, Persona) else None


# -- games ----------------------------------------------------------------------------------------------
def train_cards(game: str, n: int, seed: int) -> list[Persona]:
    """``n`` distinct train cards, drawn without replacement from the game's train split."""
    spec = game_spec(game)
    SPLIT_SIZES, persona = load(spec.split_sizes), load(spec.card)
    idx = np.random.default_rng([seed, 77]).choice(SPLIT_SIZES["train"], size=min(n, SPLIT_SIZES["train"]),
                                                   replace=False)
    return [persona("train", int(i)) for i in idx]


def dealt(game: str, view_persona: Persona, card: Persona) -> Persona:
    """``card`` dealt in place of the view's: a behaviour card (``GameSpec.card_keyword`` ``style``, tau2's) keeps
    the dealt task and swaps the card's traits in."""
    if game_spec(game).card_keyword == "persona":
        return card
    return Persona(view_persona.id, view_persona.split, {**view_persona.traits, **card.traits},
                   {**view_persona.attributes, "card": card.id})


def make_env(game: str, user: Simulator, text: bool, env_kwargs: dict):
    return scope_envs.make(f"{game}-frozen", surface="text" if text else "act", user=user, **env_kwargs)


class ProbeAgent:
    """The fixed agent of the probes (see the module docstring)."""

    def __init__(self, game: str, env, text: bool):
        self.env, self.text = env, text
        spec = game_spec(game)
        g = env.unwrapped.game
        self.writes = text and spec.probe_text_agent is not None  # it writes its own message: no act to realize
        self.explores = spec.probe_explores
        self.policy = build(spec.probe_text_agent if self.writes else spec.probe_agent, game=g, env=env)

    def __call__(self, rng: np.random.Generator):
        g = self.env.unwrapped.game
        if self.writes:
            return self.policy()
        view = self.env.unwrapped.view(g.agent_role)
        if not self.explores or rng.random() >= EXPLORE:
            act = self.policy.act(view, rng)
        else:
            act = int(rng.choice(np.flatnonzero(view.legal)))
        return g.realize(g.agent_role, act, rng) if self.text else int(act)


def run_episode(env, agent: ProbeAgent, seed: int, rng: np.random.Generator) -> None:
    env.reset(seed=seed)
    for _ in range(MAX_STEPS):
        if not env.agents:
            return
        env.step({"agent_0": agent(rng)})


# -- probe states ----------------------------------------------------------------------------------------
@dataclass
class ProbeStates:
    """Per user turn of the reference-driven probe episodes (N states over A acts)."""

    episode: np.ndarray  # (N,) which probe episode: the bootstrap's cluster
    legal: np.ndarray  # (N, A) bool
    reference: np.ndarray  # (N, A) the reference's distribution
    target: np.ndarray | None  # (N, A) the simulator's distribution (exact simulators), else None
    draws: np.ndarray  # (N, A) counts of the simulator's answers
    reference_draws: np.ndarray  # (N, A) counts of as many draws from the reference
    own_reference: np.ndarray | None  # (N, A) the reference on the simulator's declared card (``own_card``)
    answered: np.ndarray  # (N,) bool: the simulator gave at least one usable answer
    # persona probes, on states ``persona_rows`` (P of them) under K cards
    persona_rows: np.ndarray  # (P,) indices into the states
    persona_reference: np.ndarray  # (P, K, A)
    persona_target: np.ndarray | None  # (P, K, A) exact, else None
    persona_draws: np.ndarray  # (P, K, A)
    persona_reference_draws: np.ndarray  # (P, K, A)
    persona_answered: np.ndarray  # (P, K) bool: the simulator gave a usable answer under that card
    errors: Errors
    asked: int


class _Shadow(Simulator):
    """Sits in the user seat: the reference answers (and is played); the diagnosed simulator is asked too."""

    def __init__(self, game: str, driver: Simulator, wants_observation: bool):
        self.game_name, self.driver = game, driver
        self.wants_observation = wants_observation
        self.asker = self.ref_asker = self.game = None
        self.cards: list[Persona] = []
        self.own = None  # the reference on the simulator's own declared card, when it declares one
        self.turn = self.probed = self.wanted = 0
        self.every = 1
        self.rows: list[dict] = []
        self.episode = 0

    def distribution(self, view):
        return self.driver.distribution(view)

    def act(self, view, rng):
        seen = self.asker.view(view, self.game)
        q, draws = self.asker(seen, self.game)
        r = self.driver.distribution(view)
        _, ref_draws = self.ref_asker(view, self.game)
        row = {"episode": self.episode, "legal": view.legal.copy(), "reference": r, "target": q, "draws": draws,
               "reference_draws": ref_draws, "own": None if self.own is None else self.own.distribution(seen)}
        self.turn += 1
        if self.cards and self.probed < self.wanted and (self.turn + self.episode) % self.every == 0:
            self.probed += 1
            per = []
            for card in self.cards:
                v_ref = replace(view, persona=dealt(self.game_name, view.persona, card))
                pq, pd = self.asker(self.asker.view(view, self.game, v_ref.persona), self.game)
                _, prd = self.ref_asker(v_ref, self.game)
                per.append((self.driver.distribution(v_ref), pq, pd, prd))
            row["persona"] = per
        self.rows.append(row)
        return sample(r, rng)


def probe_states(game: str, sim: Simulator, *, episodes: int, samples: int, cards: int, persona_states: int,
                 seed: int, sampled: bool = False, env_kwargs: dict | None = None, progress=None) -> ProbeStates:
    """The probe states (see the module docstring). The persona probes are asked from episode 1 on at one state
    in ``every`` (staggered by episode; ``every`` set from episode 0's length), so that the ``persona_states``
    states spread over the episodes, the bootstrap's clusters."""
    from scope_envs.diagnose.specs import reference

    driver = reference(game)
    text = sim.plays_text
    shadow = _Shadow(game, driver, sim.wants_observation)
    env = make_env(game, shadow, text, env_kwargs or {})
    g = env.unwrapped.game
    n_acts = len(g.acts(g.user_role))
    shadow.game = g
    shadow.asker = asker = Asker(sim, n_acts, samples, np.random.default_rng([seed, 1]), sampled)
    shadow.ref_asker = Asker(reference(game), n_acts, samples, np.random.default_rng([seed, 2]), sampled=True)
    card_list = train_cards(game, cards, seed) if cards > 1 and persona_states > 0 else []
    card = own_card(sim)
    if card is not None:
        from scope_envs.diagnose.specs import on_card

        shadow.own = on_card(game, card)
    agent = ProbeAgent(game, env, text)
    rng = np.random.default_rng([seed, 3])
    shadow.wanted = persona_states
    for ep in range(episodes):
        shadow.episode, shadow.turn = ep, 0
        run_episode(env, agent, seed + ep, rng)
        if ep == 0:  # spread over the other episodes: one state in ``every``, from episode 0's length
            shadow.cards = card_list
            shadow.every = max(1, (len(shadow.rows) * max(episodes - 1, 1)) // max(persona_states, 1))
        if progress is not None:
            progress.update(1)
    rows = shadow.rows
    if not rows:
        raise ValueError("the probe episodes reached no user turn")
    prow = [i for i, r in enumerate(rows) if "persona" in r][:persona_states]
    zeros = np.zeros(n_acts)

    def stack(key):
        return np.array([r[key] if r[key] is not None else zeros for r in rows], dtype=float)

    def per_card(j):
        return np.array([[c[j] if c[j] is not None else zeros for c in rows[i]["persona"]] for i in prow],
                        dtype=float).reshape(len(prow), len(card_list), n_acts)

    def usable(target, draws) -> bool:
        return (target is not None) if asker.exact else draws.sum() > 0

    answered = np.array([usable(r["target"], r["draws"]) for r in rows])
    persona_answered = np.array([[usable(c[1], c[2]) for c in rows[i]["persona"]] for i in prow],
                                dtype=bool).reshape(len(prow), len(card_list))
    return ProbeStates(
        episode=np.array([r["episode"] for r in rows]), legal=np.array([r["legal"] for r in rows], dtype=bool),
        reference=stack("reference"), target=stack("target") if asker.exact else None, draws=stack("draws"),
        reference_draws=stack("reference_draws"),
        own_reference=stack("own") if shadow.own is not None else None, answered=answered, persona_rows=np.array(prow, dtype=int),
        persona_reference=per_card(0), persona_target=per_card(1) if asker.exact else None,
        persona_draws=per_card(2), persona_reference_draws=per_card(3), persona_answered=persona_answered,
        errors=asker.errors, asked=asker.asked)


# -- on-policy episodes ---------------------------------------------------------------------------------
@dataclass
class Episode:
    path: tuple[str, ...]  # the user's act names, in order
    outcome: dict
    simulator_errors: int
    truncated: bool
    exception: str | None = None


def play(game: str, sim: Simulator, *, episodes: int, seed: int, env_kwargs: dict | None = None,
         progress=None) -> list[Episode]:
    env = make_env(game, sim, sim.plays_text, env_kwargs or {})
    agent = ProbeAgent(game, env, sim.plays_text)
    rng = np.random.default_rng([seed, 4])
    g = env.unwrapped.game
    out = []
    for ep in range(episodes):
        error = None
        try:
            run_episode(env, agent, seed + ep, rng)
        except FatalSimulatorError:
            raise
        except Exception as e:  # the simulator (or its answer) broke the episode: counted
            from scope_envs.agents.llm.backends import BackendError

            if isinstance(e, BackendError):
                raise FatalSimulatorError(str(e)) from None
            error = f"{type(e).__name__}: {e}"
        names = g.acts(g.user_role)
        path = tuple(names[t.act] for t in g.history if t.role == g.user_role)
        over = g.active_role() is None
        out.append(Episode(path, {k: float(v) for k, v in g.outcome().items()} if over and error is None else {},
                           int(env.unwrapped.simulator_errors), bool(not over or g.truncated()), error))
        if progress is not None:
            progress.update(1)
    return out


# -- p4g: the real dialogues ------------------------------------------------------------------------------
@dataclass
class RealDialogue:
    id: str
    persona: Persona
    donation: float
    turns: list[tuple[str, str, str, str]]  # (persuader act, its text, persuadee reply act, its text)


def response_table(dialogues) -> np.ndarray:
    """The real persuadees' replies given the persuader's act: rows ``PERSUADER_ACTS``, columns
    ``fit.RESPONSE_ACTS``, add-0.5 smoothed as ``fit.py``'s table (row 0 unused)."""
    from scope_envs.games.p4g import dialogue_acts
    from scope_envs.games.p4g.fit import RESPONSE_ACTS

    counts = np.zeros((len(dialogue_acts.PERSUADER_ACTS), len(RESPONSE_ACTS)))
    for d in dialogues:
        for er, _, ee, _ in d.turns:
            counts[dialogue_acts.PERSUADER_INDEX[er], RESPONSE_ACTS.index(ee)] += 1
    pooled = counts.sum(0)
    empty = counts.sum(1) == 0
    counts[empty] = pooled  # an act no real persuader used: the pooled replies, as fit.py
    counts += 0.5
    return counts / counts.sum(1, keepdims=True)


def real_dialogues(data_dir) -> tuple[list[RealDialogue], np.ndarray]:
    """The annotated dialogues with an outcome and a survey row (``fit.annotated_dialogues``), as turns, and the
    response table of every annotated dialogue's turns."""
    from scope_envs.games.p4g import dialogue_acts
    from scope_envs.games.p4g.fit import annotated_dialogues, check_data, response_act

    data = check_data(Path(data_dir))
    records = annotated_dialogues(data)
    turns: dict[str, dict[int, dict]] = {}
    with open(data / "300_dialog.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            t = turns.setdefault(r["B2"], {}).setdefault(int(r["Turn"]), {"er": [], "ee": [], "er_text": [],
                                                                             "ee_text": []})
            side = "er" if r["B4"] == "0" else "ee"
            t[f"{side}_text"].append((r.get("Unit") or "").strip())
            label = (r["er_label_1"] if side == "er" else r["ee_label_1"]).strip()
            if label:
                t[side].append(dialogue_acts.persuader_act(label) if side == "er" else response_act(label))
    every, eligible = [], []
    for d, by_turn in sorted(turns.items()):
        pairs = [(t["er"][-1], " ".join(t["er_text"]), t["ee"][0], " ".join(t["ee_text"]))
                 for _, t in sorted(by_turn.items()) if t["er"] and t["ee"]]
        rec = records.get(d)
        persona = Persona(d, "real", dict(rec["traits"]), dict(rec["attributes"])) if rec else None
        dialogue = RealDialogue(d, persona, rec["donation"] if rec else 0.0, pairs)
        every.append(dialogue)
        if rec and pairs:
            eligible.append(dialogue)
    return eligible, response_table(every)


@dataclass
class RealStates:
    dialogue: np.ndarray  # (N,) cluster
    legal: np.ndarray  # (N, R) legal replies in RESPONSE_ACTS space
    last_act: np.ndarray  # (N,) the persuader act the reply answers
    real_reply: np.ndarray  # (N,) the real persuadee's reply (RESPONSE_ACTS index)
    reference: np.ndarray  # (N, R) the training-side reference model, pooled
    target: np.ndarray | None  # (N, R) the simulator, pooled (exact)
    draws: np.ndarray  # (N, R)
    answered: np.ndarray
    stopped: int  # replays ended early by a reply the game forbids
    errors: Errors


def pool(p: np.ndarray) -> np.ndarray:
    """A distribution over ``PERSUADEE_ACTS`` in ``fit.RESPONSE_ACTS`` space (the amounts pooled)."""
    from scope_envs.games.p4g.dialogue_acts import FIRST_AMOUNT

    p = np.asarray(p, dtype=float)
    return np.concatenate([p[..., 1:FIRST_AMOUNT], p[..., FIRST_AMOUNT:].sum(-1, keepdims=True)], axis=-1)


def real_states(sim: Simulator, dialogues: list[RealDialogue], *, samples: int, seed: int,
                sampled: bool = False) -> RealStates:
    from scope_envs.core.game import Turn
    from scope_envs.games.p4g import dialogue_acts
    from scope_envs.games.p4g.fit import RESPONSE_ACTS
    from scope_envs.games.p4g.game import PERSUADEE, PERSUADER, P4GGame
    from scope_envs.diagnose.specs import reference

    n_acts = len(dialogue_acts.PERSUADEE_ACTS)
    asker = Asker(sim, n_acts, samples, np.random.default_rng([seed, 5]), sampled)
    ref = reference("p4g")
    rows, stopped = [], 0
    for i, d in enumerate(dialogues):
        game = P4GGame(max_turns=len(d.turns) + 1)
        game.reset(d.persona, np.random.default_rng([seed, 6, i]))
        for er, er_text, ee, ee_text in d.turns:
            game.apply(PERSUADER, dialogue_acts.PERSUADER_INDEX[er], er_text)
            legal = game.legal(PERSUADEE)
            view = View(role=PERSUADEE, persona=d.persona, history=tuple(game.history), legal=legal,
                        public=game.info(), instructions=game.instructions(PERSUADEE))
            act = (dialogue_acts.FIRST_AMOUNT + dialogue_acts.amount_bin(d.donation) if ee == "provide_amount"
                   else dialogue_acts.PERSUADEE_INDEX[ee])
            if not legal[act]:
                stopped += 1
                break
            q, draws = asker(asker.view(view, game), game)
            rows.append({"dialogue": i, "legal": pool(legal) > 0, "last": dialogue_acts.PERSUADER_INDEX[er],
                         "real": RESPONSE_ACTS.index(ee), "reference": pool(ref.distribution(view)),
                         "target": None if q is None else pool(q), "draws": pool(draws)})
            game.apply(PERSUADEE, act, ee_text)
            if game.done:
                break
    n_r = len(RESPONSE_ACTS)
    return RealStates(
        dialogue=np.array([r["dialogue"] for r in rows]), legal=np.array([r["legal"] for r in rows], dtype=bool),
        last_act=np.array([r["last"] for r in rows]), real_reply=np.array([r["real"] for r in rows]),
        reference=np.array([r["reference"] for r in rows]),
        target=np.array([r["target"] if r["target"] is not None else np.zeros(n_r) for r in rows])
        if asker.exact else None,
        draws=np.array([r["draws"] for r in rows]),
        answered=np.array([(r["target"] is not None) if asker.exact else r["draws"].sum() > 0 for r in rows]),
        stopped=stopped, errors=asker.errors)


def real_replies(dialogues: list[RealDialogue]) -> Counter:
    return Counter(ee for d in dialogues for _, _, ee, _ in d.turns)
