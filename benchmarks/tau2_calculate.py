"""Time of tau2's ``calculate`` without eval (``arithmetic.calculate``) against the eval-based original.

Both run in this process, alternating, on the same ordinary expressions (the
kind the tau^2-bench gold actions use: sums and products of prices, a
parenthesis or two); the figure is the ratio of the two times (safe / eval),
since the machine is noisy. Each expression's answers are checked equal first.
Prints one JSON object.

    python benchmarks/tau2_calculate.py [--rounds 5] [--repeats 2000]
"""

from __future__ import annotations

import argparse
import json
import time

from scope_envs.arguments import count
from scope_envs.games.tau2 import arithmetic

EXPRESSIONS = [
    "2 + 2", "164.28", "135.24 - 153.23", "1319.43 - 302.67 + 271.89", "155.33 - 147.05 + 268.77 - 235.13",
    "2 * ((350 - 122) + (499 - 127))", "(1200 - 350) * 0.1", "45.5 + 12.25 * 3", "100 / 3", "2 * (199.99 + 15)",
    "(89 + 45 + 12) / 3", "1000 * 0.85 - 20", "250 // 3", "3 * 299 + 2 * 149 - 50", "(54.04 + 41.64) * 2",
    "12 * 4 + 7 - 3 / 2", "((100 + 200) * 3 - 50) / 4", "0.15 * 2499.99", "-(20 - 35) * 2", "7 ** 2 + 1",
]


def eval_calculate(expression: str) -> str:
    """The original (upstream's) implementation: whitelist, eval, round."""
    if not all(c in "0123456789+-*/(). " for c in expression):
        raise ValueError("Invalid characters in expression")
    return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))


def timed(fn, repeats: int) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        for e in EXPRESSIONS:
            fn(e)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=count(1000), default=5, help="at most 1000")
    ap.add_argument("--repeats", type=count(10_000_000), default=2000, help="at most 10_000_000")
    args = ap.parse_args()
    for e in EXPRESSIONS:
        assert arithmetic.calculate(e) == eval_calculate(e), e
    safe, ref = [], []
    for _ in range(args.rounds):  # alternate, keep the best of each
        safe.append(timed(arithmetic.calculate, args.repeats))
        ref.append(timed(eval_calculate, args.repeats))
    calls = args.repeats * len(EXPRESSIONS)
    print(json.dumps({"benchmark": "tau2_calculate", "expressions": len(EXPRESSIONS), "calls_per_round": calls,
                      "safe_us_per_call": round(min(safe) / calls * 1e6, 2),
                      "eval_us_per_call": round(min(ref) / calls * 1e6, 2),
                      "ratio_safe_over_eval": round(min(safe) / min(ref), 3)}, indent=1))


if __name__ == "__main__":
    main()
