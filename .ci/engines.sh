#!/usr/bin/env bash
# The LLM-engine adapters (scope_envs.integrations) against verl's and OpenRLHF's own classes, in a virtualenv
# of their own: both pin transformers (verl <5.11, OpenRLHF ==5.15) away from ours, and their full dependency
# lists pull CUDA-only packages (vLLM, flash-attn, DeepSpeed). So they go in with --no-deps, beside only what
# their agent-loop / agent-executor modules import. torch goes first so that nothing pulls a CUDA build.
# slime is not on PyPI: its adapter is tested against slime's documented Sample type (in the main suite too).
set -euo pipefail
cd "$(dirname "$0")/.."
PHASE="${1:-all}"  # install | test | all (.ci/run installs in the background while the main suite runs)
case "$PHASE" in install|test|all) ;; *) echo "usage: $0 [install|test|all]" >&2; exit 2;; esac
# --no-compile: pip byte-compiles every file it installs (about 130 CPU-s over the three side virtualenvs, taken
# from the main suite they install beside); a module is compiled on its first import instead, and written once
unset PYTHONDONTWRITEBYTECODE
if [ "$PHASE" != test ]; then
    python3 -m venv .venv-engines
    .venv-engines/bin/pip install -q --no-compile torch==2.13.0
    .venv-engines/bin/pip install -q --no-compile --no-deps verl==0.9.1 openrlhf==0.11.2
    .venv-engines/bin/pip install -q --no-compile -e . "pytest>=7" "transformers>=5.5.3,<5.11" tokenizers "ray==2.60.0" \
        hydra-core omegaconf pillow pydantic "tensordict>=0.8,<=0.10.0" codetiming dill pandas "pyarrow>=19" datasets \
        aiohttp packaging cachetools uvicorn fastapi pylatexenc
    .venv-engines/bin/python -c "import torch, verl.experimental.agent_loop, openrlhf.utils.agent; \
    assert torch.__version__.startswith('2.13.0'), torch.__version__"
fi
if [ "$PHASE" != install ]; then
    .venv-engines/bin/python -m pytest -q -p no:cacheprovider tests/test_integrations_engines.py
fi
