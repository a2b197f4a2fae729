"""A submitted training job, after `launch(..., submit=True)`: follow it, stop it, fetch its model, clean up.

    from codefu_helpers.launch.jobs import job_status, stop_job, fetch_model, cleanup
    status = job_status("codefu-grpo-2026...")   # status, failure reason, log streams, the commands to follow it
    stop_job(name)                                # StopTrainingJob while it runs (the hosts get SIGTERM and save)
    fetch_model(name, "runs/from_sagemaker")      # the model the job uploaded (uncompressed: .../output/model/)
    cleanup(name)                                 # release a warm pool, delete the job's uploaded inputs
    after_job_actions(["stop", "clean_up"])       # a notebook's AFTER_JOB, checked: which of the three to do

Every function takes the job's name and an optional boto3 session (region and credentials from the environment
otherwise); each asks SageMaker (DescribeTrainingJob) first and only acts when the job's state allows it, saying what
it did. The notebook (04) shows their results; the tests run them against a local moto server.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

__all__ = ["job_status", "stop_job", "fetch_model", "cleanup", "live_jobs", "training_quota", "after_job_actions",
           "AFTER_JOB_ACTIONS", "LOG_GROUP"]

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
RAY_DASHBOARD_PORT = 8265
RUNNING = ("InProgress",)
LIVE = ("InProgress", "Stopping")  # a job that still holds (or is about to release) its hosts and checkpoint prefix
# What notebook 04 may do to the job it follows (its AFTER_JOB), in the order it does them: stop_job, fetch_model, cleanup
AFTER_JOB_ACTIONS = ("stop", "fetch_model", "clean_up")


def after_job_actions(actions, parameter: str = "AFTER_JOB") -> tuple[str, ...]:
    """`actions` (a list such as ["stop", "clean_up"]) checked against AFTER_JOB_ACTIONS, before anything runs: an
    unknown action (or a bare string, whose letters would be read as actions) is refused naming it and the valid
    ones, so a misspelt "cleanup" never leaves a job's inputs in S3 silently."""
    if isinstance(actions, str) or not isinstance(actions, (list, tuple, set)):
        raise ValueError(f"{parameter} must be a list of actions, e.g. [\"stop\"], got {actions!r}; the actions are "
                         f"{', '.join(AFTER_JOB_ACTIONS)}")
    unknown = [a for a in actions if a not in AFTER_JOB_ACTIONS]
    if unknown:
        raise ValueError(f"{parameter} has unknown action(s) {', '.join(map(repr, unknown))}: the actions are "
                         f"{', '.join(AFTER_JOB_ACTIONS)}")
    return tuple(a for a in AFTER_JOB_ACTIONS if a in actions)


def _session(boto_session=None, region: str | None = None):
    import boto3

    return boto_session or boto3.Session(region_name=region)


def _describe(session, job_name: str) -> dict:
    return session.client("sagemaker").describe_training_job(TrainingJobName=job_name)


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def _keys(s3, uri: str) -> list[str]:
    bucket, prefix = _split(uri)
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [item["Key"] for item in page.get("Contents", [])]
    return keys


