"""Dialogues played in bulk, and the donation statistics of the result.

``play`` runs a persuader against a persuadee population on one split;
``statistics`` summarizes the outcomes as ``scope-envs validate`` reports them
(``mean_donation``, ``give_rate``, ``mean_intended`` and ``mean_actual`` among
those who stated an amount). Shared by validation (``validate.py``) and
calibration (``calibrate.py``).
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.env import DialogueParallelEnv
from scope_envs.core.simulator import Simulator
from scope_envs.games.p4g.game import P4GGame


def play(user: Simulator, persuader: Simulator, split: str, episodes: int, seed: int,
         progress: bool | None = False) -> dict[str, np.ndarray]:
    """Play ``episodes`` dialogues; return per-episode intended, actual and stated. ``progress``: a bar over
    the episodes on stderr (tqdm's None: on a terminal only)."""
    from tqdm import tqdm

    env = DialogueParallelEnv(P4GGame(), [user], split=split)
    rng = np.random.default_rng([seed, 1])  # one stream over all episodes: they cannot be played in chunks
    out = {"intended": [], "actual": [], "stated": []}
    quiet = None if progress is None else not progress
    for ep in tqdm(range(episodes), desc=f"playing {split}", unit="episode", disable=quiet):
        env.reset(seed=seed * 100_003 + ep)
        while env.agents:
            _, _, _, _, infos = env.step({"agent_0": persuader.act(env.view("persuader"), rng)})
        for k in out:
            out[k].append(infos["agent_0"][k])
    return {k: np.array(v) for k, v in out.items()}


def statistics(result: dict[str, np.ndarray]) -> dict[str, float]:
    stated = result["stated"] > 0
    return {
        "mean_donation": float(result["actual"].mean()),
        "give_rate": float((result["actual"] > 0).mean()),
        "mean_intended": float(result["intended"][stated].mean()) if stated.any() else 0.0,
        "mean_actual": float(result["actual"][stated].mean()) if stated.any() else 0.0,
        "episodes": int(len(result["actual"])),
    }
