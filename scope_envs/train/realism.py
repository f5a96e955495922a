"""The realism user reward: a discriminator of real and simulated reply pairs, trained as training goes.

After GAIL (Ho & Ermon, 2016) at the act level, and the user model paid to be indistinguishable from real users
of Turing-RL (arXiv 2606.19336): a co-trained user (``cotrain``, every ``population`` member) whose game was made
with ``user_reward="realism"`` is paid, per reply, the discriminator's log-odds that the reply is a real
person's, ``log D - log(1 - D)`` (the log density ratio of real to simulated pairs, as the discriminator
estimates it), clipped to +-``REWARD_CLIP``, each reply's own over the episode's number of replies (so that an
episode's realism is the mean over its replies, and each reply is credited for itself); ``"realism_mixed"``
pays half of that and half of the game's default user reward (the env pays that half).

The discriminator is a logistic regression over a game's pair table (``SHAPE``: context axes, then the reply):
the reply's own weight plus one weight per (context axis value, reply), so that it sees which replies follow
which context without a parameter per cell, with an L2 penalty. Its data are tables, not samples: the real
pairs of the game's training part (``fit`` fold, from ``GameSpec.realism``) and the users' replies of the
iteration. Each iteration it first scores the new replies against the **held-back** fold (real persuadees it
never trained on): that balanced accuracy is the check that it learned what real people do and did not only
memorise its own real pairs. Then it takes ``steps`` Adam steps on the fit fold against the new replies, and
pays the users with the updated weights.

Example::

    >>> import numpy as np
    >>> real = np.zeros((2, 3)); real[0, 0] = real[1, 1] = 10   # after context 0 people say 0, after 1 they say 1
    >>> fake = np.zeros((2, 3)); fake[:, 2] = 10                # the simulator always says 2
    >>> d = Discriminator((2, 3))
    >>> for _ in range(20):
    ...     _ = d.fit(real, fake)
    >>> bool(d.log_odds()[0, 0] > 0 > d.log_odds()[0, 2])
    True
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.rewards import REALISM_REWARDS
from scope_envs.train.numpy_ac import Adam

REWARD_CLIP = 5.0
# the trainer's log row of a realism-paid run (``Realism.update``), which the benchmark's records keep
REALISM_LOG = ("discriminator_accuracy", "discriminator_held_back_accuracy", "realism_distance")


class Realism:
    """What a trainer needs to pay a user for realism: the game's real pairs (``GameSpec.realism``), the
    discriminator, and the realism term's ``weight`` (``REALISM_REWARDS``). Both trainers (the act-level PPO and
    the LLM one) hold one and differ only in how they credit a reply's reward."""

    def __init__(self, pairs, weight: float):
        self.pairs, self.weight = pairs, weight
        self.discriminator = Discriminator(pairs.shape)

    @classmethod
    def for_game(cls, game, user_reward: str | None) -> Realism | None:
        """The realism reward of ``game`` under ``user_reward``, or None when that is not a realism mode; a
        ``ValueError`` for a game with no real dialogues to ground in."""
        if user_reward not in REALISM_REWARDS:
            return None
        from scope_envs.games import game_spec
        from scope_envs.games.spec import build

        spec = game_spec(game.name)
        if spec.realism is None:
            raise ValueError(f"user_reward={user_reward!r} needs a game with real dialogues to ground in "
                             f"(GameSpec.realism); {game.name!r} has none")
        return cls(build(spec.realism), REALISM_REWARDS[user_reward])

    def update(self, cells: list[np.ndarray]) -> dict[str, float]:
        """One iteration's discriminator: scored on the held-back real pairs against the users' pairs ``cells``
        (each episode's, as ``pairs.cells`` gives them), then fitted on the fit fold against them. Returns the
        iteration's figures (``REALISM_LOG`` and the loss)."""
        fake = table(cells, self.pairs.shape)
        held_back = self.discriminator.accuracy(self.pairs.held_back, fake)
        loss = self.discriminator.fit(self.pairs.fit, fake)
        return {"discriminator_loss": loss, "discriminator_accuracy": self.discriminator.accuracy(self.pairs.fit, fake),
                "discriminator_held_back_accuracy": held_back,
                "realism_distance": distance(self.pairs.fit + self.pairs.held_back, fake)}


