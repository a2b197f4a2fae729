"""SageMaker launch: the rendered job, bad input caught before any upload, a submission to a local moto server, and
following / stopping / fetching / cleaning up a submitted job there.

Rendering needs no credentials: these tests run with every AWS_* credential removed from the environment, and the
render runs the SDK's own `ModelTrainer.train()` stopped at CreateTrainingJob by a botocore hook. The submit tests
start `moto_server` on 127.0.0.1 (a free port) and point boto3 at it with AWS_ENDPOINT_URL; nothing reaches AWS.
"""

from __future__ import annotations

import base64
import dataclasses
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
DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch:2.11.0-cu130-amzn2023-sagemaker"


def _no_secrets(env: dict) -> bool:
    return not any(k.startswith("AWS_") or SECRET_WORD.search(k) for k in env)


@pytest.fixture
def no_credentials(monkeypatch, tmp_path):
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))


@pytest.fixture(scope="session")
def local_model():
    """A Hugging Face model folder on this machine (the tiny Qwen2 build): what stage 1 leaves for stage 2."""
    from codefu_helpers.tiny_model import resolve_model_path

    return Path(resolve_model_path("tiny://qwen2"))


def _cfg(python_split, **overrides):
    from codefu_helpers.config import ExperimentConfig

    base = {"data.train_path": str(python_split["train"]), "data.val_path": str(python_split["test"]),
            "data.tiers": None, "model.path": "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"}
    return ExperimentConfig.from_yaml(STAGE2).with_overrides({**base, **overrides}).validate()


