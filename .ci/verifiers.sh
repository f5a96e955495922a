#!/usr/bin/env bash
# The verifiers environment (scope_envs.integrations.verifiers_env) against verifiers' own classes, in a
# virtualenv of its own: verifiers 0.4 pins mcp==2.0.0, and OpenEnv's server library (the serve extra, in the
# main virtualenv) imports fastmcp, which needs mcp<2, so the two cannot share one. torch goes first so that
# nothing pulls a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-verifiers
.venv-verifiers/bin/pip install -q torch==2.13.0
.venv-verifiers/bin/pip install -q -e . "pytest>=7" "verifiers==0.4.0"
.venv-verifiers/bin/python -c "import torch, verifiers.v1; assert torch.__version__.startswith('2.13.0'), torch.__version__"
.venv-verifiers/bin/python -m pytest -q -p no:cacheprovider tests/test_verifiers_env.py
