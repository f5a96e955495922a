"""BenchMARL's algorithms on scope-envs, and the policies they train scored by the benchmark's protocol.

BenchMARL (MAPPO, IPPO, MASAC, QMIX, ... over TorchRL) runs a ``Task``: here ``ScopeEnvsTask``, one member per
id a policy trains on, named as BenchMARL names tasks: ``p4g-cotrain`` is ``ScopeEnvsTask.P4G_COTRAIN``. Not
``heldout`` (the held-out human proxies: for evaluation only, by ``BenchMARLPolicy`` below).
``get_task()`` needs no YAML file; its ``config`` is ``scope_envs.make``'s options (``{"max_turns": 8}``).

A task's env is the batched engine as one TorchRL env of batch size ``(n_envs_per_worker,)``
(``scope_envs.integrations.torchrl_env.TorchRLVecEnv``), so BenchMARL collects every env of a worker in one
array step, as it does on VMAS, not through a ``SerialEnv`` of scalar envs. The agents are grouped by the id's
prefix, as TorchRL groups a PettingZoo env: ``agent`` (``agent_0``) and, where users learn, ``user`` (``user_0``;
a ``population``'s K members, one seated per episode), each group with its own networks. So on a ``-cotrain`` id
BenchMARL co-trains the user simulator beside the agent, and on ``population`` a population of them; on
``frozen``, ``vs``, ``rotation`` and ``grounded`` it trains ``agent_0`` against the simulator inside the env. The
action mask of the act surface is BenchMARL's ``action_mask``.

``BenchMARLPolicy(experiment)`` is the trained ``agent`` group as a scope-envs ``Policy``
(``scope_envs.train.policy``): its logits, masked to the legal acts, sampled from the adapter's own generator.
So ``scope_envs.bench.evaluate_policy`` scores it on the four sides every built-in row is scored on, and a
``train(ctx)`` method that runs BenchMARL enters ``scope-envs bench --method`` (docs/trainers.md).

Example (BenchMARL pins ``torchrl<0.12``, so it lives in a virtualenv of its own, installed as
``.ci/benchmarl.sh`` and docs/trainers.md install it)::

    from benchmarl.algorithms import MappoConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig
    from scope_envs.bench import evaluate_policy
    from scope_envs.integrations.benchmarl import BenchMARLPolicy, ScopeEnvsTask

    config = ExperimentConfig.get_from_yaml()
    config.max_n_frames, config.loggers = 20_000, []
    experiment = Experiment(task=ScopeEnvsTask.P4G_FROZEN.get_task(), algorithm_config=MappoConfig.get_from_yaml(),
                            model_config=MlpConfig.get_from_yaml(), critic_model_config=MlpConfig.get_from_yaml(),
                            seed=0, config=config)
    experiment.run()
    print(evaluate_policy(BenchMARLPolicy(experiment), "p4g", seed=0)["metrics"]["heldout_success"])
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
from benchmarl.environments.common import Task, TaskClass
from benchmarl.experiment.callback import Callback

from scope_envs.registry import UnknownEnvironment, make, registry
from scope_envs.train.policy import Decisions, masked_logp, sample_masked

BENCHMARL_KEY = 0x626D61  # a BenchMARLPolicy's generator: [BENCHMARL_KEY, seed]
# the regimes whose ids are not tasks, and why
NOT_TASKS = {"heldout": "the held-out human proxies, for evaluation only: score a trained policy on them with "
                        "BenchMARLPolicy and scope_envs.bench.evaluate_policy"}


def task_name(env_id: str) -> str:
    """BenchMARL's name of an id: ``p4g-cotrain`` -> ``P4G_COTRAIN``."""
    return env_id.upper().replace("-", "_")


def env_id_of(name: str) -> str:
    """The id a task name stands for; ``UnknownEnvironment`` for a name of no id, ``ValueError`` naming why an id
    is not a task."""
    by_name = {task_name(i): i for i in registry}
    env_id = by_name.get(str(name).upper())
    if env_id is None:
        raise UnknownEnvironment(f"{name!r} names no scope-envs id; the tasks: {', '.join(sorted(trainable_tasks()))}")
    why = NOT_TASKS.get(registry[env_id].regime)
    if why is not None:
        raise ValueError(f"{env_id}: {why}")
    return env_id


