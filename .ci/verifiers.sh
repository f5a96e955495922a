#!/usr/bin/env bash
# The verifiers environment (scope_envs.integrations.verifiers_env) against verifiers' own classes, in a
# virtualenv of its own: verifiers 0.4 pins mcp==2.0.0, and OpenEnv's server library (the serve extra, in the
# main virtualenv) imports fastmcp, which needs mcp<2, so the two cannot share one. torch goes first so that
# nothing pulls a CUDA build. uv: verifiers' null harness runs its chat program as a uv script (the
# real-model test, test_a_real_model_plays_the_agent_seat; its first run resolves the program's few
# dependencies from the package index into uv's cache). VENV overrides where the virtualenv goes.
set -euo pipefail
cd "$(dirname "$0")/.."
PHASE="${1:-all}"  # install | test | all (.ci/run installs in the background while the main suite runs)
case "$PHASE" in install|test|all) ;; *) echo "usage: $0 [install|test|all]" >&2; exit 2;; esac
# --no-compile: pip byte-compiles every file it installs (about 130 CPU-s over the three side virtualenvs, taken
# from the main suite they install beside); a module is compiled on its first import instead, and written once
unset PYTHONDONTWRITEBYTECODE
VENV="${VENV:-.venv-verifiers}"
if [ "$PHASE" != test ]; then
    python3 -m venv "$VENV"
    "$VENV"/bin/pip install -q --no-compile torch==2.13.0
    "$VENV"/bin/pip install -q --no-compile -e ".[llm]" "pytest>=7" "verifiers==0.4.0" uv
    "$VENV"/bin/python -c "import torch, transformers, verifiers.v1; assert torch.__version__.startswith('2.13.0'), torch.__version__"
fi
if [ "$PHASE" != install ]; then
    PATH="$(cd "$VENV/bin" && pwd):$PATH" "$VENV"/bin/python -m pytest -q -p no:cacheprovider tests/test_verifiers_env.py
fi
