#!/bin/bash
# CooperBench-style test runner: runner.sh <tests.patch> [feature.patch], run from the task's image.
# scope-envs runs the pytest command below in its own sandbox (the local backend reads it from here).
set -e
TEST_PATCH="$1"
FEATURE_PATCH="$2"
cd /workspace/repo
git reset --hard HEAD
git clean -fdx
git apply "/patches/$TEST_PATCH"
if [[ -n "$FEATURE_PATCH" ]]; then
    git apply "/patches/$FEATURE_PATCH"
fi
TEST_PATH="tests/test_core.py"
timeout 300 python -m pytest "$TEST_PATH" -v --tb=short