def _channels(request: dict) -> dict[str, str]:
    return {c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"] for c in request["InputDataConfig"]}


@pytest.fixture(scope="module")
def rendered(python_split, local_model, tmp_path_factory):
    """2 x ml.p4de.24xlarge, CodeFu-7B stage 2 on verl from a local model folder, rendered without credentials."""
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    saved = {k: os.environ.pop(k) for k in SECRETS if k in os.environ}
    try:
        cfg = _cfg(python_split, **{"model.path": str(local_model)})
        with pytest.warns(UserWarning, match="trainer.nnodes=4 in the config, instance_count=2"):
            plan = launch(cfg, LaunchConfig(role=ROLE, bucket="codefu-test-bucket", use_spot=True, max_run_hours=48,
                                            tags={"team": "ml"}, run_name="run-a",
                                            mlflow_tracking_uri="arn:aws:sagemaker:us-east-1:123456789012:"
                                                                "mlflow-tracking-server/codefu", language="cpp"),
                          work_dir=tmp_path_factory.mktemp("render"))
    finally:
        os.environ.update(saved)
    return cfg, plan


def test_render_builds_the_create_training_job_request(rendered, local_model):
    cfg, plan = rendered
    r = plan.request
    assert r["ResourceConfig"] == {"InstanceType": "ml.p4de.24xlarge", "InstanceCount": 2, "VolumeSizeInGB": 500}
    assert r["AlgorithmSpecification"]["TrainingImage"] == DLC  # pinned, not a floating tag
    channels = _channels(r)
    assert set(channels) == {"train", "test", "config", "model", "code", "sm_drivers"}
    job_input = f"s3://codefu-test-bucket/codefu/codefu-grpo/{r['TrainingJobName']}/input"
    assert channels == {name: f"{job_input}/{name}" for name in channels}, "one folder per job, named as the job"
    uploaded = {u["s3"] for u in plan.uploads}
    assert {f"{job_input}/model/{f.name}" for f in local_model.iterdir() if f.is_file()} <= uploaded
    assert plan.model_input["kind"] == "local" and plan.job_config.model.path == "/opt/ml/input/data/model"
    assert r["CheckpointConfig"] == {"S3Uri": "s3://codefu-test-bucket/codefu/checkpoints/codefu7b_stage2/run-a",
                                     "LocalPath": "/opt/ml/checkpoints"}
    assert r["EnableManagedSpotTraining"] is True
    assert r["StoppingCondition"] == {"MaxRuntimeInSeconds": 48 * 3600, "MaxWaitTimeInSeconds": 72 * 3600}
    assert {"Key": "team", "Value": "ml"} in r["Tags"] and {"Key": "run", "Value": "run-a"} in r["Tags"]
    assert r["RemoteDebugConfig"] == {"EnableRemoteDebug": True}  # SSM into algo-1 for the Ray dashboard
    env = r["Environment"]
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1" and "NCCL_NET_PLUGIN" not in env
    assert env["MLFLOW_TRACKING_URI"].startswith("arn:aws:sagemaker:")
    assert _no_secrets(env), env
    # exec: the entry point replaces the SDK's driver as the container's PID 1, so SIGTERM reaches it
    assert plan.command.startswith("exec python -m codefu_helpers.launch.entrypoint --config "
                                   "/opt/ml/input/data/config/config.yaml")
    assert r["AlgorithmSpecification"]["ContainerEntrypoint"] == ["/bin/bash"]
    assert plan.cost["per_hour"] == pytest.approx(2 * 47.11) and "us-east-1" in plan.cost["source"]
    assert plan.blockers == [] and any("instance_count=2" in n for n in plan.notes)
    # the python sample split does not fit a 256-prompt C++ run: said before anything is submitted
    assert any("fewer than one step's data.train_batch_size=256" in f for f in plan.data_findings)
    assert any("asks for python programs but this run expects cpp" in f for f in plan.data_findings)


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
    assert uploaded[f"{job_input}/code/codefu_helpers/launch/entrypoint.py"].exists()  # kept after the render
    staged = uploaded[f"{job_input}/config/config.yaml"]
    assert "/opt/ml/input/data/train/train.parquet" in staged.read_text()  # the container's config, not ours
    code = Path(plan.source_dir)
    assert (code / "codefu_helpers" / "launch" / "entrypoint.py").exists() and (code / "configs").is_dir()
    requirements = (code / "requirements.txt").read_text().splitlines()
    assert "verl==0.9.1" in requirements and "-c requirements-job.lock" in requirements  # the stock DLC installs it
    assert "vllm==0.24.0" in requirements and (code / "requirements-job.lock").exists()


def test_the_sdk_is_driven_through_its_public_api_only():
    source = (REPO / "codefu_helpers" / "launch" / "sagemaker_job.py").read_text()
    for private in ("_create_training_job_args", "_latest_training_job", "_resolve_staging_bucket"):
        assert private not in source, private


def test_native_engine_renders_and_names_what_would_stop_it(python_split, no_credentials, tmp_path):
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    launch_cfg = LaunchConfig(role=ROLE, bucket="codefu-test-bucket", check_data=False)
    native = {"trainer.engine": "native", "trainer.sequence_parallel_size": 1, "rollout.tensor_parallel_size": 1,
              "algorithm.ppo_max_token_len_per_gpu": 32768}  # one device holds the whole sequence now
    plan = launch(_cfg(python_split, **native), launch_cfg, work_dir=tmp_path)
    assert plan.job_config.trainer.engine == "native" and plan.job_config.rollout.backend == "vllm"
    assert plan.job_config.world_size == 16 and plan.blockers == []  # 2 hosts x 8 workers, a vLLM engine each
    # a key the native trainer would ignore stops the submission before anything is uploaded
    # a key the native trainer would ignore is refused by validate(), before anything is rendered or uploaded
    from codefu_helpers.config import ConfigError

    with pytest.raises(ConfigError, match="trainer.sequence_parallel_size=4: the native trainer"):
        _cfg(python_split, **{"trainer.engine": "native", "rollout.tensor_parallel_size": 1})
    with pytest.raises(ConfigError, match="rollout.enable_sleep_mode=True applies to vLLM only"):
        _cfg(python_split, **{**native, "rollout.backend": "hf"})


@pytest.mark.parametrize("instance, rdma", [("ml.p4de.24xlarge", True), ("ml.p5.48xlarge", True),
                                            ("ml.g5.48xlarge", False), ("ml.g5.12xlarge", False)])
def test_efa_rdma_only_on_instance_types_whose_efa_has_it(python_split, no_credentials, tmp_path, instance, rdma):
    from sagemaker.train.container_drivers.common.utils import SM_EFA_RDMA_INSTANCES

    from codefu_helpers.launch.instances import instance_type
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    assert instance_type(instance).rdma == (instance in SM_EFA_RDMA_INSTANCES) == rdma  # the SDK's own list
    # the 7B stage does not fit 24 GB A10Gs (tests/test_memory_plan.py); a model read from S3 has no plan here
    model = {"model.path": "s3://codefu-test-bucket/models/any/"} if instance_type(instance).gpu == "A10G" else {}
    plan = launch(_cfg(python_split, **model),
                  LaunchConfig(role=ROLE, bucket="codefu-test-bucket", instance_type=instance), work_dir=tmp_path)
    env = plan.request["Environment"]
    assert ("FI_EFA_USE_DEVICE_RDMA" in env) == rdma and env.get("FI_PROVIDER") == (
        "efa" if instance_type(instance).efa else None)


def test_model_from_s3_is_a_channel_read_in_place_and_a_hub_id_is_left_to_the_job(python_split, no_credentials,
                                                                                   tmp_path):
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    launch_cfg = LaunchConfig(role=ROLE, bucket="codefu-test-bucket")
    uri = "s3://other-bucket/codefu/output/stage1-job/output/model"
    plan = launch(_cfg(python_split, **{"model.path": uri}), launch_cfg, work_dir=tmp_path)
    assert _channels(plan.request)["model"] == uri + "/"
    assert not any("/input/model/" in u["s3"] for u in plan.uploads), "an S3 model is not uploaded again"
    assert plan.job_config.model.path == "/opt/ml/input/data/model"
    plan = launch(_cfg(python_split), launch_cfg, work_dir=tmp_path)
    assert "model" not in _channels(plan.request)
    assert plan.job_config.model.path == "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"


def test_two_runs_of_one_config_never_share_checkpoints_unless_resumed(python_split, no_credentials, tmp_path):
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    cfg = _cfg(python_split)
    first = launch(cfg, LaunchConfig(role=ROLE, bucket="codefu-test-bucket"), work_dir=tmp_path / "a")
    time.sleep(1.1)  # run names carry the UTC second
    second = launch(cfg, LaunchConfig(role=ROLE, bucket="codefu-test-bucket"), work_dir=tmp_path / "b")
    runs = "s3://codefu-test-bucket/codefu/checkpoints/codefu7b_stage2/"
    assert first.checkpoint_uri.startswith(runs) and second.checkpoint_uri.startswith(runs)
    assert first.checkpoint_uri != second.checkpoint_uri
    for resume_from in (first.run_name, first.checkpoint_uri):
        again = launch(cfg, LaunchConfig(role=ROLE, bucket="codefu-test-bucket", resume_from=resume_from),
                       work_dir=tmp_path / "c")
        assert again.request["CheckpointConfig"]["S3Uri"] == first.checkpoint_uri
        assert again.run_name == first.run_name


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
    ({"instance_type": "ml.g5.48xlarge", "environment": {"FI_EFA_USE_DEVICE_RDMA": "1"}}, "no RDMA read"),
    ({"use_spot": True, "max_wait_hours": 1.0}, "must be >= max_run_hours"),
    ({"use_spot": True, "keep_alive_seconds": 600}, "SageMaker keeps no warm pool for managed Spot training"),
    ({"resume_from": "not a run!"}, "resume_from='not a run!'"),
    ({"instance_type": "local"}, "instance_type='local' is the simulation's host"),
])
def test_bad_input_is_reported_before_anything_is_uploaded(python_split, no_credentials, tmp_path, change, message):
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, LaunchError, launch

    launch_cfg = dataclasses.replace(LaunchConfig(role=ROLE, bucket="codefu-test-bucket"), **change)
    with pytest.raises(LaunchError) as err:
        launch(_cfg(python_split), launch_cfg, work_dir=tmp_path, submit=True)
    assert any(message in p for p in err.value.problems), err.value.problems
    assert not (tmp_path / "source").exists() and not (tmp_path / "inputs").exists(), "nothing staged or uploaded"


