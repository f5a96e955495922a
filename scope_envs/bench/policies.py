"""Adapters to the policy protocol (``scope_envs.train.policy``) for what a benchmark user brings.

``as_policy(obj)`` turns any of these into a ``Policy`` (``act(obs, mask, greedy) -> Decisions``):

* a ``Policy`` already (the package's ``NetworkPolicy``, ``UniformPolicy``, your own class): as it is;
* a Stable-Baselines3 / sb3-contrib model (``PPO``, ``MaskablePPO``, any ``BaseAlgorithm`` with a categorical
  policy): ``SB3Policy`` — the model's action distribution, masked to the legal acts, sampled from the
  adapter's own generator (``reseeded``), so an evaluation is reproducible;
* a function ``f(obs, mask) -> actions`` (n int acts for n rows): ``FunctionPolicy``.

``TrainerPlayers`` is the package's own trainer as a method's result: every seat of its training env played
by its networks, drawing from an evaluation's own generator (``rollout.evaluation_rng(seed)``) so that evaluating (the
learning curve's points included) never touches the trainer's stream. ``load(spec)`` reads a saved policy for
``scope-envs score``: a ``PPOTrainer.save`` folder, an SB3 ``.zip``, or ``file.py:NAME`` / ``module:NAME`` (a
policy, a class or function returning one, or a method's ``Trained``).

``load_user(spec, game, seat)`` reads a learned user for ``scope-envs score --seat user_0``: an SB3 ``.zip`` of a
model trained on that seat's ``SingleAgentView`` (``LearnedUser``) or a saved trainer's network of that seat,
each a ``Simulator`` that ``scope_envs.diagnose`` measures as it measures any simulator.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scope_envs.bench.loading import PluginError, load_object
from scope_envs.core.simulator import Simulator, View
from scope_envs.train.policy import Decisions, Policy, UniformPolicy, masked_logp, sample_masked

SB3_KEY = 0x736233  # an SB3 adapter's generator: [SB3_KEY, seed]


class SB3Policy:
    """An SB3 model as a ``Policy``: its categorical action distribution at each row, illegal acts removed and
    renormalized, sampled from this adapter's generator (``seed``); ``greedy``: the most probable legal act.
    The values are the model's critic where it has one (``predict_values``)."""

    def __init__(self, model, seed: int = 0):
        self.model, self.seed = model, seed
        self.rng = np.random.default_rng([SB3_KEY, seed])
        n = getattr(getattr(model, "action_space", None), "n", None)
        if n is None:
            raise TypeError(f"{type(model).__name__}: an SB3 model with a Discrete action space is needed")
        self.n_acts = int(n)
        # a model trained on ``SingleAgentView`` (``MultiInputPolicy``) reads a dict of the observation and the
        # legal mask; one trained on ``sb3_vec_env`` (``MlpPolicy``) the flat observation
        space = getattr(model, "observation_space", None)
        self.keys = tuple(getattr(space, "spaces", None) or ())
        if self.keys and not set(self.keys) <= {"observation", "action_mask"}:
            raise TypeError(f"{type(model).__name__}: its observation space has keys {sorted(self.keys)}; the "
                            "adapter feeds 'observation' and 'action_mask' (SingleAgentView's) or a flat Box")

    def reseeded(self, seed: int) -> SB3Policy:
        return SB3Policy(self.model, seed)

    @property
    def obs_size(self) -> int | None:
        """The width of the observation the model reads (its ``observation`` key's, or its flat Box's)."""
        space = self.model.observation_space
        space = space["observation"] if self.keys else space
        shape = getattr(space, "shape", None)
        return int(shape[0]) if shape else None

    def act(self, obs: np.ndarray, mask: np.ndarray, greedy: bool = False) -> Decisions:
        logp, values = self.log_probabilities(obs, mask)
        d = sample_masked(logp, self.rng, greedy)
        return Decisions(d.actions, d.logp, values, d.entropy)

    def log_probabilities(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The model's log-probabilities over the legal acts of each row (-inf on the illegal ones) and its
        critic's values (None without a critic): the distribution ``act`` samples, read whole (``LearnedUser``)."""
        import torch

        mask = np.asarray(mask, bool)
        if mask.shape[1] != self.n_acts:
            raise ValueError(f"the model has {self.n_acts} acts, the seat {mask.shape[1]}: trained on another game?")
        policy = self.model.policy
        with torch.no_grad():
            if self.keys:
                given = {"observation": np.asarray(obs), "action_mask": mask}
                x, _ = policy.obs_to_tensor({k: given[k].astype(self.model.observation_space[k].dtype)
                                             for k in self.keys})
            else:
                x = torch.as_tensor(np.asarray(obs, np.float32), device=policy.device)
            logits = policy.get_distribution(x).distribution.logits.cpu().numpy().astype(np.float64)
            values = policy.predict_values(x).cpu().numpy()[:, 0] if hasattr(policy, "predict_values") else None
        return masked_logp(logits, mask), values


def checked_acts(actions, mask: np.ndarray, who: str) -> np.ndarray:
    """``actions`` as (n,) int64 acts legal under ``mask`` (n rows), or a ``ValueError`` that says which check
    failed: the shape, a number that is not an integer act, the range, a masked-out act."""
    a = np.asarray(actions)
    n, width = mask.shape
    if a.ndim > 1 and a.size == n:  # a column (or row) of n acts
        a = a.reshape(n)
    if a.shape != (n,):
        raise ValueError(f"{who} returned acts of shape {a.shape} for {n} rows: one act per row, shape ({n},)")
    if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating) or a.dtype == bool):
        raise ValueError(f"{who} returned acts of dtype {a.dtype}: integers are needed")
    if np.issubdtype(a.dtype, np.floating):
        bad = ~np.isfinite(a) | (a != np.round(a))
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{who} returned {float(a[r])!r} in row {r}: acts are integers")
    a = a.astype(np.int64)
    out = (a < 0) | (a >= width)
    if out.any():
        raise ValueError(f"{who} returned act {int(a[out][0])} in row {int(np.flatnonzero(out)[0])}: acts are 0.."
                         f"{width - 1}")
    illegal = ~mask[np.arange(n), a]
    if illegal.any():
        r = int(np.flatnonzero(illegal)[0])
        raise ValueError(f"{who} returned act {int(a[r])} in row {r}, which the mask rules out there (legal: "
                         f"{np.flatnonzero(mask[r]).tolist()})")
    return a


