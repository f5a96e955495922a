"""Calibration: the willingness offsets that make the simulated donation statistics meet the real ones.

``calibrate`` sets, on *train* personas facing the empirical persuader, the
human proxy's willingness offset so that its give rate matches the real one,
then its amount shift so that its mean donation matches, and the reference
model's offset so that its give rate matches; the held-out personas are only
ever used to report (``validate.py``). The fitting script
(``python -m scope_envs.validate.p4g``) stores the result under
``params["calibration"]``.
"""

from __future__ import annotations

from tqdm.auto import tqdm

from scope_envs.core.simulator import Simulator
from scope_envs.games.p4g import personas
from scope_envs.games.p4g.simulate import play, statistics

BISECT_STEPS = 14


def _bisect(measure, target: float, lo: float = -4.0, hi: float = 4.0, iters: int = BISECT_STEPS) -> float:
    """Solve measure(x) = target for a measure increasing in x."""
    for _ in range(iters):
        mid = (lo + hi) / 2
        if measure(mid) < target:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, 4)


def calibrate(params: dict, *, human_proxy: Simulator, reference: Simulator, persuader: Simulator,
              episodes: int = 1000, seed: int = 1, progress: bool = False) -> dict:
    """Offsets that match the real give rate and mean donation, fitted on train personas.

    The players are given (``scope_envs.agents.p4g``: ``HumanProxyPersuadee``,
    ``ReferencePersuadee``, ``EmpiricalPersuader``; players sit a layer above the
    game). Installs ``params`` (with the offsets being fitted) as the game's
    parameters. ``progress`` shows a bar over the bisection steps (on stderr).
    """
    out = {"human_proxy_offset": 0.0, "human_proxy_amount_shift": 0.0, "reference_offset": 0.0}
    personas.set_params({**params, "calibration": out})
    real = params["real"]
    # the offsets move the give rate; the amount shift moves only the size of gifts, so fit it last
    targets = (
        ("human_proxy_offset", human_proxy, "give_rate"),
        ("human_proxy_amount_shift", human_proxy, "mean_donation"),
        ("reference_offset", reference, "give_rate"),
    )
    with tqdm(total=len(targets) * BISECT_STEPS, desc="calibrating", unit="step", disable=not progress) as bar:
        for key, user, stat in targets:
            bar.set_postfix_str(key)

            def measure(x, key=key, user=user, stat=stat):
                out[key] = x
                bar.update()
                return statistics(play(user, persuader, "train", episodes, seed))[stat]

            out[key] = _bisect(measure, real["mean_donation" if stat == "mean_donation" else "give_rate"])
    out = {**out, "episodes": episodes}
    out["split"] = "train"
    return out
