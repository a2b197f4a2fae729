"""SageMaker launch: the rendered job, bad input caught before any upload, and a submission to a local moto server.

Rendering needs no credentials: these tests run with every AWS_* credential removed from the environment, and
the render session fails the test if anything tries to upload. The submit test starts `moto_server` on
127.0.0.1 (a free port) and points boto3 at it with AWS_ENDPOINT_URL; nothing reaches AWS.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STAGE2 = REPO / "configs" / "codefu7b_stage2.yaml"
ROLE = "arn:aws:iam::123456789012:role/SageMakerTraining"
SECRETS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")
SECRET_WORD = re.compile(r"(^|_)(SECRET|TOKEN|PASSWORD|CREDENTIALS?|API_KEY|ACCESS_KEY)(_|$)")


def _no_secrets(env: dict) -> bool:
    return not any(k.startswith("AWS_") or SECRET_WORD.search(k) for k in env)


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))


def _cfg(python_split, **overrides):
    from codefu_helpers.config import ExperimentConfig

    base = {"data.train_path": str(python_split["train"]), "data.val_path": str(python_split["test"]),
            "data.tiers": None}
    return ExperimentConfig.from_yaml(STAGE2).with_overrides({**base, **overrides}).validate()


@pytest.fixture(scope="module")
def rendered(python_split, tmp_path_factory):
    """2 x ml.p4de.24xlarge, CodeFu-7B stage 2 on verl, rendered without credentials."""
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    saved = {k: os.environ.pop(k) for k in SECRETS if k in os.environ}
    try:
        cfg = _cfg(python_split, **{"trainer.engine": "verl"})
        plan = launch(cfg, LaunchConfig(role=ROLE, bucket="codefu-test-bucket", use_spot=True, max_run_hours=48,
                                        keep_alive_seconds=600, tags={"team": "ml"},
                                        mlflow_tracking_uri="arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/codefu"),
                      work_dir=tmp_path_factory.mktemp("render"))
    finally:
        os.environ.update(saved)
    return cfg, plan


def test_render_builds_the_create_training_job_request(rendered):
    cfg, plan = rendered
    r = plan.request
    assert r["ResourceConfig"] == {"InstanceType": "ml.p4de.24xlarge", "InstanceCount": 2, "VolumeSizeInGB": 500,
                                   "KeepAlivePeriodInSeconds": 600}
    assert r["AlgorithmSpecification"]["TrainingImage"].startswith("763104351884.dkr.ecr.us-east-1.amazonaws.com/"
                                                                    "pytorch-training:")
    channels = {c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"] for c in r["InputDataConfig"]}
    assert set(channels) == {"train", "test", "config", "code", "sm_drivers"}
    job_input = f"s3://codefu-test-bucket/codefu/codefu-grpo/{r['TrainingJobName']}/input"
    assert channels == {name: f"{job_input}/{name}" for name in channels}, "one folder per job, named as the job"
    assert r["CheckpointConfig"] == {"S3Uri": "s3://codefu-test-bucket/codefu/checkpoints/codefu7b_stage2",
                                     "LocalPath": "/opt/ml/checkpoints"}
    assert r["EnableManagedSpotTraining"] is True
    assert r["StoppingCondition"] == {"MaxRuntimeInSeconds": 48 * 3600, "MaxWaitTimeInSeconds": 72 * 3600}
    assert {"Key": "team", "Value": "ml"} in r["Tags"]
    assert r["RemoteDebugConfig"] == {"EnableRemoteDebug": True}  # SSM into algo-1 for the Ray dashboard
    env = r["Environment"]
    assert env["FI_PROVIDER"] == "efa" and "NCCL_NET_PLUGIN" not in env
    assert env["MLFLOW_TRACKING_URI"].startswith("arn:aws:sagemaker:")
    assert _no_secrets(env), env
    assert "codefu_helpers.launch.entrypoint --config /opt/ml/input/data/config/config.yaml" in plan.command
    assert plan.cost["per_hour"] == pytest.approx(2 * 47.11) and "us-east-1" in plan.cost["source"]
    assert plan.blockers == []


def test_render_rewrites_the_config_for_the_container(rendered):
    _, plan = rendered
    job = plan.job_config
    assert job.trainer.nnodes == 2 and job.trainer.gpus_per_node == 8
    assert job.data.train_path == "/opt/ml/input/data/train/train.parquet"
    assert job.data.val_path == "/opt/ml/input/data/test/test.parquet"
    assert job.checkpoint.dir == "/opt/ml/checkpoints" and job.trainer.output_dir == "/opt/ml/output/data"
    assert job.tracking.uri.startswith("arn:aws:sagemaker:")
    job_input = f"s3://codefu-test-bucket/codefu/codefu-grpo/{plan.request['TrainingJobName']}/input"
    uploaded = {u["s3"]: Path(u["local"]) for u in plan.uploads}
    for channel, file in (("train", "train.parquet"), ("test", "test.parquet"), ("config", "config.yaml")):
        assert uploaded[f"{job_input}/{channel}/{file}"].name == file, (channel, sorted(uploaded))
    assert uploaded[f"{job_input}/code/codefu_helpers/launch/entrypoint.py"].name == "entrypoint.py"
    staged = uploaded[f"{job_input}/config/config.yaml"]
    assert "/opt/ml/input/data/train/train.parquet" in staged.read_text()  # the container's config, not ours
    code = Path(plan.source_dir)
    assert (code / "codefu_helpers" / "launch" / "entrypoint.py").exists() and (code / "configs").is_dir()
    assert "verl==0.9.1" in (code / "requirements.txt").read_text().splitlines()  # the stock DLC installs it


def test_native_engine_renders_and_names_what_would_stop_it(python_split, no_credentials, tmp_path):
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    launch_cfg = LaunchConfig(role=ROLE, bucket="codefu-test-bucket")
    plan = launch(_cfg(python_split), launch_cfg, work_dir=tmp_path)
    assert plan.job_config.trainer.engine == "native" and plan.job_config.rollout.backend == "vllm"
    assert plan.job_config.world_size == 16 and plan.blockers == []  # 2 hosts x 8 workers, a vLLM engine each
    # a key the native trainer would ignore is refused by validate(), before anything is rendered or uploaded
    from codefu_helpers.config import ConfigError

    with pytest.raises(ConfigError, match="rollout.enable_sleep_mode=True applies to vLLM only"):
        _cfg(python_split, **{"rollout.backend": "hf"})


@pytest.mark.parametrize("change, message", [
    ({"instance_type": "ml.p9.96xlarge"}, "instance_type='ml.p9.96xlarge' is not a GPU training instance"),
    ({"instance_count": 3}, "instance_count=3 x 8 GPUs (ml.p4de.24xlarge) = 24 devices cannot split"),
    ({"role": None}, "role is missing"),
    ({"role": "SageMakerRole"}, "is not an IAM role ARN"),
    ({"bucket": None}, "bucket is missing"),
    ({"bucket": "s3://my-bucket"}, "is not an S3 bucket name"),
    ({"environment": {"AWS_SECRET_ACCESS_KEY": "x"}}, "looks like a credential"),
    ({"environment": {"HF_TOKEN": "x"}}, "looks like a credential"),
    ({"environment": {"NCCL_NET_PLUGIN": "none"}}, "NCCL_NET_PLUGIN=none"),
    ({"use_spot": True, "max_wait_hours": 1.0}, "must be >= max_run_hours"),
])
def test_bad_input_is_reported_before_anything_is_uploaded(python_split, no_credentials, tmp_path, change, message):
    import dataclasses

    from codefu_helpers.launch.sagemaker_job import LaunchConfig, LaunchError, launch

    launch_cfg = dataclasses.replace(LaunchConfig(role=ROLE, bucket="codefu-test-bucket"), **change)
    with pytest.raises(LaunchError) as err:
        launch(_cfg(python_split, **{"trainer.engine": "verl"}), launch_cfg, work_dir=tmp_path, submit=True)
    assert any(message in p for p in err.value.problems), err.value.problems
    assert not (tmp_path / "source").exists() and not (tmp_path / "config").exists(), "nothing staged or uploaded"


def test_the_divisibility_error_names_counts_that_work(python_split, no_credentials, tmp_path):
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, LaunchError, launch

    with pytest.raises(LaunchError) as err:
        launch(_cfg(python_split, **{"trainer.engine": "verl"}),
               LaunchConfig(role=ROLE, bucket="codefu-test-bucket", instance_count=3), work_dir=tmp_path)
    assert "use instance_count in [1, 2, 4, 8, 16, 32]" in str(err.value)


# ------------------------------------------------------------------------------------------------------------
# submit to a local moto server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto_endpoint(tmp_path_factory):
    """moto_server on 127.0.0.1, recording every request it receives (the recording is how the test sees the
    CreateTrainingJob request as sent: moto's DescribeTrainingJob leaves the environment out)."""
    port = _free_port()
    tmp = tmp_path_factory.mktemp("moto")
    log, recording = tmp / "moto.log", tmp / "requests.jsonl"
    moto = Path(sys.executable).with_name("moto_server")
    env = dict(os.environ, MOTO_ENABLE_RECORDING="True", MOTO_RECORDER_FILEPATH=str(recording))
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(moto), "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=subprocess.STDOUT,
                                env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                assert proc.poll() is None, log.read_text()
                time.sleep(0.3)
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/moto-api/recorder/start-recording",
                                                      method="POST"), timeout=30).read()
        yield f"http://127.0.0.1:{port}", recording
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def recorded_requests(recording: Path, target: str) -> list[dict]:
    """Bodies of the JSON-protocol requests with X-Amz-Target `target` that moto received."""
    found = []
    for line in recording.read_text().splitlines():
        entry = json.loads(line)
        headers = {k.lower(): v for k, v in entry["headers"].items()}
        if headers.get("x-amz-target") == target:
            body = base64.b64decode(entry["body"]) if entry["body_encoded"] else entry["body"]
            found.append(json.loads(body))
    return found


