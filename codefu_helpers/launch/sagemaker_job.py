"""An experiment config as a SageMaker training job (SageMaker Python SDK v3 `ModelTrainer`), rendered or submitted.

    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch
    plan = launch(cfg, LaunchConfig(role="arn:aws:iam::123456789012:role/SageMakerTraining", bucket="my-bucket"))
    plan.request        # the CreateTrainingJob request, exactly as the SDK would send it
    plan.cost           # per hour at the list price (codefu_helpers.launch.instances)
    plan = launch(cfg, launch_cfg, submit=True)   # uploads the inputs and creates the job

Key idea: both paths run the SDK's public `ModelTrainer.train()`. Rendering (`submit=False`, the default) gives it a
session that records the uploads it would make instead of making them, and botocore event hooks that answer the
SDK's one IAM question (may the role write the bucket?) and stop at the CreateTrainingJob call after botocore has
validated it, keeping its parameters: no credentials needed, no AWS call made, and the request is what the SDK
would send. `submit=True` runs the same trainer without the hooks.

The job: `instance_count` hosts of `instance_type`; the image is the PyTorch DLC pinned in DLC_IMAGE (or your own,
e.g. built from docker/Dockerfile); the source code is this package and configs/ (PYTHONPATH, no install) with
docker/requirements-job.txt, whose versions were resolved together against that image's packages
(tests/test_launch_requirements.py re-resolves them with pip). Channels: `train`, `test` (when data.val_path is set),
`config` (the experiment config rewritten for the container) and `model` when model.path is a local directory
(uploaded) or an s3:// URI (read in place); a hub id is downloaded by the job itself. They are uploaded by the SDK
with the code under the job's own name (s3://BUCKET/PREFIX/BASE_JOB_NAME/JOB_NAME/input/CHANNEL). Checkpoints sync
between /opt/ml/checkpoints and a prefix of this run (s3://BUCKET/PREFIX/checkpoints/CONFIG/RUN), so two runs of one
config never resume each other; `resume_from` continues an earlier run, and SageMaker restarts a Spot-interrupted
job on the same prefix by itself. Every host runs `exec python -m codefu_helpers.launch.entrypoint --config
/opt/ml/input/data/config/config.yaml`: `exec` makes the entry point the container's PID 1 (the SDK's driver script
is PID 1 before it, and a shell as PID 1 never passes SIGTERM on), so a stop or Spot reclaim reaches it and the step
in progress is saved. The environment keeps EFA on (FI_PROVIDER=efa, never NCCL_NET_PLUGIN=none) with RDMA only where
the instance has it, passes an MLflow tracking URI or SageMaker managed MLflow ARN through, and never carries
credentials: the job's IAM role gives AWS access. Everything wrong with the inputs is reported at once, before
anything is uploaded.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ConfigError, ExperimentConfig, native_trainer_problems
from ..tiny_model import TINY_SCHEME
from .instances import LOCAL, estimate_cost, instance_type

__all__ = ["LaunchConfig", "LaunchPlan", "LaunchError", "launch", "job_config", "check_launch", "check_data",
           "model_source", "session_defaults", "CONTAINER", "DLC_IMAGE", "dlc_image"]

ROOT = Path(__file__).resolve().parents[2]
# Where SageMaker puts things in the container.
CONTAINER = {"input": "/opt/ml/input/data", "code": "/opt/ml/input/data/code", "model": "/opt/ml/model",
             "checkpoints": "/opt/ml/checkpoints", "output": "/opt/ml/output/data", "failure": "/opt/ml/output/failure"}
MODEL_CHANNEL = "model"
# The PyTorch training DLC the job runs on, pinned to its most specific tag (PyTorch 2.11.0, CUDA 13.0, Python 3.12,
# Amazon Linux 2023; https://github.com/aws/deep-learning-containers docs/src/data/pytorch/2.11-cuda-sagemaker.yml).
# verl 0.9.1 is tested on torch 2.11 with vLLM 0.24 (its [vllm] extra); the DLC of sagemaker 3.27's image table
# (pytorch-training 2.10.0) has torch 2.10, on which no vLLM release accepts verl's transformers. For a digest pin
# pass LaunchConfig(image=".../pytorch@sha256:...").
DLC_REPOSITORY, DLC_TAG = "pytorch", "2.11.0-cu130-amzn2023-sagemaker"
DLC_IMAGE = f"763104351884.dkr.ecr.{{region}}.amazonaws.com/{DLC_REPOSITORY}:{DLC_TAG}"
DLC_CONSTRAINTS = ROOT / "docker" / "dlc-pytorch-2.11.0-cu130-amzn2023-sagemaker.txt"  # what that image holds
JOB_REQUIREMENTS = ROOT / "docker" / "requirements-job.txt"      # top-level pins the stock DLC installs at start
JOB_LOCK = ROOT / "docker" / "requirements-job.lock"               # every package that adds or changes, pinned
VERL_REQUIREMENT = "verl==0.9.1"  # the version the renderer and its tests target
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
SECRET_NAME = re.compile(r"(^|_)(SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|API_KEY|ACCESS_KEY)(_|$)", re.IGNORECASE)
MAX_KEEP_ALIVE = 3600  # SageMaker's limit for warm pools
PLACEHOLDER_ROLE = "arn:aws:iam::000000000000:role/SET-ROLE-TO-SUBMIT"
PLACEHOLDER_BUCKET = "set-bucket-to-submit"
STUDIO_METADATA = Path("/opt/ml/metadata/resource-metadata.json")  # present in SageMaker Studio / notebook instances


class LaunchError(ValueError):
    """Launch inputs that cannot make a working job; `problems` lists every one."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        head = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
        super().__init__(f"{head} with the SageMaker launch:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass
class LaunchConfig:
    role: str | None = None                 # IAM role ARN the job runs as (its S3 / ECR / CloudWatch access)
    bucket: str | None = None               # S3 bucket for inputs, code, checkpoints and outputs
    prefix: str = "codefu"                  # S3 key prefix under the bucket
    region: str = "us-east-1"
    instance_type: str = "ml.p4de.24xlarge"
    instance_count: int = 2
    image: str | None = None                # None: DLC_IMAGE in the region (job requirements installed at start)
    volume_size_gb: int = 500               # per host: model, checkpoints, vLLM cache
    base_job_name: str = "codefu-grpo"
    use_spot: bool = False                  # managed Spot: cheaper, interruptible, resumes from checkpoints
    max_run_hours: float = 72.0
    expected_hours: float = 24.0            # the run you expect, for the cost estimate (the job stops at max_run_hours)
    max_wait_hours: float | None = None     # Spot only: run + waiting for capacity; None: max_run_hours + 24
    keep_alive_seconds: int = 0             # warm pool: keep hosts for the next job (<= 3600; not with Spot)
    join_timeout_seconds: int = 900         # how long the head waits for every host to join Ray
    run_name: str | None = None             # names this run's checkpoint prefix; None: <config name>-<UTC time>
    resume_from: str | None = None          # an earlier run to continue: its run name or checkpoint S3 URI
    mlflow_tracking_uri: str | None = None  # MLflow URI or SageMaker managed MLflow ARN (else tracking.uri)
    tags: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    subnets: list[str] | None = None
    security_group_ids: list[str] | None = None
    hourly_price: float | None = None       # your price per instance-hour, for the estimate
    validate_role: bool = True              # submit only: let the SDK check the role's permissions first
    allow_second_job: bool = False          # submit even while another job of this run (same checkpoints) is live
    sdk_telemetry: bool = False             # the SageMaker SDK's usage reports to AWS (off unless asked)
    remote_debug: bool = True               # SSM sessions into the hosts (Ray dashboard port forward)
    check_data: bool = True                 # submit refuses a split that does not fit the config (check_data())
    language: str | None = None             # the language the prompts must ask for (cpp, python); None: not checked


@dataclass
class LaunchPlan:
    request: dict[str, Any]                 # CreateTrainingJob request (JSON-able)
    uploads: list[dict[str, str]]           # {"local": file, "s3": uri} per file: made only when submitted (when
                                            # rendered, "local" is a copy under WORK_DIR/uploads)
    cost: dict[str, Any]
    job_config: ExperimentConfig            # the config the job's hosts read
    blockers: list[str]                     # why the job would fail at start (submit refuses while any)
    command: str = ""                       # what every host runs (the SDK's driver runs it after setup)
    source_dir: str = ""                    # the staged `code` channel: this package, configs/, requirements.txt
    run_name: str = ""                      # this run: its checkpoints are under checkpoint_uri
    checkpoint_uri: str = ""
    model_input: dict[str, str] = field(default_factory=dict)   # {"kind": local|s3|hub|tiny, "source", "job_path"}
    data_findings: list[str] = field(default_factory=list)     # check_data's findings (submit refuses them
                                                                # unless LaunchConfig.check_data is False)
    notes: list[str] = field(default_factory=list)             # worth knowing, not wrong (e.g. nnodes rewritten)
    memory: Any = None                      # codefu_helpers.memory_plan.MemoryPlan per GPU of the job (None: the
                                            # model's shape is unknown here; a note says so)
    submitted: bool = False
    job_name: str | None = None
    trainer: Any = None                     # the sagemaker.train.ModelTrainer

    def summary(self) -> dict[str, Any]:
        r = self.request
        return {"job_name": r.get("TrainingJobName"), "image": r["AlgorithmSpecification"]["TrainingImage"],
                "instances": f"{r['ResourceConfig']['InstanceCount']} x {r['ResourceConfig']['InstanceType']}",
                "channels": {c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"] for c in r["InputDataConfig"]},
                "model": self.model_input, "run": self.run_name,
                "checkpoints": r.get("CheckpointConfig", {}).get("S3Uri"), "spot": r.get("EnableManagedSpotTraining"),
                "command": self.command, "cost_per_hour": self.cost["per_hour"], "blockers": self.blockers,
                "notes": self.notes, "submitted": self.submitted}


def dlc_image(region: str) -> str:
    """The pinned PyTorch DLC in `region` (the DLC account of the region, from the SDK's own registry table)."""
    from sagemaker.core import image_uris

    account = image_uris.config_for_framework("pytorch")["training"]["versions"]["2.10.0"]["registries"].get(region)
    if account is None:
        raise LaunchError([f"region={region!r} has no PyTorch DLC registry: use a region where SageMaker offers the "
                           "PyTorch training images, or pass LaunchConfig(image=...)"])
    return DLC_IMAGE.format(region=region).replace("763104351884", account)


def _base_environment(itype) -> dict[str, str]:
    env = {
        "PYTHONPATH": CONTAINER["code"],     # the package travels as source, no install step
        "PYTHONUNBUFFERED": "1",
        "NCCL_DEBUG": "WARN",
        "TOKENIZERS_PARALLELISM": "false",
        "RAY_USAGE_STATS_ENABLED": "0",
        "PIP_NO_CACHE_DIR": "1",             # the install at start runs once: no wheel cache on the small root disk
        "CODEFU_JUDGE_ISOLATION": "auto",    # bubblewrap where the container allows namespaces, else the container tier
    }
    if itype.efa:  # inter-host NCCL over EFA through the aws-ofi-nccl plugin of the DLC (never NCCL_NET_PLUGIN=none)
        env.update({"FI_PROVIDER": "efa", "FI_EFA_FORK_SAFE": "1"})
        if itype.rdma:  # libfabric aborts when asked for RDMA on an EFA without it (ml.g5.48xlarge)
            env.update({"FI_EFA_USE_DEVICE_RDMA": "1", "RDMAV_FORK_SAFE": "1"})
    return env


# ----------------------------------------------------------------------------------------------------------------
# the model the job starts from


def vpc_note(lc: "LaunchConfig", model_kind: str) -> str:
    """What a job inside a VPC (subnets / security groups given) needs from that VPC: the hosts reach each other
    (Ray, NCCL, gloo on any port) only through a security group that allows all traffic from itself, and without
    internet access (a NAT gateway) neither the pip install at start nor a hub download works."""
    needs = ["the security group(s) must allow all traffic from themselves (Ray, NCCL and gloo between hosts use "
             "many ports), or the hosts never form one cluster"]
    if lc.image is None:
        needs.append("the stock DLC installs docker/requirements-job.txt from PyPI at start: the subnets need a NAT "
                     "gateway, or use the image of docker/Dockerfile (or a CodeArtifact mirror: CA_REPOSITORY_ARN)")
    if model_kind == "hub":
        needs.append("model.path is a Hugging Face hub id the job downloads: the subnets need a NAT gateway, or "
                     "upload the model (a local folder or an s3:// prefix)")
    needs.append("S3 (channels, checkpoints, the model) needs a NAT gateway or an S3 gateway endpoint")
    return "VPC: " + "; ".join(needs)


def model_source(path: str) -> dict[str, str]:
    """How model.path reaches the job: {"kind", "source", "job_path"}.

    kind "local": a directory here, uploaded as the `model` channel (job_path /opt/ml/input/data/model);
    "s3": an s3:// prefix, the `model` channel read in place (same job_path); "hub": a Hugging Face hub id the job
    downloads itself; "tiny": a tiny://  model the job builds. A local-looking path that does not exist here raises
    LaunchError naming model.path."""
    job_path = f"{CONTAINER['input']}/{MODEL_CHANNEL}"
    if path.startswith(TINY_SCHEME):
        return {"kind": "tiny", "source": path, "job_path": path}
    if path.startswith("s3://"):
        if not re.match(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+", path):
            raise LaunchError([f"model.path={path!r} is not an S3 prefix (s3://BUCKET/KEY/...): point it at the folder "
                               "holding config.json and the weights, e.g. a job's s3://.../output/model/"])
        return {"kind": "s3", "source": path.rstrip("/") + "/", "job_path": job_path}
    local = Path(path).expanduser()
    if local.exists():
        if not local.is_dir() or not (local / "config.json").is_file():
            raise LaunchError([f"model.path={path!r} is not a Hugging Face model folder (a directory with config.json "
                               "and the weights): give the folder save_pretrained wrote, e.g. runs/codefu7b_stage1/model"])
        return {"kind": "local", "source": str(local.resolve()), "job_path": job_path}
    looks_local = path.startswith(("/", "./", "../", "~")) or path.count("/") > 1 or not HUB_ID.match(path)
    if looks_local:
        raise LaunchError([f"model.path={path!r} does not exist here ({Path.cwd()}), so there is no model to upload as "
                           "the job's `model` channel: train the stage that writes it first (stage 2 starts from stage "
                           "1's runs/codefu7b_stage1/model), or set model.path to a Hugging Face hub id (e.g. "
                           "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B) or to the S3 URI of a job's model "
                           "(s3://BUCKET/.../output/model/)"])
    return {"kind": "hub", "source": path, "job_path": path}


# ----------------------------------------------------------------------------------------------------------------
# checks


def job_memory_plan(jcfg: ExperimentConfig, itype, instance_count: int, notes: list[str]):
    """The job's per-GPU memory plan (check_launch refuses one that does not fit), or None with a note when the
    model's shape cannot be known before the job starts (an s3:// model, an uncached hub id) or the hosts are the
    simulation's (no GPU)."""
    from ..memory_plan import UnknownModelShape, memory_plan

    if itype is LOCAL:  # the simulation's hosts train on CPU: there is no GPU memory to plan
        notes.append("no memory plan: instance_type='local' simulates hosts without a GPU")
        return None
    try:
        return memory_plan(jcfg, device_memory_gib=itype.usable_gpu_memory_gib, world_size=instance_count * itype.gpus,
                           gpus_per_node=itype.gpus, device_name=itype.gpu_name)
    except UnknownModelShape as exc:
        notes.append(f"no memory plan: {exc}")
        return None


def check_launch(cfg: ExperimentConfig, launch_cfg: LaunchConfig, submit: bool = False) -> list[str]:
    """Every problem with the launch inputs (empty when fine); nothing is contacted or uploaded."""
    problems = []
    lc = launch_cfg
    if not lc.role:
        problems.append("role is missing: give the ARN of an IAM role SageMaker can assume, e.g. "
                        "arn:aws:iam::123456789012:role/SageMakerExecution (in SageMaker Studio, session_defaults() "
                        "finds the execution role)")
    elif not ROLE_ARN.match(lc.role):
        problems.append(f"role={lc.role!r} is not an IAM role ARN (arn:aws:iam::<12-digit account>:role/<name>)")
    elif submit and lc.role == PLACEHOLDER_ROLE:
        problems.append("role is the render placeholder: set the IAM role ARN the job runs as")
    if not lc.bucket:
        problems.append("bucket is missing: give an S3 bucket in the job's region for inputs, checkpoints and the model")
    elif not BUCKET.match(lc.bucket):
        problems.append(f"bucket={lc.bucket!r} is not an S3 bucket name (3-63 lowercase letters, digits, dots, "
                        "hyphens; no s3:// prefix)")
    elif submit and lc.bucket == PLACEHOLDER_BUCKET:
        problems.append("bucket is the render placeholder: set the S3 bucket the job uses")
    itype = None
    try:
        itype = instance_type(lc.instance_type)
    except ValueError as exc:
        problems.append(str(exc))
    if itype is LOCAL and submit:
        problems.append("instance_type='local' is the simulation's host (python -m codefu_helpers.launch.simulate), "
                        "not a SageMaker instance: pick a GPU instance type to submit")
    if lc.instance_count < 1:
        problems.append(f"instance_count={lc.instance_count} must be >= 1")
    elif itype is not None and itype is not LOCAL:
        devices = lc.instance_count * itype.gpus
        samples = cfg.algorithm.ppo_mini_batch_size * cfg.rollout.n
        if samples % devices:
            fits = [n for n in range(1, 33) if samples % (n * itype.gpus) == 0]
            problems.append(f"instance_count={lc.instance_count} x {itype.gpus} GPUs ({lc.instance_type}) = {devices} "
                            f"devices cannot split a mini-batch of algorithm.ppo_mini_batch_size x rollout.n = "
                            f"{cfg.algorithm.ppo_mini_batch_size} x {cfg.rollout.n} = {samples} samples evenly; use "
                            + (f"instance_count in {fits}" if fits else "a mini-batch that is a multiple of "
                               f"{itype.gpus} samples"))
    if itype is not None and itype is not LOCAL and lc.instance_count >= 1:  # a plan that cannot fit is refused
        from ..memory_plan import plan_problems

        problems += plan_problems(cfg, itype.usable_gpu_memory_gib, lc.instance_count, itype.gpus, itype.gpu_name)
    if lc.max_run_hours <= 0:
        problems.append(f"max_run_hours={lc.max_run_hours} must be > 0")
    if lc.expected_hours <= 0:
        problems.append(f"expected_hours={lc.expected_hours} must be > 0 (the run you expect, for the cost estimate)")
    if lc.use_spot and lc.max_wait_hours is not None and lc.max_wait_hours < lc.max_run_hours:
        problems.append(f"max_wait_hours={lc.max_wait_hours} must be >= max_run_hours={lc.max_run_hours} with Spot "
                        "(it counts the run plus waiting for capacity)")
    if not lc.use_spot and lc.max_wait_hours is not None:
        problems.append(f"max_wait_hours={lc.max_wait_hours} applies to Spot only: set use_spot=True or drop it")
    if not 0 <= lc.keep_alive_seconds <= MAX_KEEP_ALIVE:
        problems.append(f"keep_alive_seconds={lc.keep_alive_seconds} must be in [0, {MAX_KEEP_ALIVE}]")
    if lc.use_spot and lc.keep_alive_seconds:
        problems.append(f"keep_alive_seconds={lc.keep_alive_seconds} with use_spot=True: SageMaker keeps no warm pool "
                        "for managed Spot training; drop one (a warm pool also needs its own quota, 0 by default)")
    if bool(lc.subnets) != bool(lc.security_group_ids):
        given, missing = ("subnets", "security_group_ids") if lc.subnets else ("security_group_ids", "subnets")
        problems.append(f"{given} without {missing}: a job in a VPC needs both (SageMaker's VpcConfig); give the "
                        "security group that lets the hosts talk to each other (all traffic from itself)")
    if lc.join_timeout_seconds < 30:
        problems.append(f"join_timeout_seconds={lc.join_timeout_seconds} is too short for hosts to boot; use >= 300")
    if lc.run_name is not None and not RUN_NAME.match(lc.run_name):
        problems.append(f"run_name={lc.run_name!r}: use letters, digits, '.', '_' and '-' (it names an S3 prefix)")
    if lc.resume_from is not None and not (RUN_NAME.match(lc.resume_from) or
                                           re.match(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+", lc.resume_from)):
        problems.append(f"resume_from={lc.resume_from!r}: give the run name of an earlier run of this config, or "
                        "the S3 URI of its checkpoints (plan.checkpoint_uri of that launch)")
    if lc.run_name is not None and lc.resume_from is not None:
        problems.append(f"run_name={lc.run_name!r} and resume_from={lc.resume_from!r}: a resumed run keeps the name "
                        "of the run it continues; give only resume_from")
    if cfg.checkpoint.keep_last < 2:
        problems.append(f"checkpoint.keep_last={cfg.checkpoint.keep_last}: SageMaker uploads a new checkpoint while "
                        "the old one is deleted, so an interruption then leaves no complete checkpoint in S3; use >= 2")
    for name, value in lc.environment.items():
        if SECRET_NAME.search(name) or name.startswith("AWS_"):
            problems.append(f"environment[{name!r}] looks like a credential: a job's environment is readable by "
                            "anyone who can DescribeTrainingJob; AWS access comes from the job's role, other "
                            "secrets belong in AWS Secrets Manager")
        if name == "NCCL_NET_PLUGIN" and str(value).lower() == "none":
            problems.append("environment NCCL_NET_PLUGIN=none turns off the EFA plugin and sends NCCL over TCP "
                            "sockets between hosts; remove it")
        if name == "FI_EFA_USE_DEVICE_RDMA" and str(value) == "1" and itype is not None and not itype.rdma:
            problems.append(f"environment FI_EFA_USE_DEVICE_RDMA=1 on {lc.instance_type}, whose EFA has no RDMA "
                            "read: libfabric aborts at start; remove it")
    if lc.mlflow_tracking_uri and not re.match(r"^(arn:aws[a-z-]*:sagemaker:|https?://|databricks)",
                                               lc.mlflow_tracking_uri):
        problems.append(f"mlflow_tracking_uri={lc.mlflow_tracking_uri!r}: a job needs a tracking server it can "
                        "reach (http(s)://... or a SageMaker managed MLflow ARN), not a local path")
    for key, path in (("data.train_path", cfg.data.train_path), ("data.val_path", cfg.data.val_path)):
        if path and not Path(path).is_file():
            problems.append(f"{key}={path!r} is not a file here: the launcher uploads it as a channel; write it "
                            "with notebook 01 (python -m codefu_helpers.data)")
    try:
        model_source(cfg.model.path)
    except LaunchError as exc:
        problems += exc.problems
    return problems


def check_data(cfg: ExperimentConfig, language: str | None = None) -> list[str]:
    """What does not fit between the split that would be uploaded and the config: fewer training problems (after
    data.tiers / data.max_problems) than data.train_batch_size, an empty validation split, prompts in another
    language than `language` (the one the run's reward and evaluation expect). Each finding says how to write the
    right split with notebook 01."""
    from ..data import read_verl_parquet
    from ..trainer import select_training_rows

    rerun = ("rerun notebook 01 with DATASET = \"deepmind/code_contests\" (the full CodeContests from the Hugging Face "
             f"hub) and LANGUAGE = \"{language or 'cpp'}\", or: python -m codefu_helpers.data --dataset "
             f"deepmind/code_contests --language {language or 'cpp'} --output-dir {Path(cfg.data.train_path).parent}")
    findings = []
    rows = read_verl_parquet(cfg.data.train_path)
    try:
        selected = select_training_rows(rows, cfg.data)
    except (ValueError, FileNotFoundError) as exc:
        return [f"data.train_path={cfg.data.train_path!r}: {exc}; {rerun}"]
    if len(selected) < cfg.data.train_batch_size:
        findings.append(f"data.train_path={cfg.data.train_path!r} gives {len(selected)} training problem(s)"
                        + (f" in tiers {cfg.data.tiers}" if cfg.data.tiers else "")
                        + f", fewer than one step's data.train_batch_size={cfg.data.train_batch_size}: {rerun}")
    splits = [("data.train_path", cfg.data.train_path, rows)]
    if cfg.data.val_path:
        val = read_verl_parquet(cfg.data.val_path)
        splits.append(("data.val_path", cfg.data.val_path, val))
        if not val:
            findings.append(f"data.val_path={cfg.data.val_path!r} is empty, so validation would score nothing: {rerun}")
    if language is not None:
        for key, path, split in splits:
            found = sorted({str((r.get("extra_info") or {}).get("language")) for r in split})
            if found and found != [language]:
                findings.append(f"{key}={path!r} asks for {', '.join(found)} programs but this run expects {language} "
                                f"(its reward and evaluation judge {language}): {rerun}")
    return findings


def job_config(cfg: ExperimentConfig, launch_cfg: LaunchConfig) -> ExperimentConfig:
    """The experiment config as the job's hosts read it: container paths, the cluster's shape, the tracking URI."""
    itype = instance_type(launch_cfg.instance_type)
    overrides = {
        "data.train_path": f"{CONTAINER['input']}/train/{Path(cfg.data.train_path).name}",
        "trainer.nnodes": launch_cfg.instance_count,
        "trainer.output_dir": CONTAINER["output"],
        "checkpoint.dir": CONTAINER["checkpoints"],
        "model.path": model_source(cfg.model.path)["job_path"],
    }
    if itype is not LOCAL:  # a simulated host keeps the config's CPU worker count
        overrides["trainer.gpus_per_node"] = itype.gpus
    if cfg.data.val_path:
        overrides["data.val_path"] = f"{CONTAINER['input']}/test/{Path(cfg.data.val_path).name}"
    if launch_cfg.mlflow_tracking_uri:
        overrides["tracking.uri"] = launch_cfg.mlflow_tracking_uri
    elif cfg.tracking.uri and not re.match(r"^(arn:|https?://|databricks)", cfg.tracking.uri):
        overrides["tracking.uri"] = None  # a local path means nothing in the container: default under output_dir
    return cfg.with_overrides(overrides).validate()


# ----------------------------------------------------------------------------------------------------------------
# the SageMaker Studio session's role, bucket and region


def _execution_role(session, metadata: Path) -> str:
    """The SageMaker Studio / notebook instance execution role: the session metadata file's ExecutionRoleArn (or its
    user profile's / domain's), else the role behind the session's credentials (Studio's are an assumed role)."""
    if metadata.exists():
        meta = json.loads(metadata.read_text())
        if meta.get("ExecutionRoleArn"):
            return meta["ExecutionRoleArn"]
        if meta.get("DomainId") and meta.get("UserProfileName"):
            sm = session.client("sagemaker")
            profile = sm.describe_user_profile(DomainId=meta["DomainId"], UserProfileName=meta["UserProfileName"])
            role = (profile.get("UserSettings") or {}).get("ExecutionRole")
            return role or sm.describe_domain(DomainId=meta["DomainId"])["DefaultUserSettings"]["ExecutionRole"]
    arn = session.client("sts").get_caller_identity()["Arn"]
    found = re.match(r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/", arn)
    if not found:
        raise ValueError(f"the session's identity {arn} is not an assumed role")
    try:  # the role's path (service-role/...) is part of its ARN, and only IAM knows it
        return session.client("iam").get_role(RoleName=found.group(3))["Role"]["Arn"]
    except Exception as exc:  # noqa: BLE001 - no iam:GetRole permission (or no IAM endpoint): ask, never guess
        raise ValueError(f"the session runs as role {found.group(3)}, whose full ARN (with its path, e.g. "
                         f"service-role/) IAM would not give ({type(exc).__name__}): set it to "
                         f"arn:{found.group(1)}:iam::{found.group(2)}:role/<path>/{found.group(3)}, as the IAM "
                         "console shows it") from None


def _default_bucket(session, region: str) -> str:
    """The session's default bucket, sagemaker-REGION-ACCOUNT (the SDK's convention), created when missing."""
    s3 = session.client("s3", region_name=region)
    name = f"sagemaker-{region}-{session.client('sts').get_caller_identity()['Account']}"
    try:
        s3.head_bucket(Bucket=name)
    except Exception:  # noqa: BLE001 - missing (404) or not ours (403): creating says which
        s3.create_bucket(Bucket=name, **({} if region == "us-east-1" else
                                          {"CreateBucketConfiguration": {"LocationConstraint": region}}))
    return name


def session_defaults(role: str | None = None, bucket: str | None = None, region: str | None = None,
                     required: bool = True, boto_session=None, metadata: Path = STUDIO_METADATA) -> dict[str, Any]:
    """role, bucket and region for a launch, each taken as given or else from the SageMaker session this runs in
    (SageMaker Studio / a notebook instance: the execution role, the default bucket sagemaker-REGION-ACCOUNT, the
    session's region). Returns {"role", "bucket", "region", "source": {name: where from}, "problems"}. Outside such a
    session, `required` raises LaunchError saying what to set; otherwise (rendering without AWS) placeholders are
    returned, named as such in "source", and check_launch refuses them for a submission."""
    import boto3

    session = boto_session or boto3.Session(region_name=region or None)
    source: dict[str, str] = {}
    if region:
        source["region"] = "given"
    elif session.region_name:
        region, source["region"] = session.region_name, "the AWS session's region"
    why: dict[str, str] = {}
    for name, value in (("role", role), ("bucket", bucket)):
        if value:
            source[name] = "given"
            continue
        try:
            if not region:
                raise ValueError("no AWS region is configured")
            if name == "role":
                role, source["role"] = _execution_role(session, metadata), "the session's execution role"
            else:
                bucket, source["bucket"] = _default_bucket(session, region), "the session's default bucket"
        except Exception as exc:  # noqa: BLE001 - no credentials, not a role, no region: all mean "not Studio"
            why[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    studio = "in a SageMaker Studio session" if metadata.exists() else "not a SageMaker Studio session"
    problems = [f"{name} is empty and could not be read from the session ({studio}; {why.get(name, 'no region')}"
                f"): set the {name} ({hint}; notebook 04: LAUNCH = {{\"{name}\": ...}})" for name, value, hint in (
                    ("role", role, "the ARN of an IAM role SageMaker can assume"),
                    ("bucket", bucket, "an S3 bucket in the job's region"),
                    ("region", region, "e.g. us-east-1")) if not value]
    if problems and required:
        raise LaunchError(problems)
    if not region:
        region, source["region"] = "us-east-1", "placeholder (set LAUNCH[\"region\"] to submit)"
    if not role:
        role, source["role"] = PLACEHOLDER_ROLE, "placeholder (set LAUNCH[\"role\"] to submit)"
    if not bucket:
        bucket, source["bucket"] = PLACEHOLDER_BUCKET, "placeholder (set LAUNCH[\"bucket\"] to submit)"
    return {"role": role, "bucket": bucket, "region": region, "source": source, "problems": problems}


# ----------------------------------------------------------------------------------------------------------------
# staging and the SDK


def _stage_source(dest: Path, engine: str, tiny_model: bool = False) -> Path:
    """This package and configs/ as the job's source directory (the `code` channel), with the pinned requirements
    the stock DLC installs at start (verl too for trainer.engine=verl) and their lock as pip constraints; with
    `tiny_model` (model.path tiny://...), the bundled corpus the tiny model's tokenizer is trained on."""
    from ..tiny_model import DEFAULT_CORPUS

    src = dest / "source"
    shutil.rmtree(src, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")
    shutil.copytree(ROOT / "codefu_helpers", src / "codefu_helpers", ignore=ignore)
    shutil.copytree(ROOT / "configs", src / "configs", ignore=ignore)
    if tiny_model:
        corpus = src / Path(DEFAULT_CORPUS).resolve().relative_to(ROOT)
        corpus.parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(Path(DEFAULT_CORPUS), corpus)
    requirements = JOB_REQUIREMENTS.read_text()
    if engine == "verl":
        requirements += f"{VERL_REQUIREMENT}\n"
    shutil.copy(JOB_LOCK, src / JOB_LOCK.name)
    (src / "requirements.txt").write_text(requirements + f"-c {JOB_LOCK.name}\n")
    return src


def _session_class(render: bool):
    from sagemaker.core.helper.session_helper import Session

    class RecordingSession(Session):
        """A session that knows its bucket without asking S3 and records every file the SDK uploads ({"local",
        "s3"}, named as `Session.upload_data` names them); with `render`, it records without uploading, and keeps
        each file under `keep` (a hard link where it can), since the SDK uploads some from temporary folders."""

        def __init__(self, bucket: str, prefix: str, keep: Path, **kwargs):
            super().__init__(default_bucket=bucket, default_bucket_prefix=prefix, **kwargs)
            self.recorded_uploads: list[dict[str, str]] = []
            self._bucket = bucket
            self._keep = keep

        def default_bucket(self):
            return self._bucket

        def upload_data(self, path, bucket=None, key_prefix="data", callback=None, extra_args=None):
            bucket = bucket or self._bucket
            if os.path.isdir(path):
                files = sorted(f for f in Path(path).rglob("*") if f.is_file())
                keys = [f"{key_prefix}/{f.relative_to(path).as_posix()}" for f in files]
                uri = f"s3://{bucket}/{key_prefix}"
            else:
                files, keys = [Path(path)], [f"{key_prefix}/{Path(path).name}"]
                uri = f"s3://{bucket}/{keys[0]}"
            if not render:
                uri = super().upload_data(path, bucket, key_prefix, callback=callback, extra_args=extra_args)
            for f, k in zip(files, keys):
                local = f
                if render:
                    local = self._keep / bucket / k
                    local.parent.mkdir(parents=True, exist_ok=True)
                    _link_or_copy(f, local)
                self.recorded_uploads.append({"local": str(local), "s3": f"s3://{bucket}/{k}"})
            return uri

    return RecordingSession


class _Rendered(Exception):
    """Raised by the render hook at the CreateTrainingJob call, carrying its validated parameters."""

    def __init__(self, params: dict):
        super().__init__("rendered")
        self.params = params


def _request_hooks(boto_session, render: bool) -> dict[str, dict]:
    """botocore event hooks on the SDK's calls: the CreateTrainingJob parameters are kept (returned dict, "params").
    With `render`, the SDK's IAM check answers "allowed" (the render asks nobody), and the CreateTrainingJob call stops
    after botocore validated its parameters, raising _Rendered with them."""
    from botocore.awsrequest import AWSResponse

    captured: dict[str, dict] = {}

    def keep(params, **_):
        captured["params"] = params

    def stop(**_):
        raise _Rendered(captured["params"])

    def allow(**_):
        return AWSResponse("render://iam", 200, {}, None), {"EvaluationResults": [{"EvalDecision": "allowed"}]}

    boto_session.events.register("before-parameter-build.sagemaker.CreateTrainingJob", keep)
    if render:
        boto_session.events.register("before-call.sagemaker.CreateTrainingJob", stop)
        boto_session.events.register("before-call.iam.SimulatePrincipalPolicy", allow)
    return captured


def _sdk_defaults(telemetry: bool) -> dict:
    """The user's SageMaker SDK defaults file (if any), with the SDK's telemetry opted out unless asked for."""
    from sagemaker.core.config.config import load_sagemaker_config

    config = load_sagemaker_config() or {}
    config.setdefault("SchemaVersion", "1.0")
    modules = config.setdefault("SageMaker", {}).setdefault("PythonSDK", {}).setdefault("Modules", {})
    modules["TelemetryOptOut"] = not telemetry
    return config


@contextlib.contextmanager
def _no_aws_calls():
    """While rendering: no role check (it calls IAM) and no instance-metadata credential lookup (network)."""
    saved = {k: os.environ.get(k) for k in ("SAGEMAKER_VALIDATE_ROLE", "AWS_EC2_METADATA_DISABLED")}
    os.environ.update(SAGEMAKER_VALIDATE_ROLE="false", AWS_EC2_METADATA_DISABLED="true")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _link_or_copy(source: Path, target: Path) -> None:
    """`target` as a hard link to `source` (no copy of a large parquet), or a copy across filesystems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _checkpoint_location(cfg: ExperimentConfig, lc: LaunchConfig) -> tuple[str, str]:
    """(run name, checkpoint S3 URI) of this launch: a new run's own prefix, or the prefix of the run it resumes."""
    runs = f"s3://{lc.bucket}/{lc.prefix}/checkpoints/{cfg.name}"
    if lc.resume_from and lc.resume_from.startswith("s3://"):
        uri = lc.resume_from.rstrip("/")
        return uri.rsplit("/", 1)[-1], uri
    run = lc.resume_from or lc.run_name or f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    return run, f"{runs}/{run}"


def _resumable(boto_session, checkpoint_uri: str) -> bool:
    """Whether the S3 prefix holds a checkpoint a job could resume (a native or a verl one)."""
    bucket, _, prefix = checkpoint_uri.removeprefix("s3://").partition("/")
    s3 = boto_session.client("s3")
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix.rstrip("/") + "/"):
        for item in page.get("Contents", []):
            if item["Key"].endswith(("checkpoint_complete.json", "latest_checkpointed_iteration.txt")):
                return True
    return False


def launch(cfg: ExperimentConfig, launch_cfg: LaunchConfig, submit: bool = False,
           work_dir: str | Path | None = None) -> LaunchPlan:
    """Builds the job for `cfg` (and submits it when `submit`); LaunchError lists every input problem first."""
    import boto3
    from sagemaker.core.training.configs import (CheckpointConfig, Compute, InputData, Networking, OutputDataConfig,
                                                 SourceCode, StoppingCondition, Tag)
    from sagemaker.train import ModelTrainer

    problems = check_launch(cfg.validate(), launch_cfg, submit=submit)
    if problems:
        raise LaunchError(problems)
    lc = launch_cfg
    try:
        jcfg = job_config(cfg, lc)
    except ConfigError as exc:
        raise LaunchError(exc.problems) from None
    itype = instance_type(lc.instance_type)
    model = model_source(cfg.model.path)
    blockers = []
    if jcfg.trainer.engine == "native":
        blockers = native_trainer_problems(jcfg)
    findings = check_data(cfg, lc.language)
    notes = []
    memory = job_memory_plan(jcfg, itype, lc.instance_count, notes)
    if cfg.trainer.nnodes != lc.instance_count:
        notes.append(f"trainer.nnodes={cfg.trainer.nnodes} in the config, instance_count={lc.instance_count} here: "
                     f"the job trains on {lc.instance_count} host(s) (its config says trainer.nnodes="
                     f"{lc.instance_count}); the batch sizes stay as configured")
        warnings.warn(notes[-1], stacklevel=2)
    if lc.subnets or lc.security_group_ids:
        notes.append(vpc_note(lc, model["kind"]))
    if submit and blockers:
        raise LaunchError(["the job would fail at start:"] + blockers)
    if submit and lc.check_data and findings:
        raise LaunchError(["the split does not fit the config (LaunchConfig(check_data=False) submits anyway):"]
                          + findings)
    if jcfg.trainer.engine == "verl":
        from .verl_engine import verl_overrides

        try:
            verl_overrides(jcfg)
        except ConfigError as exc:
            raise LaunchError(exc.problems) from None
        if jcfg.trainer.strategy != "fsdp":
            raise LaunchError([f"trainer.strategy={jcfg.trainer.strategy!r}: the SageMaker entry point checks, prunes "
                               "and exports verl's FSDP checkpoints (global_step_N/actor/*_world_size_W_rank_R.pt) "
                               "across hosts, not Megatron's; run verl's Megatron workers with `python -m "
                               "verl.trainer.main_ppo` and the overrides of `train --dry-run`"])
    run_name, checkpoint_uri = _checkpoint_location(cfg, lc)

    work = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="codefu-launch-"))
    work.mkdir(parents=True, exist_ok=True)
    # the channels as folders the SDK uploads next to the code, under the job's own name: s3://BUCKET/PREFIX/
    # BASE_JOB_NAME/JOB_NAME/input/{train,test,config,model,code,sm_drivers}
    staged = work / "inputs"
    shutil.rmtree(staged, ignore_errors=True)
    (staged / "config").mkdir(parents=True)
    jcfg.to_yaml(staged / "config" / "config.yaml")
    channels = []
    for name, local in (("train", cfg.data.train_path), ("config", None), ("test", cfg.data.val_path)):
        if local:
            (staged / name).mkdir()
            _link_or_copy(Path(local), staged / name / Path(local).name)
        if local or name == "config":
            channels.append(InputData(channel_name=name, data_source=str(staged / name)))
    if model["kind"] in ("local", "s3"):  # a local folder is uploaded as it is; an S3 prefix is read in place
        channels.append(InputData(channel_name=MODEL_CHANNEL, data_source=model["source"]))

    image = lc.image or dlc_image(lc.region)
    environment = {**_base_environment(itype), **lc.environment}
    if lc.mlflow_tracking_uri:
        environment["MLFLOW_TRACKING_URI"] = lc.mlflow_tracking_uri
    source = SourceCode(source_dir=str(_stage_source(work, jcfg.trainer.engine, tiny_model=model["kind"] == "tiny")),
                        requirements=None if lc.image else "requirements.txt",
                        command=f"exec python -m codefu_helpers.launch.entrypoint --config {CONTAINER['input']}/config/"
                                f"config.yaml --join-timeout {lc.join_timeout_seconds}")
    max_run = int(lc.max_run_hours * 3600)
    stopping = StoppingCondition(max_runtime_in_seconds=max_run,
                                 max_wait_time_in_seconds=int((lc.max_wait_hours or lc.max_run_hours + 24) * 3600)
                                 if lc.use_spot else None)
    tags = {"project": "codefu-grpo", "config": cfg.name, "engine": jcfg.trainer.engine, "run": run_name, **lc.tags}

    with (_no_aws_calls() if not submit else contextlib.nullcontext()):
        boto_session = boto3.Session(region_name=lc.region)
        if submit and not lc.allow_second_job:
            from .jobs import live_jobs

            live = live_jobs(checkpoint_uri, boto_session=boto_session)
            if live:
                raise LaunchError([f"job(s) {', '.join(live)} of this run are still running on {checkpoint_uri}: a "
                                   "second job would train from and write into the same checkpoints. Follow or stop "
                                   "that job (notebook 04: JOB_NAME), give a new run_name, or set "
                                   "allow_second_job=True"])
        if submit and lc.resume_from and not _resumable(boto_session, checkpoint_uri):
            raise LaunchError([f"resume_from={lc.resume_from!r}: {checkpoint_uri} holds no checkpoint (no "
                               "checkpoint_complete.json or latest_checkpointed_iteration.txt under it); check the run "
                               "name, or drop resume_from to start a new run"])
        sent = _request_hooks(boto_session, render=not submit)
        shutil.rmtree(work / "uploads", ignore_errors=True)
        session = _session_class(render=not submit)(lc.bucket, lc.prefix, work / "uploads", boto_session=boto_session,
                                                    sagemaker_config=_sdk_defaults(lc.sdk_telemetry))
        with (_no_aws_calls() if submit and not lc.validate_role else contextlib.nullcontext()):
            trainer = ModelTrainer(
                sagemaker_session=session, role=lc.role, base_job_name=lc.base_job_name, training_image=image,
                source_code=source,
                compute=Compute(instance_type=lc.instance_type, instance_count=lc.instance_count,
                                volume_size_in_gb=lc.volume_size_gb, enable_managed_spot_training=lc.use_spot,
                                keep_alive_period_in_seconds=lc.keep_alive_seconds or None),
                networking=Networking(subnets=lc.subnets, security_group_ids=lc.security_group_ids)
                if lc.subnets or lc.security_group_ids else None,
                stopping_condition=stopping,
                output_data_config=OutputDataConfig(s3_output_path=f"s3://{lc.bucket}/{lc.prefix}/output",
                                                    compression_type="NONE"),
                checkpoint_config=CheckpointConfig(s3_uri=checkpoint_uri, local_path=CONTAINER["checkpoints"]),
                environment=environment,
                tags=[Tag(key=k, value=str(v)) for k, v in tags.items()],
                input_data_config=channels,
            )
        if lc.remote_debug:
            from sagemaker.core.shapes import RemoteDebugConfig

            trainer = trainer.with_remote_debug_config(RemoteDebugConfig(enable_remote_debug=True))
        request = None
        if not submit:
            try:
                trainer.train(wait=False, logs=False)  # the SDK's public path, stopped at CreateTrainingJob
            except _Rendered as rendered:
                request = rendered.params
            if request is None:
                raise RuntimeError("the SageMaker SDK returned without calling CreateTrainingJob: the render hook "
                                   "did not fire (SDK version drift?)")
    cost = estimate_cost(lc.instance_type, lc.instance_count, hours=lc.max_run_hours, hourly_price=lc.hourly_price)
    cost["max_run_hours"] = cost.pop("hours")
    cost["per_run_at_max_run"] = cost.pop("per_run")
    cost["expected_hours"] = lc.expected_hours
    cost["per_run_expected"] = round(cost["price_per_instance_hour"] * lc.instance_count * lc.expected_hours, 2)
    plan = LaunchPlan(request={}, uploads=session.recorded_uploads, cost=cost, job_config=jcfg, blockers=blockers,
                      trainer=trainer, command=source.command, source_dir=source.source_dir, run_name=run_name,
                      checkpoint_uri=checkpoint_uri, model_input=model, data_findings=findings, notes=notes,
                      memory=memory)
    if not submit:
        plan.request = _jsonable(request)
        plan.job_name = plan.request.get("TrainingJobName")
        return plan
    trainer.train(wait=False, logs=False)  # uploads the channels, then creates the job
    plan.job_name = sent["params"]["TrainingJobName"]
    plan.request = _jsonable(boto_session.client("sagemaker").describe_training_job(TrainingJobName=plan.job_name))
    plan.submitted = True
    return plan