class ScopeEnvsClass(TaskClass):
    """One scope-envs id as a BenchMARL task (the module docstring); ``config``: ``scope_envs.make``'s options."""

    def __init__(self, name: str, config: dict | None):
        self.env_id = env_id_of(name)
        super().__init__(name, config)

    def get_env_fun(self, num_envs: int, continuous_actions: bool, seed: int | None,
                    device) -> Callable:
        env_id, kwargs = self.env_id, copy.deepcopy(self.config)
        make(env_id, **kwargs).close()  # a bad option fails here, in the caller's frame, not in a collector

        def build():
            from scope_envs.integrations.torchrl_env import TorchRLVecEnv

            return TorchRLVecEnv(env_id, num_envs, seed=seed, device=device, **kwargs)
        return build

    def supports_continuous_actions(self) -> bool:
        return False

    def supports_discrete_actions(self) -> bool:
        return True

    def has_render(self, env) -> bool:
        return False

    def max_steps(self, env) -> int:
        return int(make(self.env_id, **self.config).unwrapped.game.max_turns)  # an episode ends by then

    def group_map(self, env) -> dict[str, list[str]]:
        return env.group_map

    @staticmethod
    def _only(env, key: str):
        """The observation spec of one env (the batch axis dropped) with each group's ``key`` alone (None where no
        group has it)."""
        spec = env.full_observation_spec_unbatched.clone()
        for group in env.group_map:
            for k in list(spec[group].keys()):
                if k != key:
                    del spec[group][k]
            if spec[group].is_empty():
                del spec[group]
        return None if spec.is_empty() else spec

    def observation_spec(self, env):
        return self._only(env, "observation")

    def action_mask_spec(self, env):
        return self._only(env, "action_mask")

    def info_spec(self, env):
        return self._only(env, "info")

    def state_spec(self, env):
        return None  # each group's critic reads its own observations: no seat sees the user's hidden persona

    def action_spec(self, env):
        return env.full_action_spec_unbatched

    @staticmethod
    def env_name() -> str:
        return "scope_envs"


def trainable_tasks() -> list[str]:
    """The names of the ids BenchMARL can train on (the module docstring)."""
    return [task_name(i) for i, spec in registry.items() if spec.regime not in NOT_TASKS]


class _ScopeEnvsTasks(Task):
    @staticmethod
    def associated_class():
        return ScopeEnvsClass

    def get_task(self, config: dict | None = None) -> ScopeEnvsClass:
        """The task with ``config`` (``scope_envs.make``'s options; none given: the id's defaults, no YAML)."""
        return ScopeEnvsClass(self.name, {} if config is None else dict(config))


ScopeEnvsTask = _ScopeEnvsTasks("ScopeEnvsTask", [(name, None) for name in sorted(trainable_tasks())],
                                module=__name__)
ScopeEnvsTask.__doc__ = "Every scope-envs id BenchMARL can run, as BenchMARL's task enum (``P4G_COTRAIN``)."


class BenchMARLPolicy:
    """A BenchMARL experiment's ``group`` (``agent``: agent_0) as a scope-envs ``Policy``: the logits of the
    group's ``agent``-th member (a population's ``user`` group has K) for each row (MAPPO, IPPO, MASAC, ...),
    illegal acts removed, sampled from this adapter's generator (``seed``); ``greedy``: the most probable legal
    act. A value-based group (QMIX, VDN, IQL) acts greedily on its action values, its policy without exploration.
    ``reseeded`` gives the same networks with another stream, as the benchmark's protocol asks."""

    def __init__(self, experiment, group: str = "agent", seed: int = 0, agent: int = 0):
        if group not in experiment.group_map:
            raise ValueError(f"the experiment has no group {group!r} (its groups: {sorted(experiment.group_map)})")
        members = experiment.group_map[group]
        if isinstance(agent, bool) or not isinstance(agent, int) or not 0 <= agent < len(members):
            raise ValueError(f"agent must be an index into group {group!r}'s {len(members)} agents {members}, "
                             f"got {agent!r}")
        self.experiment, self.group, self.seed, self.agent = experiment, group, seed, agent
        self.rng = np.random.default_rng([BENCHMARL_KEY, seed])

    def reseeded(self, seed: int) -> BenchMARLPolicy:
        return BenchMARLPolicy(self.experiment, self.group, seed, self.agent)

    def act(self, obs: np.ndarray, mask: np.ndarray, greedy: bool = False) -> Decisions:
        import torch
        from tensordict import TensorDict

        mask = np.asarray(mask, bool)
        g, k, j = self.group, len(self.experiment.group_map[self.group]), self.agent
        # one row per episode, the group's k agents each seeing it (the layout its networks were built on; each
        # agent's actor reads its own observation), agent j's output read
        td = TensorDict({(g, "observation", "observation"):
                         torch.as_tensor(np.asarray(obs, np.float32))[:, None].expand(-1, k, -1),
                         (g, "action_mask"): torch.as_tensor(mask)[:, None].expand(-1, k, -1)},
                        batch_size=[len(mask)])
        with torch.no_grad():
            out = self.experiment.group_policies[g](td)
        if (g, "logits") in out.keys(True):
            logits = out[g, "logits"][:, j].double().numpy()
        else:  # a Q-learner: its greedy act, ties to the lowest (illegal acts masked out)
            logits, greedy = out[g, "action_value"][:, j].double().numpy(), True
        return sample_masked(masked_logp(logits, mask), self.rng, greedy)


class Progress(Callback):
    """A BenchMARL callback that calls ``report(frames, policy)`` after each training iteration, ``policy`` the
    ``group`` as a ``BenchMARLPolicy`` (a plug-in method's ``ctx.progress``: examples/benchmarl_mappo.py).
    BenchMARL pickles its callbacks into its run folder, so ``report`` (a closure, often) is left out of that."""

    def __init__(self, report: Callable, group: str = "agent", seed: int = 0):
        super().__init__()
        self.report, self.group, self.seed = report, group, seed

    def on_train_end(self, training_td, group: str) -> None:
        if group == self.group:
            self.report(self.experiment.total_frames, BenchMARLPolicy(self.experiment, self.group, self.seed))

    def __getstate__(self) -> dict:
        return {"group": self.group, "seed": self.seed}
