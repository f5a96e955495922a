#!/usr/bin/env bash
# RLlib integration tests in their own virtualenv: Ray pins gymnasium (==1.2.2 for ray 2.60),
# which our main environment does not share. torch goes first so that nothing pulls a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PHASE="${1:-all}"  # install | test | all (.ci/run installs in the background while the main suite runs)
case "$PHASE" in install|test|all) ;; *) echo "usage: $0 [install|test|all]" >&2; exit 2;; esac
# --no-compile: pip byte-compiles every file it installs (about 130 CPU-s over the three side virtualenvs, taken
# from the main suite they install beside); a module is compiled on its first import instead, and written once
unset PYTHONDONTWRITEBYTECODE
if [ "$PHASE" != test ]; then
    python3 -m venv .venv-rllib
    .venv-rllib/bin/pip install -q --no-compile torch==2.13.0
    .venv-rllib/bin/pip install -q --no-compile -e . "pytest>=7" "ray[rllib]~=2.60.0"
    .venv-rllib/bin/python -c "import torch, ray.rllib; assert torch.__version__.startswith('2.13.0'), torch.__version__"
fi
if [ "$PHASE" != install ]; then
    # the RLlib tests, and the README's RLlib snippet (its other snippets skip here: no sb3/torchrl)
    .venv-rllib/bin/python -m pytest -q tests/integrations tests/test_integrations.py::test_readme_snippet_runs tests/test_integrations.py::test_readme_has_a_snippet_per_library
fi
