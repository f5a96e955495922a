"""Act-level multi-agent PPO on the ``act`` surface, CleanRL style: config, networks, trainer, save/load.

It trains every seat the regime makes learnable: ``agent_0`` (the persuader) against ``frozen``, ``vs``,
``rotation`` or any single-agent id; also the user ``user_0`` in ``cotrain``; K users in ``population``
(``user_k`` learns from the episodes it played, ``diversity_coef`` pushes them apart); with ``selfplay`` one
network plays both roles of a ``cotrain`` id, told its role in the observation. Learnable users start from a
behaviour clone of the game's frozen simulator (``user_init``) and keep a KL penalty toward it.

``PPOTrainer.step()`` is one iteration: whole episodes from the rollout collector (``scope_envs.train.rollout``),
the advantages, the clipped PPO update of every learner. ``train()`` steps until ``total_steps`` decisions of
``agent_0``, the budget that is equal across regimes. ``step(env)`` trains an iteration against the simulator
of the caller's choice, so that a curriculum over simulators is a loop over ``step`` (docs/trainers.md).
Episodes end within a few turns and are collected whole, so GAE (``scope_envs.train.advantage``) needs no
bootstrap; an agent's reward that arrives on another's turn is credited to its own last decision.

SCOPE's training (arXiv 2608.12253) is off by default: groups of ``group_size`` episodes on one scenario,
GRPO's group-relative advantage, the curriculum user reward and the collapse diagnostics (their definitions:
``scope_envs.train.groups``), a checkpoint pool of the live user's past networks (``PolicySnapshot``).
SCOPE's settings: ``group_size=8, advantage="grpo", grpo_std_norm=False``. A user whose game pays
``user_reward="realism"`` is paid by a discriminator of the game's real reply pairs (``scope_envs.train.realism``).

The networks are torch modules (saved, loaded and cloned as such), but the rollouts' forward passes and the
update run in numpy on the modules' own memory (``scope_envs.train.numpy_ac``, its gradient held to torch
autograd by the tests): at this size torch's per-op overhead was most of the training time. For the same
reason training runs on one BLAS and one torch thread (``PPOConfig.threads``), as ``scope-envs bench`` does.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from threadpoolctl import threadpool_limits
from torch.distributions import Categorical

import scope_envs
from scope_envs.core.checks import check_int, check_number
from scope_envs.core.simulator import Simulator, View
from scope_envs.registry import check_trainable
from scope_envs.files import write_atomic
from scope_envs.train.activation import LIMIT, rational
from scope_envs.train.advantage import gae
from scope_envs.train.behaviour_clone import behaviour_clone
from scope_envs.train.groups import curriculum_setting, curriculum_values, derive_seed, group_advantages
from scope_envs.train.numpy_ac import (
    MASKED_LOGIT,
    Adam,
    bind,
    entropy,
    log_policy,
    log_policy_rows,
    max_grad_split,
    mlp,
    mlp_backward,
    normalize,
    views_like,
)
from scope_envs.train.policy import Decisions
from scope_envs.train.realism import Realism
from scope_envs.train.rollout import (
    Block,
    Rollout,
    UniformAgent,
    collect,
    evaluate,
    evaluation_rng,
    rollout_diagnostics,
)
from scope_envs.vec import BATCHED_KWARGS, MAX_NUM_ENVS, vectorize
from scope_envs.wrappers import CheckpointPool

AGENT = "agent_0"
ADVANTAGES = ("gae", "grpo")
ACT_KEY = 0x616374  # the trainer's generator (acts, minibatch order): [ACT_KEY, seed]
__all__ = ["ActorCritic", "NetworkPolicy", "PPOConfig", "PPOTrainer", "PolicySnapshot", "UniformAgent", "evaluate",
           "load_policy"]  # UniformAgent and evaluate live in scope_envs.train.rollout (imported here for old code)


@dataclass
class PPOConfig:
    """Every setting of a ``PPOTrainer``; ``check_config`` refuses a value out of its range.

    The run:

    * ``env_id``, ``env_kwargs``: the env trained against, ``scope_envs.make(env_id, **env_kwargs)`` on the ``act``
      surface; ``seed``.
    * ``total_steps``: the budget, in ``agent_0``'s decisions (0: no training). It is equal across regimes, whereas
      env steps are not: where the user is a live agent its turns are env steps too.
    * ``num_envs``: envs stepped in lockstep, one batched forward pass per step: an iteration's episodes in one
      wave. ``episodes_per_iter``: whole episodes per PPO iteration.
    * ``batched``: rollouts on ``scope_envs.make_vec``'s batched engine; False: the loop engine (the scalar envs
      one at a time behind the same API; tests/test_vec.py trains identically on both).
    * ``threads``: numpy's BLAS and torch threads while the trainer trains (its behaviour clone, every step): 1, as
      ``scope-envs bench`` runs (these networks are small: a second thread on a busy machine only spins against
      the first); restored after. None: leave them as they are.

    PPO, CleanRL's names: ``learning_rate`` (annealed to 0 with ``anneal_lr``), ``gamma`` (the discount: 1, the
    reward comes at the episode's end), ``gae_lambda``, ``update_epochs``, ``num_minibatches`` (of at least
    ``min_minibatch`` rows), ``clip_coef``, ``clip_vloss``, ``norm_adv``, ``ent_coef`` (the persuader's entropy
    bonus), ``vf_coef``, ``max_grad_norm``; ``hidden``: the networks' hidden width.

    Learnable users (``cotrain``, ``population``, the user role of ``selfplay``):

    * ``user_init``: ``"frozen"`` behaviour-clones the game's frozen simulator (``bc_episodes`` episodes,
      ``bc_steps`` steps); ``"random"``.
    * ``user_ent_coef``; ``user_kl_coef``: KL(user || its initial policy), 0 off (SCOPE's 0.005 is a KL to a
      reference LLM, not to a behaviour clone).
    * ``diversity_coef``: ``population`` rewards each member's KL from the others, capped at ``diversity_cap``.
    * ``selfplay``: one network plays both roles of a ``cotrain`` id, told its role in the observation.

    SCOPE's GRPO: ``group_size`` episodes on one scenario (persona, task; 1: every episode deals its own),
    ``advantage`` ``"gae"`` (a value baseline) or ``"grpo"`` (an episode's return minus its group's mean return),
    ``grpo_std_norm`` (also divide by the group's std; SCOPE: off).
    """

    env_id: str = "p4g-frozen"
    env_kwargs: dict = field(default_factory=dict)
    seed: int = 0
    total_steps: int = 30_000
    num_envs: int = 64
    episodes_per_iter: int = 64
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    gamma: float = 1.0
    gae_lambda: float = 0.95
    update_epochs: int = 4
    num_minibatches: int = 4
    min_minibatch: int = 128
    clip_coef: float = 0.2
    clip_vloss: bool = True
    norm_adv: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 64
    user_init: str = "frozen"
    user_ent_coef: float = 0.01
    user_kl_coef: float = 0.1
    bc_episodes: int = 300
    bc_steps: int = 300
    diversity_coef: float = 0.0
    diversity_cap: float = 1.0
    selfplay: bool = False
    group_size: int = 1
    advantage: str = "gae"
    grpo_std_norm: bool = False
    batched: bool = True
    threads: int | None = 1


def check_config(cfg: PPOConfig) -> None:
    """A ``ValueError`` naming the first setting out of its range (the env-dependent ones, the surface and the
    curriculum user, are the trainer's)."""
    # the counts first: episodes_per_iter=0 trained forever (no iteration took a step), num_envs=0 was an
    # IndexError, a seed out of numpy's legacy range its own message
    check_int("num_envs", cfg.num_envs, 1, MAX_NUM_ENVS)
    check_int("episodes_per_iter", cfg.episodes_per_iter, 1)
    check_int("seed", cfg.seed, 0, 2**32 - 1)
    check_int("total_steps", cfg.total_steps, 0)
    for name in ("hidden", "update_epochs", "num_minibatches", "min_minibatch"):
        check_int(name, getattr(cfg, name), 1)
    for name in ("bc_episodes", "bc_steps"):
        check_int(name, getattr(cfg, name), 0)
    for name in ("learning_rate", "clip_coef", "max_grad_norm", "diversity_cap"):
        check_number(name, getattr(cfg, name), 0, low_open=True)
    for name in ("ent_coef", "vf_coef", "user_ent_coef", "user_kl_coef", "diversity_coef"):
        check_number(name, getattr(cfg, name), 0)
    for name in ("gamma", "gae_lambda"):
        check_number(name, getattr(cfg, name), 0, 1)
    if cfg.advantage not in ADVANTAGES:
        raise ValueError(f"advantage must be one of {ADVANTAGES}, got {cfg.advantage!r}")
    if isinstance(cfg.group_size, bool) or not isinstance(cfg.group_size, int) or cfg.group_size < 1:
        raise ValueError(f"group_size must be an int >= 1, got {cfg.group_size!r}")
    if cfg.advantage == "grpo" and cfg.group_size < 2:
        raise ValueError(f"advantage='grpo' needs groups: group_size must be >= 2, got {cfg.group_size}")
    if cfg.episodes_per_iter % cfg.group_size:
        raise ValueError(f"episodes_per_iter must be a multiple of group_size, got episodes_per_iter="
                         f"{cfg.episodes_per_iter} and group_size={cfg.group_size}")
    for f in dataclasses.fields(cfg):  # a string such as "False" would be read as true
        if f.type == "bool" and not isinstance(getattr(cfg, f.name), (bool, np.bool_)):
            raise ValueError(f"{f.name} must be True or False, got {getattr(cfg, f.name)!r}")
    if cfg.threads is not None and (isinstance(cfg.threads, bool) or not isinstance(cfg.threads, int)
                                    or cfg.threads < 1):
        raise ValueError(f"threads must be an int >= 1 or None (leave them as they are), got {cfg.threads!r}")


@contextlib.contextmanager
def thread_limit(threads: int | None):
    """Inside: numpy's BLAS (threadpoolctl) and torch's intra-op threads set to ``threads``; after: as they
    were. None: left alone."""
    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(threads):
            yield
    finally:
        torch.set_num_threads(before)


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class _Tanh(torch.autograd.Function):
    generate_vmap_rule = True  # (torch.func's transforms, vmap over stacked networks included, go through it)

    @staticmethod
    def forward(z):
        return rational(z.clamp(-LIMIT, LIMIT)).clamp_(-1.0, 1.0)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1.0 - y * y)


class Tanh(nn.Module):
    """The networks' activation in torch: ``scope_envs.train.activation.tanh`` bit for bit (the same
    ``rational``), with tanh's derivative ``1 - tanh^2``."""

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return _Tanh.apply(z)


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs; illegal acts get a logit of ``MASKED_LOGIT`` (-1e9)."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 64):
        super().__init__()
        self.obs_dim, self.n_actions, self.hidden = obs_dim, n_actions, hidden
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), Tanh(),
            layer_init(nn.Linear(hidden, hidden)), Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), Tanh(),
            layer_init(nn.Linear(hidden, hidden)), Tanh(),
            layer_init(nn.Linear(hidden, n_actions), std=0.01),
        )

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)

    def dist(self, x: torch.Tensor, mask: torch.Tensor) -> Categorical:
        # no argument validation: the masked logits are finite by construction, and the check costs as much as
        # the forward pass of these small networks
        return Categorical(logits=self.actor(x).masked_fill(~mask, MASKED_LOGIT), validate_args=False)