class FunctionPolicy:
    """A function ``f(obs, mask) -> actions`` as a ``Policy`` (no log-probabilities, values or entropy)."""

    def __init__(self, fn):
        self.fn = fn

    def act(self, obs: np.ndarray, mask: np.ndarray, greedy: bool = False) -> Decisions:
        mask = np.asarray(mask, bool)
        return Decisions(checked_acts(self.fn(obs, mask), mask, "the policy function"))


class CheckedPolicy:
    """A user's policy whose every answer is checked (``scope-envs score``): a mistake in it (an ``act`` that
    raises or takes other arguments, an answer that is not ``Decisions``, acts of the wrong shape, type or
    range, a masked-out act, a NaN entropy) is a ``ValueError`` saying which, not an error deep in a rollout."""

    def __init__(self, policy, name: str):
        self.policy, self.name = policy, name

    def reseeded(self, seed: int) -> CheckedPolicy:
        return CheckedPolicy(reseeded(self.policy, seed), self.name)

    def act(self, obs: np.ndarray, mask: np.ndarray, greedy: bool = False) -> Decisions:
        mask = np.asarray(mask, bool)
        try:
            d = self.policy.act(obs, mask, greedy)
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001  (the user's code: said in one line, with the protocol's signature)
            raise ValueError(f"{self.name}: act(obs, mask, greedy) raised {type(e).__name__}: {e}") from e
        who = f"{self.name}: act"
        if not isinstance(d, Decisions):
            raise ValueError(f"{who} returned a {type(d).__name__}, not scope_envs.train.policy.Decisions "
                             "(Decisions(actions) at least)")
        for field_name in ("logp", "values", "entropy"):
            x = getattr(d, field_name)
            if x is not None and (np.shape(x) != (len(mask),) or not np.isfinite(np.asarray(x, float)).all()):
                raise ValueError(f"{who} returned Decisions.{field_name} that is not {len(mask)} finite numbers")
        return Decisions(checked_acts(d.actions, mask, who), d.logp, d.values, d.entropy)