class Discriminator:
    """Real against simulated pairs of a table of shape ``shape`` (context axes..., reply); see the module."""

    def __init__(self, shape: tuple[int, ...], lr: float = 0.05, l2: float = 1e-3, steps: int = 20):
        self.shape, self.l2, self.steps = tuple(shape), l2, steps
        n_reply = self.shape[-1]
        sizes = [1, n_reply, *(d * n_reply for d in self.shape[:-1])]  # bias, reply, each context axis x reply
        self.flat = np.zeros(sum(sizes))
        self.views, offset = [], 0
        for size in sizes:
            self.views.append(self.flat[offset:offset + size])
            offset += size
        self.adam = Adam(self.flat, lr)

    def log_odds(self) -> np.ndarray:
        """log D - log(1 - D) of every cell of the table."""
        bias, reply, *axes = self.views
        z = np.full(self.shape, bias[0]) + reply
        for k, w in enumerate(axes):
            shape = [1] * len(self.shape)
            shape[k], shape[-1] = self.shape[k], self.shape[-1]
            z = z + w.reshape(shape)
        return z

    def fit(self, real: np.ndarray, fake: np.ndarray) -> float:
        """``steps`` Adam steps of the logistic loss, each side's table weighted to total 1; returns the loss."""
        p, q = _share(real), _share(fake)
        for _ in range(self.steps):
            z = self.log_odds()
            d = 1.0 / (1.0 + np.exp(-z))
            g = q * d - p * (1.0 - d)  # d loss / d z
            grads = [np.array([g.sum()]), g.reshape(-1, self.shape[-1]).sum(0)]
            for k in range(len(self.shape) - 1):
                other = tuple(a for a in range(len(self.shape) - 1) if a != k)
                grads.append(g.sum(other).ravel())
            grad = np.concatenate(grads) + self.l2 * self.flat * (np.arange(self.flat.size) > 0)
            self.adam.step(grad)
        z = self.log_odds()
        return float(-(p * -np.logaddexp(0.0, -z)).sum() - (q * -np.logaddexp(0.0, z)).sum())

    def accuracy(self, real: np.ndarray, fake: np.ndarray) -> float:
        """Balanced accuracy on two tables: the mean of the share of real pairs called real (log-odds above 0)
        and of simulated pairs called simulated."""
        z = self.log_odds()
        return float(0.5 * (_share(real) * (z > 0)).sum() + 0.5 * (_share(fake) * (z <= 0)).sum())

    def rewards(self, cells: np.ndarray) -> np.ndarray:
        """The realism reward of each pair (flat cell indices): its clipped log-odds."""
        return np.clip(self.log_odds().ravel()[cells], -REWARD_CLIP, REWARD_CLIP)


def _share(table: np.ndarray) -> np.ndarray:
    total = table.sum()
    return table / total if total > 0 else table


def table(cells: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """Counts of flat cell indices as a table of ``shape`` (an index of -1, no pair, is not counted)."""
    flat = np.concatenate(cells) if cells else np.zeros(0, np.int64)
    flat = flat[flat >= 0]
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(float)


def distance(real: np.ndarray, fake: np.ndarray) -> float:
    """How far simulated replies are from real ones, context by context: the Jensen-Shannon divergence (bits, in
    [0, 1]) between the real and the simulated reply distribution of each context that both sides reach, weighted
    by the real pairs' share of that context. 0: the same replies in every shared context."""
    r = real.reshape(-1, real.shape[-1])
    f = fake.reshape(-1, fake.shape[-1])
    nr, nf = r.sum(1), f.sum(1)
    both = (nr > 0) & (nf > 0)
    if not both.any():
        return float("nan")
    p, q = r[both] / nr[both, None], f[both] / nf[both, None]
    m = 0.5 * (p + q)

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log2(a / b), 0.0).sum(1)

    js = 0.5 * kl(p, m) + 0.5 * kl(q, m)
    return float((js * nr[both]).sum() / nr[both].sum())
