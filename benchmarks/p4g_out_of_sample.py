"""Out-of-sample check of the p4g persuadee models (``scope_envs.validate.p4g_holdout``).

Refits the p4g parameters without each of 3 folds of the real annotated
dialogues, replays each test dialogue's real persuader acts against the
held-out human proxy and the reference persuadee, and compares give-rate
contrasts per strategy, reply frequencies, give rate and mean donation with
the test people's real ones, next to the noise floor (the real fit part
against the real test part). Writes ``OUT/p4g_out_of_sample.json`` and
``OUT/p4g_out_of_sample.md``; only aggregate numbers, no rows of the data.

    python benchmarks/p4g_out_of_sample.py [--data ../shared/data/p4g] [--out benchmarks/results] [--replications 20]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scope_envs.arguments import count, output_path
from scope_envs.cli import MAX_REPLICATIONS
from scope_envs.files import write_atomic
from scope_envs.games.p4g.fit import check_data
from scope_envs.validate.p4g import DataFilesError
from scope_envs.validate.p4g_holdout import REPLICATIONS, markdown, out_of_sample

HERE = Path(__file__).resolve().parent


def _data(value: str) -> Path:
    try:
        return check_data(Path(value))
    except FileNotFoundError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=_data, default=str(HERE.parent.parent / "shared" / "data" / "p4g"),
                    help="folder of the P4G csv files (default: %(default)s)")
    ap.add_argument("--out", type=output_path, default=HERE / "results", help="output folder (default: %(default)s)")
    ap.add_argument("--replications", type=count(MAX_REPLICATIONS), default=REPLICATIONS,
                    help=f"replays per test dialogue (default: %(default)s; at most {MAX_REPLICATIONS})")
    args = ap.parse_args()
    try:
        report = out_of_sample(args.data, args.replications)
    except DataFilesError as e:
        ap.error(f"argument --data: {e}")
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "p4g_out_of_sample.json", json.dumps(report, indent=1) + "\n")
    table = markdown(report)
    write_atomic(args.out / "p4g_out_of_sample.md", table)
    print(table)
    print(f"wrote {args.out / 'p4g_out_of_sample.json'} and {args.out / 'p4g_out_of_sample.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()
