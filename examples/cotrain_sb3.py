"""Both seats of a ``-cotrain`` id trained with an outside library, benchmarked as a plug-in method.

sb3-contrib's MaskablePPO trains the persuader (``agent_0``) and the user (``user_0``) of ``<game>-cotrain`` in
turn, alternating best responses: each round, ``agent_0`` learns against the user's current model, then
``user_0`` learns against the persuader's. Each seat is a ``SingleAgentView`` of the co-training env whose other
seat is played by the other model through ``scope_envs.integrations.sb3.SB3Player`` (the callable ``others``
takes); the seats' spaces differ, which is why SuperSuit's shared-space wrappers do not apply. The learned user
comes back as the second seat (``Trained.seats``), so the benchmark's train side is played against it, as for
the built-in ``cotrain`` row. Benchmark it with one command::

    scope-envs bench --method examples/cotrain_sb3.py:CoTrainSB3 --against reference

The budget counts the persuader's training decisions only (the benchmark's currency); the user trains as many
decisions each round (``user_share``). Needs the sb3 extra: ``pip install "scope-envs[sb3]"``.
"""

from __future__ import annotations

import numpy as np


class OtherSeat:
    """The other seat's player for a view: its model's ``SB3Player`` once there is one, uniform legal acts before
    (a draw from its own generator)."""

    def __init__(self, seed: int):
        self.player, self.rng = None, np.random.default_rng(seed)

    def __call__(self, obs) -> int:
        if self.player is not None:
            return self.player(obs)
        return int(self.rng.choice(np.flatnonzero(obs["action_mask"])))


class CoTrainSB3:
    name = "cotrain-sb3"
    rounds = 4  # best-response rounds per seat
    user_share = 1.0  # the user's decisions per round, as a share of the persuader's
    n_steps = 64
    batch_size = 64
    ent_coef = 0.01

    def train_envs(self, game: str) -> list[str]:
        return [f"{game}-cotrain"]

    def train(self, ctx):
        from sb3_contrib import MaskablePPO

        import scope_envs
        from scope_envs.bench.plugins import Trained
        from scope_envs.bench.policies import SB3Policy
        from scope_envs.integrations.sb3 import SB3Player
        from scope_envs.wrappers import SingleAgentView

        env_id = f"{ctx.game}-cotrain"
        plays_user, plays_agent = OtherSeat(ctx.seed), OtherSeat(ctx.seed + 1)
        views = {"agent_0": SingleAgentView(scope_envs.make(env_id), "agent_0", others={"user_0": plays_user}),
                 "user_0": SingleAgentView(scope_envs.make(env_id), "user_0", others={"agent_0": plays_agent})}
        models = {seat: MaskablePPO("MultiInputPolicy", view, n_steps=self.n_steps, batch_size=self.batch_size,
                                    gamma=1.0, ent_coef=self.ent_coef, seed=ctx.seed + i, device="cpu", verbose=0)
                  for i, (seat, view) in enumerate(views.items())}
        agent, user = models["agent_0"], models["user_0"]

        def both():  # the curve's points play the train side against the user as it is then
            return Trained(policy=SB3Policy(agent, ctx.seed), seats={"user_0": SB3Policy(user, ctx.seed)})

        ctx.progress(0, both())
        chunk = max(1, -(-ctx.budget // self.rounds))
        while agent.num_timesteps < ctx.budget:
            agent.learn(min(chunk, ctx.budget - agent.num_timesteps), reset_num_timesteps=False)
            plays_agent.player = SB3Player(agent)
            user.learn(max(1, int(chunk * self.user_share)), reset_num_timesteps=False)
            plays_user.player = SB3Player(user)
            ctx.progress(agent.num_timesteps, both())
        trained = both()
        trained.agent_steps, trained.env_steps = agent.num_timesteps, agent.num_timesteps + user.num_timesteps
        return trained
