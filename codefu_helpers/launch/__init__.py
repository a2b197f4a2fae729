"""Launching the trainer on Amazon SageMaker: one training job whose hosts form a Ray cluster.

    sagemaker_job.py  ExperimentConfig + LaunchConfig -> a SageMaker Python SDK v3 `ModelTrainer` and the
                      CreateTrainingJob request it sends (render only by default; `submit=True` uploads + submits);
                      the model channel, the data check, the Studio session's role/bucket/region
    jobs.py           a submitted job: status and how to follow it, stop, fetch its model, clean up
    instances.py      GPU instance types this launcher knows: GPUs per node, EFA/RDMA, list price for cost estimates
    entrypoint.py     runs on every host (PID 1 of the container): host 1 starts the Ray head, the others join; the
                      head waits for all of them, runs the trainer (native or verl), saves on SIGTERM and writes
                      the failure file on any error
    cluster.py        one Ray node per host, started and stopped without touching any other Ray
    simulate.py       the job on one machine as SageMaker runs it: a disk and a PID namespace per host (the SDK's
                      driver as PID 1), checkpoints synced to a local S3, Spot interruptions and restarts
    verl_engine.py    trainer.engine=verl: the experiment config as verl hydra overrides; the final model, pruning
                      and resuming across hosts that share no disk

Submodules import the SageMaker SDK and Ray lazily, so `import codefu_helpers.launch` stays light.
"""
