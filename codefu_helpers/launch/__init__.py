"""Launching the trainer on Amazon SageMaker: one training job whose hosts form a Ray cluster.

    sagemaker_job.py  ExperimentConfig + LaunchConfig -> a SageMaker Python SDK v3 `ModelTrainer` and the
                      CreateTrainingJob request it sends (render only by default; `submit=True` uploads + submits)
    instances.py      GPU instance types this launcher knows: GPUs per node, list price for cost estimates
    entrypoint.py     runs on every host: host 1 starts the Ray head, the others join; the head waits for all
                      of them, runs the trainer (native or verl) and writes the failure file on any error
    simulate.py       N simulated hosts on one machine, each running the real entry point with SageMaker-shaped
                      files (the test of the bootstrap without AWS)
    verl_engine.py    trainer.engine=verl: the experiment config as verl hydra overrides

Submodules import the SageMaker SDK and Ray lazily, so `import codefu_helpers.launch` stays light.
"""