def selfplay_input(x: np.ndarray, m: np.ndarray, user: bool, in_dim: int, out_dim: int) -> tuple[np.ndarray, ...]:
    """Rows of one role's observations and masks in the shared network's layout: the role as a one-hot, then
    the role's features, zero-padded; the mask padded with illegal acts."""
    xx = np.zeros((len(x), in_dim), np.float32)
    xx[:, 1 if user else 0] = 1.0
    xx[:, 2 : 2 + x.shape[1]] = x
    mm = np.zeros((len(m), out_dim), bool)
    mm[:, : m.shape[1]] = m
    return xx, mm


class NetworkPolicy:
    """An ``ActorCritic``'s numpy forward pass as a ``Policy`` (``scope_envs.train.policy``): acts sampled
    from the masked softmax by inverse CDF with one uniform of ``rng`` per row (``greedy``: the argmax), with
    their log-probabilities, the critic's values (``values=False``: none, as an evaluation reads none) and the
    entropies. ``params`` are the network's arrays as ``numpy_ac.bind`` lays them out (the critic's 6, then the
    actor's 6). With ``in_dim``/``out_dim`` it is self-play's shared network and ``encode`` tells it each seat's
    role (``selfplay_input``)."""

    def __init__(self, params: list[np.ndarray], rng: np.random.Generator, in_dim: int | None = None,
                 out_dim: int | None = None, values: bool = True):
        self.critic, self.actor, self.rng = params[:6], params[6:], rng
        self.in_dim, self.out_dim, self.values = in_dim, out_dim, values
        if in_dim is None:
            self.encode = None  # one seat's own layout: the collector passes its rows as they are

    def encode(self, seat: str, x: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of ``seat``'s observations and masks in the shared network's layout (``selfplay_input``)."""
        return selfplay_input(x, m.astype(bool), seat != AGENT, self.in_dim, self.out_dim)

    def act(self, obs: np.ndarray, mask: np.ndarray, greedy: bool = False) -> Decisions:
        x = np.asarray(obs, np.float32)
        logp = log_policy(self.actor, x, mask)
        probs = np.exp(logp)
        if greedy:
            a = probs.argmax(-1)
        else:  # inverse CDF; an illegal act (probability 0) never holds the first cumulative sum above u
            cdf = probs.cumsum(-1)
            a = (cdf <= self.rng.random(len(x))[:, None] * cdf[:, -1:]).sum(-1)
        values = mlp(self.critic, x)[2][:, 0] if self.values else None
        return Decisions(a, logp[np.arange(len(a)), a], values, entropy(logp, probs))


class SavedPolicy(NetworkPolicy):
    """``load_policy``'s ``NetworkPolicy``: its ``act`` checks what a caller passes. The trainer's rollouts, which
    pass the rows the envs built, call ``NetworkPolicy.act`` unchecked (the checks cost 2-4% of a call)."""

    def act(self, obs: np.ndarray, mask: np.ndarray, greedy: bool = False) -> Decisions:
        n_in, n_out = self.actor[0].shape[1], self.actor[-1].shape[0]
        if np.ndim(obs) != 2 or np.shape(obs)[1] != n_in or np.shape(mask) != (len(obs), n_out):
            raise ValueError(f"act takes a batch: obs an (n, {n_in}) array and mask (n, {n_out}), got "
                             f"{np.shape(obs)} and {np.shape(mask)} (one observation: obs[None], mask[None])")
        if not np.asarray(mask, bool).any(1).all():
            raise ValueError("every row of the mask needs at least one legal act")
        with np.errstate(over="ignore"):  # the network's own dtype: a value beyond float32 is an infinity, refused
            x = np.asarray(obs, np.float32)
        finite = np.isfinite(x).all(1)
        if not finite.all():  # the network's scores would all be NaN, and the act an illegal one
            raise ValueError(f"obs row {int(np.flatnonzero(~finite)[0])} holds a NaN or an infinity (as float32)")
        return super().act(x, mask, greedy)


@dataclass(frozen=True)
class Networks:
    """Each learner's arrays (``numpy_ac.bind``'s layout) and the seat each plays, as ``Policy``s: the trainer's
    own arrays (live) or copies of them at one moment (``PPOTrainer.networks``).
    ``in_dim``/``out_dim``: self-play's shared network (``NetworkPolicy``)."""

    params: dict[str, list[np.ndarray]]
    seat: dict[str, str]
    in_dim: int | None = None
    out_dim: int | None = None

    def policies_with(self, rng: np.random.Generator, values: bool = True) -> dict[str, NetworkPolicy]:
        """Each seat's network drawing from ``rng`` (``values``: with its critic's values); the seats that share a
        learner share one object."""
        by_learner = {name: NetworkPolicy(p, rng, self.in_dim, self.out_dim, values)
                      for name, p in self.params.items()}
        return {seat: by_learner[name] for seat, name in self.seat.items()}


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
        return self.distributions(np.asarray(view.observation)[None], np.asarray(view.legal, bool)[None])[0]

    def distributions(self, observations: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The copy's masked softmax for rows of observations and legal masks, each row as ``distribution``
        gives it alone (``numpy_ac.log_policy_rows``): a batched vec env asks every slot the snapshot plays at
        once."""
        legal = np.asarray(legal, bool)
        x, m = np.asarray(observations, np.float32), legal
        if self.selfplay:
            x, m = selfplay_input(x, m, True, self.net.obs_dim, self.net.n_actions)
        p = np.exp(log_policy_rows(self.actor, x, m)[:, : legal.shape[1]]).astype(np.float64)
        p[~legal] = 0.0
        return p / p.sum(1, keepdims=True)


def stack_rows(rows: list[np.ndarray], dtype) -> np.ndarray:
    """``np.stack(rows).astype(dtype)`` for equal-shaped rows, several times faster on the thousands of one-decision
    rows of an iteration (one concatenation, no per-row view)."""
    return np.concatenate(rows).reshape(len(rows), *rows[0].shape).astype(dtype, copy=False)


def find_pool(env) -> CheckpointPool | None:
    """The ``CheckpointPool`` in ``env``'s wrapper chain (walking ``.env`` from the outermost), or None."""
    seen = set()
    while env is not None and id(env) not in seen:
        if isinstance(env, CheckpointPool):
            return env
        seen.add(id(env))
        env = getattr(env, "env", None)
    return None


class PPOTrainer:
    """Builds the envs and one network per learnable seat, then ``train()``s them: ``step()`` after ``step()``.

    ``learners`` maps a learner name (``agent_0``, ``user_0``.., or ``shared`` in
    selfplay) to its network; ``seat`` maps each live agent to its learner. ``pools``: each env's
    ``CheckpointPool`` (empty unless the env is one); ``curriculum``: the user is paid SCOPE's
    group curriculum reward; ``realism``: the realism reward (``scope_envs.train.realism.Realism``; None unless the
    user is paid for realism).
    ``agent_steps``, ``env_steps`` and ``updates`` count agent_0's decisions, env
    steps and iterations so far.
    """

    def __init__(self, cfg: PPOConfig):
        check_config(cfg)
        self.cfg = cfg
        self._holding_threads = False  # inside train() or step(): the thread limit is set
        # the whole build under the thread limit too: the networks' orthogonal initialisation (a QR) and the
        # behaviour clone round differently with another thread count
        with self.training_threads():
            random.seed(cfg.seed)
            np.random.seed(cfg.seed)
            torch.manual_seed(cfg.seed)
            check_trainable(cfg.env_id, cfg.env_kwargs)
            self.envs = [scope_envs.make(cfg.env_id, **cfg.env_kwargs) for _ in range(cfg.num_envs)]
            # the simulators step() has trained against besides the config's: (env id, kwargs, their num_envs envs)
            self.other_envs: list[tuple[str, dict, list]] = []
            self._vecs: dict[tuple[int, bool], object] = {}  # a vec env per training env set and engine (first use)
            self._seeded: set[int] = set()  # the training env sets seeded so far (each on its first iteration)
            env = self.envs[0]
            if env.unwrapped.surface.name != "act":
                raise ValueError(f"PPOTrainer trains on the act surface, got surface="
                                 f"{env.unwrapped.surface.name!r} (LLM players train with scope-envs train-llm)")
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
            # the realism user reward (scope_envs.train.realism): None unless the user is paid for realism
            self.realism = Realism.for_game(game, getattr(game, "user_reward", None)) if users else None
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
            self.policies = self.policies_with(self.rng)  # each live seat's network, drawing from the trainer's rng
            self.agent_steps = 0  # agent_0 decisions so far (the budget)
            self.env_steps = 0  # env.step calls so far (throughput)
            self.updates = 0  # PPO update rounds (iterations) so far: the checkpoint pool's clock

    # -- observations ------------------------------------------------------------
    # -- rollouts -----------------------------------------------------------------------
    def encode(self, agent: str, obs: dict) -> tuple[np.ndarray, np.ndarray]:
        """The network input and action mask of ``agent``'s observation; selfplay prepends the role and pads."""
        x, m = obs["observation"], obs["action_mask"].astype(bool)
        if not self.cfg.selfplay:
            return x, m
        xx, mm = selfplay_input(x[None], m[None], agent != AGENT, self.in_dim, self.out_dim)
        return xx[0], mm[0]

    def policies_with(self, rng: np.random.Generator, values: bool = True) -> dict[str, NetworkPolicy]:
        """Each live seat's network as a ``Policy`` drawing from ``rng`` (one object for the seats that share
        a network, as selfplay's; ``values``: with its critic's values); the networks are the trainer's own
        (live), not copies."""
        return self.networks().policies_with(rng, values)

    def networks(self, copy: bool = False) -> Networks:
        """Every seat's network: the trainer's own arrays, or (``copy``) copies of them as they are now, which
        play what ``policies_with`` plays at this moment however the trainer trains on (a learning curve's
        point, played once the row has trained: ``scope_envs.bench.protocol.Curve``)."""
        params = {name: views_like(np.concatenate([p.ravel() for p in ps]), ps) if copy else ps
                  for name, ps in self.params.items()}
        dims = (self.in_dim, self.out_dim) if self.cfg.selfplay else (None, None)
        return Networks(params, dict(self.seat), *dims)

    @property
    def batched_engine(self) -> bool:
        """Whether its training envs step on the batched engine: the config's ``batched``, unless its
        ``env_kwargs`` hold an option that engine does not know (then the loop engine)."""
        return self.cfg.batched and not set(self.cfg.env_kwargs) - BATCHED_KWARGS

    def play(self, envs, n_episodes: int, seed: int | None = None, greedy: bool = False, group_size: int = 1,
             scenario_seed: int | None = None, batched: bool | None = None,
             policies: dict | None = None) -> Rollout:
        """Play ``n_episodes`` whole episodes on ``envs`` (scalar envs of one id) with ``policies`` (default:
        the trainer's, ``self.policies``), by the rollout collector (``scope_envs.train.rollout.collect``).

        ``batched`` (default: the config's ``batched``, off where ``env_kwargs`` hold an option the batched
        engine does not know): step the batched engine over ``envs`` (``scope_envs.vec.vectorize``), else
        the loop engine (``LoopVecEnv``); the episodes are the same either way (tests/test_vec.py).
        ``group_size``, ``scenario_seed``: grouped play (``collect``). Returns the finished episodes and the
        number of env steps taken."""
        if batched is None:
            batched = self.batched_engine
        if any(envs is own for own in self.env_sets()):  # training envs: one vec env over them per engine, kept
            key = (id(envs), batched)
            if key not in self._vecs:
                self._vecs[key] = vectorize(envs, batched=batched)
            vec = self._vecs[key]
        else:
            vec = vectorize(envs, batched=batched)
        return collect(vec, self.policies if policies is None else policies, n_episodes, seed, greedy, group_size,
                       scenario_seed)


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

    def assign_realism(self, episodes: list[dict]) -> dict:
        """The realism user reward (``scope_envs.train.realism``): the discriminator updated on this iteration's
        replies (``Realism.update``), then each user decision credited its own reply's clipped log-odds, weighted,
        over the episode's number of replies. Returns the iteration's figures for the log row."""
        paid = []
        for ep in episodes:
            agent_acts = [d["a"] for d in ep["traj"].get(AGENT, [])]
            for seat, decisions in ep["traj"].items():
                if seat != AGENT and decisions:
                    paid.append((decisions, self.realism.pairs.cells(agent_acts, [d["a"] for d in decisions])))
        figures = self.realism.update([c for _, c in paid])
        for decisions, c in paid:
            replies = np.flatnonzero(c >= 0)
            if len(replies):
                paid_each = self.realism.weight * self.realism.discriminator.rewards(c[replies]) / len(replies)
                for j, r in zip(replies.tolist(), paid_each.tolist()):
                    decisions[j]["r"] += r
        return figures

    # -- learning --------------------------------------------------------------------
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
        """Each learner's decisions of this iteration as arrays. ``gae``: GAE advantages
        (``scope_envs.train.advantage.gae``, float32; every trajectory ended, no bootstrap), lambda-returns as
        value targets; ``grpo``: every decision of an episode gets its group-relative advantage, the value
        head (not used for the advantage) is still fit to the reward-to-go."""
        cfg = self.cfg
        group_adv = self.grpo(episodes) if cfg.advantage == "grpo" else None
        trajectories = [(k, agent, decisions) for k, ep in enumerate(episodes) for agent, decisions in ep["traj"].items()]
        if group_adv is None:
            values = [np.array([d["v"] for d in decisions], np.float32) for _, _, decisions in trajectories]
            advs = gae([[d["r"] for d in decisions] for _, _, decisions in trajectories], values, cfg.gamma,
                       cfg.gae_lambda)
            targets = [(adv, adv + v) for adv, v in zip(advs, values)]
        else:
            targets = [(np.full(len(decisions), group_adv[k, agent], np.float32), self.reward_to_go(decisions))
                       for k, agent, decisions in trajectories]
        rows: dict[str, list] = {}  # each learner's decisions, and its advantages and returns, in episode order
        for (_, agent, decisions), (adv, ret) in zip(trajectories, targets):
            if decisions:
                mine = rows.setdefault(self.seat[agent], [[], [], []])
                mine[0] += decisions
                mine[1].append(adv)
                mine[2].append(ret)
        out = {}
        for name, (ds, advs, rets) in rows.items():
            out[name] = {
                "x": stack_rows([d["x"] for d in ds], np.float32),
                "m": stack_rows([d["m"] for d in ds], bool),
                "a": np.array([d["a"] for d in ds], np.int64),
                "logp": np.array([d["logp"] for d in ds], np.float32),
                "v": np.array([d["v"] for d in ds], np.float32),
                "user": np.array([d["user"] for d in ds], bool),
                "adv": np.concatenate(advs).astype(np.float32, copy=False),
                "ret": np.concatenate(rets).astype(np.float32, copy=False),
            }
        return out

    def update(self, name: str, b: dict[str, np.ndarray]) -> dict[str, float]:
        """Clipped PPO on one learner's batch (plus, for users, the KL anchor and the diversity term).

        The loss is CleanRL's; its gradient with respect to the actor's logits z is written out (p the
        policy, logp its log-probabilities; every term of it is 0 on illegal acts, where p is 0):
        d logp[a] / dz = onehot(a) - p, d entropy / dz = -p (logp + entropy) and d KL(p||q) / dz =
        p (logp - q - KL). Where torch's ``max`` ties it sends half the gradient each way, and ``clamp`` passes
        it at its bounds; so does this. tests/test_act_ppo.py holds the update to torch autograd and torch's Adam."""
        cfg, opt = self.cfg, self.optimizers[name]
        critic, actor = self.params[name][:6], self.params[name][6:]
        grad, grad_critic, grad_actor = self.grads[name]
        n = len(b["a"])
        # ceil: num_minibatches near-equal parts (n // num_minibatches would leave a stray minibatch of up to
        # num_minibatches - 1 rows, which would take a whole optimizer step on its own)
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
                opt.step(grad, min(1.0, cfg.max_grad_norm / (norm + 1e-6)))  # clip_grad_norm_
                if epoch == cfg.update_epochs - 1 and start + mb_size >= n:  # the last minibatch's are reported
                    stats = {"pg_loss": float(np.maximum(surrogate, clipped).mean()), "v_loss": v_loss,
                             "entropy": float(ent.mean()), "approx_kl": float(((ratio - 1) - logratio).mean()),
                             "kl_init": kl_init, "diversity": diversity}
        return stats

    # -- the loop -------------------------------------------------------------------
    def env_sets(self) -> list[list]:
        """The training env sets: the config's (``envs``), then those ``step(env=...)`` built, in first-use order."""
        return [self.envs] + [envs for _, _, envs in self.other_envs]

    def training_envs(self, env: str | tuple[str, dict] | None = None) -> list:
        """The ``num_envs`` scalar envs of the simulator ``env`` (see ``step``): the config's are ``envs``;
        another's are built on its first use, checked to have the config's seats, observation sizes, act counts
        and user reward, and kept."""
        cfg = self.cfg
        if env is None:
            return self.envs
        pair = isinstance(env, tuple) and len(env) == 2 and isinstance(env[0], str) and isinstance(env[1], dict)
        if not (isinstance(env, str) or pair):
            raise ValueError(f"env must be an env id or an (env id, make() kwargs) pair, got {env!r}")
        env_id, kwargs = env if pair else (env, {})
        if env_id == cfg.env_id and kwargs == cfg.env_kwargs:
            return self.envs
        for known_id, known_kwargs, envs in self.other_envs:
            if known_id == env_id and known_kwargs == kwargs:
                return envs
        if self.pools:
            raise ValueError(f"{cfg.env_id} keeps a checkpoint pool of the live user: its trainer trains against "
                             f"that pool only, not {env_id!r}")
        check_trainable(env_id, kwargs)
        envs = [scope_envs.make(env_id, **kwargs) for _ in range(cfg.num_envs)]
        first, mine = envs[0], self.envs[0]
        differs = [what for what, a, b in (
            ("seats", first.possible_agents, mine.possible_agents),
            ("observation sizes", [first.observation_space(a)["observation"].shape for a in first.possible_agents],
             [mine.observation_space(a)["observation"].shape for a in mine.possible_agents]),
            ("act counts", [first.action_space(a).n for a in first.possible_agents],
             [mine.action_space(a).n for a in mine.possible_agents]),
            ("user reward", getattr(first.unwrapped.game, "user_reward", None),
             getattr(mine.unwrapped.game, "user_reward", None)),
            ("checkpoint pool", find_pool(first) is not None, False)) if a != b]
        if differs:
            raise ValueError(f"the trainer's networks were built for {cfg.env_id}: {env_id!r} differs in its "
                             f"{' and '.join(differs)}")
        self.other_envs.append((env_id, kwargs, envs))
        return envs

    @contextlib.contextmanager
    def training_threads(self):
        """The config's thread limit (``PPOConfig.threads``, ``thread_limit``), set once however deeply
        nested (``train`` around its ``step``s)."""
        if self._holding_threads:
            yield
            return
        self._holding_threads = True
        try:
            with thread_limit(self.cfg.threads):
                yield
        finally:
            self._holding_threads = False

    def step(self, env: str | tuple[str, dict] | None = None) -> dict:
        """One training iteration: play ``episodes_per_iter`` whole episodes, compute the advantages, update every
        learner. Returns the iteration's log row (``train`` returns the list of them).

        ``env``: the simulator this iteration trains against: an env id, or an ``(env id, make() kwargs)`` pair,
        as a benchmark method's ``train_envs`` names one; None (default): the config's ``env_id`` and
        ``env_kwargs``. Its ``num_envs`` envs are built on first use and kept (``training_envs``), each set
        seeded on its first iteration (``seed * 10_000``, as the config's), and must have the config's seats,
        observation sizes, act counts and user reward. A curriculum over simulators is then a loop over
        ``step`` that picks ``env`` each iteration (docs/trainers.md). The learning rate anneals over
        ``total_steps`` as in ``train`` (to 0 at the budget); ``step`` does not stop there, its caller does."""
        with self.training_threads():
            envs = self.training_envs(env)
            t0 = time.perf_counter()
            block = self.next_block(envs)
            rollout = self.play(envs, block.n_episodes, seed=block.seed, group_size=block.group_size,
                                scenario_seed=block.scenario_seed)
            return self.learn(rollout, t0)

    def next_block(self, envs: list) -> Block:
        """What this iteration plays on the training env set ``envs`` (``rollout.Block``: the trainer's policies,
        ``episodes_per_iter`` episodes, the set's seed on its first iteration, the iteration's scenarios), with
        the learning rate annealed to it. ``step`` plays it alone; ``scope_envs.train.seeds`` beside other seeds'."""
        cfg = self.cfg
        if cfg.anneal_lr and cfg.total_steps > 0:  # a budget of 0 has nothing to anneal over
            frac = max(0.0, 1.0 - self.agent_steps / cfg.total_steps)
            for opt in self.optimizers.values():
                opt.lr = frac * cfg.learning_rate
        seed = None if id(envs) in self._seeded else cfg.seed * 10_000
        self._seeded.add(id(envs))
        # grouped: the iteration's scenarios, one per group, from the run's seed and the update count
        return Block(self.policies, cfg.episodes_per_iter, seed, cfg.group_size, derive_seed(cfg.seed, self.updates))

    def learn(self, rollout: Rollout, t0: float) -> dict:
        """The rest of an iteration, from its episodes (``rollout``, played from ``next_block``; ``t0``: when
        the iteration began): the user rewards of the group or the discriminator, the advantages, the update
        of every learner, the checkpoint pool's snapshot. Returns the iteration's log row."""
        cfg = self.cfg
        episodes, steps = rollout
        with self.training_threads():
            curriculum = self.assign_curriculum(episodes) if self.curriculum else None
            realism = self.assign_realism(episodes) if self.realism is not None else None
            self.env_steps += steps
            agent_dec = [d for ep in episodes for d in ep["traj"].get(AGENT, [])]
            self.agent_steps += len(agent_dec)
            stats = {name: self.update(name, b) for name, b in self.batches(episodes).items()}
            iteration = self.updates
            self.updates += 1
            if self.pools and self.updates % self.pools[0].snapshot_every == 0:
                self.snapshot_user()
            user_dec = [d for ep in episodes for a, ds in ep["traj"].items() if a != AGENT for d in ds]
            row = {
                "iteration": iteration, "agent_steps": self.agent_steps, "env_steps": self.env_steps,
                "return": float(np.mean([ep["return"] for ep in episodes])),
                "policy_entropy": float(np.mean([d["ent"] for d in agent_dec])),
                "user_entropy": float(np.mean([d["ent"] for d in user_dec])) if user_dec else float("nan"),
                "steps_per_s": steps / (time.perf_counter() - t0),
                "losses": stats,
            }
            if cfg.group_size > 1:
                row.update(rollout_diagnostics(episodes))
            if curriculum is not None:
                row["curriculum_reward"] = float(np.mean(curriculum))
            if realism is not None:
                row.update(realism)
            if self.pools:
                row["pool_entries"] = len(self.pools[0].entries)
                row["live_user_episode_frac"] = float(np.mean([any(a != AGENT and ds for a, ds in ep["traj"].items())
                                                               for ep in episodes]))
        return row

    def train(self, callback: Callable[[dict], None] | None = None) -> list[dict]:
        """``step()`` (the config's simulator) until ``cfg.total_steps`` persuader decisions. After each
        iteration ``callback`` (if given) receives that iteration's log row; the rows are returned."""
        history = []
        with self.training_threads():
            while self.agent_steps < self.cfg.total_steps:
                history.append(self.step())
                if callback:
                    callback(history[-1])
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
        """Fit ``net``'s user policy to the game's frozen simulator (``scope_envs.train.behaviour_clone``)."""
        cfg = self.cfg
        behaviour_clone(net, cfg.env_id, cfg.env_kwargs, cfg.seed, cfg.bc_episodes, cfg.bc_steps, self.encode, user)

    # -- save / load -----------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """``path/config.json`` (the PPOConfig) and ``path/model.pt`` (the state dicts)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = io.BytesIO()  # each file whole: a save cut short leaves the one before, never half a file
        torch.save({"learners": {n: net.state_dict() for n, net in self.learners.items()},
                    "init": {n: net.state_dict() for n, net in self.init.items()},
                    "agent_steps": self.agent_steps, "env_steps": self.env_steps}, state)
        write_atomic(path / "model.pt", state.getvalue())
        write_atomic(path / "config.json", json.dumps(asdict(self.cfg), indent=1))

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


def load_policy(path: str | Path, seat: str = AGENT, seed: int = 0) -> SavedPolicy:
    """A saved trainer's (``PPOTrainer.save``) network of ``seat`` as a ``Policy`` that checks its input
    (``SavedPolicy``), drawing from its own generator (``seed``)."""
    trainer = PPOTrainer.load(path)
    if seat not in trainer.seat:
        raise ValueError(f"the saved trainer has no seat {seat!r}; its seats: {sorted(trainer.seat)}")
    p = trainer.policies_with(evaluation_rng(seed))[seat]
    return SavedPolicy(p.critic + p.actor, p.rng, p.in_dim, p.out_dim, p.values)