def test_the_simulations_gpu_less_hosts_render_without_a_memory_plan(python_split, no_credentials, tmp_path):
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    plan = launch(_cfg(python_split), LaunchConfig(role=ROLE, bucket="codefu-test-bucket", instance_type="local",
                                                  instance_count=2), work_dir=tmp_path)
    assert plan.memory is None
    assert any("no memory plan: instance_type='local'" in n for n in plan.notes), plan.notes


def test_a_warm_pool_renders_without_spot(python_split, no_credentials, tmp_path):
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    plan = launch(_cfg(python_split), LaunchConfig(role=ROLE, bucket="codefu-test-bucket", keep_alive_seconds=600),
                  work_dir=tmp_path)
    assert plan.request["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 600
    assert not plan.request.get("EnableManagedSpotTraining")


@pytest.mark.parametrize("override, message", [
    ({"model.path": "runs/nowhere/model"}, "model.path='runs/nowhere/model' does not exist here"),
    ({"model.path": "s3://bucket"}, "is not an S3 prefix"),
    ({"checkpoint.keep_last": 1}, "checkpoint.keep_last=1"),
    ({"trainer.engine": "verl", "rollout.backend": "vllm", "trainer.strategy": "megatron",
      "trainer.tensor_parallel_size": 2, "trainer.sequence_parallel_size": 1,
      "algorithm.ppo_max_token_len_per_gpu": 32768}, "trainer.strategy='megatron': the SageMaker entry point"),
])
def test_a_model_or_checkpoint_setting_that_cannot_work_is_refused_naming_the_key(python_split, no_credentials,
                                                                                   tmp_path, override, message):
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, LaunchError, launch

    with pytest.raises(LaunchError) as err:
        launch(_cfg(python_split, **override), LaunchConfig(role=ROLE, bucket="codefu-test-bucket"), work_dir=tmp_path)
    assert any(message in p for p in err.value.problems), err.value.problems
    assert not (tmp_path / "inputs").exists(), "refused before anything was staged"


def test_the_divisibility_error_names_counts_that_work(python_split, no_credentials, tmp_path):
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, LaunchError, launch

    with pytest.raises(LaunchError) as err:
        launch(_cfg(python_split), LaunchConfig(role=ROLE, bucket="codefu-test-bucket", instance_count=3),
               work_dir=tmp_path)
    assert "use instance_count in [1, 2, 4, 8, 16, 32]" in str(err.value)


def test_outside_a_studio_session_empty_role_and_bucket_are_named(no_credentials):
    from codefu_helpers.launch.sagemaker_job import PLACEHOLDER_ROLE, LaunchError, session_defaults

    with pytest.raises(LaunchError) as err:
        session_defaults(region="us-east-1")
    assert {p.split(" ", 1)[0] for p in err.value.problems} == {"role", "bucket"}
    assert "not a SageMaker Studio session" in err.value.problems[0]
    rendering = session_defaults(region="us-east-1", required=False)  # rendering: placeholders, named as such
    assert rendering["role"] == PLACEHOLDER_ROLE and rendering["source"]["role"].startswith("placeholder")


# ------------------------------------------------------------------------------------------------------------
# a local moto server


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
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    import boto3

    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="codefu-moto")
    return recording