@pytest.fixture
def aws_on_moto(monkeypatch, moto_endpoint, tmp_path):
    endpoint, recording = moto_endpoint
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")  # moto's; a local process never sees real credentials
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    import boto3

    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="codefu-moto")
    return recording


def test_submit_uploads_the_inputs_and_creates_the_training_job(python_split, aws_on_moto, tmp_path):
    import boto3

    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    cfg = _cfg(python_split, **{"trainer.engine": "verl"})
    plan = launch(cfg, LaunchConfig(role=ROLE, bucket="codefu-moto", validate_role=False,
                                    environment={"EXTRA_FLAG": "1"}), submit=True, work_dir=tmp_path)
    assert plan.submitted and plan.job_name
    job = boto3.client("sagemaker", region_name="us-east-1").describe_training_job(TrainingJobName=plan.job_name)
    assert job["ResourceConfig"]["InstanceCount"] == 2 and job["ResourceConfig"]["InstanceType"] == "ml.p4de.24xlarge"
    channels = {c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"] for c in job["InputDataConfig"]}
    assert channels == {name: f"s3://codefu-moto/codefu/codefu-grpo/{plan.job_name}/input/{name}"
                        for name in ("train", "test", "config", "code", "sm_drivers")}
    assert job["CheckpointConfig"]["S3Uri"] == "s3://codefu-moto/codefu/checkpoints/codefu7b_stage2"
    assert job["RoleArn"] == ROLE
    (sent,) = [r for r in recorded_requests(aws_on_moto, "SageMaker.CreateTrainingJob")
               if r["TrainingJobName"] == plan.job_name]
    assert sent["ResourceConfig"]["InstanceCount"] == 2
    env = sent["Environment"]
    assert env["EXTRA_FLAG"] == "1" and env["FI_PROVIDER"] == "efa" and env["PYTHONPATH"] == "/opt/ml/input/data/code"
    assert _no_secrets(env), env
    assert "testing" not in json.dumps(sent), "the submitting machine's credentials must not travel in the request"

    s3 = boto3.client("s3", region_name="us-east-1")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="codefu-moto")["Contents"]]
    for name in ("train", "test", "config"):
        prefix = channels[name].removeprefix("s3://codefu-moto/")
        assert any(k.startswith(prefix) for k in keys), f"nothing uploaded under channel {name}: {prefix}"
    config_key = next(k for k in keys if k.endswith("config/config.yaml"))
    job_cfg = s3.get_object(Bucket="codefu-moto", Key=config_key)["Body"].read().decode()
    assert "nnodes: 2" in job_cfg and "/opt/ml/input/data/train/train.parquet" in job_cfg
    assert any(k.endswith("codefu_helpers/launch/entrypoint.py") for k in keys), "the package is the code channel"
    source_json = next(k for k in keys if k.endswith("sourcecode.json"))
    command = json.loads(s3.get_object(Bucket="codefu-moto", Key=source_json)["Body"].read())["command"]
    assert command.startswith("python -m codefu_helpers.launch.entrypoint --config /opt/ml/input/data/config/config.yaml")


