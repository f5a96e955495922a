"""BenchMARL's MAPPO against the frozen simulator, benchmarked as a plug-in method.

BenchMARL trains ``agent_0`` on ``<game>-frozen`` (``scope_envs.integrations.benchmarl.ScopeEnvsTask``), within
the benchmark's budget of agent_0's decisions: on a single-agent id one frame is one decision. The trained group
plays the evaluation as ``BenchMARLPolicy``. Benchmark it against the committed reference rows with one command::

    scope-envs bench --method examples/benchmarl_mappo.py:BenchMARLMAPPO --against reference --games p4g

Needs BenchMARL, which pins ``torchrl<0.12``: a virtualenv of its own, as ``.ci/benchmarl.sh`` makes
(``pip install torch==2.13.0 && pip install --no-deps benchmarl==1.5.2 && pip install -e . "torchrl<0.12"
hydra-core tqdm``). The settings below are BenchMARL's defaults but for the batch (1,024 frames over 8 envs,
20 minibatch passes of 128) and the learning rate (3e-4: its 5e-5 is tuned for millions of frames), fixed
before any held-out number was read.
"""

from __future__ import annotations

from pathlib import Path
from tempfile import TemporaryDirectory


class BenchMARLMAPPO:
    name = "benchmarl-mappo"
    frames_per_batch = 1024
    envs = 8

    def train_envs(self, game: str) -> list[str]:
        return [f"{game}-frozen"]

    def train(self, ctx):
        import torch
        from benchmarl.algorithms import MappoConfig
        from benchmarl.experiment import Experiment, ExperimentConfig
        from benchmarl.models.mlp import MlpConfig

        from scope_envs.bench.plugins import Trained
        from scope_envs.integrations.benchmarl import BenchMARLPolicy, Progress, ScopeEnvsTask

        config = ExperimentConfig.get_from_yaml()
        batch = min(self.frames_per_batch, ctx.budget)  # an iteration never asks for more than the budget
        config.max_n_frames, config.max_n_iters = None, -(-ctx.budget // batch)
        config.on_policy_collected_frames_per_batch, config.on_policy_n_envs_per_worker = batch, self.envs
        config.on_policy_n_minibatch_iters, config.on_policy_minibatch_size, config.lr = 20, 128, 3e-4
        config.loggers, config.evaluation, config.create_json = [], False, False

        torch.manual_seed(ctx.seed)
        with TemporaryDirectory() as folder:  # BenchMARL's run folder: nothing of it is kept
            config.save_folder = str(Path(folder))
            experiment = Experiment(task=getattr(ScopeEnvsTask, f"{ctx.game.upper()}_FROZEN").get_task(),
                                    algorithm_config=MappoConfig.get_from_yaml(),
                                    model_config=MlpConfig.get_from_yaml(),
                                    critic_model_config=MlpConfig.get_from_yaml(), seed=ctx.seed, config=config,
                                    callbacks=[Progress(ctx.progress, seed=ctx.seed)])  # each iteration: a curve point
            ctx.progress(0, BenchMARLPolicy(experiment, seed=ctx.seed))
            experiment.run()
        return Trained(policy=BenchMARLPolicy(experiment, seed=ctx.seed), agent_steps=experiment.total_frames,
                       env_steps=experiment.total_frames)