def job_status(job_name: str, boto_session=None, region: str | None = None) -> dict[str, Any]:
    """Where the job is and how to watch it: status and secondary status, the failure reason, its CloudWatch log
    streams (one per host, once they exist), the command that tails the head's log, the SSM command that forwards
    the head's Ray dashboard to localhost (the job enables remote debugging), and where its model and checkpoints go."""
    session = _session(boto_session, region)
    job = _describe(session, job_name)
    streams = []
    try:
        logs = session.client("logs")
        for page in logs.get_paginator("describe_log_streams").paginate(logGroupName=LOG_GROUP,
                                                                        logStreamNamePrefix=f"{job_name}/"):
            streams += [s["logStreamName"] for s in page.get("logStreams", [])]
    except Exception as exc:  # noqa: BLE001 - no log group yet (the job has not started) is a normal answer
        if "ResourceNotFound" not in type(exc).__name__ and "ResourceNotFound" not in str(exc):
            raise
    target = f"sagemaker-training-job:{job_name}_algo-1"
    forward = json.dumps({"portNumber": [str(RAY_DASHBOARD_PORT)], "localPortNumber": [str(RAY_DASHBOARD_PORT)]})
    output = job.get("OutputDataConfig", {}).get("S3OutputPath", "").rstrip("/")
    return {
        "job_name": job_name, "status": job["TrainingJobStatus"], "secondary_status": job.get("SecondaryStatus"),
        "failure_reason": job.get("FailureReason"),
        "instances": f"{job['ResourceConfig']['InstanceCount']} x {job['ResourceConfig']['InstanceType']}",
        "billable_seconds": job.get("BillableTimeInSeconds"), "warm_pool": (job.get("WarmPoolStatus") or {}).get("Status"),
        "log_group": LOG_GROUP, "log_streams": sorted(streams),
        "logs_command": f"aws logs tail {LOG_GROUP} --log-stream-name-prefix {job_name}/algo-1 --follow",
        "ray_dashboard_command": (f"aws ssm start-session --target {target} --document-name "
                                  f"AWS-StartPortForwardingSession --parameters '{forward}'"),
        "ray_dashboard_url": f"http://localhost:{RAY_DASHBOARD_PORT}",
        "remote_debug": bool((job.get("RemoteDebugConfig") or {}).get("EnableRemoteDebug")),
        "model_s3": f"{output}/{job_name}/output/model/" if output else None,
        "checkpoint_s3": (job.get("CheckpointConfig") or {}).get("S3Uri"),
    }


def stop_job(job_name: str, boto_session=None, region: str | None = None) -> str:
    """StopTrainingJob when the job is running (SageMaker sends every host SIGTERM; the entry point saves the step in
    progress, and SIGKILL follows after 120 s); otherwise says why there is nothing to stop."""
    session = _session(boto_session, region)
    status = _describe(session, job_name)["TrainingJobStatus"]
    if status not in RUNNING:
        return f"{job_name} is {status}: nothing to stop"
    session.client("sagemaker").stop_training_job(TrainingJobName=job_name)
    return f"{job_name}: stop requested (was {status}); its hosts save the current step and exit"


def fetch_model(job_name: str, dest: str | Path, boto_session=None, region: str | None = None) -> Path | None:
    """Downloads the model the job uploaded into `dest` (the launcher asks for no compression, so it is the folder
    S3OUTPUT/JOB/output/model/; a model.tar.gz there is unpacked). None, said on stdout, while the job has not
    completed or uploaded nothing."""
    session = _session(boto_session, region)
    job = _describe(session, job_name)
    status = job["TrainingJobStatus"]
    output = job["OutputDataConfig"]["S3OutputPath"].rstrip("/")
    folder = f"{output}/{job_name}/output/model/"
    s3 = session.client("s3")
    keys = _keys(s3, folder) if status == "Completed" else []
    if not keys:
        print(f"{job_name} is {status}: no model under {folder}" + ("" if status == "Completed" else " yet"))
        return None
    dest = Path(dest)
    bucket, prefix = _split(folder)
    for key in keys:
        target = dest / key[len(prefix):]
        target.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(bucket, key, str(target))
    archive = dest / "model.tar.gz"
    if archive.exists():  # a job launched with compression: unpack in place
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
        archive.unlink()
    print(f"downloaded {len(keys)} file(s) of {folder} into {dest}")
    return dest


