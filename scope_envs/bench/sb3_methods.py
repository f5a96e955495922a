"""Reference rows trained with sb3-contrib's MaskablePPO: the trainer's effect, separated from the method's.

A method built on SB3 that beats the built-in ``frozen`` row may owe part of its gain to the trainer (SB3's
PPO and its defaults against the package's act-level PPO), not to what it does with the simulators. These rows
train the single-agent built-in methods with *the same* SB3 trainer, so an SB3-based method is compared with
the same trainer (``--against reference-sb3 --confirmatory frozen-sb3``):

=============  ===========================================  ============================================
row            trains on (``sb3_mixed_vec_env``)             as the built-in row
=============  ===========================================  ============================================
frozen-sb3     ``<game>-frozen``                             ``frozen``
vs-sb3         ``<game>-vs``                                 ``vs``
rotation-sb3   ``<game>-rotation``                           ``rotation``
=============  ===========================================  ============================================

``random`` and ``untrained`` need no trainer and are the built-in rows as they are (``reference-sb3`` is read
together with the default reference: ``scope_envs.bench.reference.REFERENCES``). The trainer effect of a game is
``frozen-sb3 − frozen`` on held-out success (``benchmarks/README.md`` states it per game; per pair,
``benchmarks/log/plugins-and-leaderboard.md``).

``MaskablePPOMethod`` is also the base of ``examples/domain_randomization.py`` (the three simulators at once),
so that the example and these rows differ in their simulators only. Its settings were fixed before any
held-out number was read: 12 slots split among the simulators, 64 steps per slot and rollout (768 decisions of
agent_0 per iteration), batches of 256, 4 epochs, gamma 1 (episodic, the reward at the end), GAE lambda 0.95,
entropy coefficient 0.01 (the package's PPO's), SB3's other defaults. One env step of a single-agent id is one
decision of agent_0, so SB3's ``num_timesteps`` is the budget's count. Needs ``pip install "scope-envs[sb3]"``.

Build the reference rows (the default preset's seeds and budgets; about an hour on 2 cores)::

    scope-envs bench --method scope_envs.bench.sb3_methods:FrozenSB3 --method scope_envs.bench.sb3_methods:VsSB3 \\
        --method scope_envs.bench.sb3_methods:RotationSB3 --against reference --out benchmarks/results/reference-sb3
"""

from __future__ import annotations

from scope_envs.bench.plugins import Trained


class MaskablePPOMethod:
    """sb3-contrib's MaskablePPO on ``regimes`` of the game, mixed slot by slot (see the module docstring)."""

    name = "maskable-ppo"
    regimes: tuple[str, ...] = ("frozen",)
    num_envs = 12
    n_steps = 64
    batch_size = 256
    n_epochs = 4
    ent_coef = 0.01

    def train_envs(self, game: str) -> list[str]:
        # also the benchmark's train side: the mean over these simulators (scope_envs.bench.protocol)
        return [f"{game}-{regime}" for regime in self.regimes]

    def train(self, ctx) -> Trained:
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.logger import Logger
        from stable_baselines3.common.vec_env import VecMonitor

        from scope_envs.bench.policies import SB3Policy
        from scope_envs.integrations.sb3 import sb3_mixed_vec_env

        venv = sb3_mixed_vec_env(self.train_envs(ctx.game), num_envs=self.num_envs)
        venv.seed(ctx.seed)
        model = MaskablePPO("MlpPolicy", VecMonitor(venv), n_steps=self.n_steps, batch_size=self.batch_size,
                            n_epochs=self.n_epochs, gamma=1.0, gae_lambda=0.95, ent_coef=self.ent_coef,
                            seed=ctx.seed, device="cpu", verbose=0)
        model.set_logger(Logger(folder=None, output_formats=[]))  # (SB3's default makes a folder in /tmp per run)

        class Progress(BaseCallback):
            def _on_step(self) -> bool:
                return True

            def _on_rollout_end(self) -> None:  # after each rollout: a curve point where a mark is passed
                ctx.progress(self.num_timesteps, SB3Policy(self.model, ctx.seed))

        ctx.progress(0, SB3Policy(model, ctx.seed))
        if ctx.budget:
            model.learn(total_timesteps=ctx.budget, callback=Progress())
        return Trained(policy=SB3Policy(model, ctx.seed), agent_steps=model.num_timesteps,
                       env_steps=model.num_timesteps)


class FrozenSB3(MaskablePPOMethod):
    name = "frozen-sb3"
    regimes = ("frozen",)


class VsSB3(MaskablePPOMethod):
    name = "vs-sb3"
    regimes = ("vs",)


class RotationSB3(MaskablePPOMethod):
    name = "rotation-sb3"
    regimes = ("rotation",)


SB3_ROWS = (FrozenSB3, VsSB3, RotationSB3)