def is_sb3(obj) -> bool:
    return any(c.__name__ == "BaseAlgorithm" and c.__module__.startswith("stable_baselines3")
               for c in type(obj).__mro__)


def as_policy(obj) -> Policy:
    """``obj`` as a ``Policy`` (see the module docstring); ``TypeError`` saying what it is otherwise."""
    if isinstance(obj, Policy):
        return obj
    if is_sb3(obj):
        return SB3Policy(obj)
    if callable(obj) and not isinstance(obj, type):
        return FunctionPolicy(obj)
    kind = type(obj).__name__
    raise TypeError(f"{'an' if kind[0].lower() in 'aeiou' else 'a'} {kind} is not a policy: a policy has act(obs, mask, greedy) -> Decisions "
                    "(scope_envs.train.policy), or is an SB3 model, or a function f(obs, mask) -> actions")


class TrainerPlayers:
    """A ``PPOTrainer`` (or a copy of its networks, ``PPOTrainer.networks``) as a method's result
    (``plugins.Trained``): every seat by the trainer's networks; for an evaluation side with seed ``s`` they draw
    from ``rollout.evaluation_rng(s)``. ``uniform``: agent_0 plays ``UniformPolicy(s)`` (the floor), the learned
    seats still by their networks."""

    def __init__(self, trainer, uniform: bool = False):
        self.trainer, self.uniform = trainer, uniform

    def players(self, seed: int) -> dict:
        from scope_envs.train.rollout import evaluation_policies

        players = evaluation_policies(self.trainer, seed)
        if self.uniform:
            players["agent_0"] = UniformPolicy(seed=seed)
        return players


def frozen(trained: Trained) -> Trained | None:
    """``trained`` with the package's networks copied as they are now (``PPOTrainer.networks``), so that it plays
    later what it plays now; None where it cannot be copied (any other policy, or seats of a plug-in's)."""
    policy = trained.policy
    if not isinstance(policy, TrainerPlayers) or trained.seats or not hasattr(policy.trainer, "networks"):
        return None
    return Trained(policy=TrainerPlayers(policy.trainer.networks(copy=True), policy.uniform))


@dataclass
class Trained:
    """A method's result: ``policy`` plays ``agent_0``; ``seats`` the other seats it learned on its training
    simulators (a co-trained user: the train side is evaluated with it in the user seat); ``agent_steps``
    the decisions of agent_0 it trained with (default: the last ``progress`` count), ``env_steps``, and
    ``history``, its log rows (dicts; the benchmark keeps ``agent_steps``, ``return``, entropies and the
    grouped diagnostics from them); ``metrics``, figures of the method's own that its run record's metrics keep
    (numbers by name)."""

    policy: Any
    seats: dict = field(default_factory=dict)
    agent_steps: int | None = None
    env_steps: int = 0
    history: list = field(default_factory=list)
    metrics: dict = field(default_factory=dict)

    def players(self, seed: int) -> dict:
        """Every seat's policy for one evaluation side with seed ``seed``: each drawing from a stream of that
        side (``reseeded``), so that an evaluation never depends on what was played before it."""
        own = self.policy.players(seed) if hasattr(self.policy, "players") else {"agent_0": reseeded(self.policy, seed)}
        return {**own, **{s: reseeded(p, seed) for s, p in self.seats.items()}}


