"""The rollout collector: plays a vec env with one policy per seat and returns whole episodes.

``collect(vec, policies, n_episodes)`` is the one loop that plays episodes for the act-level trainer
(``PPOTrainer.play``), its evaluation (``evaluate``, and through it the benchmark's every score) and any
policy that satisfies the protocol of ``scope_envs.train.policy``::

    >>> import scope_envs
    >>> from scope_envs.train.policy import UniformPolicy
    >>> vec = scope_envs.make_vec("p4g-frozen", num_envs=4)
    >>> episodes, steps = collect(vec, {"agent_0": UniformPolicy(seed=0)}, n_episodes=6, seed=0)
    >>> len(episodes), sorted(episodes[0])
    (6, ['agent_score', 'group', 'outcome', 'persona', 'return', 'traj', 'user_acts'])

``collect_blocks(vec, blocks)`` plays several ``Block``s of one vec env's slots at once, each as ``collect`` plays a
vec env of its own (the seed axis: a row's seeds in one computation, ``scope_envs.train.seeds``), and
``evaluate_seeds`` evaluates several policies so.

Episode ``e`` starts in the first slot free after episodes ``< e`` started (slot ``i`` takes episode ``i``
first, seeded ``seed + i``), as N scalar envs stepped in lockstep would deal them. Every step each policy is
asked once, for the rows of all the slots where one of its seats moves, in slot order; policies are asked
in the order of their first such slot. With ``group_size`` G > 1 the episodes start in groups of G that
share a scenario (``scope_envs.train.groups.scenario_options``).

Each finished episode is ``{"traj": {seat: [decision, ...]}, "return": agent_0's return, "outcome": the
game's outcome, "user_acts": the user seat's acts, "group": its group (its index when ungrouped),
"agent_score": the game's score in [0, 1] (None where it has none), "persona": the dealt card's id}``; a
decision is ``{"x", "m"}`` (the row as the policy saw it, after its ``encode``), ``"a"``, ``"logp"``,
``"v"``, ``"ent"`` (NaN where the policy gives none; ``v`` 0), ``"r"`` (the reward credited to it: a
reward that arrives on another seat's turn goes to the seat's last decision) and ``"user"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import numpy as np
from gymnasium.spaces import Discrete

import scope_envs
from scope_envs.core.checks import check_int, short_repr
from scope_envs.train.groups import group_diagnostics, scenario_options
from scope_envs.train.policy import Decisions, Policy, UniformPolicy
from scope_envs.vec import BATCHED_KWARGS, vectorize

AGENT = "agent_0"
EVAL_KEY = 0x6576616C  # an evaluation's generator: [EVAL_KEY, its seed] (``evaluation_rng``)


class Rollout(NamedTuple):
    episodes: list[dict]  # the finished episodes, in the order they ended
    steps: int  # env steps taken (one per live slot per step)


def encode_rows(policy, seat: str, x: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    encode = getattr(policy, "encode", None)
    return encode(seat, x, m) if encode is not None else (x, m.astype(bool))


class Block(NamedTuple):
    """One share of a vec env's slots, played as ``collect`` plays a vec env of its own (``collect_blocks``):
    ``slots`` (a range of the vec env's slots; None: all of them), the seats' ``policies``, ``n_episodes``,
    ``seed`` (slot ``start + i`` seeded ``seed + i``), ``group_size`` and ``scenario_seed``."""

    policies: Mapping[str, Policy]
    n_episodes: int
    seed: int | None = None
    group_size: int = 1
    scenario_seed: int | None = None
    slots: range | None = None

    @property
    def group_scenario_seed(self) -> int | None:
        """The seed its groups' scenarios derive from: ``scenario_seed``, else in grouped play ``seed``."""
        return self.seed if self.scenario_seed is None and self.group_size > 1 else self.scenario_seed


def collect(vec, policies: Mapping[str, Policy], n_episodes: int, seed: int | None = None, greedy: bool = False,
            group_size: int = 1, scenario_seed: int | None = None, decisions: bool = True) -> Rollout:
    """Play ``n_episodes`` whole episodes on ``vec`` (a vec env of ``scope_envs.vec``), each seat in
    ``policies`` by its policy (see the module). ``scenario_seed`` (grouped play) defaults to ``seed``.
    ``decisions=False`` (what an evaluation reads): the episodes keep no ``traj``, and hold ``entropies``
    instead, agent_0's per-decision ``ent`` in order; the same episodes, ``return`` included (the same
    sum of the same credited rewards), without a dict per decision."""
    return collect_blocks(vec, [Block(policies, n_episodes, seed, group_size, scenario_seed)], greedy, decisions)[0]


def check_blocks(vec, blocks: list[Block]) -> list[range]:
    """Each block's slots (a range), after the blocks' ``ValueError``s: disjoint ranges of the vec env's
    slots, a policy for every live seat, grouped play with whole groups and a seed to deal them from."""
    n = vec.num_envs
    ranges, taken = [], np.zeros(n, bool)
    for agent in vec.possible_agents:
        if not isinstance(vec.action_space(agent), Discrete):
            raise ValueError("the rollouts play the act surface (int acts under a mask); on the text surface step "
                             "the vec env itself, a string per slot")
    for b in blocks:
        check_int("n_episodes", b.n_episodes, 1)
        # the env's seats only: a policy for a seat it lacks sits out (a co-trained user, on the held-out side)
        for agent in vec.possible_agents:
            policy = b.policies.get(agent)
            if policy is not None and not callable(getattr(policy, "act", None)):
                raise ValueError(f"the policy for {agent} has no act(obs, mask, greedy=False) (a Policy: "
                                 f"scope_envs.train.policy), got {short_repr(policy)}")
        slots = range(n) if b.slots is None else b.slots
        if not isinstance(slots, range) or slots.step != 1 or not len(slots) or slots.start < 0 or slots.stop > n:
            raise ValueError(f"a block's slots must be a non-empty range of the vec env's {n} slots, got {slots!r}")
        if taken[slots.start : slots.stop].any():
            raise ValueError(f"blocks must not share slots: {slots!r} overlaps another block")
        taken[slots.start : slots.stop] = True
        ranges.append(slots)
        if b.group_size > 1:
            if b.n_episodes % b.group_size:
                raise ValueError(f"n_episodes must be a multiple of group_size, got {b.n_episodes} and "
                                 f"{b.group_size}")
            if b.group_scenario_seed is None:
                raise ValueError("grouped play needs a seed or a scenario_seed to derive the groups' scenarios from")
        missing = [a for a in vec.possible_agents if a not in b.policies]
        if missing:
            raise ValueError(f"every live seat needs a policy: none for {missing} (policies for {sorted(b.policies)})")
    return ranges


def collect_blocks(vec, blocks: list[Block], greedy: bool = False, decisions: bool = True) -> list[Rollout]:
    """``collect`` for several blocks of one vec env's slots at once: each block plays its own episodes with its
    own policies in its own slots, stepped together (one ``vec.step`` a step for all of them), and gets the
    ``Rollout`` it would get from ``collect`` on a vec env of its slots alone. A block's episodes depend on no
    other block: each block draws from its own stream (``BatchedVecEnv.reset(streams=)``; a ``LoopVecEnv``'s
    slots each from its scalar env's generator); and its policies are its own objects (a policy is asked once per
    block, for that block's rows). This is the seed axis of the trainer (``scope_envs.train.seeds``): S seeds'
    rollouts as one computation."""
    ranges = check_blocks(vec, blocks)
    n = vec.num_envs
    agents = vec.possible_agents
    block_of = np.full(n, -1, np.int64)
    for k, slots in enumerate(ranges):
        block_of[slots.start : slots.stop] = k
    whole = len(ranges) == 1 and len(ranges[0]) == n  # one block of every slot: no slot to sort into blocks
    traj: list[dict] = [{} for _ in range(n)]
    # decisions=False: per slot, agent_0's per-decision entropies and credited rewards (its traj's "ent" and "r")
    ents: list[list] = [[] for _ in range(n)]
    credit: list[list] = [[] for _ in range(n)]
    group: list[int | None] = [None] * n
    ended_group: list[int | None] = [None] * n
    episodes: list[list[dict]] = [[] for _ in blocks]
    steps = np.zeros(len(blocks), np.int64)
    scenario = [b.group_scenario_seed for b in blocks]
    started = [min(len(r), b.n_episodes) for b, r in zip(blocks, ranges)]
    seeds: list[int | None] = [None] * n
    options: list[dict] = [{} for _ in range(n)]
    first: list[int] = []
    for k, (b, slots) in enumerate(zip(blocks, ranges)):
        for i in range(len(slots)):
            seeds[slots.start + i] = None if b.seed is None else b.seed + i
            if i < started[k]:
                group[slots.start + i] = i // b.group_size
                options[slots.start + i] = scenario_options(scenario[k], i, b.group_size)
                first.append(slots.start + i)

    def next_episode(slot: int) -> dict | None:
        k = int(block_of[slot])
        ended_group[slot] = group[slot]
        if k < 0 or started[k] >= blocks[k].n_episodes:
            return None
        group[slot] = started[k] // blocks[k].group_size
        started[k] += 1
        return scenario_options(scenario[k], started[k] - 1, blocks[k].group_size)

    vec.next_episode = next_episode
    # each block draws from a generator of its own (a stream), seeded by its slots' seeds and labelled by its
    # first slot, so that it keeps its generator while other blocks come and go
    streams = [n if k < 0 else ranges[k].start for k in block_of.tolist()]
    obs, infos = vec.reset(seed=seeds, options=options, slots=first, streams=streams)
    while not vec.idle.all():
        steps += np.bincount(block_of[~vec.idle], minlength=len(blocks))  # (a live slot is in a block)
        actions = {a: np.zeros(n, np.int64) for a in agents}
        parts: dict[tuple[int, int], list] = {}  # (block, id(policy)) -> [(seat, its moving slots)]
        for a in agents:
            moving = np.flatnonzero(infos["active"][a])
            if not len(moving):
                continue
            for k in [0] if whole else np.unique(block_of[moving]).tolist():
                slots = moving if whole else moving[block_of[moving] == k]
                parts.setdefault((k, id(blocks[k].policies[a])), []).append((a, slots))
        # one call per policy and block, in the order of its first slot
        for (k, _), part in sorted(parts.items(), key=lambda kp: min(int(s[0]) for _, s in kp[1])):
            policy = blocks[k].policies[part[0][0]]
            rows = [(a, slots, *encode_rows(policy, a, obs[a]["observation"][slots], obs[a]["action_mask"][slots]))
                    for a, slots in part]
            if len(rows) == 1:
                seat_of = [rows[0][0]] * len(rows[0][1])
                slots, x, m = rows[0][1], rows[0][2], rows[0][3]
            else:
                slots = np.concatenate([r[1] for r in rows])
                order = np.argsort(slots, kind="stable")
                seat_of = [a for r in rows for a in [r[0]] * len(r[1])]
                seat_of = [seat_of[o] for o in order]
                slots, x, m = slots[order], np.concatenate([r[2] for r in rows])[order], \
                    np.concatenate([r[3] for r in rows])[order]
            d: Decisions = policy.act(x, m, greedy)
            if not isinstance(d, Decisions):  # (a bare array of acts had been numpy's AttributeError, naming no one)
                raise TypeError(f"{type(policy).__name__}.act returned {type(d).__name__}, not Decisions: return "
                                "scope_envs.train.policy.Decisions(actions) (the policy protocol)")
            mine = [(rows[0][0], slice(None))] if len(rows) == 1 else \
                [(a, np.array(seat_of) == a) for a in dict.fromkeys(seat_of)]
            for seat, rows_of in mine:  # each seat's acts in one write
                actions[seat][slots[rows_of]] = d.actions[rows_of]
            if not decisions:  # agent_0's entropies and a reward to credit per row
                for seat, rows_of in mine:
                    if seat == AGENT:
                        ent = d.entropy[rows_of].tolist() if d.entropy is not None else \
                            [float("nan")] * len(slots[rows_of])
                        for slot, en in zip(slots[rows_of].tolist(), ent):
                            ents[slot].append(en)
                            credit[slot].append(0.0)
                continue
            nan = [float("nan")] * len(slots)
            logp = nan if d.logp is None else d.logp.tolist()
            value = [0.0] * len(slots) if d.values is None else d.values.tolist()
            ent = nan if d.entropy is None else d.entropy.tolist()
            # list(x): every row's view in one call; the per-decision loop is the rollout's largest Python cost
            for slot, seat, xj, mj, act, lp, val, en in zip(slots.tolist(), seat_of, list(x), list(m),
                                                             d.actions.tolist(), logp, value, ent):
                traj[slot].setdefault(seat, []).append({"x": xj, "m": mj, "a": act, "logp": lp, "v": val,
                                                        "ent": en, "r": 0.0, "user": seat != AGENT})
        obs, rewards, _, _, infos = vec.step(actions)
        for seat, r in rewards.items():
            if decisions:
                for slot in np.flatnonzero(r).tolist():
                    if traj[slot].get(seat):
                        traj[slot][seat][-1]["r"] += float(r[slot])
            elif seat == AGENT:  # without decisions only agent_0's rewards are kept: they make the return
                for slot in np.flatnonzero(r).tolist():
                    if credit[slot]:
                        credit[slot][-1] += float(r[slot])
        done = infos["_final_info"]
        if done.any():
            final = infos["final_info"]
            ended = np.flatnonzero(done)
            # the finished slots' outcomes as Python floats: one conversion per key
            columns = {k: v[ended].tolist() for k, v in final["outcome"].items()}
            for j, (slot, score) in enumerate(zip(ended.tolist(), final["agent_score"][ended].tolist())):
                if decisions:
                    head = {"traj": traj[slot], "return": sum(d["r"] for d in traj[slot].get(AGENT, []))}
                    traj[slot] = {}
                else:
                    head = {"return": sum(credit[slot]), "entropies": ents[slot]}
                    ents[slot], credit[slot] = [], []
                episode = {**head, "outcome": {k: col[j] for k, col in columns.items()},
                           "user_acts": list(final["user_acts"][slot]), "group": ended_group[slot],
                           "agent_score": None if np.isnan(score) else score, "persona": final["persona"][slot]}
                episodes[block_of[slot]].append(episode)
    return [Rollout(e, st) for e, st in zip(episodes, steps.tolist())]


# -- what a rollout tells ------------------------------------------------------------------
def entropy_of_counts(counts: np.ndarray) -> float:
    """The entropy (nats) of the frequencies ``counts``; 0 for none."""
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum()) if len(p) else 0.0