@pytest.mark.notebook
def test_notebook_04_submits_to_the_moto_server(aws_on_moto, tmp_path):
    import boto3

    from codefu_helpers.tutorial import execute_notebook

    run = execute_notebook("04_sagemaker_launch.ipynb", tmp_path,
                           {"SUBMIT_JOB": True, "BUCKET": "codefu-moto", "VALIDATE_ROLE": False})
    assert run.error is None, f"{run.error}\nexecuted copy: {run.executed}"
    results = run.results
    assert results["submitted"] is True and results["job_name"]
    job = boto3.client("sagemaker", region_name="us-east-1").describe_training_job(TrainingJobName=results["job_name"])
    assert job["ResourceConfig"]["InstanceCount"] == 2
    assert job["CheckpointConfig"]["S3Uri"] == "s3://codefu-moto/codefu/checkpoints/codefu7b_stage2"
    (sent,) = [r for r in recorded_requests(aws_on_moto, "SageMaker.CreateTrainingJob")
               if r["TrainingJobName"] == results["job_name"]]
    assert _no_secrets(sent["Environment"]), sent["Environment"]
    keys = [o["Key"] for o in boto3.client("s3", region_name="us-east-1").list_objects_v2(Bucket="codefu-moto")["Contents"]]
    for upload in results["uploads"][:3]:  # train, config, test: the notebook's own parquet and job config
        assert upload.removeprefix("s3://codefu-moto/") in keys, upload