def reseeded(policy, seed: int):
    """``policy`` drawing from a stream seeded by ``seed``: its ``reseeded(seed)`` where it has one (the
    package's adapters do), a fresh ``UniformPolicy(seed)`` for a uniform one, else the policy as it is (its
    randomness is then its own business)."""
    if hasattr(policy, "reseeded"):
        return policy.reseeded(seed)
    if isinstance(policy, UniformPolicy):
        return UniformPolicy(seed=seed)
    return policy


def check_policy(policy, method: str, given: str = "train returned") -> Trained:
    """``policy`` as returned by ``method``: a ``Trained``, or a policy (``act(obs, mask, greedy)``, an SB3 model,
    a function, a ``PPOTrainer``) made one; ``PluginError`` naming the method otherwise, and where the object came
    from (``given``: ``train`` returned it, or a ``progress`` call was given it)."""
    from scope_envs.train.act_ppo import PPOTrainer

    if isinstance(policy, Trained):
        policy.policy = check_policy(policy.policy, method, given).policy
        return policy
    if isinstance(policy, PPOTrainer):  # the package's trainer: every seat it learned, and its counts
        return Trained(policy=TrainerPlayers(policy), agent_steps=policy.agent_steps, env_steps=policy.env_steps)
    if hasattr(policy, "players"):
        return Trained(policy=policy)
    try:
        return Trained(policy=as_policy(policy))
    except TypeError as e:
        raise PluginError(f"method {method!r}: {given} {type(policy).__name__}, not a policy ({e})") from None


# ------------------------------------------------------------------------------------------------ saved policies
def load(spec: str, seed: int = 0):
    """A saved policy for ``scope-envs score``: a ``PPOTrainer.save`` folder (every seat it trained: a
    ``TrainerPlayers``), an SB3 ``.zip`` (``SB3Policy``; sb3-contrib's ``MaskablePPO`` or SB3's ``PPO``), or
    ``file.py:NAME`` / ``module:NAME`` (a policy, or a class / function of no arguments returning one).
    Raises ``ValueError`` naming what is wrong."""
    path = Path(os.path.expanduser(spec))
    if path.is_dir():
        return TrainerPlayers(load_trainer(spec))
    if spec.endswith(".zip"):
        if not path.is_file():
            raise ValueError(f"--policy {spec}: no such file")
        return SB3Policy(load_sb3(path), seed)
    if ":" in spec:
        try:
            obj = load_object(spec, flag="--policy")
        except PluginError as e:
            raise ValueError(str(e)) from None
        if isinstance(obj, type) or (callable(obj) and not isinstance(obj, Policy) and _takes_nothing(obj)):
            try:
                obj = obj()
            except Exception as e:  # noqa: BLE001  (the user's factory: said in one line)
                raise ValueError(f"--policy {spec}: calling it raised {type(e).__name__}: {e}") from e
        return obj if hasattr(obj, "players") else CheckedPolicy(as_policy(obj), spec)
    wanted = "a saved trainer folder, an SB3 .zip, or FILE.py:NAME / module:NAME"
    if not path.exists():
        raise ValueError(f"--policy {spec}: no such file or folder (expected {wanted})")
    hint = f" (a Python file: name what plays in it, {spec}:NAME)" if spec.endswith(".py") else ""
    raise ValueError(f"--policy {spec}: expected {wanted}{hint}")


def _takes_nothing(fn) -> bool:
    import inspect

    try:
        return not any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                       for p in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False


