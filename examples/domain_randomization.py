"""Domain randomization over the training simulators, benchmarked as a plug-in method.

sb3-contrib's MaskablePPO trains ``agent_0`` on ``frozen``, ``vs`` and ``rotation`` at once: one SB3 vec env
whose slots are split among the three simulators (``scope_envs.integrations.sb3.sb3_mixed_vec_env``), so every
rollout mixes the three users. Benchmark it against the committed reference rows with one command::

    scope-envs bench --method examples/domain_randomization.py:DomainRandomization --against reference

and against the same trainer on ``frozen`` alone (the trainer's own effect, separated from the method's)::

    scope-envs bench --method examples/domain_randomization.py:DomainRandomization --against reference-sb3 \
        --confirmatory frozen-sb3

Needs the sb3 extra: ``pip install "scope-envs[sb3]"``. Copy this file and change ``train_envs`` or the
hyperparameters; the protocol it implements is ``scope_envs.bench.plugins`` (a name, the training simulators,
``train(ctx)`` returning a policy within ``ctx.budget`` decisions of agent_0, reporting ``ctx.progress``).
"""

from __future__ import annotations

from scope_envs.bench.plugins import Trained


class DomainRandomization:
    name = "domain-randomization"
    regimes = ("frozen", "vs", "rotation")
    num_envs = 12  # 4 slots per simulator
    n_steps = 64  # per slot and rollout: 768 decisions of agent_0 per PPO iteration

    def train_envs(self, game: str) -> list[str]:
        # also the benchmark's "train" side: the mean of the three simulators' sides (scope_envs.bench.protocol)
        return [f"{game}-{regime}" for regime in self.regimes]

    def train(self, ctx) -> Trained:
        from sb3_contrib import MaskablePPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.vec_env import VecMonitor

        from scope_envs.bench.policies import SB3Policy
        from scope_envs.integrations.sb3 import sb3_mixed_vec_env

        venv = sb3_mixed_vec_env(self.train_envs(ctx.game), num_envs=self.num_envs)
        venv.seed(ctx.seed)
        model = MaskablePPO("MlpPolicy", VecMonitor(venv), n_steps=self.n_steps, batch_size=256, n_epochs=4,
                            gamma=1.0, gae_lambda=0.95, ent_coef=0.01, seed=ctx.seed, device="cpu", verbose=0)

        class Progress(BaseCallback):
            # one env step of a single-agent id is one decision of agent_0: num_timesteps is the budget's count
            def _on_step(self) -> bool:
                return True

            def _on_rollout_end(self) -> None:
                ctx.progress(self.num_timesteps, SB3Policy(self.model, ctx.seed))

        ctx.progress(0, SB3Policy(model, ctx.seed))
        if ctx.budget:
            model.learn(total_timesteps=ctx.budget, callback=Progress())
        return Trained(policy=SB3Policy(model, ctx.seed), agent_steps=model.num_timesteps,
                       env_steps=model.num_timesteps)
