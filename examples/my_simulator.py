"""A user-side remedy: your own simulator as the training simulator, benchmarked as a plug-in method.

``TemperedSimulator`` is a ``Simulator`` (``scope_envs.core.simulator``) of your own: it takes the game's
built-in frozen simulator (the sharpened, modal-persona "aligned LLM") and undoes part of its collapse — its
distribution raised to ``1 / temperature`` and mixed with ``epsilon`` of uniform play over the legal acts.
``MySimulator`` trains the package's act-level PPO against it (``<game>-frozen`` with ``user=`` your
simulator); the benchmark's train side is that env too. Benchmark it with one command::

    scope-envs bench --method examples/my_simulator.py:MySimulator --against reference

To try your own user model, change ``TemperedSimulator.distribution``: it gets the user's ``View`` (its card,
the dialogue so far, the legal acts) and returns probabilities over the user's acts.
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.simulator import Simulator, View


class TemperedSimulator(Simulator):
    """The frozen simulator of ``game`` with its sharpening partly undone (see the module docstring)."""

    name = "tempered-frozen"

    def __init__(self, game: str, temperature: float = 2.0, epsilon: float = 0.1):
        import scope_envs

        self.base = scope_envs.make(f"{game}-frozen").unwrapped.members[0]
        self.persona = self.base.persona  # the card it plays (the frozen simulator's modal persona)
        self.temperature, self.epsilon = temperature, epsilon

    def distribution(self, view: View) -> np.ndarray:
        legal = np.asarray(view.legal, bool)
        p = np.asarray(self.base.distribution(view), float) ** (1.0 / self.temperature)
        p = np.where(legal, p, 0.0)
        p /= p.sum()
        return (1 - self.epsilon) * p + self.epsilon * legal / legal.sum()


class MySimulator:
    name = "my-simulator"

    def train_envs(self, game: str) -> list:
        return [(f"{game}-frozen", {"user": TemperedSimulator(game)})]

    def train(self, ctx):
        from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

        env_id, kwargs = self.train_envs(ctx.game)[0]
        trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, seed=ctx.seed, total_steps=ctx.budget))
        ctx.progress(0, trainer)  # the package's trainer is a result as it is: its networks play every seat
        trainer.train(lambda row: ctx.progress(row["agent_steps"], trainer))
        return trainer