def cleanup(job_name: str, boto_session=None, region: str | None = None, release_warm_pool: bool = True,
            delete_inputs: bool = True, delete_checkpoints: bool = False) -> dict[str, Any]:
    """After a job: releases its warm pool (UpdateTrainingJob with KeepAlivePeriodInSeconds=0, only while the pool
    is Available), deletes the channels it uploaded (s3://.../BASE_JOB_NAME/JOB/input/, the launcher's per-job
    folder), and with `delete_checkpoints` its checkpoint prefix (then no later job can resume it). A running job is
    left alone. Returns what it did."""
    session = _session(boto_session, region)
    job = _describe(session, job_name)
    status = job["TrainingJobStatus"]
    done: dict[str, Any] = {"job_name": job_name, "status": status, "warm_pool_released": False,
                            "deleted_objects": 0}
    if status in RUNNING:
        done["note"] = f"{job_name} is {status}: stop it first (stop_job)"
        return done
    if release_warm_pool and (job.get("WarmPoolStatus") or {}).get("Status") == "Available":
        session.client("sagemaker").update_training_job(TrainingJobName=job_name,
                                                        ResourceConfig={"KeepAlivePeriodInSeconds": 0})
        done["warm_pool_released"] = True
    prefixes = []
    if delete_inputs:
        inputs = {_split(c["DataSource"]["S3DataSource"]["S3Uri"])[1].rsplit("/input/", 1)[0]
                  for c in job.get("InputDataConfig", []) if f"/{job_name}/input/" in c["DataSource"]["S3DataSource"]["S3Uri"]}
        bucket = _split(job["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"])[0]
        prefixes += [f"s3://{bucket}/{p}/input/" for p in sorted(inputs)]
    if delete_checkpoints and job.get("CheckpointConfig"):
        prefixes.append(job["CheckpointConfig"]["S3Uri"].rstrip("/") + "/")
    s3 = session.client("s3")
    for prefix in prefixes:
        bucket, _ = _split(prefix)
        keys = _keys(s3, prefix)
        for start in range(0, len(keys), 1000):
            s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]]})
        done["deleted_objects"] += len(keys)
    done["deleted_prefixes"] = prefixes
    return done


def live_jobs(checkpoint_uri: str, boto_session=None, region: str | None = None) -> list[str]:
    """The training jobs still running (or stopping) on `checkpoint_uri`, i.e. for the same run: a second job there
    would train from and write into the same checkpoints as the first."""
    session = _session(boto_session, region)
    client = session.client("sagemaker")
    want = checkpoint_uri.rstrip("/")
    found = []
    for status in LIVE:
        for page in client.get_paginator("list_training_jobs").paginate(StatusEquals=status):
            for summary in page.get("TrainingJobSummaries", []):
                job = client.describe_training_job(TrainingJobName=summary["TrainingJobName"])
                if (job.get("CheckpointConfig") or {}).get("S3Uri", "").rstrip("/") == want:
                    found.append(summary["TrainingJobName"])
    return sorted(set(found))


def training_quota(instance_type: str, instance_count: int, spot: bool = False, boto_session=None,
                   region: str | None = None) -> dict[str, Any]:
    """This account's SageMaker quota for `instance_type` training jobs (Service Quotas: "<type> for training job
    usage", or "... for spot training job usage"), and whether `instance_count` fits it. New accounts often have 0 for
    the large GPU types, and a job over quota fails only after it was created. When the caller may not read Service
    Quotas (or the quota is not listed), "quota" is None and "note" says where to look."""
    name = f"{instance_type} for {'spot ' if spot else ''}training job usage"
    out: dict[str, Any] = {"quota_name": name, "quota": None, "instance_count": instance_count, "fits": None}
    session = _session(boto_session, region)
    try:
        client = session.client("service-quotas")
        for page in client.get_paginator("list_service_quotas").paginate(ServiceCode="sagemaker"):
            for quota in page.get("Quotas", []):
                if quota.get("QuotaName") == name:
                    out.update(quota=quota.get("Value"), quota_code=quota.get("QuotaCode"))
                    break
            if out["quota"] is not None:
                break
    except Exception as exc:  # noqa: BLE001 - AccessDenied, no such service in the region: say so, do not stop
        out["note"] = (f"could not read Service Quotas ({type(exc).__name__}): check '{name}' in the Service Quotas "
                       f"console (SageMaker) before submitting; it must be at least {instance_count}")
        return out
    if out["quota"] is None:
        out["note"] = (f"Service Quotas lists no '{name}' here: check it in the console (SageMaker) before "
                       f"submitting; it must be at least {instance_count}")
        return out
    out["fits"] = out["quota"] >= instance_count
    if not out["fits"]:
        out["note"] = (f"'{name}' is {out['quota']:g} in this account, the job needs {instance_count}: request an "
                       "increase in the Service Quotas console (SageMaker) first; a job over quota fails after it is "
                       "created")
    return out