def rollout_diagnostics(episodes: list[dict]) -> dict[str, float]:
    """The collapse diagnostics of one grouped rollout (``groups.group_diagnostics`` over agent_0's returns
    and scores) and ``sim_reply_entropy``, the entropy (nats) of the user's act frequencies over the
    episodes, whoever played the user."""
    out = group_diagnostics([ep["return"] for ep in episodes], [ep["agent_score"] for ep in episodes],
                            [ep["group"] for ep in episodes])
    user_acts = np.array([a for ep in episodes for a in ep["user_acts"]], dtype=int)
    out["sim_reply_entropy"] = entropy_of_counts(np.bincount(user_acts)) if len(user_acts) else 0.0
    return out


# -- evaluation ---------------------------------------------------------------------------
def evaluation_rng(seed: int) -> np.random.Generator:
    """The generator an evaluation of ``seed`` draws a trainer's networks' acts from: its own, never the
    trainer's (so evaluating during training, as the learning curves do, leaves the training unchanged)."""
    return np.random.default_rng([EVAL_KEY, seed])


def evaluation_policies(player, seed: int) -> dict:
    """The seat -> policy mapping an evaluation of ``seed`` plays: a trainer's networks on
    ``evaluation_rng(seed)`` (``player.policies_with``; without the critic's values, which no evaluation reads), a
    mapping as given, or one policy for ``agent_0``."""
    if hasattr(player, "policies_with"):
        return player.policies_with(evaluation_rng(seed), values=False)
    if isinstance(player, Mapping):
        return dict(player)
    if not isinstance(player, Policy):
        raise TypeError(f"evaluate plays a trainer, a seat -> policy mapping or a policy (an object with "
                        f"act(obs, mask, greedy)), got {type(player).__name__}")
    return {AGENT: player}


