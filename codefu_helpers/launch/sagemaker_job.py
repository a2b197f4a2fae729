"""An experiment config as a SageMaker training job (SageMaker Python SDK v3 `ModelTrainer`), rendered or submitted.

    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch
    plan = launch(cfg, LaunchConfig(role="arn:aws:iam::123456789012:role/SageMakerTraining", bucket="my-bucket"))
    plan.request        # the CreateTrainingJob request, exactly as the SDK would send it
    plan.cost           # per hour at the list price (codefu_helpers.launch.instances)
    plan = launch(cfg, launch_cfg, submit=True)   # uploads the inputs and creates the job

Key idea: `submit=False` (the default) builds the real `ModelTrainer` and asks it for its CreateTrainingJob
request, with a session that records the uploads it would make instead of making them, so rendering needs
no AWS credentials and makes no AWS call; `submit=True` uploads and submits through the same trainer.

The job: `instance_count` hosts of `instance_type`; the image is the PyTorch training DLC of the region
(or your own, e.g. built from docker/Dockerfile with vLLM and bubblewrap); the source code is this package
and configs/ (PYTHONPATH, no install); channels `train`, `test` (when data.val_path is set) and `config`
(the experiment config rewritten for the container: data paths under /opt/ml/input/data, trainer.nnodes =
instance_count, trainer.gpus_per_node = the instance's GPUs), uploaded by the SDK with the code under the job's own
name (s3://BUCKET/PREFIX/BASE_JOB_NAME/JOB_NAME/input/CHANNEL); checkpoints sync between /opt/ml/checkpoints
and a stable S3 prefix per config name, so a restarted or Spot-interrupted job resumes; the command on every
host is `python -m codefu_helpers.launch.entrypoint --config /opt/ml/input/data/config/config.yaml`.
The environment keeps EFA on (FI_PROVIDER=efa, never NCCL_NET_PLUGIN=none), passes an MLflow tracking
URI or SageMaker managed MLflow ARN through, and never carries credentials: the job's IAM role gives AWS access.
Everything wrong with the inputs is reported at once, before anything is uploaded.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import ConfigError, ExperimentConfig, native_trainer_problems
from .instances import estimate_cost, instance_type

__all__ = ["LaunchConfig", "LaunchPlan", "LaunchError", "launch", "job_config", "CONTAINER"]

ROOT = Path(__file__).resolve().parents[2]
# Where SageMaker puts things in the container.
CONTAINER = {"input": "/opt/ml/input/data", "code": "/opt/ml/input/data/code", "model": "/opt/ml/model",
             "checkpoints": "/opt/ml/checkpoints", "output": "/opt/ml/output/data", "failure": "/opt/ml/output/failure"}
DLC_VERSION, DLC_PY = "2.10.0", "py313"  # the newest PyTorch training DLC in sagemaker 3.27.0's image table
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
SECRET_NAME = re.compile(r"(^|_)(SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|API_KEY|ACCESS_KEY)(_|$)", re.IGNORECASE)
MAX_KEEP_ALIVE = 3600  # SageMaker's limit for warm pools


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
    image: str | None = None                # None: the region's PyTorch training DLC
    volume_size_gb: int = 500               # per host: model, checkpoints, vLLM cache
    base_job_name: str = "codefu-grpo"
    use_spot: bool = False                  # managed Spot: cheaper, interruptible, resumes from checkpoints
    max_run_hours: float = 72.0
    max_wait_hours: float | None = None     # Spot only: run + waiting for capacity; None: max_run_hours + 24
    keep_alive_seconds: int = 0             # warm pool: keep hosts for the next job (<= 3600)
    join_timeout_seconds: int = 900         # how long the head waits for every host to join Ray
    checkpoint_s3_uri: str | None = None    # None: s3://<bucket>/<prefix>/checkpoints/<config name>
    mlflow_tracking_uri: str | None = None  # MLflow URI or SageMaker managed MLflow ARN (else tracking.uri)
    tags: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    subnets: list[str] | None = None
    security_group_ids: list[str] | None = None
    hourly_price: float | None = None       # your price per instance-hour, for the estimate
    validate_role: bool = True              # submit only: let the SDK check the role's permissions first
    sdk_telemetry: bool = False             # the SageMaker SDK's usage reports to AWS (off unless asked)
    remote_debug: bool = True               # SSM sessions into the hosts (Ray dashboard port forward)


@dataclass
class LaunchPlan:
    request: dict[str, Any]                 # CreateTrainingJob request (JSON-able)
    uploads: list[dict[str, str]]           # {"local": file, "s3": uri} per file: made only when submitted (code:
                                            # the SDK uploads a temporary copy of source_dir)
    cost: dict[str, Any]
    job_config: ExperimentConfig            # the config the job's hosts read
    blockers: list[str]                     # why the job would fail at start (submit refuses while any)
    command: str = ""                       # what every host runs (the SDK's driver runs it after setup)
    source_dir: str = ""                    # the staged `code` channel: this package, configs/, requirements.txt
    submitted: bool = False
    job_name: str | None = None
    trainer: Any = None                     # the sagemaker.train.ModelTrainer

    def summary(self) -> dict[str, Any]:
        r = self.request
        return {"job_name": r.get("TrainingJobName"), "image": r["AlgorithmSpecification"]["TrainingImage"],
                "instances": f"{r['ResourceConfig']['InstanceCount']} x {r['ResourceConfig']['InstanceType']}",
                "channels": {c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"] for c in r["InputDataConfig"]},
                "checkpoints": r.get("CheckpointConfig", {}).get("S3Uri"), "spot": r.get("EnableManagedSpotTraining"),
                "command": self.command,
                "cost_per_hour": self.cost["per_hour"], "blockers": self.blockers, "submitted": self.submitted}


def _base_environment(launch_cfg: LaunchConfig, itype) -> dict[str, str]:
    env = {
        "PYTHONPATH": CONTAINER["code"],     # the package travels as source, no install step
        "PYTHONUNBUFFERED": "1",
        "NCCL_DEBUG": "WARN",
        "TOKENIZERS_PARALLELISM": "false",
        "RAY_USAGE_STATS_ENABLED": "0",
        "CODEFU_JUDGE_ISOLATION": "auto",    # bubblewrap where the container allows namespaces, else the container tier
    }
    if itype.efa:  # inter-host NCCL over EFA through the aws-ofi-nccl plugin of the DLC (never NCCL_NET_PLUGIN=none)
        env.update({"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1", "FI_EFA_FORK_SAFE": "1"})
    return env


def check_launch(cfg: ExperimentConfig, launch_cfg: LaunchConfig) -> list[str]:
    """Every problem with the launch inputs (empty when fine); nothing is contacted or uploaded."""
    problems = []
    lc = launch_cfg
    if not lc.role:
        problems.append("role is missing: give the ARN of an IAM role SageMaker can assume, e.g. "
                        "arn:aws:iam::123456789012:role/SageMakerExecution (SageMaker Studio: "
                        "sagemaker.core.helper.session_helper.get_execution_role())")
    elif not ROLE_ARN.match(lc.role):
        problems.append(f"role={lc.role!r} is not an IAM role ARN (arn:aws:iam::<12-digit account>:role/<name>)")
    if not lc.bucket:
        problems.append("bucket is missing: give an S3 bucket in the job's region for inputs, checkpoints and the model")
    elif not BUCKET.match(lc.bucket):
        problems.append(f"bucket={lc.bucket!r} is not an S3 bucket name (3-63 lowercase letters, digits, dots, "
                        "hyphens; no s3:// prefix)")
    itype = None
    try:
        itype = instance_type(lc.instance_type)
    except ValueError as exc:
        problems.append(str(exc))
    if lc.instance_count < 1:
        problems.append(f"instance_count={lc.instance_count} must be >= 1")
    elif itype is not None:
        devices = lc.instance_count * itype.gpus
        samples = cfg.algorithm.ppo_mini_batch_size * cfg.rollout.n
        if samples % devices:
            fits = [n for n in range(1, 33) if samples % (n * itype.gpus) == 0]
            problems.append(f"instance_count={lc.instance_count} x {itype.gpus} GPUs ({lc.instance_type}) = {devices} "
                            f"devices cannot split a mini-batch of algorithm.ppo_mini_batch_size x rollout.n = "
                            f"{cfg.algorithm.ppo_mini_batch_size} x {cfg.rollout.n} = {samples} samples evenly; use "
                            + (f"instance_count in {fits}" if fits else "a mini-batch that is a multiple of "
                               f"{itype.gpus} samples"))
    if itype is not None and lc.instance_count >= 1:  # a config whose memory plan cannot fit is refused here
        from ..memory_plan import plan_problems

        problems += plan_problems(cfg, itype.gpu_memory_gib, lc.instance_count, itype.gpus)
    if lc.max_run_hours <= 0:
        problems.append(f"max_run_hours={lc.max_run_hours} must be > 0")
    if lc.use_spot and lc.max_wait_hours is not None and lc.max_wait_hours < lc.max_run_hours:
        problems.append(f"max_wait_hours={lc.max_wait_hours} must be >= max_run_hours={lc.max_run_hours} with Spot "
                        "(it counts the run plus waiting for capacity)")
    if not lc.use_spot and lc.max_wait_hours is not None:
        problems.append(f"max_wait_hours={lc.max_wait_hours} applies to Spot only: set use_spot=True or drop it")
    if not 0 <= lc.keep_alive_seconds <= MAX_KEEP_ALIVE:
        problems.append(f"keep_alive_seconds={lc.keep_alive_seconds} must be in [0, {MAX_KEEP_ALIVE}]")
    if lc.join_timeout_seconds < 30:
        problems.append(f"join_timeout_seconds={lc.join_timeout_seconds} is too short for hosts to boot; use >= 300")
    for name, value in lc.environment.items():
        if SECRET_NAME.search(name) or name.startswith("AWS_"):
            problems.append(f"environment[{name!r}] looks like a credential: a job's environment is readable by "
                            "anyone who can DescribeTrainingJob; AWS access comes from the job's role, other "
                            "secrets belong in AWS Secrets Manager")
        if name == "NCCL_NET_PLUGIN" and str(value).lower() == "none":
            problems.append("environment NCCL_NET_PLUGIN=none turns off the EFA plugin and sends NCCL over TCP "
                            "sockets between hosts; remove it")
    if lc.mlflow_tracking_uri and not re.match(r"^(arn:aws[a-z-]*:sagemaker:|https?://|databricks)",
                                               lc.mlflow_tracking_uri):
        problems.append(f"mlflow_tracking_uri={lc.mlflow_tracking_uri!r}: a job needs a tracking server it can "
                        "reach (http(s)://... or a SageMaker managed MLflow ARN), not a local path")
    for key, path in (("data.train_path", cfg.data.train_path), ("data.val_path", cfg.data.val_path)):
        if path and not Path(path).is_file():
            problems.append(f"{key}={path!r} is not a file here: the launcher uploads it as a channel; write it "
                            "with notebook 01 (python -m codefu_helpers.data)")
    return problems


def job_config(cfg: ExperimentConfig, launch_cfg: LaunchConfig) -> ExperimentConfig:
    """The experiment config as the job's hosts read it: container paths, the cluster's shape, the tracking URI."""
    itype = instance_type(launch_cfg.instance_type)
    overrides = {
        "data.train_path": f"{CONTAINER['input']}/train/{Path(cfg.data.train_path).name}",
        "trainer.nnodes": launch_cfg.instance_count,
        "trainer.gpus_per_node": itype.gpus,
        "trainer.output_dir": CONTAINER["output"],
        "checkpoint.dir": CONTAINER["checkpoints"],
    }
    if cfg.data.val_path:
        overrides["data.val_path"] = f"{CONTAINER['input']}/test/{Path(cfg.data.val_path).name}"
    if launch_cfg.mlflow_tracking_uri:
        overrides["tracking.uri"] = launch_cfg.mlflow_tracking_uri
    elif cfg.tracking.uri and not re.match(r"^(arn:|https?://|databricks)", cfg.tracking.uri):
        overrides["tracking.uri"] = None  # a local path means nothing in the container: default under output_dir
    return cfg.with_overrides(overrides).validate()


VERL_REQUIREMENT = "verl==0.9.1"  # the version the renderer and its tests target


def _stage_source(dest: Path, engine: str) -> Path:
    """This package and configs/ as the job's source directory (the `code` channel), with the requirements the
    stock DLC installs at start (verl too for trainer.engine=verl)."""
    src = dest / "source"
    shutil.rmtree(src, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")
    shutil.copytree(ROOT / "codefu_helpers", src / "codefu_helpers", ignore=ignore)
    shutil.copytree(ROOT / "configs", src / "configs", ignore=ignore)
    requirements = (ROOT / "docker" / "requirements-job.txt").read_text()
    if engine == "verl":
        requirements += f"{VERL_REQUIREMENT}\n"
    (src / "requirements.txt").write_text(requirements)
    return src


def _session_class(render: bool):
    from sagemaker.core.helper.session_helper import Session

    class RecordingSession(Session):
        """A session that knows its bucket without asking S3 and records every file the SDK uploads ({"local",
        "s3"}, named as `Session.upload_data` names them); with `render`, it records without uploading."""

        def __init__(self, bucket: str, prefix: str, **kwargs):
            super().__init__(default_bucket=bucket, default_bucket_prefix=prefix, **kwargs)
            self.recorded_uploads: list[dict[str, str]] = []
            self._bucket = bucket

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
            self.recorded_uploads += [{"local": str(f), "s3": f"s3://{bucket}/{k}"} for f, k in zip(files, keys)]
            return uri

    return RecordingSession


def _link_or_copy(source: Path, target: Path) -> None:
    """`target` as a hard link to `source` (no copy of a large parquet), or a copy across filesystems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _trainer_class(render: bool):
    from sagemaker.train import ModelTrainer

    if not render:
        return ModelTrainer

    class RenderTrainer(ModelTrainer):
        def _resolve_staging_bucket(self):
            # the SDK asks IAM whether the role may write the default bucket; rendering asks nobody
            return self.sagemaker_session.default_bucket(), None

    return RenderTrainer


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


