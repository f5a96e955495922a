"""Act-level multi-agent PPO for the ``act`` surface, CleanRL style: read it top to bottom.

It trains whatever the regime makes learnable:

* ``frozen``, ``vs``, ``rotation`` (and any single-agent id): the persuader ``agent_0`` only.
* ``cotrain``: the persuader and the user ``user_0``, each with its own network.
* ``population``: the persuader and K user networks, ``user_k`` trained only on
  the episodes it played; an optional diversity term pushes members apart.
* ``selfplay=True`` (on a ``cotrain`` id): one network plays both roles and is
  told its role in the observation (a one-hot, then the role's features,
  zero-padded; action masks are padded with illegal acts).

The networks are torch modules (``ActorCritic``: saved, loaded and cloned as such), but the rollouts'
forward passes and the PPO update run in numpy on the modules' own memory (``numpy_ac``, the loss's
gradient written out and checked against torch autograd): at this size torch's per-op overhead was most of
the training time.

Learnable users start from a behaviour clone of the game's *frozen* simulator
(``user_init="frozen"``, the training-side "aligned LLM playing the dealt
card"; ``"random"`` for a fresh network) and are trained with their env
reward, an entropy bonus and a KL penalty toward that initial policy.

Episodes are collected whole (every turn-based dialogue ends within a few
turns), so GAE needs no bootstrapping. Each agent's own decisions form its
trajectory: turns where it only has the no-op are skipped (it sends 0), and a
reward that arrives on another agent's turn is credited to its last decision.

SCOPE's training (arXiv 2608.12253), all off by default (the defaults replay
the ungrouped GAE trainer bit for bit):

* **Groups** (``group_size`` G > 1): episodes are started in groups of G that
  share one scenario (persona/task): ``reset(options={"scenario_seed": ...})``,
  a seed derived from the run's seed, the update count and the group index;
  the rest of each episode's randomness is its own. ``episodes_per_iter`` must
  be a multiple of G. Each episode records its ``group``, the game's
  ``agent_score`` (agent_0's outcome in [0, 1]) and its ``persona`` id.
* **GRPO** (``advantage="grpo"``, needs G >= 2): every decision of an episode
  gets that agent's episode return minus the mean of its returns over the
  group (agent_0's return for agent_0, the user's for the user; a user's mean
  is over the group's episodes it played), divided by the group's sample std
  (+1e-6) only under ``grpo_std_norm``. The value head is not used for the
  advantage; it is still fit to the reward-to-go (``vf_coef`` unchanged; actor
  and critic are separate MLPs, they share only the gradient-norm clip) so
  that its value stays meaningful. ``norm_adv`` applies only under ``gae``:
  under ``grpo`` the group is the only baseline, as in SCOPE.
* **Curriculum user reward** (the game's ``user_reward="curriculum"``, with a
  learnable user; needs G >= 2): the env pays the user 0; after the rollout
  every user trajectory's terminal reward becomes ``curriculum_reward`` of the
  G agent scores of its group, with the game's ``target_var`` and ``width``.
* **Checkpoint pool** (``<game>-population`` with ``pool_size`` /
  ``snapshot_every`` / ``pool_sample``, a ``CheckpointPool``): only the live
  user ``user_0`` learns (the cotrain path); after every ``snapshot_every``
  updates (training iterations) a frozen copy of its network, a
  ``PolicySnapshot`` simulator, joins every env's pool (FIFO, at most
  ``pool_size`` entries with the live user). A fresh pool holds only the live
  user, i.e. the initial user. Episodes a snapshot played have no user
  decisions: only agent_0 learns from them. The draw is per episode, so the
  episodes of one group may meet different pool entries.
* **Collapse diagnostics** (log rows of grouped runs): ``zero_std_group_frac``
  (groups whose agent returns are all equal: no GRPO gradient),
  ``all_fail_group_frac`` / ``all_success_group_frac`` (agent scores all 0 /
  all >= 1 - 1e-9), ``sim_reply_entropy`` (nats, the user's act frequencies in
  the iteration, whoever played the user), beside ``policy_entropy``; plus
  ``curriculum_reward`` (its mean over groups) and, with a pool,
  ``pool_entries`` and ``live_user_episode_frac``.

SCOPE's settings: ``group_size=8, advantage="grpo", grpo_std_norm=False``; its
KL coefficient is 0.005, ``user_kl_coef`` here stays 0.1 (a KL to the
behaviour-cloned initial user, not to a reference LLM).

Example::

    >>> from scope_envs.train.act_ppo import PPOConfig, PPOTrainer, evaluate
    >>> trainer = PPOTrainer(PPOConfig(env_id="p4g-frozen", total_steps=2000, seed=0))
    >>> history = trainer.train()
    >>> evaluate(trainer, "p4g-heldout", episodes=50, seed=1)["success"]  # doctest: +SKIP
    >>> scope = PPOConfig(env_id="tau2-population", env_kwargs={"pool_size": 5, "snapshot_every": 4,
    ...                   "user_reward": "curriculum"}, group_size=8, advantage="grpo")
    >>> PPOTrainer(scope).train()[-1]["zero_std_group_frac"]  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

import scope_envs
from scope_envs.core.simulator import Simulator, View
from scope_envs.train.groups import (
    agent_score,
    curriculum_setting,
    curriculum_values,
    derive_seed,
    group_advantages,
    group_diagnostics,
    scenario_options,
)
from scope_envs.train.numpy_ac import (
    MASKED_LOGIT,
    Adam,
    bind,
    entropy,
    log_policy,
    mlp,
    mlp_backward,
    normalize,
    views_like,
)
from scope_envs.vec import BATCHED_KWARGS, vectorize
from scope_envs.wrappers import CheckpointPool

AGENT = "agent_0"
# kwargs of population/rotation (and of the checkpoint pool) that the frozen env does not take
POPULATION_KWARGS = ("members", "schedule", "pool_size", "snapshot_every", "pool_sample")
ADVANTAGES = ("gae", "grpo")
ACT_KEY = 0x616374  # the trainer's generator (acts, minibatch order): [ACT_KEY, seed]


@dataclass
class PPOConfig:
    env_id: str = "p4g-frozen"
    env_kwargs: dict = field(default_factory=dict)
    seed: int = 0
    total_steps: int = 30_000  # the budget, in persuader (agent_0) decisions: equal across regimes, whereas
    # env steps are not (where the user is a live agent its turns are env steps too)
    num_envs: int = 64  # envs stepped in lockstep, one batched forward pass per step: an iteration's episodes in
    # one wave (until 2026-11-30: 16; the same algorithm, other random streams)
    episodes_per_iter: int = 64  # whole episodes per PPO iteration
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 1.0  # episodic, the reward comes at the end
    gae_lambda: float = 0.95
    update_epochs: int = 4
    num_minibatches: int = 4
    min_minibatch: int = 128
    clip_coef: float = 0.2
    clip_vloss: bool = True
    norm_adv: bool = True
    ent_coef: float = 0.01  # the persuader's entropy bonus
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64
    # learnable users (cotrain, population, the user role of selfplay)
    user_init: str = "frozen"  # "frozen": behaviour-clone the game's frozen simulator; "random"
    user_ent_coef: float = 0.01
    user_kl_coef: float = 0.1  # KL(user || its initial policy); 0 turns it off
    bc_episodes: int = 300
    bc_steps: int = 300
    diversity_coef: float = 0.0  # population: reward each member's KL from the others (capped)
    diversity_cap: float = 1.0
    selfplay: bool = False
    # SCOPE's GRPO: groups of G episodes on one scenario (persona/task), group-relative advantages
    group_size: int = 1  # G; 1: every episode deals its own scenario (the ungrouped rollout)
    advantage: str = "gae"  # "gae": value baseline; "grpo": episode return minus its group's mean return
    grpo_std_norm: bool = False  # grpo: also divide by the group's std (SCOPE: off)
    # rollouts on scope_envs.make_vec's batched engine (the same episodes as the scalar envs, faster); False:
    # step the scalar envs one at a time, as the trainer did before make_vec (benchmarks/vec_speed.py's baseline)
    batched: bool = True


def check_config(cfg: PPOConfig) -> None:
    """The grouping options' ``ValueError``s (the env-dependent one, the curriculum user, is in the trainer)."""
    if cfg.advantage not in ADVANTAGES:
        raise ValueError(f"advantage must be one of {ADVANTAGES}, got {cfg.advantage!r}")
    if isinstance(cfg.group_size, bool) or not isinstance(cfg.group_size, int) or cfg.group_size < 1:
        raise ValueError(f"group_size must be an int >= 1, got {cfg.group_size!r}")
    if cfg.advantage == "grpo" and cfg.group_size < 2:
        raise ValueError(f"advantage='grpo' needs groups: group_size must be >= 2, got {cfg.group_size}")
    if cfg.episodes_per_iter % cfg.group_size:
        raise ValueError(f"episodes_per_iter must be a multiple of group_size, got episodes_per_iter="
                         f"{cfg.episodes_per_iter} and group_size={cfg.group_size}")


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs; illegal acts get a logit of ``MASKED_LOGIT`` (-1e9)."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 64):
        super().__init__()
        self.obs_dim, self.n_actions, self.hidden = obs_dim, n_actions, hidden
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, n_actions), std=0.01),
        )

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def dist(self, x: torch.Tensor, mask: torch.Tensor) -> Categorical:
        # no argument validation: the masked logits are finite by construction, and the check costs as much as
        # the forward pass of these small networks
        return Categorical(logits=self.actor(x).masked_fill(~mask, MASKED_LOGIT), validate_args=False)