def test_submit_uploads_the_inputs_and_creates_the_training_job(python_split, local_model, aws_on_moto, tmp_path):
    import boto3

    from codefu_helpers.launch.sagemaker_job import LaunchConfig, LaunchError, launch

    cfg = _cfg(python_split, **{"model.path": str(local_model)})
    launch_cfg = LaunchConfig(role=ROLE, bucket="codefu-moto", validate_role=False, environment={"EXTRA_FLAG": "1"},
                              language="cpp")
    with pytest.raises(LaunchError, match="does not fit the config"):  # the python sample for a 256-prompt C++ run
        launch(cfg, launch_cfg, submit=True, work_dir=tmp_path)
    plan = launch(cfg, dataclasses.replace(launch_cfg, check_data=False), submit=True, work_dir=tmp_path)
    assert plan.submitted and plan.job_name
    job = boto3.client("sagemaker", region_name="us-east-1").describe_training_job(TrainingJobName=plan.job_name)
    assert job["ResourceConfig"]["InstanceCount"] == 2 and job["ResourceConfig"]["InstanceType"] == "ml.p4de.24xlarge"
    channels = _channels(job)
    assert channels == {name: f"s3://codefu-moto/codefu/codefu-grpo/{plan.job_name}/input/{name}"
                        for name in ("train", "test", "config", "model", "code", "sm_drivers")}
    assert job["CheckpointConfig"]["S3Uri"] == plan.checkpoint_uri
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
    for name in ("train", "test", "config", "model"):
        prefix = channels[name].removeprefix("s3://codefu-moto/")
        assert any(k.startswith(prefix) for k in keys), f"nothing uploaded under channel {name}: {prefix}"
    assert f"codefu/codefu-grpo/{plan.job_name}/input/model/config.json" in keys  # the local model, uploaded
    config_key = next(k for k in keys if k.endswith("config/config.yaml"))
    job_cfg = s3.get_object(Bucket="codefu-moto", Key=config_key)["Body"].read().decode()
    assert "nnodes: 2" in job_cfg and "/opt/ml/input/data/model" in job_cfg
    source_json = next(k for k in keys if k.endswith("sourcecode.json"))
    command = json.loads(s3.get_object(Bucket="codefu-moto", Key=source_json)["Body"].read())["command"]
    assert command.startswith("exec python -m codefu_helpers.launch.entrypoint --config /opt/ml/input/data/config/")


