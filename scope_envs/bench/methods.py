"""The benchmark's methods: what each trains on, and one (game, method, seed) run."""

from __future__ import annotations

import time

import numpy as np

METHODS = ("untrained", "frozen", "vs", "rotation", "cotrain", "population", "selfplay")
# runnable by name, not in the default grid: K co-trained users with a diversity term (this
# benchmark's population before SCOPE's checkpoint pool, kept so its old results can be reproduced)
EXTRA_METHODS = ("population_members",)
LEARNED_USER = ("cotrain", "population", "population_members", "selfplay")
PRESETS = {
    # finishes in < 10 min on a 2-core machine
    "default": {"seeds": 3, "steps": 20_000, "eval_episodes": 500, "curve_points": 4, "curve_episodes": 100,
                "steps_scale": {"tau2": 0.4}},  # tau2 learns in ~8k decisions, and its episodes are longer
    "full": {"seeds": 8, "steps": 100_000, "eval_episodes": 3000, "curve_points": 10, "curve_episodes": 300},
}
GAMES = ("p4g", "cooperbench", "tau2")
POPULATION_MEMBERS = 4
POOL = {"pool_size": 5, "snapshot_every": 4}  # SCOPE's checkpoint pool (wrappers/pool.py)
DIVERSITY_COEF = 0.02  # set a priori, never tuned (DESIGN.md §4)
DIAGNOSTICS = ("zero_std_group_frac", "all_fail_group_frac", "all_success_group_frac")  # grouped runs only
METRICS = ("train_success", "heldout_success", "gap", "policy_entropy", "sim_entropy", "train_zero_score_frac")
COST = {"population": 4, "vs": 1.3}  # rough relative run time, to start the slow runs first


def method_setup(game: str, method: str, user_reward: str | None = None, advantage: str = "gae",
                 group_size: int = 1) -> tuple[str, dict, dict]:
    """(training env id, env kwargs, PPOConfig overrides) of a method. ``user_reward`` goes to the methods
    with a learned user; ``advantage``/``group_size`` to every trained method."""
    if method not in METHODS + EXTRA_METHODS:
        raise ValueError(f"method must be one of {METHODS + EXTRA_METHODS}, got {method!r}")
    regime = {"untrained": "frozen", "selfplay": "cotrain", "population_members": "population"}.get(method, method)
    env_kwargs = {"population": dict(POOL), "population_members": {"members": POPULATION_MEMBERS}}.get(method, {})
    if user_reward is not None and method in LEARNED_USER:
        env_kwargs["user_reward"] = user_reward
    overrides = {"selfplay": method == "selfplay",
                 "diversity_coef": DIVERSITY_COEF if method == "population_members" else 0.0}
    if advantage != "gae" or group_size != 1:  # only then: the default config stays the default
        overrides.update(advantage=advantage, group_size=group_size,
                         episodes_per_iter=-(-64 // group_size) * group_size)
    return f"{game}-{regime}", env_kwargs, overrides


def run_one(game: str, method: str, seed: int, steps: int, eval_episodes: int, curve_points: int,
            curve_episodes: int, user_reward: str | None = None, advantage: str = "gae", group_size: int = 1) -> dict:
    """Train one (game, method, seed) and evaluate it; the held-out side only ever measures."""
    import torch

    from scope_envs.train.act_ppo import PPOConfig, PPOTrainer, evaluate

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    env_id, env_kwargs, overrides = method_setup(game, method, user_reward, advantage, group_size)
    total = 0 if method == "untrained" else steps
    trainer = PPOTrainer(PPOConfig(env_id=env_id, env_kwargs=env_kwargs, seed=seed, total_steps=total, **overrides))
    heldout_id = f"{game}-heldout"
    # the same evaluation episodes (seeds, hence cards) for every method: common random numbers
    train_seed, heldout_seed = 1_000_000 + 1000 * seed, 2_000_000 + 1000 * seed

    curve = []

    def checkpoint():
        tr = evaluate(trainer, env_id, curve_episodes, seed=train_seed + 500, **env_kwargs)
        ho = evaluate(trainer, heldout_id, curve_episodes, seed=heldout_seed + 500)
        curve.append({"agent_steps": trainer.agent_steps, "train": tr["success"], "heldout": ho["success"],
                      "policy_entropy": tr["policy_entropy"]})

    checkpoint()
    marks = list(np.linspace(0, total, curve_points + 1)[1:]) if total else []

    def on_iteration(row):
        while marks and row["agent_steps"] >= marks[0] - 1e-9:
            marks.pop(0)
            checkpoint()

    history = trainer.train(on_iteration) if total else []
    train_time = time.perf_counter() - t0
    tr = evaluate(trainer, env_id, eval_episodes, seed=train_seed, **env_kwargs)
    ho = evaluate(trainer, heldout_id, eval_episodes, seed=heldout_seed)
    metrics = {"train_success": tr["success"], "heldout_success": ho["success"], "gap": tr["success"] - ho["success"],
               "policy_entropy": tr["policy_entropy"], "sim_entropy": tr["sim_entropy"],
               "train_zero_score_frac": tr["zero_score_frac"]}
    last = history[-max(1, len(history) // 4):]  # collapse diagnostics: the final quarter of training
    metrics.update({k: float(np.mean([r[k] for r in last])) for k in DIAGNOSTICS if last and k in last[0]})
    return {
        "game": game, "method": method, "seed": seed,
        "metrics": metrics,
        "outcomes": {"train": tr["outcome"], "heldout": ho["outcome"]},
        "curve": curve,
        "training": [{k: r[k] for k in ("agent_steps", "return", "policy_entropy", "user_entropy", *DIAGNOSTICS)
                      if k in r} for r in history],
        "env_steps": trainer.env_steps,
        "env_steps_per_s": trainer.env_steps / max(train_time, 1e-9) if total else 0.0,
        "wall_s": time.perf_counter() - t0,
    }


def _run_task(task):
    return run_one(**task)
