"""benchmarks/seed_phases.py: the phases are read off a profiler, nothing is patched."""

import cProfile
import importlib.util
from pathlib import Path

from scope_envs.bench.methods import run_one
from scope_envs.train.act_ppo import PPOTrainer

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "seed_phases.py"


def _script():
    spec = importlib.util.spec_from_file_location("seed_phases", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_phase_of_a_cotraining_run_is_found_and_nothing_is_patched():
    seed_phases = _script()
    play, update = PPOTrainer.play, PPOTrainer.update
    profile = cProfile.Profile()
    profile.enable()
    run_one("p4g", "cotrain", 0, steps=600, eval_episodes=20, curve_points=1, curve_episodes=10)
    profile.disable()
    spent = seed_phases.phase_seconds(profile)
    assert set(spent) == set(seed_phases.PHASES) and all(v > 0 for v in spent.values()), spent
    assert PPOTrainer.play is play and PPOTrainer.update is update
    empty = cProfile.Profile()
    assert seed_phases.phase_seconds(empty) == dict.fromkeys(seed_phases.PHASES, 0.0)
