"""Real versus simulated donation statistics, and the calibration that makes them meet.

``scope-envs validate p4g`` runs the held-out human-proxy population against an
*empirical persuader* (the per-turn strategy mix of the real persuaders) and
reports ``{"real": {...}, "simulated": {...}}`` with ``mean_donation``,
``give_rate``, ``mean_intended`` (among those who stated an amount) and
``mean_actual`` (the same people's actual gifts).

``calibrate`` sets the two willingness offsets on *train* personas only: the
human proxy's so that its give rate matches the real one, and the reference
model's likewise; the held-out personas are only ever used to report.
"""

from __future__ import annotations

import numpy as np

from scope_envs.core.simulator import Simulator
from scope_envs.core.env import DialogueParallelEnv
from scope_envs.games.p4g import personas
from scope_envs.games.p4g.game import P4GGame


def play(user: Simulator, persuader: Simulator, split: str, episodes: int, seed: int) -> dict[str, np.ndarray]:
    """Play ``episodes`` dialogues; return per-episode intended, actual and stated."""
    env = DialogueParallelEnv(P4GGame(), [user], split=split)
    rng = np.random.default_rng([seed, 1])
    out = {"intended": [], "actual": [], "stated": []}
    for ep in range(episodes):
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


def validate(data_dir: str | None = None, episodes: int = 2000, seed: int = 0) -> dict:
    from scope_envs.agents.p4g import EmpiricalPersuader, HumanProxyPersuadee

    if data_dir is not None:
        from scope_envs.games.p4g.fit import fit

        real = fit(data_dir)["real"]
    else:
        real = personas.params()["real"]
    sim = statistics(play(HumanProxyPersuadee(), EmpiricalPersuader(), "heldout", episodes, seed))
    real = {
        "mean_donation": real["mean_donation"],
        "give_rate": real["give_rate"],
        "mean_intended": real["mean_intended"],
        "mean_actual": real["mean_actual"],
        "n": real["n"],
    }
    return {
        "real": real,
        "simulated": {**sim, "population": "heldout human proxies", "persuader": "empirical"},
        "abs_diff": {k: round(abs(sim[k] - real[k]), 4) for k in ("mean_donation", "give_rate")},
    }


def _bisect(measure, target: float, lo: float = -4.0, hi: float = 4.0, iters: int = 14) -> float:
    """Solve measure(x) = target for a measure increasing in x."""
    for _ in range(iters):
        mid = (lo + hi) / 2
        if measure(mid) < target:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, 4)


def calibrate(params: dict, episodes: int = 1000, seed: int = 1) -> dict:
    """Offsets that match the real give rate and mean donation, fitted on train personas."""
    from scope_envs.agents.p4g import EmpiricalPersuader, HumanProxyPersuadee, ReferencePersuadee

    out = {"human_proxy_offset": 0.0, "human_proxy_amount_shift": 0.0, "reference_offset": 0.0}
    personas.set_params({**params, "calibration": out})
    real = params["real"]
    # the offsets move the give rate; the amount shift moves only the size of gifts, so fit it last
    for key, user, stat in (
        ("human_proxy_offset", HumanProxyPersuadee(), "give_rate"),
        ("human_proxy_amount_shift", HumanProxyPersuadee(), "mean_donation"),
        ("reference_offset", ReferencePersuadee(), "give_rate"),
    ):

        def measure(x, key=key, user=user, stat=stat):
            out[key] = x
            return statistics(play(user, EmpiricalPersuader(), "train", episodes, seed))[stat]

        out[key] = _bisect(measure, real["mean_donation" if stat == "mean_donation" else "give_rate"])
    out = {**out, "episodes": episodes}
    out["split"] = "train"
    return out