def load_trainer(spec: str):
    """The ``PPOTrainer`` saved in the folder ``spec`` (``PPOTrainer.save``); ``ValueError`` in one line when it is
    not one (the folder's check, ``arguments.saved_trainer``) or cannot be loaded (a truncated or foreign
    ``model.pt``, weights of another shape, an ``env_id`` that names no env)."""
    import argparse

    from scope_envs.arguments import saved_trainer
    from scope_envs.train.act_ppo import PPOTrainer

    try:
        saved_trainer(spec)  # the one check of a saved trainer folder (score --ceiling's too)
    except argparse.ArgumentTypeError as e:
        raise ValueError(str(e)) from None
    try:
        return PPOTrainer.load(Path(os.path.expanduser(spec)))
    except Exception as e:  # noqa: BLE001  (the user's files: said in one line)
        reason = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        raise ValueError(f"{spec}: cannot load the saved trainer (config.json, model.pt): {type(e).__name__}"
                         + (f": {reason}" if reason else "")) from None


def load_sb3(path: Path):
    """An SB3 model from its ``.zip``: sb3-contrib's ``MaskablePPO`` if the file is one, else SB3's ``PPO``."""
    try:
        from sb3_contrib import MaskablePPO
        from stable_baselines3 import PPO
    except ImportError as e:
        raise ValueError("scoring an SB3 .zip needs the sb3 extra: pip install 'scope-envs[sb3]'") from e
    errors = []
    for cls in (MaskablePPO, PPO):
        try:
            return cls.load(path, device="cpu")
        except Exception as e:  # noqa: BLE001  (the other class may read it)
            errors.append(f"{cls.__name__}: {type(e).__name__}: {e}")
    raise ValueError(f"--policy {path}: not a MaskablePPO or PPO file ({'; '.join(errors)})")


# ------------------------------------------------------------------------------------------------ learned users
class LearnedUser(Simulator):
    """A learned user seat's policy as a ``Simulator``, so that ``scope_envs.diagnose`` measures it as any
    simulator: its distribution at a view is the policy's masked softmax over the act surface's observation of
    the user role (``wants_observation``), the input it was trained on (``SingleAgentView``'s ``observation``).
    ``log_probabilities(obs, mask)`` gives rows of log-probabilities (-inf on illegal acts), as
    ``SB3Policy.log_probabilities`` does. It plays whatever card the episode deals, as it did in training."""

    wants_observation = True

    def __init__(self, log_probabilities, name: str):
        self.log_probabilities, self.name = log_probabilities, name

    def distribution(self, view: View) -> np.ndarray:
        if view.observation is None:
            raise ValueError("a learned user needs views with the act surface's observation (wants_observation)")
        legal = np.asarray(view.legal, bool)
        logp, _ = self.log_probabilities(np.asarray(view.observation, np.float32)[None], legal[None])
        p = np.where(legal, np.exp(logp[0]), 0.0)
        return p / p.sum()


class SeatError(ValueError):
    """A seat none of the game's ids has (the command line's ``--seat``)."""


def seat_spaces(game: str) -> dict[str, tuple[int, int]]:
    """Every seat the ids of ``game`` have (``agent_0``, ``user_0`` of ``-cotrain``, ``user_0..`` of
    ``-population``), with its observation width and number of acts."""
    import scope_envs

    out: dict[str, tuple[int, int]] = {}
    for env_id, spec in scope_envs.registry.items():
        if spec.game != game:
            continue
        env = scope_envs.make(env_id)
        for seat in env.possible_agents:
            out.setdefault(seat, (int(env.observation_space(seat)["observation"].shape[0]),
                                  int(env.action_space(seat).n)))
    return dict(sorted(out.items()))


def check_seat(model: SB3Policy, spec: str, game: str, seat: str, spaces: dict | None = None) -> None:
    """``ValueError`` when the SB3 model ``model`` (read from ``spec``) cannot play ``seat`` of ``game``: its
    observation width or number of acts differs from the seat's, said with the seat whose shape it has, if any
    (a model of another seat, or of another game). Seats of one shape (cooperbench's) cannot be told apart."""
    spaces = seat_spaces(game) if spaces is None else spaces
    theirs = (model.obs_size, model.n_acts)
    if theirs != spaces[seat]:
        same = [s for s, shape in spaces.items() if shape == theirs]
        hint = f" (the shape of {', '.join(same)}: a model of {'that seat' if len(same) == 1 else 'one of them'}?)" \
            if same else \
            " (no seat of this game has it: a model of another game?)"
        raise ValueError(f"{spec} reads observations of width {model.obs_size} and has {model.n_acts} acts; "
                         f"{game}'s {seat} has {spaces[seat][0]} and {spaces[seat][1]}{hint}")


