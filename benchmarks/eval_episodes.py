"""How many evaluation episodes each game needs: the benchmark's measurement-resolution rule.

One run's held-out score is a mean over evaluation episodes, so its evaluation noise is
``sd_episode / sqrt(n)``. The rule, declared before the run it sets (2026-11-30) and borrowed from
measurement-system analysis (gauge R&R's "measurement variation under 10% of the tolerance"): **one run's
evaluation standard error is at most 10% of the game's band** (ceiling minus floor, held-out)::

    n = ceil((sd_episode / (0.10 * band)) ** 2), rounded up to a multiple of 64 (the evaluation envs)

and each run's held-out side and panel play ``max(n, the preset's eval_episodes)`` episodes; the train side,
which measures the exploit, keeps the preset's (an explicit ``--eval-episodes`` is used as given for both).

Inputs, none of them a trained method's held-out number:

* ``sd_episode``: the per-episode standard deviation of the held-out success metric, the largest of the
  band's rows' (``random``: uniform legal acts; ``untrained``: a freshly initialised network; ``oracle``: the
  ceiling, trained here at the default preset's budget, seed 0), measured here on ``--episodes`` episodes
  on seeds no benchmark evaluation uses (9_000_000 + ...). Measurement rows only: no method is trained;
* ``band``: the ``oracle`` and ``random`` rows' held-out means in a committed default run
  (``--results``, default ``benchmarks/results/default/results.json``): the instrument's ceiling and floor.

Writes ``benchmarks/results/eval_episodes/eval_episodes.json`` and prints it; ``EVAL_EPISODES_MIN``
in ``scope_envs/bench/methods.py`` holds the numbers it derived (``tests/test_bench_rows.py`` checks they agree).

    python benchmarks/eval_episodes.py                  # all three games, 4,000 episodes per row
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

import scope_envs
from scope_envs.arguments import count, output_path
from scope_envs.bench.methods import (
    EVAL_SE_FRACTION,
    GAMES,
    ceiling_steps,
    method_setup,
    preset_steps,
)
from scope_envs.files import write_atomic

HERE = Path(__file__).parent
SEED = 9_000_000  # no benchmark evaluation uses seeds from here on


def episode_sd(game: str, episodes: int, row: str) -> tuple[float, float]:
    """Mean and per-episode sd of the held-out success metric of one of the band's rows (64 envs, as
    ``evaluate``)."""
    # loaded here, not at the top: --help and a bad argument answer without torch
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer
    from scope_envs.train.rollout import UniformAgent

    env_id, kwargs, overrides = method_setup(game, row)
    steps = ceiling_steps(game, preset_steps(game)) if row == "oracle" else 0
    trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=kwargs, total_steps=steps, seed=0, **overrides))
    trainer.train()
    envs = [scope_envs.make(f"{game}-heldout") for _ in range(64)]
    player = UniformAgent(trainer, SEED) if row == "random" else trainer
    eps, _ = player.play(envs, episodes, seed=SEED)
    metric = envs[0].unwrapped.game.success_metric
    values = np.array([e["outcome"][metric] if metric else e["return"] for e in eps])
    return float(values.mean()), float(values.std(ddof=1))


def required(sd: float, band: float, fraction: float = EVAL_SE_FRACTION) -> int:
    """The rule: the fewest episodes, a multiple of 64, with sd / sqrt(n) <= fraction * band."""
    n = math.ceil((sd / (fraction * band)) ** 2)
    return -(-n // 64) * 64


def results_name(path: Path) -> str:
    """``path`` relative to the repository where it lies inside it (the JSON is committed)."""
    try:
        return str(path.resolve().relative_to(HERE.parent.resolve()))
    except ValueError:
        return str(path)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES, help="the games (default: all of them)")
    ap.add_argument("--episodes", type=count(1_000_000, low=2), default=4000,
                    help="held-out episodes per band row (2 to 1_000_000; so few that every episode of each row "
                         "scores alike give a spread of 0, which the rule cannot use: an error, play more)")
    ap.add_argument("--results", type=Path, default=HERE / "results" / "default" / "results.json",
                    help="a default run's results.json: its random and oracle rows give each game's band")
    ap.add_argument("--out", type=output_path, default=HERE / "results" / "eval_episodes",
                    help="the folder of eval_episodes.json (default: the committed benchmarks/results/eval_episodes; "
                         "give another for a trial run)")
    args = ap.parse_args(argv)
    if not args.results.is_file():
        ap.error(f"argument --results: no such file: {args.results}")
    try:
        table = json.loads(args.results.read_text())
    except (OSError, ValueError) as e:
        ap.error(f"argument --results: not a readable results.json: {e}")
    for game in args.games:
        rows = table.get(game) if isinstance(table, dict) else None
        if not isinstance(rows, dict) or any(not isinstance(rows.get(r), dict) or "heldout_success" not in rows[r]
                                                  for r in ("random", "oracle")):
            ap.error(f"argument --results: {args.results} has no random and oracle rows of {game}: a default "
                     f"run's results.json holds them")
        if not rows["oracle"]["heldout_success"] > rows["random"]["heldout_success"]:
            ap.error(f"argument --results: {args.results}'s {game} band is empty (oracle "
                     f"{rows['oracle']['heldout_success']} not above random {rows['random']['heldout_success']})")
    import torch

    torch.set_num_threads(1)
    out = {"rule": f"evaluation SE <= {EVAL_SE_FRACTION:.0%} of the band", "fraction": EVAL_SE_FRACTION,
           "episodes": args.episodes, "results": results_name(args.results), "games": {}}
    for game in args.games:
        t0 = time.perf_counter()
        floor, ceiling = (table[game][row]["heldout_success"] for row in ("random", "oracle"))
        band = ceiling - floor
        rows = {row: episode_sd(game, args.episodes, row) for row in ("random", "untrained", "oracle")}
        sd = max(s for _, s in rows.values())
        if not sd > 0:  # every episode of every row scored alike: the rule's n would be 0
            sys.exit(f"eval_episodes: {game}'s band rows show no spread over {args.episodes} episodes (every episode "
                     f"scored alike), so the rule has no sd to size from: run again with more --episodes")
        n = required(sd, band)
        out["games"][game] = {"band": band, "floor": floor, "ceiling": ceiling,
                              "sd_episode": {k: s for k, (_, s) in rows.items()},
                              "mean": {k: m for k, (m, _) in rows.items()},
                              "eval_episodes": n, "se_at_n": sd / math.sqrt(n), "se_frac_at_n": sd / math.sqrt(n) / band,
                              "wall_s": time.perf_counter() - t0}
        args.out.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out / "eval_episodes.json", json.dumps(out, indent=1))  # each game as it finishes
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