def test_resume_from_a_run_without_checkpoints_is_refused_before_submitting(python_split, aws_on_moto, tmp_path):
    import boto3

    from codefu_helpers.launch.sagemaker_job import LaunchConfig, LaunchError, launch

    cfg = _cfg(python_split)
    launch_cfg = LaunchConfig(role=ROLE, bucket="codefu-moto", validate_role=False, check_data=False,
                              resume_from="codefu7b_stage2-earlier")
    with pytest.raises(LaunchError, match="holds no checkpoint"):
        launch(cfg, launch_cfg, submit=True, work_dir=tmp_path)
    boto3.client("s3", region_name="us-east-1").put_object(
        Bucket="codefu-moto", Key="codefu/checkpoints/codefu7b_stage2/codefu7b_stage2-earlier/step_000016/"
                                  "checkpoint_complete.json", Body=b"{}")
    plan = launch(cfg, launch_cfg, submit=True, work_dir=tmp_path)
    assert plan.checkpoint_uri == "s3://codefu-moto/codefu/checkpoints/codefu7b_stage2/codefu7b_stage2-earlier"


def test_a_studio_session_supplies_role_bucket_and_region(aws_on_moto, monkeypatch):
    """Studio's credentials are its execution role's: assume a role on moto and let the SDK find it."""
    import boto3

    from codefu_helpers.launch.sagemaker_job import session_defaults

    iam = boto3.client("iam", region_name="us-east-1")
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service":
             "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
    arn = iam.create_role(RoleName="StudioExecution", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    creds = boto3.client("sts", region_name="us-east-1").assume_role(RoleArn=arn, RoleSessionName="studio")
    for name, key in (("AWS_ACCESS_KEY_ID", "AccessKeyId"), ("AWS_SECRET_ACCESS_KEY", "SecretAccessKey"),
                      ("AWS_SESSION_TOKEN", "SessionToken")):
        monkeypatch.setenv(name, creds["Credentials"][key])
    found = session_defaults()
    assert found["role"] == arn and found["region"] == "us-east-1"
    assert found["bucket"] == "sagemaker-us-east-1-123456789012"
    assert found["source"] == {"region": "the AWS session's region", "role": "the session's execution role",
                               "bucket": "the session's default bucket"}
    assert "sagemaker-us-east-1-123456789012" in [b["Name"] for b in boto3.client("s3").list_buckets()["Buckets"]]


def test_a_role_whose_path_iam_will_not_tell_is_asked_for_not_guessed(aws_on_moto, monkeypatch):
    """Studio's credentials name the role, not its path (service-role/...); without iam:GetRole (here: no IAM
    endpoint answers) the role is not rebuilt without its path -- which would name another, missing role -- but
    asked for, with the ARN's shape."""
    import boto3

    from codefu_helpers.launch.sagemaker_job import PLACEHOLDER_ROLE, LaunchError, session_defaults

    iam = boto3.client("iam", region_name="us-east-1")
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service":
             "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
    arn = iam.create_role(RoleName="StudioPathed", Path="/service-role/",
                          AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    assert ":role/service-role/StudioPathed" in arn
    creds = boto3.client("sts", region_name="us-east-1").assume_role(RoleArn=arn, RoleSessionName="studio")
    for name, key in (("AWS_ACCESS_KEY_ID", "AccessKeyId"), ("AWS_SECRET_ACCESS_KEY", "SecretAccessKey"),
                      ("AWS_SESSION_TOKEN", "SessionToken")):
        monkeypatch.setenv(name, creds["Credentials"][key])
    assert session_defaults()["role"] == arn  # IAM answers: the path is kept
    monkeypatch.setenv("AWS_ENDPOINT_URL_IAM", f"http://127.0.0.1:{_free_port()}")  # nobody listens there
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    rendering = session_defaults(required=False)
    assert rendering["role"] == PLACEHOLDER_ROLE
    assert any("role StudioPathed" in p and "role/<path>/StudioPathed" in p for p in rendering["problems"]), \
        rendering["problems"]
    with pytest.raises(LaunchError, match="set the role"):
        session_defaults()


def test_a_submitted_job_is_followed_stopped_fetched_and_cleaned_up(python_split, aws_on_moto, tmp_path, capsys):
    import boto3

    from codefu_helpers.launch.jobs import cleanup, fetch_model, job_status, stop_job
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    plan = launch(_cfg(python_split), LaunchConfig(role=ROLE, bucket="codefu-moto", validate_role=False,
                                                   check_data=False), submit=True, work_dir=tmp_path)
    name = plan.job_name
    status = job_status(name)
    assert status["status"] == "Completed"  # moto completes a job at once
    assert status["ray_dashboard_command"].startswith(f"aws ssm start-session --target sagemaker-training-job:"
                                                      f"{name}_algo-1 --document-name AWS-StartPortForwardingSession")
    assert '"portNumber": ["8265"]' in status["ray_dashboard_command"]
    assert status["logs_command"].endswith(f"--log-stream-name-prefix {name}/algo-1 --follow")
    assert status["checkpoint_s3"] == plan.checkpoint_uri
    logs = boto3.client("logs", region_name="us-east-1")  # what the hosts' CloudWatch agent creates
    logs.create_log_group(logGroupName="/aws/sagemaker/TrainingJobs")
    logs.create_log_stream(logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=f"{name}/algo-1-1700000000")
    assert job_status(name)["log_streams"] == [f"{name}/algo-1-1700000000"]
    assert stop_job(name) == f"{name} is Completed: nothing to stop"

    s3 = boto3.client("s3", region_name="us-east-1")
    assert fetch_model(name, tmp_path / "none") is None  # nothing uploaded yet: said, not raised
    model_prefix = f"codefu/output/{name}/output/model"
    for file, body in (("config.json", b'{"model_type": "qwen2"}'), ("model.safetensors", b"weights")):
        s3.put_object(Bucket="codefu-moto", Key=f"{model_prefix}/{file}", Body=body)
    fetched = fetch_model(name, tmp_path / "model")
    assert (fetched / "config.json").read_bytes() == b'{"model_type": "qwen2"}'
    assert (fetched / "model.safetensors").read_bytes() == b"weights"

    inputs = f"codefu/codefu-grpo/{name}/input/"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="codefu-moto", Prefix=inputs).get("Contents", [])]
    done = cleanup(name)
    assert done["deleted_prefixes"] == [f"s3://codefu-moto/{inputs}"] and done["deleted_objects"] > 0
    assert s3.list_objects_v2(Bucket="codefu-moto", Prefix=inputs).get("KeyCount") == 0
    assert s3.list_objects_v2(Bucket="codefu-moto", Prefix=model_prefix).get("KeyCount") == 2  # the model stays