def agent_problem(policy, spec: str, game: str, game_named: str | None = None) -> str | None:
    """Why ``policy`` (read from ``spec``: a ``load`` result, a ``PPOTrainer`` or a method's result) cannot play
    agent_0 of ``game``, before any episode: an SB3 model of another seat or game (its shapes), a trainer of
    another game or without agent_0; None when nothing says so. Its network would otherwise meet observations of
    another width (numpy's matmul error, in the middle of an evaluation). ``game_named``: how the message names the
    game (default: its name)."""
    if isinstance(policy, SB3Policy):  # a model of the user seat, or of another game
        try:
            check_seat(policy, spec, game, "agent_0")
        except ValueError as e:
            return f"{e}; a learned user is scored with --seat user_N"
    trainer = getattr(policy, "trainer", policy)
    trained_on = getattr(trainer, "cfg", None)
    if trained_on is None or not hasattr(trainer, "seat"):
        return None
    if trained_on.env_id.split("-")[0] != game:
        return f"{spec} was trained on {trained_on.env_id}, a game other than {game_named or game}"
    if "agent_0" not in trainer.seat:
        return f"{spec} has no agent_0 network (its seats: {', '.join(sorted(trainer.seat))})"
    return None


def load_user(spec: str, game: str, seat: str) -> Simulator:
    """A learned user of ``seat`` on ``game`` as a ``Simulator`` (``LearnedUser``, or the package's
    ``PolicySnapshot`` of a saved trainer's network): an SB3 ``.zip`` of a model trained on that seat's
    ``SingleAgentView``, or a ``PPOTrainer.save`` folder whose training env had the seat. ``ValueError`` naming
    what is wrong: no such file, a model for another seat or game (its observation width or acts differ), a
    trainer of another game or without the seat, a policy of another kind."""
    spaces = seat_spaces(game)
    if seat not in spaces:
        raise SeatError(f"{game}'s ids have the seats {', '.join(spaces)}; {seat!r} is none of them")
    path = Path(os.path.expanduser(spec))
    if path.is_dir():
        from scope_envs.train.act_ppo import PolicySnapshot

        trainer = load_trainer(spec)
        trained_on = trainer.cfg.env_id
        if trained_on.split("-")[0] != game:
            raise ValueError(f"{spec} was trained on {trained_on}, a game other than --game {game}")
        if seat not in trainer.seat:
            raise ValueError(f"{spec} was trained on {trained_on}, whose learned seats are "
                             f"{', '.join(sorted(trainer.seat))}: it has no {seat} (a learned user comes from a "
                             f"-cotrain or -population id)")
        user = PolicySnapshot(trainer.learners[trainer.seat[seat]], selfplay=trainer.cfg.selfplay)
        user.name = f"{seat} of {path.name}"
        return user
    if spec.endswith(".zip"):
        if not path.is_file():
            raise ValueError(f"{spec}: no such file")
        try:
            model = SB3Policy(load_sb3(path))
        except TypeError as e:
            raise ValueError(f"{spec}: {e}") from None
        check_seat(model, spec, game, seat, spaces)
        return LearnedUser(model.log_probabilities, f"{seat} of {path.name}")
    raise ValueError(f"{spec}: a learned user is an SB3 .zip (trained on the seat's SingleAgentView) or a saved "
                     "trainer folder (PPOTrainer.save of a -cotrain or -population run); a Simulator class in a "
                     "file is diagnosed by scope-envs diagnose --simulator FILE.py:CLASS")