def selfplay_input(x: np.ndarray, m: np.ndarray, user: bool, in_dim: int, out_dim: int) -> tuple[np.ndarray, ...]:
    """The shared network's input: the role as a one-hot, then the role's features, zero-padded; the
    mask padded with illegal acts."""
    xx = np.zeros(in_dim, np.float32)
    xx[1 if user else 0] = 1.0
    xx[2 : 2 + len(x)] = x
    mm = np.zeros(out_dim, bool)
    mm[: len(m)] = m
    return xx, mm


class PolicySnapshot(Simulator):
    """A frozen copy of the live user's network, playing the user seat inside the env (a
    ``CheckpointPool`` entry). Its distribution is the copy's masked softmax over the act surface's
    observation (``view.observation``); ``act`` samples it with the env's generator (``Simulator.act``)."""

    name = "policy_snapshot"
    wants_observation = True

    def __init__(self, net: ActorCritic, selfplay: bool = False):
        self.net = copy.deepcopy(net).requires_grad_(False)
        self.actor = bind(self.net)[1][6:]  # the forward pass in numpy, as the trainer's
        self.selfplay = selfplay

    def distribution(self, view: View) -> np.ndarray:
        if view.observation is None:
            raise ValueError("a PolicySnapshot needs views with the act surface's observation (wants_observation)")
        legal = np.asarray(view.legal, bool)
        x, m = np.asarray(view.observation, np.float32), legal
        if self.selfplay:
            x, m = selfplay_input(x, m, True, self.net.obs_dim, self.net.n_actions)
        p = np.exp(log_policy(self.actor, x[None], m[None])[0, : len(legal)]).astype(np.float64)
        p[~legal] = 0.0
        return p / p.sum()


def find_pool(env) -> CheckpointPool | None:
    """The ``CheckpointPool`` in ``env``'s wrapper chain (walking ``.env`` from the outermost), or None."""
    seen = set()
    while env is not None and id(env) not in seen:
        if isinstance(env, CheckpointPool):
            return env
        seen.add(id(env))
        env = getattr(env, "env", None)
    return None


def max_grad_split(a: np.ndarray, b: np.ndarray, passes) -> np.ndarray:
    """The share of ``max(a, b)``'s gradient that reaches ``a`` (all where a > b, half on a tie, as torch's
    ``maximum``), times ``passes`` (whether ``a``'s own clamp lets it through)."""
    return ((a > b) + 0.5 * (a == b)) * passes