def test_a_second_job_of_a_running_run_is_refused_unless_asked(python_split, monkeypatch, tmp_path):
    """A job of this run (same checkpoint prefix) still InProgress: submitting again would train two jobs into the
    same checkpoints. moto completes jobs at once, so the job is set running in moto's backend (in process here)."""
    import boto3
    from moto import mock_aws
    from moto.sagemaker.models import sagemaker_backends

    from codefu_helpers.launch.jobs import live_jobs
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, LaunchError, launch

    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_EC2_METADATA_DISABLED", "true")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="codefu-moto")
        lc = LaunchConfig(role=ROLE, bucket="codefu-moto", validate_role=False, check_data=False, run_name="the-run")
        first = launch(_cfg(python_split), lc, submit=True, work_dir=tmp_path / "first")
        assert live_jobs(first.checkpoint_uri) == []  # moto: Completed at once
        job = sagemaker_backends["123456789012"]["us-east-1"].training_jobs[first.job_name]
        job.training_job_status = "InProgress"
        assert live_jobs(first.checkpoint_uri) == [first.job_name]
        assert live_jobs(first.checkpoint_uri + "-other") == []
        with pytest.raises(LaunchError, match=f"job\\(s\\) {first.job_name} of this run are still running"):
            launch(_cfg(python_split), lc, submit=True, work_dir=tmp_path / "second")
        again = launch(_cfg(python_split), dataclasses.replace(lc, allow_second_job=True), submit=True,
                       work_dir=tmp_path / "third")
        assert again.submitted and again.job_name != first.job_name


def test_the_training_quota_is_compared_with_the_hosts_or_a_note_says_where_to_look(aws_on_moto):
    """Service Quotas as AWS answers it (botocore's Stubber: the real client and its request validation, AWS's
    documented response shape), and moto's, which has no SageMaker quotas: then a note, not a stop."""
    import boto3
    from botocore.stub import Stubber

    from codefu_helpers.launch.jobs import training_quota

    client = boto3.client("service-quotas", region_name="us-east-1")

    class Session:
        def client(self, name):
            assert name == "service-quotas"
            return client

    for value, fits in ((1.0, False), (4.0, True)):
        with Stubber(client) as stub:
            stub.add_response("list_service_quotas", {"Quotas": [
                {"QuotaName": "ml.p4d.24xlarge for training job usage", "QuotaCode": "L-1", "Value": 8.0},
                {"QuotaName": "ml.p4de.24xlarge for training job usage", "QuotaCode": "L-2", "Value": value}]},
                {"ServiceCode": "sagemaker"})
            found = training_quota("ml.p4de.24xlarge", 2, boto_session=Session())
        assert (found["quota"], found["fits"], found["quota_code"]) == (value, fits, "L-2")
        assert ("request an increase" in found.get("note", "")) == (not fits)
    on_moto = training_quota("ml.p4de.24xlarge", 2, spot=True)
    assert on_moto["quota"] is None and on_moto["fits"] is None
    assert "'ml.p4de.24xlarge for spot training job usage'" in on_moto["note"] and "at least 2" in on_moto["note"]


