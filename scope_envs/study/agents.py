"""The conditions' agents: act-level policies that speak through the game's text realizer.

A condition's policy is a ``PPOTrainer`` (``scope_envs.train.act_ppo``); only its ``agent_0`` network
plays. On the agent's turn it reads the act observation of the text game (the same features the act
surface gives), draws an act from its masked distribution (the act surface's mask: ``games.py``) with a generator seeded by the study, the
session and the turn, and the game renders that act in words. The draw depends only on those seeds and
on the dialogue so far, so a reply generated again after a restart is the same reply.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from scope_envs.study.config import Condition, StudyConfig
from scope_envs.study.games import observation, spec

AGENT = "agent_0"
log = logging.getLogger("scope_envs.study")


class PolicyError(ValueError):
    """A condition's policy folder that cannot be loaded (the message names it and says why)."""


def load_policy(cfg: StudyConfig, cond: Condition):
    """The condition's trainer: loaded from its folder, or trained once and saved under ``policies/``."""
    import torch

    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    folder = Path(cond.path) if cond.path else cfg.folder / "policies" / cond.name
    if (folder / "model.pt").exists():
        try:
            return PPOTrainer.load(folder)
        except Exception as e:  # not a saved model (a Git LFS pointer, a save cut short), a config of another kind
            reason = " ".join(str(e).split())[:200]
            again = "" if cond.path else ", or delete it to train it again"
            raise PolicyError(f"{folder}: cannot load this policy ({type(e).__name__}: {reason}); give a "
                              f"PPOTrainer.save folder{again}") from None
    if cond.path:
        raise FileNotFoundError(f"{folder}: no model.pt")
    if cond.method:  # as `scope-envs bench` trains the method: its env, env options and PPO settings
        from scope_envs.bench.methods import method_setup

        env_id, env_kwargs, overrides = method_setup(cfg.game, cond.method)
        steps = 0 if cond.method == "untrained" else cond.steps
        ppo = PPOConfig(env_id=env_id, env_kwargs={**env_kwargs, **spec(cfg).env_kwargs()}, seed=cond.seed,
                        total_steps=steps, **overrides)
    else:
        steps = cond.steps
        ppo = PPOConfig(env_id=cond.train, env_kwargs=spec(cfg).env_kwargs(), seed=cond.seed, total_steps=steps,
                        num_envs=8, bc_episodes=100, bc_steps=100)
    log.info("training condition %s (%s) for %d steps", cond.name, cond.method or cond.train, steps)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small networks: one thread is fastest and leaves the server its cores
    try:
        trainer = PPOTrainer(ppo)
        if steps:
            trainer.train()
    finally:
        torch.set_num_threads(threads)
    trainer.save(folder)
    return trainer


class ActSpeaker:
    """One condition's agent: ``reply(game, seeds)`` -> (act, text) for the agent's turn."""

    def __init__(self, trainer, game_spec, greedy: bool = False):
        self.trainer = trainer
        self.spec = game_spec
        self.greedy = greedy
        self.net = trainer.learners[trainer.seat[AGENT]]

    def check(self, game) -> None:
        want, n = self.trainer.dims[AGENT], self.trainer.n_acts[AGENT]
        got, m = observation(game).shape[0], len(self.spec.mask(game))
        if want != got or n != m:
            raise ValueError(f"the policy reads {want} features and plays {n} acts; the {game.name} study gives "
                             f"{got} features and {m} acts")

    def reply(self, game, seeds: list[int]) -> tuple[int, str]:
        import torch

        obs = {"observation": observation(game), "action_mask": self.spec.mask(game).astype(np.int8)}
        x, m = self.trainer.encode(AGENT, obs)
        with torch.no_grad():
            probs = self.net.dist(torch.as_tensor(x)[None], torch.as_tensor(m)[None]).probs[0].double().numpy()
        rng = np.random.default_rng(seeds)
        probs = np.where(m, probs, 0.0)
        act = int(probs.argmax()) if self.greedy else int(rng.choice(len(probs), p=probs / probs.sum()))
        return act, self.spec.realize(game, act, rng)


def speakers(cfg: StudyConfig) -> dict[str, ActSpeaker]:
    return {c.name: ActSpeaker(load_policy(cfg, c), spec(cfg), c.greedy) for c in cfg.conditions}