class UniformAgent:
    """``agent_0`` uniformly at random over its legal acts (the benchmark's floor, ``random``; the network is
    never read), drawing from its own generator (``seed``); learnable users, where the env has them, play
    ``trainer``'s networks (on ``evaluation_rng(seed)``). ``play`` is ``trainer.play`` with these policies."""

    def __init__(self, trainer, seed: int):
        self.trainer = trainer
        self.policies = {**evaluation_policies(trainer, seed), AGENT: UniformPolicy(seed)}

    def play(self, envs, n_episodes: int, **kwargs) -> Rollout:
        return self.trainer.play(envs, n_episodes, policies=self.policies, **kwargs)


def agent_entropies(episode: dict) -> list[float]:
    """agent_0's per-decision entropies in an episode of ``collect`` (with or without ``decisions``)."""
    if "entropies" in episode:
        return episode["entropies"]
    return [d["ent"] for d in episode["traj"].get(AGENT, [])]


def evaluate(player, env_id: str | Callable[[], object], episodes: int = 500, seed: int = 12345,
             num_envs: int = 64, greedy: bool = False, uniform: bool = False, **env_kwargs) -> dict:
    """Play ``episodes`` episodes of ``env_id`` with ``player``: a ``PPOTrainer`` (its persuader and, where
    the env has learnable users, its user networks, drawing from ``evaluation_rng(seed)``, never from the
    trainer's generator), a seat -> policy mapping (every live seat of the env needs one; ``agent_0`` alone
    on the ids whose user seat a simulator plays), or one policy, for ``agent_0``. Returns ``success`` (the
    mean of the game's ``success_metric`` outcome — for p4g the actual donation in dollars, for cooperbench the
    cooperative success rate — or of agent_0's return), ``outcome`` (the mean of every outcome key),
    ``policy_entropy`` (mean entropy of the persuader's policy per decision, nats), ``sim_entropy``
    (entropy of the user's act frequencies over all its turns, nats) and ``returns``.

    ``env_id`` is a registered id (each env ``scope_envs.make(env_id, **env_kwargs)``) or a factory: a
    callable that returns a fresh env each call (e.g. a panel member's ``panel_env``; no ``env_kwargs``
    then). ``uniform=True``: ``agent_0`` plays uniformly at random over its legal acts instead of its network
    (``UniformPolicy``, drawing from a generator seeded by ``seed``): the random-play floor. A policy without
    entropies (a scripted one) gives ``policy_entropy`` NaN."""
    return evaluate_seeds([player], env_id, episodes, [seed], num_envs, greedy, uniform, **env_kwargs)[0]