def test_the_base_of_a_jobs_model_is_found_from_the_jobs_model_channel(python_split, local_model, aws_on_moto,
                                                                        tmp_path, monkeypatch):
    """A job's model records its start model as the job saw it (/opt/ml/input/data/model) and the job's ARN;
    `base_and_trained("auto", ...)` asks the job for its `model` channel and downloads the base from there."""
    import boto3

    from codefu_helpers.evaluate import base_and_trained
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch

    monkeypatch.setenv("CODEFU_CACHE", str(tmp_path / "cache"))
    plan = launch(_cfg(python_split, **{"model.path": str(local_model)}),
                  LaunchConfig(role=ROLE, bucket="codefu-moto", validate_role=False, check_data=False),
                  submit=True, work_dir=tmp_path / "launch")
    arn = boto3.client("sagemaker", region_name="us-east-1").describe_training_job(
        TrainingJobName=plan.job_name)["TrainingJobArn"]
    trained = tmp_path / "trained"
    trained.mkdir()
    (trained / "config.json").write_text("{}")
    (trained / "codefu_training.json").write_text(json.dumps(
        {"start_model": "/opt/ml/input/data/model", "training_job_arn": arn, "train_problems": ["a"]}))
    base, _, record = base_and_trained("auto", str(trained))
    assert (Path(base) / "config.json").read_bytes() == (local_model / "config.json").read_bytes()
    assert record["train_problems"] == ["a"]
    (trained / "codefu_training.json").write_text(json.dumps(
        {"start_model": "/opt/ml/input/data/nothing", "training_job_arn": arn}))
    with pytest.raises(FileNotFoundError, match="has no 'nothing' channel"):
        base_and_trained("auto", str(trained))


@pytest.mark.notebook
def test_notebook_04_attaches_to_a_job_by_name_and_acts_on_it(python_split, aws_on_moto, tmp_path):
    """JOB_NAME: a job submitted earlier (here by the launcher) is followed, stopped, fetched and cleaned up
    (AFTER_JOB), and nothing new is submitted; JOB_NAME with SUBMIT_JOB is refused."""
    import boto3

    from codefu_helpers.launch.sagemaker_job import LaunchConfig, launch
    from codefu_helpers.tutorial import execute_notebook

    earlier = launch(_cfg(python_split), LaunchConfig(role=ROLE, bucket="codefu-moto", validate_role=False,
                                                      check_data=False), submit=True, work_dir=tmp_path / "earlier")
    before = boto3.client("sagemaker", region_name="us-east-1").list_training_jobs()["TrainingJobSummaries"]
    run = execute_notebook("04_sagemaker_launch.ipynb", tmp_path / "nb",
                           {"JOB_NAME": earlier.job_name, "LAUNCH": {"bucket": "codefu-moto", "role": ROLE},
                            "AFTER_JOB": ["stop", "fetch_model", "clean_up"]})
    assert run.error is None, f"{run.error}\nexecuted copy: {run.executed}"
    results = run.results
    assert results["submitted"] is False and results["followed_job"] == earlier.job_name
    assert results["session_source"]["bucket"] == results["session_source"]["role"] == "given"  # LAUNCH's
    assert results["job_status"]["status"] == "Completed" and results["stop"].endswith("nothing to stop")
    assert results["cleanup"]["job_name"] == earlier.job_name and results["cleanup"]["deleted_objects"] > 0
    after = boto3.client("sagemaker", region_name="us-east-1").list_training_jobs()["TrainingJobSummaries"]
    assert len(after) == len(before), "attaching submitted nothing"
    refused = execute_notebook("04_sagemaker_launch.ipynb", tmp_path / "both",
                               {"JOB_NAME": earlier.job_name, "SUBMIT_JOB": True,
                                "LAUNCH": {"bucket": "codefu-moto", "role": ROLE}})
    assert refused.error is not None and "set one of them" in refused.error


