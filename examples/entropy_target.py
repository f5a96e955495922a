"""A custom algorithm written against the plug-in protocol (not SB3): policy gradient with a target entropy.

``TargetEntropyPG`` trains a linear softmax policy for ``agent_0`` on ``<game>-frozen`` with REINFORCE (the
episode's return minus the batch's mean, per decision) and an entropy bonus whose coefficient ``alpha``
adapts, as SAC's temperature does, to hold the policy's entropy at ``target_frac`` of the uniform policy's
over the legal acts: a remedy aimed at the entropy collapse a frozen, sharpened simulator invites. Episodes are
played by the package's rollout collector (``scope_envs.train.rollout.collect``) on the batched engine
(``scope_envs.make_vec``); the policy is this file's ``LinearSoftmax``, a ``Policy`` of
``scope_envs.train.policy``. Benchmark it with one command::

    scope-envs bench --method examples/entropy_target.py:TargetEntropyPG --against reference
"""

from __future__ import annotations

import numpy as np

from scope_envs.bench.plugins import Trained
from scope_envs.train.policy import Decisions

KEY = 0x746570  # this method's generators: [KEY, seed, purpose]


class LinearSoftmax:
    """``softmax(x W + b)`` over the legal acts, sampled from its own generator (``reseeded`` for evaluations)."""

    def __init__(self, W: np.ndarray, b: np.ndarray, seed: int = 0):
        self.W, self.b, self.rng = W, b, np.random.default_rng([KEY, seed, 1])

    def reseeded(self, seed: int) -> LinearSoftmax:
        return LinearSoftmax(self.W, self.b, seed)

    def probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        logits = np.where(mask, np.asarray(obs, np.float64) @ self.W + self.b, -np.inf)
        logits -= logits.max(1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(1, keepdims=True)

    def act(self, obs: np.ndarray, mask: np.ndarray, greedy: bool = False) -> Decisions:
        mask = np.asarray(mask, bool)
        p = self.probs(obs, mask)
        if greedy:
            a = p.argmax(1)
        else:
            a = (p.cumsum(1) <= self.rng.random(len(p))[:, None]).sum(1).clip(max=p.shape[1] - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = -np.where(p > 0, p * np.log(p), 0.0).sum(1)
        return Decisions(a, np.log(p[np.arange(len(a)), a]), None, ent)


class TargetEntropyPG:
    name = "entropy-target"
    episodes_per_iter = 64
    learning_rate = 2.0  # set on the training side only (the return against p4g-frozen rose at 2.0, not at 0.5)
    target_frac = 0.5  # of log(number of legal acts), per decision
    alpha_lr = 0.05

    def train_envs(self, game: str) -> list[str]:
        return [f"{game}-frozen"]

    def train(self, ctx) -> Trained:
        import scope_envs
        from scope_envs.train.rollout import collect

        vec = scope_envs.make_vec(f"{ctx.game}-frozen", num_envs=32)
        env = scope_envs.make(f"{ctx.game}-frozen")
        obs_dim, n_acts = env.observation_space("agent_0")["observation"].shape[0], env.action_space("agent_0").n
        init = np.random.default_rng([KEY, ctx.seed, 0])
        policy = LinearSoftmax(init.normal(0, 0.01, (obs_dim, n_acts)), np.zeros(n_acts), ctx.seed)
        log_alpha, decisions, history, env_steps = np.log(0.01), 0, [], 0
        ctx.progress(0, policy.reseeded(ctx.seed))
        it = 0
        while decisions < ctx.budget:
            episodes, steps = collect(vec, {"agent_0": policy}, self.episodes_per_iter,
                                      seed=ctx.seed * 100_000 + it * 1000 if it == 0 else None)
            env_steps += steps
            rows = [(d, ep["return"]) for ep in episodes for d in ep["traj"].get("agent_0", [])]
            x = np.stack([d["x"] for d, _ in rows]).astype(np.float64)
            m = np.stack([d["m"] for d, _ in rows])
            a = np.array([d["a"] for d, _ in rows])
            ret = np.array([r for _, r in rows])
            adv = (ret - ret.mean()) / (ret.std() + 1e-8)
            p = policy.probs(x, m)
            with np.errstate(divide="ignore", invalid="ignore"):
                logp = np.where(p > 0, np.log(p), 0.0)
            ent = -(p * logp).sum(1)
            alpha = float(np.exp(log_alpha))
            # d log pi(a)/d logits = onehot(a) - p; d H/d logits = -p (log p + H)
            g_logits = adv[:, None] * (np.eye(n_acts)[a] - p) - alpha * p * (logp + ent[:, None])
            policy.W += self.learning_rate * x.T @ g_logits / len(rows)
            policy.b += self.learning_rate * g_logits.mean(0)
            target = self.target_frac * np.log(m.sum(1)).mean()
            log_alpha += self.alpha_lr * (target - ent.mean())  # below target: raise the bonus
            decisions += len(rows)
            history.append({"agent_steps": decisions, "return": float(np.mean([e["return"] for e in episodes])),
                            "policy_entropy": float(ent.mean()), "alpha": alpha})
            ctx.progress(decisions, policy.reseeded(ctx.seed))
            it += 1
        return Trained(policy=policy, agent_steps=decisions, env_steps=env_steps, history=history)