def evaluate_seeds(players: list, env_id: str | Callable[[], object], episodes: int, seeds: list[int],
                   num_envs: int = 64, greedy: bool = False, uniform: bool = False, **env_kwargs) -> list[dict]:
    """``evaluate(players[k], env_id, episodes, seeds[k], ...)`` for every k, in order, played as one computation:
    each pair in its own block of one vec env's slots (``collect_blocks``), so each summary is the one ``evaluate``
    gives it alone (the benchmark evaluates a row's seeds so, ``scope_envs.bench.protocol``)."""
    if len(players) != len(seeds) or not players:
        raise ValueError(f"evaluate_seeds needs one seed per player, got {len(players)} players and {len(seeds)} seeds")
    n, total = num_envs, num_envs * len(players)
    if callable(env_id):
        if env_kwargs:
            raise ValueError(f"env_kwargs go with an env id, not with an env factory; got {sorted(env_kwargs)}")
        envs = [env_id() for _ in range(total)]
    else:
        envs = [scope_envs.make(env_id, **env_kwargs) for _ in range(total)]
    policies = [evaluation_policies(player, seed) for player, seed in zip(players, seeds)]
    if uniform:
        for pol, seed in zip(policies, seeds):
            pol[AGENT] = UniformPolicy(seed)
    cfg = getattr(players[0], "cfg", None)
    batched = (cfg is None or cfg.batched) and not set(env_kwargs) - BATCHED_KWARGS  # else the loop engine
    if len(players) == 1 and hasattr(players[0], "play"):  # a trainer: its play (vec_speed.py counts the steps there)
        rollouts = [players[0].play(envs, episodes, seed=seeds[0], greedy=greedy, batched=batched,
                                    policies=policies[0])]
    else:
        blocks = [Block(pol, episodes, seed, slots=range(k * n, (k + 1) * n))
                  for k, (pol, seed) in enumerate(zip(policies, seeds))]
        rollouts = collect_blocks(vectorize(envs, batched=batched), blocks, greedy, decisions=False)
    return [summary(episodes, envs[0]) for episodes, _ in rollouts]


def summary(eps: list[dict], env) -> dict:
    """``evaluate``'s figures of the episodes ``eps`` of ``env``'s id."""
    returns = np.array([e["return"] for e in eps])
    n_user = env.action_space(env.possible_agents[-1]).n if len(env.possible_agents) > 1 else None
    user_acts = np.array([a for e in eps for a in e["user_acts"]], int)
    counts = np.bincount(user_acts, minlength=n_user or 1)
    outcome = {k: float(np.mean([e["outcome"][k] for e in eps])) for k in eps[0]["outcome"]}
    metric = env.unwrapped.game.success_metric
    return {
        "success": outcome[metric] if metric else float(returns.mean()),
        "outcome": outcome,
        "policy_entropy": float(np.mean([en for e in eps for en in agent_entropies(e)])),
        "sim_entropy": entropy_of_counts(counts),
        # agent_0 got nothing (p4g: no gift, the persuadee refused; tau2: task failed; cooperbench: nothing done)
        "zero_score_frac": float(np.mean([e["agent_score"] == 0 for e in eps if e["agent_score"] is not None]))
        if any(e["agent_score"] is not None for e in eps) else float("nan"),
        "returns": returns,
    }