@pytest.mark.notebook
def test_notebook_04_submits_to_the_moto_server_and_follows_the_job(aws_on_moto, local_model, tmp_path):
    import boto3

    from codefu_helpers.tutorial import execute_notebook

    run = execute_notebook("04_sagemaker_launch.ipynb", tmp_path,
                           {"SUBMIT_JOB": True, "MODEL_PATH": str(local_model),
                            "LAUNCH": {"bucket": "codefu-moto", "role": ROLE, "validate_role": False,
                                       "check_data": False, "expected_hours": 10},
                            "AFTER_JOB": ["stop", "fetch_model", "clean_up"]})
    assert run.error is None, f"{run.error}\nexecuted copy: {run.executed}"
    results = run.results
    assert results["submitted"] is True and results["job_name"]
    job = boto3.client("sagemaker", region_name="us-east-1").describe_training_job(TrainingJobName=results["job_name"])
    assert job["ResourceConfig"]["InstanceCount"] == 2
    assert "model" in _channels(job) and results["model_input"]["kind"] == "local"
    assert job["CheckpointConfig"]["S3Uri"].startswith("s3://codefu-moto/codefu/checkpoints/codefu7b_stage2/")
    (sent,) = [r for r in recorded_requests(aws_on_moto, "SageMaker.CreateTrainingJob")
               if r["TrainingJobName"] == results["job_name"]]
    assert _no_secrets(sent["Environment"]), sent["Environment"]
    assert results["job_status"]["status"] == "Completed" and results["stop"].endswith("nothing to stop")
    assert results["fetched_model"] is None  # moto's job uploaded no model
    assert results["cleanup"]["deleted_objects"] > 0
    assert any("fewer than one step's" in f for f in results["data_findings"])
    assert results["cost"]["expected_hours"] == 10
    assert results["cost"]["per_run_expected"] == pytest.approx(10 * results["cost"]["per_hour"], abs=0.01)


@pytest.mark.notebook
def test_notebook_04_with_a_missing_model_folder_stops_naming_model_path(tmp_path, no_credentials):
    """A missing start model is refused at launch; a LAUNCH key that is no LaunchConfig field, an AFTER_JOB action
    that does not exist and a config key that does not exist are refused before anything is read."""
    from codefu_helpers.tutorial import execute_notebook

    run = execute_notebook("04_sagemaker_launch.ipynb", tmp_path, {"MODEL_PATH": str(tmp_path / "stage1" / "model")})
    assert run.error is not None and "model.path=" in run.error and "does not exist here" in run.error
    assert run.results is None
    for parameters, said in (({"LAUNCH": {"instance_cout": 4}}, ("'instance_cout'", "'instance_count'", "use_spot")),
                             ({"AFTER_JOB": ["cleanup"]}, ("'cleanup'", "clean_up")),
                             ({"OVERRIDES": {"trainer.engin": "native"}}, ("'trainer.engin'",))):
        refused = execute_notebook("04_sagemaker_launch.ipynb", tmp_path / "refused", parameters)
        assert refused.error is not None and all(s in refused.error for s in said), (parameters, refused.error)
        assert not (tmp_path / "refused" / "data").exists()  # stopped before the split was prepared


def test_a_job_in_a_vpc_is_told_what_the_vpc_needs(python_split, tmp_path, monkeypatch):
    """Subnets and security groups: the request carries them, and the plan's notes say what the VPC must give the
    job (a self-referencing security group; NAT for the pip install and a hub model; S3 access)."""
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, LaunchError, launch

    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    lc = LaunchConfig(role=ROLE, bucket="codefu-test-bucket", subnets=["subnet-0abc"], security_group_ids=["sg-0abc"])
    with pytest.warns(UserWarning):
        plan = launch(_cfg(python_split), lc, work_dir=tmp_path)
    assert plan.request["VpcConfig"] == {"Subnets": ["subnet-0abc"], "SecurityGroupIds": ["sg-0abc"]}
    (note,) = [n for n in plan.notes if n.startswith("VPC: ")]
    assert "allow all traffic from themselves" in note and "requirements-job.txt from PyPI at start" in note
    assert "hub id the job downloads" in note and "S3 gateway endpoint" in note
    with pytest.raises(LaunchError, match="subnets without security_group_ids: a job in a VPC needs both"):
        launch(_cfg(python_split), LaunchConfig(role=ROLE, bucket="codefu-test-bucket", subnets=["subnet-0abc"]),
               work_dir=tmp_path / "half")
    with pytest.warns(UserWarning):
        byo = launch(_cfg(python_split), dataclasses.replace(
            lc, image="123456789012.dkr.ecr.us-east-1.amazonaws.com/codefu:1"), work_dir=tmp_path / "byo")
    (byo_note,) = [n for n in byo.notes if n.startswith("VPC: ")]
    assert "PyPI" not in byo_note and "hub id" in byo_note
