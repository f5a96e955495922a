#!/usr/bin/env bash
# BenchMARL on scope-envs (scope_envs.integrations.benchmarl) in a virtualenv of its own: BenchMARL 1.5 pins
# torchrl<0.12, and the main virtualenv's torchrl extra is 0.14. It goes in with --no-deps beside what it imports:
# its other requirements (torchvision, PyAV) serve video logging, which the tests do not use, and torchvision
# would pull a torch of its own. torch goes first so that nothing pulls a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PHASE="${1:-all}"  # install | test | all (.ci/run installs in the background while the main suite runs)
case "$PHASE" in install|test|all) ;; *) echo "usage: $0 [install|test|all]" >&2; exit 2;; esac
# --no-compile: pip byte-compiles every file it installs, taken from the main suite it installs beside
unset PYTHONDONTWRITEBYTECODE
VENV="${VENV:-.venv-benchmarl}"
if [ "$PHASE" != test ]; then
    python3 -m venv "$VENV"
    "$VENV"/bin/pip install -q --no-compile torch==2.13.0
    "$VENV"/bin/pip install -q --no-compile --no-deps benchmarl==1.5.2
    "$VENV"/bin/pip install -q --no-compile -e . "pytest>=7" "torchrl>=0.10,<0.12" hydra-core tqdm
    "$VENV"/bin/python -c "import torch, torchrl, benchmarl.experiment; \
    assert torch.__version__.startswith('2.13.0'), torch.__version__"
fi
if [ "$PHASE" != install ]; then
    # the integration's tests, the batched TorchRL env its tasks run on (here at BenchMARL's torchrl), docs/trainers.md's
    # blocks (the BenchMARL one runs here; those of libraries this virtualenv lacks skip) and examples/benchmarl_mappo.py
    # against a small reference
    "$VENV"/bin/python -m pytest -q -p no:cacheprovider tests/test_integrations_benchmarl.py \
        tests/test_integrations_torchrl_env.py tests/test_integrations.py::test_readme_snippet_runs \
        "tests/test_examples.py::test_example_is_benchmarked_against_the_reference[benchmarl-mappo]"
fi
