#!/usr/bin/env bash
# The GPU check (scripts/gpu_check.py says what it runs and checks): ~7 minutes on one H200 (measured), at most 9 (each part has
# a hard limit); exits non-zero when anything is wrong. Needs the GPU environment (`make setup-gpu`: the CUDA torch
# and vllm); nothing is downloaded.
#
#   bash scripts/gpu_check.sh                        # records, logs and runs in runs/gpu_check
#   OUT=/tmp/gc PARTS=gate,grpo bash scripts/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" scripts/gpu_check.py --out "${OUT:-runs/gpu_check}" --parts "${PARTS:-gate,grpo,resume,offload}" "$@"