def launch(cfg: ExperimentConfig, launch_cfg: LaunchConfig, submit: bool = False,
           work_dir: str | Path | None = None) -> LaunchPlan:
    """Builds the job for `cfg` (and submits it when `submit`); LaunchError lists every input problem first."""
    import boto3
    from sagemaker.core.training.configs import (CheckpointConfig, Compute, InputData, Networking, OutputDataConfig,
                                                 SourceCode, StoppingCondition, Tag)

    problems = check_launch(cfg.validate(), launch_cfg)
    if problems:
        raise LaunchError(problems)
    lc = launch_cfg
    try:
        jcfg = job_config(cfg, lc)
    except ConfigError as exc:
        raise LaunchError(exc.problems) from None
    itype = instance_type(lc.instance_type)
    blockers = []
    if jcfg.trainer.engine == "native":
        blockers = native_trainer_problems(jcfg)
    if submit and blockers:
        raise LaunchError(["the job would fail at start:"] + blockers)
    if jcfg.trainer.engine == "verl":
        from .verl_engine import verl_overrides

        try:
            verl_overrides(jcfg)
        except ConfigError as exc:
            raise LaunchError(exc.problems) from None

    work = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="codefu-launch-"))
    work.mkdir(parents=True, exist_ok=True)
    # the channels as folders the SDK uploads next to the code, under the job's own name: s3://BUCKET/PREFIX/
    # BASE_JOB_NAME/JOB_NAME/input/{train,test,config,code,sm_drivers}
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

    image = lc.image
    if image is None:
        from sagemaker.core import image_uris

        image = image_uris.retrieve(framework="pytorch", region=lc.region, version=DLC_VERSION, py_version=DLC_PY,
                                    instance_type=lc.instance_type, image_scope="training")
    environment = {**_base_environment(lc, itype), **lc.environment}
    if lc.mlflow_tracking_uri:
        environment["MLFLOW_TRACKING_URI"] = lc.mlflow_tracking_uri
    source = SourceCode(source_dir=str(_stage_source(work, jcfg.trainer.engine)), requirements=None if lc.image else "requirements.txt",
                        command=f"python -m codefu_helpers.launch.entrypoint --config {CONTAINER['input']}/config/"
                                f"config.yaml --join-timeout {lc.join_timeout_seconds}")
    max_run = int(lc.max_run_hours * 3600)
    stopping = StoppingCondition(max_runtime_in_seconds=max_run,
                                 max_wait_time_in_seconds=int((lc.max_wait_hours or lc.max_run_hours + 24) * 3600)
                                 if lc.use_spot else None)
    tags = {"project": "codefu-grpo", "config": cfg.name, "engine": jcfg.trainer.engine, **lc.tags}
    checkpoint_uri = lc.checkpoint_s3_uri or f"s3://{lc.bucket}/{lc.prefix}/checkpoints/{cfg.name}"

    with (_no_aws_calls() if not submit else contextlib.nullcontext()):
        boto_session = boto3.Session(region_name=lc.region)
        sdk_defaults = _sdk_defaults(lc.sdk_telemetry)
        session = _session_class(render=not submit)(lc.bucket, lc.prefix, boto_session=boto_session,
                                                    sagemaker_config=sdk_defaults)
        env_guard = contextlib.nullcontext()
        if submit and not lc.validate_role:
            env_guard = _no_aws_calls()
        with env_guard:
            trainer = _trainer_class(render=not submit)(
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
                hyperparameters={"config": cfg.name, "engine": jcfg.trainer.engine},
                tags=[Tag(key=k, value=str(v)) for k, v in tags.items()],
                input_data_config=channels,
            )
        if lc.remote_debug:
            from sagemaker.core.shapes import RemoteDebugConfig

            trainer = trainer.with_remote_debug_config(RemoteDebugConfig(enable_remote_debug=True))
        command = source.command
        if not submit:
            request = trainer._create_training_job_args(boto3=True)  # the SDK's own request, uploads recorded
    cost = estimate_cost(lc.instance_type, lc.instance_count, hours=lc.max_run_hours, hourly_price=lc.hourly_price)
    cost["max_run_hours"] = cost.pop("hours")
    cost["per_run_at_max_run"] = cost.pop("per_run")
    plan = LaunchPlan(request={}, uploads=session.recorded_uploads, cost=cost, job_config=jcfg, blockers=blockers,
                      trainer=trainer,
                      command=command, source_dir=source.source_dir)
    if not submit:
        plan.request = _jsonable(request)
        plan.job_name = plan.request.get("TrainingJobName")
        return plan
    trainer.train(wait=False, logs=False)  # uploads the channels, then creates the job
    job = trainer._latest_training_job
    plan.job_name = job.training_job_name
    plan.request = _jsonable(boto_session.client("sagemaker").describe_training_job(TrainingJobName=plan.job_name))
    plan.submitted = True
    return plan