class PPOTrainer:
    """Builds the envs and one network per learnable seat, then ``train()``s them.

    ``learners`` maps a learner name (``agent_0``, ``user_0``.., or ``shared`` in
    selfplay) to its network; ``seat`` maps each live agent to its learner. ``pools``: each env's
    ``CheckpointPool`` (empty unless the env is one); ``curriculum``: the user is paid SCOPE's
    group curriculum reward.
    """

    def __init__(self, cfg: PPOConfig):
        check_config(cfg)
        self.cfg = cfg
        random.seed(cfg.seed)
        np.random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.envs = [scope_envs.make(cfg.env_id, **cfg.env_kwargs) for _ in range(cfg.num_envs)]
        self._vec = None  # the batched rollouts' vec env over self.envs (built on first use)
        env = self.envs[0]
        users = [a for a in env.possible_agents if a != AGENT]
        if cfg.selfplay and len(users) != 1:
            raise ValueError(f"selfplay needs an env with one learnable user (a cotrain id), got {cfg.env_id!r}")
        game = env.unwrapped.game
        self.curriculum = bool(users) and getattr(game, "user_reward", None) == "curriculum"
        if self.curriculum and cfg.group_size < 2:
            raise ValueError(f"the curriculum user reward is computed over a group of episodes: group_size must "
                             f"be >= 2 with user_reward='curriculum', got group_size={cfg.group_size}")
        # the curriculum's (target_var, width), as the game checked them; raises where it has no agent_score
        self.curriculum_setting = curriculum_setting(game) if self.curriculum else None
        pools = [find_pool(e) for e in self.envs]
        self.pools: list[CheckpointPool] = pools if all(p is not None for p in pools) else []
        self.dims = {a: env.observation_space(a)["observation"].shape[0] for a in env.possible_agents}
        self.n_acts = {a: env.action_space(a).n for a in env.possible_agents}
        if cfg.selfplay:
            self.in_dim, self.out_dim = 2 + max(self.dims.values()), max(self.n_acts.values())
            self.learners = {"shared": ActorCritic(self.in_dim, self.out_dim, cfg.hidden)}
            self.seat = {a: "shared" for a in env.possible_agents}
        else:
            self.learners = {a: ActorCritic(self.dims[a], self.n_acts[a], cfg.hidden) for a in env.possible_agents}
            self.seat = {a: a for a in env.possible_agents}
        # the frozen initial policy of every network that plays a user (KL anchor)
        self.init: dict[str, ActorCritic] = {}
        if cfg.user_init not in ("frozen", "random"):
            raise ValueError(f"user_init must be 'frozen' or 'random', got {cfg.user_init!r}")
        user_nets = sorted({self.seat[u] for u in users})
        if user_nets and cfg.user_init == "frozen":  # clone once; population members start as copies
            self.behaviour_clone(self.learners[user_nets[0]], users[0])
            for name in user_nets[1:]:
                self.learners[name].load_state_dict(self.learners[user_nets[0]].state_dict())
        for name in user_nets:
            self.init[name] = copy.deepcopy(self.learners[name]).requires_grad_(False)
        # the rollouts' forward passes and the update run in numpy on the modules' own memory (numpy_ac):
        # at this size torch's per-op overhead is most of the time. params[name]: the critic's 6 arrays, then
        # the actor's; the anchors' actors are views of their (frozen) modules
        self.params, self.optimizers, self.grads = {}, {}, {}
        for name, net in self.learners.items():
            flat, self.params[name] = bind(net)
            self.optimizers[name] = Adam(flat, lr=cfg.learning_rate, eps=1e-5)
            grad = np.zeros_like(flat)
            views = views_like(grad, self.params[name])
            self.grads[name] = (grad, views[:6], views[6:])  # the flat buffer, the critic's, the actor's
        self.anchors = {name: [p.detach().numpy() for p in net.parameters()][6:] for name, net in self.init.items()}
        self.rng = np.random.default_rng([ACT_KEY, cfg.seed])
        self.agent_steps = 0  # agent_0 decisions so far (the budget)
        self.env_steps = 0  # env.step calls so far (throughput)
        self.updates = 0  # PPO update rounds (iterations) so far: the checkpoint pool's clock
        self._seeded = False

    # -- observations ------------------------------------------------------------
    def encode(self, agent: str, obs: dict) -> tuple[np.ndarray, np.ndarray]:
        """The network input and action mask of ``agent``; selfplay prepends the role and pads."""
        x, m = obs["observation"], obs["action_mask"].astype(bool)
        if not self.cfg.selfplay:
            return x, m
        return selfplay_input(x, m, agent != AGENT, self.in_dim, self.out_dim)

    def act(self, requests: list[tuple[str, dict]], greedy: bool = False) -> list[dict]:
        """Decisions for a batch of (agent, obs): one forward pass per learner."""
        out: list[dict] = [{} for _ in requests]
        groups: dict[str, list[int]] = {}
        for i, (agent, _) in enumerate(requests):
            groups.setdefault(self.seat[agent], []).append(i)
        for name, idx in groups.items():
            enc = [self.encode(*requests[i]) for i in idx]
            x, m = np.stack([e[0] for e in enc]), np.stack([e[1] for e in enc])
            a, logp, v, ent = self.decide(name, [requests[i][0] for i in idx], x, m, greedy)
            for j, i in enumerate(idx):
                out[i] = {"x": x[j], "m": m[j], "a": int(a[j]), "logp": float(logp[j]), "v": float(v[j]),
                          "ent": float(ent[j]), "r": 0.0, "user": requests[i][0] != AGENT}
        return out

    # -- rollout -------------------------------------------------------------------
    def decide(self, name: str, agents: list[str], x: np.ndarray, m: np.ndarray,
               greedy: bool = False) -> tuple[np.ndarray, ...]:
        """Learner ``name``'s decisions for rows of (encoded) observations ``x`` and masks ``m``: one forward
        pass. Returns the acts, their log-probabilities, the values and the policy entropies (arrays)."""
        critic, actor = self.params[name][:6], self.params[name][6:]
        x = np.asarray(x, np.float32)
        logp = log_policy(actor, x, m)
        probs = np.exp(logp)
        if greedy:
            a = probs.argmax(-1)
        else:  # inverse CDF; an illegal act (probability 0) never holds the first cumulative sum above u
            cdf = probs.cumsum(-1)
            a = (cdf <= self.rng.random(len(x))[:, None] * cdf[:, -1:]).sum(-1)
        return a, logp[np.arange(len(a)), a], mlp(critic, x)[2][:, 0], entropy(logp, probs)

    def encode_rows(self, agent: str, x: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``encode`` for rows of one agent's observations and masks."""
        m = m.astype(bool)
        if not self.cfg.selfplay:
            return x, m
        xx = np.zeros((len(x), self.in_dim), np.float32)
        xx[:, 1 if agent != AGENT else 0] = 1.0
        xx[:, 2 : 2 + x.shape[1]] = x
        mm = np.zeros((len(m), self.out_dim), bool)
        mm[:, : m.shape[1]] = m
        return xx, mm

    def play(self, envs, n_episodes: int, seed: int | None = None, greedy: bool = False, group_size: int = 1,
             scenario_seed: int | None = None, batched: bool | None = None) -> tuple[list[dict], int]:
        """Play ``n_episodes`` whole episodes on ``envs`` in lockstep.

        ``batched`` (default: the config's ``batched``, off where ``env_kwargs`` hold an option the batched
        engine does not know): step ``vectorize(envs)``, N slots at once (``scope_envs.vec``), instead of the
        scalar envs one at a time; the episodes are the same either way (tests/test_vec.py).

        With ``group_size`` G > 1 the episodes are started in groups of G: the g-th group's episodes all
        reset with ``options={"scenario_seed": derive_seed(scenario_seed, g)}`` (one persona/task, the rest
        of their randomness their own); ``scenario_seed`` defaults to ``seed``.

        Returns the finished episodes, each ``{"traj": {agent: [decision, ...]},
        "return": agent_0's return, "outcome": the game's outcome, "user_acts": [...], "group": its group
        (its start index when ungrouped), "agent_score": the game's ``agent_score()`` (None where the game
        has none), "persona": the dealt card's id}``, and the number of env steps taken."""
        if group_size > 1:
            if n_episodes % group_size:
                raise ValueError(f"n_episodes must be a multiple of group_size, got {n_episodes} and {group_size}")
            scenario_seed = seed if scenario_seed is None else scenario_seed
            if scenario_seed is None:
                raise ValueError("grouped play needs a seed or a scenario_seed to derive the groups' scenarios from")
        trainer = getattr(self, "trainer", self)  # UniformAgent plays with its trainer's config
        if batched is None:
            batched = trainer.cfg.batched and not set(trainer.cfg.env_kwargs) - BATCHED_KWARGS
        if batched:
            if envs is getattr(trainer, "envs", None):  # the training envs: one vec env over them, kept
                if trainer._vec is None:
                    trainer._vec = vectorize(envs)
                vec = trainer._vec
            else:
                vec = vectorize(envs)
            return self.play_vec(vec, n_episodes, seed, greedy, group_size, scenario_seed)
        return self.play_scalar(envs, n_episodes, seed, greedy, group_size, scenario_seed)

    def play_vec(self, vec, n_episodes: int, seed: int | None, greedy: bool, group_size: int,
                 scenario_seed: int | None) -> tuple[list[dict], int]:
        """``play`` on a vec env: episode ``e`` starts in the first slot free after episodes ``< e`` started
        (slot ``i`` takes episode ``i`` first, seeded ``seed + i``), as the scalar loop deals them."""
        n = vec.num_envs
        traj: list[dict] = [{} for _ in range(n)]
        group: list[int | None] = [None] * n
        ended_group: list[int | None] = [None] * n
        episodes: list[dict] = []

        def options(episode: int) -> dict:
            return scenario_options(scenario_seed, episode, group_size)

        first = min(n, n_episodes)
        started = first
        for i in range(first):
            group[i] = i // group_size

        def next_episode(slot: int) -> dict | None:
            nonlocal started
            ended_group[slot] = group[slot]
            if started >= n_episodes:
                return None
            group[slot] = started // group_size
            started += 1
            return options(started - 1)

        vec.next_episode = next_episode
        obs, infos = vec.reset(seed=None if seed is None else [seed + i for i in range(n)],
                               options=[options(i) for i in range(first)] + [{}] * (n - first), slots=range(first))
        agents = vec.possible_agents
        steps = 0
        while not vec.idle.all():
            steps += int((~vec.idle).sum())
            actions = {a: np.zeros(n, np.int64) for a in agents}
            parts: dict[str, list] = {}
            for a in agents:
                slots = np.flatnonzero(infos["active"][a])
                if len(slots):
                    parts.setdefault(self.seat[a], []).append((a, slots))
            # one forward pass per learner, in the order the scalar loop meets them (by first slot)
            for name, part in sorted(parts.items(), key=lambda kv: min(int(s[0]) for _, s in kv[1])):
                rows = [(a, slots, *self.encode_rows_of(a, obs[a]["observation"][slots],
                                                        obs[a]["action_mask"][slots])) for a, slots in part]
                if len(rows) == 1:
                    agent_of = [rows[0][0]] * len(rows[0][1])
                    slots, x, m = rows[0][1], rows[0][2], rows[0][3]
                else:
                    slots = np.concatenate([r[1] for r in rows])
                    order = np.argsort(slots, kind="stable")
                    agent_of = [a for r in rows for a in [r[0]] * len(r[1])]
                    agent_of = [agent_of[k] for k in order]
                    slots, x, m = slots[order], np.concatenate([r[2] for r in rows])[order], \
                        np.concatenate([r[3] for r in rows])[order]
                a, logp, v, ent = self.decide_rows(name, agent_of, x, m, greedy)
                for j, (slot, agent, act, lp, val, en) in enumerate(zip(slots.tolist(), agent_of, a.tolist(),
                                                                          logp.tolist(), v.tolist(), ent.tolist())):
                    traj[slot].setdefault(agent, []).append({"x": x[j], "m": m[j], "a": act, "logp": lp, "v": val,
                                                             "ent": en, "r": 0.0, "user": agent != AGENT})
                    actions[agent][slot] = act
            obs, rewards, _, _, infos = vec.step(actions)
            for agent, r in rewards.items():
                for slot in np.flatnonzero(r).tolist():
                    if traj[slot].get(agent):
                        traj[slot][agent][-1]["r"] += float(r[slot])
            done = infos["_final_info"]
            if done.any():
                final = infos["final_info"]
                for slot in np.flatnonzero(done).tolist():
                    score = float(final["agent_score"][slot])
                    episodes.append({
                        "traj": traj[slot],
                        "return": sum(d["r"] for d in traj[slot].get(AGENT, [])),
                        "outcome": {k: float(v[slot]) for k, v in final["outcome"].items()},
                        "user_acts": list(final["user_acts"][slot]),
                        "group": ended_group[slot],
                        "agent_score": None if np.isnan(score) else score,
                        "persona": final["persona"][slot],
                    })
                    traj[slot] = {}
        return episodes, steps

    def encode_rows_of(self, agent: str, x: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.encode_rows(agent, x, m)

    def decide_rows(self, name: str, agents: list[str], x: np.ndarray, m: np.ndarray,
                    greedy: bool) -> tuple[np.ndarray, ...]:
        return self.decide(name, agents, x, m, greedy)

    def play_scalar(self, envs, n_episodes: int, seed: int | None, greedy: bool, group_size: int,
                    scenario_seed: int | None) -> tuple[list[dict], int]:
        """``play`` stepping the scalar envs one at a time (the trainer before ``make_vec``)."""
        n = len(envs)
        obs, infos = [None] * n, [None] * n
        traj: list[dict] = [{} for _ in range(n)]
        group: list[int | None] = [None] * n
        started = steps = 0
        episodes = []

        def scenario(episode: int) -> dict:  # reset's keyword arguments: none when ungrouped (today's resets)
            return {"options": opts} if (opts := scenario_options(scenario_seed, episode, group_size)) else {}

        for i, env in enumerate(envs):
            if started < n_episodes:
                obs[i], infos[i] = env.reset(seed=None if seed is None else seed + i, **scenario(started))
                group[i] = started // group_size
                started += 1
        live = [obs[i] is not None for i in range(n)]
        while any(live):
            requests, where = [], []
            for i in range(n):
                if live[i]:
                    for agent in envs[i].agents:
                        if infos[i][agent]["active"]:
                            requests.append((agent, obs[i][agent]))
                            where.append((i, agent))
            decisions = self.act(requests, greedy)
            chosen = [{a: 0 for a in envs[i].agents} if live[i] else None for i in range(n)]
            for (i, agent), d in zip(where, decisions):
                chosen[i][agent] = d["a"]
                traj[i].setdefault(agent, []).append(d)
            for i in range(n):
                if not live[i]:
                    continue
                obs[i], rew, _, _, infos[i] = envs[i].step(chosen[i])
                steps += 1
                for agent, r in rew.items():
                    if traj[i].get(agent):
                        traj[i][agent][-1]["r"] += r
                if not envs[i].agents:  # finished: record, then start another if more are due
                    game = envs[i].unwrapped.game
                    episodes.append({
                        "traj": traj[i],
                        "return": sum(d["r"] for d in traj[i].get(AGENT, [])),
                        "outcome": game.outcome(),
                        "user_acts": [t.act for t in game.history if t.role == game.user_role],
                        "group": group[i],
                        "agent_score": agent_score(game),
                        "persona": getattr(game.persona, "id", None),
                    })
                    traj[i] = {}
                    if started < n_episodes:
                        obs[i], infos[i] = envs[i].reset(**scenario(started))
                        group[i] = started // group_size
                        started += 1
                    else:
                        live[i] = False
        return episodes, steps

    # -- the group's user reward ---------------------------------------------------------
    def assign_curriculum(self, episodes: list[dict]) -> list[float]:
        """SCOPE's curriculum user reward: every user trajectory's terminal reward becomes the curriculum value of
        the agent scores of its group (``groups.curriculum_values``; the env paid 0). Returns each group's value,
        in group order."""
        values = curriculum_values([ep["agent_score"] for ep in episodes], [ep["group"] for ep in episodes],
                                   *self.curriculum_setting)
        for ep in episodes:
            value = values.get(ep["group"])
            for agent, decisions in ep["traj"].items():
                if value is not None and agent != AGENT and decisions:
                    decisions[-1]["r"] = value
        return [values[g] for g in sorted(values)]

    # -- learning --------------------------------------------------------------------
    def gae(self, decisions: list[dict]) -> tuple[np.ndarray, np.ndarray]:
        """Advantages and returns of one agent's decisions in one finished episode."""
        r = np.array([d["r"] for d in decisions], np.float32)
        v = np.array([d["v"] for d in decisions], np.float32)
        adv = np.zeros_like(r)
        last = 0.0
        for t in reversed(range(len(r))):
            next_v = v[t + 1] if t + 1 < len(r) else 0.0  # the episode ended: no bootstrap
            delta = r[t] + self.cfg.gamma * next_v - v[t]
            last = delta + self.cfg.gamma * self.cfg.gae_lambda * last
            adv[t] = last
        return adv, adv + v

    def reward_to_go(self, decisions: list[dict]) -> np.ndarray:
        """The discounted return from each decision on (grpo's value-loss target)."""
        ret = np.zeros(len(decisions), np.float32)
        last = 0.0
        for t in reversed(range(len(decisions))):
            last = decisions[t]["r"] + self.cfg.gamma * last
            ret[t] = last
        return ret

    def grpo(self, episodes: list[dict]) -> dict[tuple[int, str], float]:
        """GRPO's advantage of each (episode, agent): the agent's episode return minus the mean of its
        returns over the group's episodes where it acted (``group_advantages``). Every agent is its own
        learner here (agent_0's return for agent_0, the user's for the user, also in selfplay); an episode
        where a frozen snapshot played the user has no user decisions and does not enter the user's mean."""
        out = {}
        for agent in sorted({a for ep in episodes for a, ds in ep["traj"].items() if ds}):
            keys = [k for k, ep in enumerate(episodes) if ep["traj"].get(agent)]
            returns = [sum(d["r"] for d in episodes[k]["traj"][agent]) for k in keys]
            adv = group_advantages(returns, [episodes[k]["group"] for k in keys], self.cfg.grpo_std_norm)
            out.update({(k, agent): float(a) for k, a in zip(keys, adv)})
        return out

    def batches(self, episodes: list[dict]) -> dict[str, dict[str, np.ndarray]]:
        """Each learner's decisions of this iteration as arrays. ``gae``: GAE advantages, lambda-returns as
        value targets; ``grpo``: every decision of an episode gets its group-relative advantage, the value
        head (not used for the advantage) is still fit to the reward-to-go."""
        rows: dict[str, list] = {}
        group_adv = self.grpo(episodes) if self.cfg.advantage == "grpo" else None
        for k, ep in enumerate(episodes):
            for agent, decisions in ep["traj"].items():
                if group_adv is None:
                    adv, ret = self.gae(decisions)
                else:
                    adv = np.full(len(decisions), group_adv[k, agent], np.float32)
                    ret = self.reward_to_go(decisions)
                for d, a_, r_ in zip(decisions, adv, ret):
                    rows.setdefault(self.seat[agent], []).append((d, a_, r_))
        out = {}
        for name, rs in rows.items():
            out[name] = {
                "x": np.stack([d["x"] for d, _, _ in rs]).astype(np.float32),
                "m": np.stack([d["m"] for d, _, _ in rs]).astype(bool),
                "a": np.array([d["a"] for d, _, _ in rs], np.int64),
                "logp": np.array([d["logp"] for d, _, _ in rs], np.float32),
                "v": np.array([d["v"] for d, _, _ in rs], np.float32),
                "user": np.array([d["user"] for d, _, _ in rs], bool),
                "adv": np.array([a_ for _, a_, _ in rs], np.float32),
                "ret": np.array([r_ for _, _, r_ in rs], np.float32),
            }
        return out

    def update(self, name: str, b: dict[str, np.ndarray]) -> dict[str, float]:
        """Clipped PPO on one learner's batch (plus, for users, the KL anchor and the diversity term).

        The loss is CleanRL's; its gradient with respect to the actor's logits z is written out (p the
        policy, logp its log-probabilities; every term of it is 0 on illegal acts, where p is 0):
        d logp[a] / dz = onehot(a) - p, d entropy / dz = -p (logp + entropy) and d KL(p||q) / dz =
        p (logp - q - KL). Where torch's ``max`` ties it sends half the gradient each way, and ``clamp`` passes
        it at its bounds; so does this. tests/test_ppo.py holds the update to torch autograd and torch's Adam."""
        cfg, opt = self.cfg, self.optimizers[name]
        critic, actor = self.params[name][:6], self.params[name][6:]
        grad, grad_critic, grad_actor = self.grads[name]
        n = len(b["a"])
        # ceil: num_minibatches near-equal parts (n // num_minibatches left a stray minibatch of up to
        # num_minibatches - 1 rows, which took a whole optimizer step on its own; until 2026-11-30)
        mb_size = max(cfg.min_minibatch, -(-n // cfg.num_minibatches))  # population members see 1/K of the data
        ent_coef = np.where(b["user"], cfg.user_ent_coef, cfg.ent_coef).astype(np.float32)
        others = [self.params[o][6:] for o in self.learners if o != name and o.startswith("user_")] \
            if name.startswith("user_") else []  # the other population members' actors
        anchor = self.anchors.get(name) if cfg.user_kl_coef > 0 else None
        c = cfg.clip_coef
        stats = {}
        columns = ("x", "m", "a", "logp", "v", "user", "adv", "ret")
        for epoch in range(cfg.update_epochs):
            perm = self.rng.permutation(n)
            shuffled = [b[k][perm] for k in columns] + [ent_coef[perm]]  # minibatches are then contiguous views
            for start in range(0, n, mb_size):
                x, m, a, old_logp, old_v, user, adv, ret, mb_ent_coef = (t[start : start + mb_size] for t in shuffled)
                rows = np.arange(len(a))
                per_row = 1.0 / len(a)
                # policy: the clipped surrogate
                h1, h2, logits = mlp(actor, x)
                logp = normalize(logits, m)
                p = np.exp(logp)
                logratio = logp[rows, a] - old_logp
                ratio = np.exp(logratio)
                if cfg.norm_adv and cfg.advantage == "gae" and len(a) > 1:  # grpo: the group is the baseline
                    adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
                surrogate, clipped = -adv * ratio, -adv * np.clip(ratio, 1 - c, 1 + c)
                through = max_grad_split(surrogate, clipped, True) \
                    + max_grad_split(clipped, surrogate, (ratio >= 1 - c) & (ratio <= 1 + c))
                d_logratio = (per_row * -adv * ratio * through).astype(np.float32)
                dz = p * -d_logratio[:, None]
                dz[rows, a] += d_logratio
                # the entropy bonus
                ent = entropy(logp, p)
                dz += (mb_ent_coef * per_row)[:, None] * p * (logp + ent[:, None])
                # the users' KL to their initial policy, over the user rows
                kl_init = 0.0
                if anchor is not None and user.any():
                    q = log_policy(anchor, x, m)
                    kl = (p * (logp - q)).sum(-1)
                    kl_init = float(kl[user].mean())
                    weight = np.float32(cfg.user_kl_coef / user.sum()) * user
                    dz += weight[:, None] * p * (logp - q - kl[:, None])
                # the population's diversity: each member's mean KL from the others, capped
                diversity = 0.0
                if cfg.diversity_coef > 0 and others:
                    qs = [log_policy(o, x, m) for o in others]
                    kls = np.stack([(p * (logp - q)).sum(-1) for q in qs])
                    mean_kl = kls.mean(0)
                    diversity = float(np.minimum(mean_kl, cfg.diversity_cap).mean())
                    weight = np.float32(-cfg.diversity_coef * per_row / len(qs)) * (mean_kl <= cfg.diversity_cap)
                    for q, kl in zip(qs, kls):
                        dz += weight[:, None] * p * (logp - q - kl[:, None])
                # the value loss
                c1, c2, v = mlp(critic, x)
                v = v[:, 0]
                if cfg.clip_vloss:
                    diff = v - old_v
                    v_clipped = old_v + np.clip(diff, -c, c)
                    err, err_clipped = (v - ret) ** 2, (v_clipped - ret) ** 2
                    v_loss = 0.5 * float(np.maximum(err, err_clipped).mean())
                    d_v = (v - ret) * max_grad_split(err, err_clipped, True) \
                        + (v_clipped - ret) * max_grad_split(err_clipped, err, (diff >= -c) & (diff <= c))
                else:
                    v_loss = 0.5 * float(((v - ret) ** 2).mean())
                    d_v = v - ret
                d_v = (cfg.vf_coef * per_row * d_v).astype(np.float32)[:, None]
                mlp_backward(actor, x, h1, h2, dz.astype(np.float32, copy=False), grad_actor)
                mlp_backward(critic, x, c1, c2, d_v, grad_critic)
                norm = float(np.sqrt(np.dot(grad, grad)))
                grad *= min(1.0, cfg.max_grad_norm / (norm + 1e-6))  # clip_grad_norm_
                opt.step(grad)
                if epoch == cfg.update_epochs - 1 and start + mb_size >= n:  # the last minibatch's are reported
                    stats = {"pg_loss": float(np.maximum(surrogate, clipped).mean()), "v_loss": v_loss,
                             "entropy": float(ent.mean()), "approx_kl": float(((ratio - 1) - logratio).mean()),
                             "kl_init": kl_init, "diversity": diversity}
        return stats

    def train(self, callback: Callable[[dict], None] | None = None) -> list[dict]:
        """Train for ``cfg.total_steps`` persuader decisions. After each iteration ``callback``
        (if given) receives that iteration's log row; the rows are returned."""
        cfg = self.cfg
        history = []
        it = 0
        while self.agent_steps < cfg.total_steps:
            t0 = time.perf_counter()
            if cfg.anneal_lr:
                frac = max(0.0, 1.0 - self.agent_steps / cfg.total_steps)
                for opt in self.optimizers.values():
                    opt.lr = frac * cfg.learning_rate
            seed = None if self._seeded else cfg.seed * 10_000
            self._seeded = True
            # grouped: the iteration's scenarios, one per group, from the run's seed and the update count
            episodes, steps = self.play(self.envs, cfg.episodes_per_iter, seed=seed, group_size=cfg.group_size,
                                        scenario_seed=derive_seed(cfg.seed, self.updates))
            curriculum = self.assign_curriculum(episodes) if self.curriculum else None
            self.env_steps += steps
            agent_dec = [d for ep in episodes for d in ep["traj"].get(AGENT, [])]
            self.agent_steps += len(agent_dec)
            stats = {name: self.update(name, b) for name, b in self.batches(episodes).items()}
            self.updates += 1
            if self.pools and self.updates % self.pools[0].snapshot_every == 0:
                self.snapshot_user()
            user_dec = [d for ep in episodes for a, ds in ep["traj"].items() if a != AGENT for d in ds]
            row = {
                "iteration": it, "agent_steps": self.agent_steps, "env_steps": self.env_steps,
                "return": float(np.mean([ep["return"] for ep in episodes])),
                "policy_entropy": float(np.mean([d["ent"] for d in agent_dec])),
                "user_entropy": float(np.mean([d["ent"] for d in user_dec])) if user_dec else float("nan"),
                "steps_per_s": steps / (time.perf_counter() - t0),
                "losses": stats,
            }
            if cfg.group_size > 1:
                row.update(group_diagnostics_of(episodes))
            if curriculum is not None:
                row["curriculum_reward"] = float(np.mean(curriculum))
            if self.pools:
                row["pool_entries"] = len(self.pools[0].entries)
                row["live_user_episode_frac"] = float(np.mean([any(a != AGENT and ds for a, ds in ep["traj"].items())
                                                               for ep in episodes]))
            history.append(row)
            if callback:
                callback(row)
            it += 1
        return history

    def snapshot_user(self) -> PolicySnapshot:
        """Freeze the live user's network into a ``PolicySnapshot`` and add it to every env's pool (one
        frozen copy shared by all envs; the oldest snapshot leaves a full pool)."""
        live = next(a for a in self.envs[0].possible_agents if a != AGENT)
        snapshot = PolicySnapshot(self.learners[self.seat[live]], selfplay=self.cfg.selfplay)
        for pool in self.pools:
            pool.add_snapshot(snapshot)
        return snapshot

    def behaviour_clone(self, net: ActorCritic, user: str) -> None:
        """Fit ``net``'s user policy to the game's frozen simulator on the training cards (cross-entropy
        to its full distribution); the persuader side of the data plays random legal acts."""
        cfg = self.cfg
        game = scope_envs.registry[cfg.env_id].game
        kwargs = {k: v for k, v in cfg.env_kwargs.items() if k not in POPULATION_KWARGS}
        sim = scope_envs.make(f"{game}-frozen", **kwargs).unwrapped.members[0]
        env = scope_envs.make(f"{game}-cotrain", **kwargs)
        role = env.unwrapped.game.user_role
        rng = np.random.default_rng(cfg.seed + 777)
        xs, ms, ps = [], [], []
        obs, infos = env.reset(seed=cfg.seed + 777)
        for ep in range(cfg.bc_episodes):
            if ep:
                obs, infos = env.reset()
            while env.agents:
                actions = {}
                for a in env.agents:
                    legal = np.flatnonzero(obs[a]["action_mask"])
                    if a == "user_0" and infos[a]["active"]:
                        p = sim.distribution(env.unwrapped.view(role))
                        x, m = self.encode(user, obs[a])
                        target = np.zeros(len(m), np.float32)
                        target[: len(p)] = p
                        xs.append(x), ms.append(m), ps.append(target)
                        actions[a] = int(rng.choice(len(p), p=p))
                    else:
                        actions[a] = int(rng.choice(legal))
                obs, _, _, _, infos = env.step(actions)
        x, m, p = (torch.as_tensor(np.stack(v)) for v in (xs, ms, ps))
        opt = torch.optim.Adam(net.actor.parameters(), lr=3e-3)
        g = torch.Generator().manual_seed(cfg.seed)
        for _ in range(cfg.bc_steps):
            idx = torch.randint(len(x), (256,), generator=g)
            logp = torch.log_softmax(net.actor(x[idx]).masked_fill(~m[idx], MASKED_LOGIT), -1)
            loss = -(p[idx] * logp.clamp(min=-1e4)).sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    # -- save / load -----------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """``path/config.json`` (the PPOConfig) and ``path/model.pt`` (the state dicts)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.json").write_text(json.dumps(asdict(self.cfg), indent=1))
        torch.save({"learners": {n: net.state_dict() for n, net in self.learners.items()},
                    "init": {n: net.state_dict() for n, net in self.init.items()},
                    "agent_steps": self.agent_steps, "env_steps": self.env_steps}, path / "model.pt")

    @classmethod
    def load(cls, path: str | Path) -> PPOTrainer:
        path = Path(path)
        cfg = PPOConfig(**json.loads((path / "config.json").read_text()))
        trainer = cls(dataclasses.replace(cfg, user_init="random"))  # no cloning: the weights are loaded
        trainer.cfg = cfg
        state = torch.load(path / "model.pt", weights_only=True)
        for n, sd in state["learners"].items():
            trainer.learners[n].load_state_dict(sd)
        for n, sd in state["init"].items():
            trainer.init[n].load_state_dict(sd)
        trainer.agent_steps, trainer.env_steps = state["agent_steps"], state["env_steps"]
        return trainer


def entropy_of_counts(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum()) if len(p) else 0.0


def group_diagnostics_of(episodes: list[dict]) -> dict[str, float]:
    """The collapse diagnostics of one grouped rollout (``groups.group_diagnostics`` over agent_0's returns and
    scores) and ``sim_reply_entropy``, the entropy (nats) of the user's act frequencies over the episodes,
    whoever played the user."""
    out = group_diagnostics([ep["return"] for ep in episodes], [ep["agent_score"] for ep in episodes],
                            [ep["group"] for ep in episodes])
    user_acts = np.array([a for ep in episodes for a in ep["user_acts"]], dtype=int)
    out["sim_reply_entropy"] = entropy_of_counts(np.bincount(user_acts)) if len(user_acts) else 0.0
    return out


UNIFORM_KEY = 0x756E69  # the uniform player's generator: [UNIFORM_KEY, evaluation seed]


class UniformAgent:
    """``agent_0`` plays uniformly at random over its legal acts (the benchmark's floor, ``random``): the
    network's outputs are never read. Draws come from this object's own generator (``seed``), so the play is
    reproducible whatever the global RNGs hold. A learnable user, where an env has one, still plays
    ``trainer``'s network. ``play`` is ``PPOTrainer.play`` (it needs only ``act``)."""

    play = PPOTrainer.play
    play_vec = PPOTrainer.play_vec
    play_scalar = PPOTrainer.play_scalar

    def __init__(self, trainer: PPOTrainer, seed: int):
        self.trainer = trainer
        self.rng = np.random.default_rng([UNIFORM_KEY, seed])
        self.seat = {a: "uniform" if a == AGENT else name for a, name in trainer.seat.items()}

    def encode_rows_of(self, agent: str, x: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (x, m.astype(bool)) if agent == AGENT else self.trainer.encode_rows(agent, x, m)

    def decide_rows(self, name: str, agents: list[str], x: np.ndarray, m: np.ndarray,
                    greedy: bool) -> tuple[np.ndarray, ...]:
        """``agent_0``'s rows drawn uniformly over the legal acts, one uniform per row in row order (as ``act``
        draws them: the same acts); the users' rows by the trainer's networks."""
        if name != "uniform":
            return self.trainer.decide(name, agents, x, m, greedy)
        n = m.sum(1)
        k = np.floor(self.rng.random(len(m)) * n).astype(np.int64)  # the k-th legal act of each row
        a = (np.cumsum(m, 1) <= k[:, None]).sum(1)
        return a, -np.log(n), np.zeros(len(m)), np.log(n)

    def act(self, requests: list[tuple[str, dict]], greedy: bool = False) -> list[dict]:
        """Decisions for a batch of (agent, obs); ``greedy`` applies only to the users' networks."""
        out: list[dict] = [{} for _ in requests]
        users = [i for i, (agent, _) in enumerate(requests) if agent != AGENT]
        if users:
            for i, d in zip(users, self.trainer.act([requests[i] for i in users], greedy)):
                out[i] = d
        for i, (agent, obs) in enumerate(requests):
            if agent == AGENT:
                m = obs["action_mask"].astype(bool)
                legal = np.flatnonzero(m)
                n = len(legal)
                out[i] = {"x": obs["observation"], "m": m, "a": int(legal[int(self.rng.random() * n)]),
                          "logp": -float(np.log(n)), "v": 0.0, "ent": float(np.log(n)), "r": 0.0, "user": False}
        return out


def evaluate(trainer: PPOTrainer, env_id: str | Callable[[], object], episodes: int = 500, seed: int = 12345,
             num_envs: int = 64, greedy: bool = False, uniform: bool = False, **env_kwargs) -> dict:
    """Play ``episodes`` episodes of ``env_id`` with the trained persuader (and, where the env has
    learnable users, the trained user networks). Returns ``success`` (the mean of the game's
    ``success_metric`` outcome — for p4g the actual donation in dollars, for cooperbench the
    cooperative success rate — or of agent_0's return), ``outcome`` (the mean of every outcome key),
    ``policy_entropy`` (mean entropy of the persuader's policy per decision, nats), ``sim_entropy``
    (entropy of the user's act frequencies over all its turns, nats) and ``returns``.

    ``env_id`` is a registered id (each env ``scope_envs.make(env_id, **env_kwargs)``) or a factory: a
    callable that returns a fresh env each call (e.g. a panel member's ``panel_env``; no ``env_kwargs``
    then). ``uniform=True``: ``agent_0`` plays uniformly at random over its legal acts instead of its network
    (``UniformAgent``, drawing from a generator seeded by ``seed``): the random-play floor."""
    if callable(env_id):
        if env_kwargs:
            raise ValueError(f"env_kwargs go with an env id, not with an env factory; got {sorted(env_kwargs)}")
        envs = [env_id() for _ in range(num_envs)]
    else:
        envs = [scope_envs.make(env_id, **env_kwargs) for _ in range(num_envs)]
    player = UniformAgent(trainer, seed) if uniform else trainer
    batched = trainer.cfg.batched and not set(env_kwargs) - BATCHED_KWARGS  # else the scalar loop implements it
    eps, _ = player.play(envs, episodes, seed=seed, greedy=greedy, batched=batched)
    returns = np.array([e["return"] for e in eps])
    n_user = envs[0].action_space(envs[0].possible_agents[-1]).n if len(envs[0].possible_agents) > 1 else None
    user_acts = np.concatenate([e["user_acts"] for e in eps]).astype(int)
    counts = np.bincount(user_acts, minlength=n_user or 1)
    outcome = {k: float(np.mean([e["outcome"][k] for e in eps])) for k in eps[0]["outcome"]}
    metric = envs[0].unwrapped.game.success_metric
    return {
        "success": outcome[metric] if metric else float(returns.mean()),
        "outcome": outcome,
        "policy_entropy": float(np.mean([d["ent"] for e in eps for d in e["traj"].get(AGENT, [])])),
        "sim_entropy": entropy_of_counts(counts),
        # agent_0 got nothing (p4g: no gift, the persuadee refused; tau2: task failed; cooperbench: nothing done)
        "zero_score_frac": float(np.mean([e["agent_score"] == 0 for e in eps if e["agent_score"] is not None]))
        if any(e["agent_score"] is not None for e in eps) else float("nan"),
        "returns": returns,
    }
