"""Time to read hostile persuadee messages: the linear rules against the ``A.*B`` regexes they replaced.

Both run in this process on the same texts ("no " repeated: every word starts
an A, no B follows, the worst case for ``A.*B``). The ratio old/new at each
length shows the growth: quadratic for the regexes, linear for the rules.
Prints one JSON object.

    python benchmarks/hostile_text.py [--lengths 1000 4000 16000]
"""

from __future__ import annotations

import argparse
import json
import re
import time

from scope_envs.arguments import count
from scope_envs.games.p4g import language


def best_of(fn, text: str, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=count(10_000_000), nargs="+", default=[1000, 4000, 16000],
                    help="message lengths in characters (each at most 10_000_000)")
    args = ap.parse_args()
    pairs = [rule for _, rule in language._PERSUADEE_RULES if isinstance(rule, tuple)]
    regexes = [re.compile(f"(?:{a.pattern}).*(?:{b.pattern})") for a, b in pairs]

    def old(text):
        return [r.search(text) for r in regexes]

    def new(text):
        return [language._matches(p, text) for p in pairs]

    rows = []
    for n in args.lengths:
        text = ("no " * n)[:n]
        t_old, t_new = best_of(old, text), best_of(new, text)
        rows.append({"chars": n, "regex_s": t_old, "linear_s": t_new, "ratio": t_old / t_new})
    print(json.dumps({"benchmark": "hostile_text", "rules": len(pairs), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
