"""scope_envs.kernels: ``scope-envs bench`` pins numpy's, OpenBLAS's, ATen's and MKL's kernels, so that a short grid
gives the same records under two kernel settings of the machine it runs on."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from scope_envs import kernels

ROOT = Path(__file__).resolve().parents[1]
X86 = platform.machine().lower() in ("x86_64", "amd64")
GRID = ["--games", "p4g", "--methods", "cotrain", "--seeds", "1", "--steps", "600", "--eval-episodes", "24"]


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in kernels.PINS and k != kernels.LEVEL_VARIABLE}
    return {**env, **extra}


def test_level_reads_the_variable_and_names_a_bad_one():
    assert kernels.level({}) == kernels.DEFAULT_LEVEL == "portable"
    assert kernels.level({kernels.LEVEL_VARIABLE: " Native "}) == "native"
    with pytest.raises(kernels.KernelLevelError, match="names no kernel level; use one of portable, avx2, native"):
        kernels.level({kernels.LEVEL_VARIABLE: "avx9"})
    assert kernels.settings("native") == {}


@pytest.mark.skipif(not X86, reason="the pins are x86-64's")
def test_the_avx2_level_pins_avx2_kernels_or_says_why_not(monkeypatch):
    if kernels._has_avx2():
        pins = kernels.settings("avx2")
        assert pins["ATEN_CPU_CAPABILITY"] == "avx2" and pins["OPENBLAS_CORETYPE"] == "Haswell"
    monkeypatch.setattr(kernels, "_has_avx2", lambda: False)  # a CPU without AVX2: its kernels would not run
    with pytest.raises(kernels.KernelLevelError, match="this CPU has no AVX2 and FMA; use portable"):
        kernels.settings("avx2")


@pytest.mark.skipif(not X86, reason="the pins are x86-64's")
def test_a_process_that_loaded_numpy_first_restarts_pinned():
    code = ("import sys, numpy, torch; from scope_envs import kernels; before = kernels.in_effect(); "
            "kernels.pin_or_restart(); print(before, kernels.in_effect(), sys.argv[1:])")
    done = subprocess.run([sys.executable, "-c", code, "kept"], cwd=ROOT, env=clean_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before, after, argv = done.stdout.split(" ", 2)
    assert after == "True" and argv.strip() == "['kept']"  # the same command, now on the portable kernels
    # natively this CPU runs wider kernels than the baseline (where it does not, the pin had nothing to change)
    assert before in ("True", "False")


def test_a_bad_level_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "scope_envs.cli", "bench", *GRID, "--out", str(tmp_path)], cwd=ROOT,
                          env=clean_env(**{kernels.LEVEL_VARIABLE: "fastest"}), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "scope-envs bench: error: SCOPE_ENVS_KERNELS='fastest' names no kernel level; use one of portable, avx2, native"]


def grid(out: Path, **env) -> dict:
    done = subprocess.run([sys.executable, "-m", "scope_envs.cli", "bench", *GRID, "--out", str(out)], cwd=ROOT,
                          env=clean_env(**env), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(next((out / "runs").glob("*.json")).read_text())
    for key in ("wall_s", "env_steps_per_s"):  # the clock's, not the kernels'
        record["result"].pop(key, None)
    return record


@pytest.mark.slow
@pytest.mark.skipif(not X86, reason="the pins are x86-64's")
def test_a_short_grid_gives_the_same_record_under_two_kernel_settings(tmp_path):
    """A co-trained user's behaviour clone runs in torch: its float32 sums follow ATen's vector width. Natively,
    two widths give two records (the test's control); pinned, the machine's setting no longer reaches them."""
    wide = {"ATEN_CPU_CAPABILITY": "avx2"}  # what a machine's own setting (or its CPU) would choose
    narrow = {"ATEN_CPU_CAPABILITY": "default"}
    native_wide = grid(tmp_path / "nw", SCOPE_ENVS_KERNELS="native", **wide)
    native_narrow = grid(tmp_path / "nn", SCOPE_ENVS_KERNELS="native", **narrow)
    pinned_wide = grid(tmp_path / "pw", **wide)
    pinned_narrow = grid(tmp_path / "pn", **narrow)
    assert pinned_wide == pinned_narrow
    if native_wide == native_narrow:
        pytest.skip("this CPU's torch kernels gave the same record at both widths: nothing for the pin to hold")
    assert pinned_wide != native_wide or pinned_wide != native_narrow
    report = (tmp_path / "pw" / "report.md").read_text()
    assert "portable kernels:" in report and "not in effect" not in report


def test_a_childs_environment_holds_its_own_levels_pins_only():
    pinned = {"PATH": "/bin", **kernels.settings("portable"), kernels.LEVEL_VARIABLE: "portable"}
    native = kernels.environment("native", pinned)
    assert native == {"PATH": "/bin", kernels.LEVEL_VARIABLE: "native"}  # no pin of the parent's level left
    assert kernels.environment("portable", {"PATH": "/bin"}) == pinned
