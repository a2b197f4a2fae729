"""trainer.engine=verl across SageMaker hosts that share no disk: the final model, pruning and resuming.

verl writes each rank's shard files into global_step_N/actor on its own host; rank 0 also writes the whole model in
HF format there (checkpoint.save_contents has hf_model, gathered from every shard) and is the only rank that prunes
old steps. These tests lay out what two 8-GPU hosts hold after such a run (the shard files as verl names them, real
torch archives; the HF folder a real save_pretrained of the tiny model) and run the entry point's own steps on it:
export from the head's disk alone, pruning on the other host, and picking the newest whole step when a restored
upload is incomplete. verl's own acceptance of save_contents/load_contents is checked with every other override in
test_verl_engine.py (verl's hydra config composed in .venv-job).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

WORLD, PER_HOST = 16, 8


def _write_step(disk: Path, step: int, ranks: range, hf_model: Path | None) -> Path:
    """What verl writes for `step` on a host holding `ranks` (rank 0's host also the HF model and the bookkeeping)."""
    actor = disk / f"global_step_{step}" / "actor"
    actor.mkdir(parents=True, exist_ok=True)
    for rank in ranks:
        for kind in ("model", "optim", "extra_state"):
            torch.save({"rank": rank, "step": step, "kind": kind}, actor / f"{kind}_world_size_{WORLD}_rank_{rank}.pt")
    if hf_model is not None:  # rank 0
        shutil.copytree(hf_model, actor / "huggingface")
        (actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 2, "world_size": WORLD}))
        torch.save({"step": step}, disk / f"global_step_{step}" / "data.pt")
        (disk / "latest_checkpointed_iteration.txt").write_text(str(step))
    return actor


@pytest.fixture(scope="module")
def hf_model(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from codefu_helpers.tiny_model import resolve_model_path

    path = Path(resolve_model_path("tiny://qwen2"))
    out = tmp_path_factory.mktemp("hf") / "huggingface"
    AutoModelForCausalLM.from_pretrained(path).save_pretrained(out)
    AutoTokenizer.from_pretrained(path).save_pretrained(out)
    return out


@pytest.fixture
def two_hosts(tmp_path, hf_model):
    """/opt/ml/checkpoints of algo-1 (ranks 0-7, rank 0's HF model) and algo-2 (ranks 8-15), after steps 16 and 32."""
    head, other = tmp_path / "algo-1", tmp_path / "algo-2"
    for step in (16, 32):
        _write_step(head, step, range(0, PER_HOST), hf_model)
        _write_step(other, step, range(PER_HOST, WORLD), None)
    return head, other


def test_the_final_model_comes_from_the_head_alone(two_hosts, tmp_path):
    from transformers import AutoModelForCausalLM

    from codefu_helpers.launch.verl_engine import export_model

    head, other = two_hosts
    assert not list((head / "global_step_32" / "actor").glob("model_world_size_16_rank_8.pt")), "not on the head"
    model_dir = export_model(head, tmp_path / "opt-ml-model")
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    reference = AutoModelForCausalLM.from_pretrained(head / "global_step_32" / "actor" / "huggingface")
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), reference.state_dict().values()))


def test_export_names_what_is_missing_instead_of_merging_half_a_model(two_hosts, tmp_path):
    from codefu_helpers.launch.verl_engine import export_model

    head, _ = two_hosts
    weights = next((head / "global_step_32" / "actor" / "huggingface").glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:1000])  # an upload cut short, restored
    with pytest.raises(FileNotFoundError, match="holds no whole Hugging Face model"):
        export_model(head, tmp_path / "model")
    (head / "latest_checkpointed_iteration.txt").unlink()
    with pytest.raises(FileNotFoundError, match="verl saved no checkpoint"):
        export_model(head, tmp_path / "model")


def test_the_host_holding_rank_0s_model_is_found_wherever_verl_placed_rank_0_and_its_driver(tmp_path, hf_model):
    """verl puts rank 0 on the host whose address sorts first (here algo-2) and its driver, which writes the record,
    where Ray placed it (here algo-1): the entry point asks every host and has the holder export."""
    from codefu_helpers.launch.verl_engine import export_model, final_model_host, host_holdings

    head, other = tmp_path / "algo-1", tmp_path / "algo-2"
    for step in (16, 32):
        _write_step(other, step, range(0, PER_HOST), hf_model)
        _write_step(head, step, range(PER_HOST, WORLD), None)
        (other / "latest_checkpointed_iteration.txt").unlink()  # the driver's record is on algo-1
        (head / "latest_checkpointed_iteration.txt").write_text(str(step))
    holdings = {"algo-1": host_holdings(head), "algo-2": host_holdings(other)}
    assert holdings == {"algo-1": {"recorded": 32, "hf_steps": []}, "algo-2": {"recorded": None, "hf_steps": [16, 32]}}
    assert final_model_host(holdings, head="algo-1") == (32, "algo-2")
    with pytest.raises(FileNotFoundError, match="holds no whole Hugging Face model"):  # the head alone cannot
        export_model(head, tmp_path / "head-model")
    assert (export_model(other, tmp_path / "model", step=32) / "config.json").exists()
    # after a restart every host holds the union of the uploads: the head exports, one host only
    restored = {h: {"recorded": 32, "hf_steps": [16, 32]} for h in ("algo-1", "algo-2")}
    assert final_model_host(restored, head="algo-1") == (32, "algo-1")
    # the recorded step's model on no host: an error naming what each host has
    with pytest.raises(FileNotFoundError, match=r"verl recorded step 48.*algo-2: HF models of steps \[16, 32\]"):
        final_model_host({**holdings, "algo-1": {"recorded": 48, "hf_steps": []}}, head="algo-1")


def test_every_host_prunes_its_own_old_steps(two_hosts, hf_model):
    from codefu_helpers.launch.verl_engine import prune_steps

    head, other = two_hosts
    _write_step(head, 48, range(0, PER_HOST), hf_model)
    _write_step(other, 48, range(PER_HOST, WORLD), None)
    # verl itself prunes rank 0's host only: the other host keeps every step until the entry point prunes it
    assert [p.name for p in prune_steps(other, keep_last=2)] == ["global_step_16"]
    assert sorted(p.name for p in other.glob("global_step_*")) == ["global_step_32", "global_step_48"]


def test_a_restored_incomplete_step_is_passed_over_for_the_newest_whole_one(two_hosts, tmp_path):
    """After a restart every host gets the union of all hosts' uploads; a step whose upload stopped part-way must
    not be what verl resumes from."""
    from codefu_helpers.launch.verl_engine import resume_step, step_problems

    head, other = two_hosts
    restored = tmp_path / "restored"
    shutil.copytree(head, restored)
    shutil.copytree(other, restored, dirs_exist_ok=True)
    assert step_problems(restored / "global_step_32") == []
    assert resume_step(restored) == 32
    shard = restored / "global_step_32" / "actor" / "optim_world_size_16_rank_11.pt"
    shard.write_bytes(shard.read_bytes()[:50])  # uploaded while incomplete
    (restored / "global_step_32" / "actor" / "model_world_size_16_rank_12.pt").unlink()  # never uploaded
    said = []
    assert resume_step(restored, log=said.append) == 16
    assert (restored / "latest_checkpointed_iteration.txt").read_text() == "16"
    assert "optim_world_size_16_rank_11.pt is not a whole torch archive" in said[0]
    assert "model_world_size_16_rank_12.pt is missing" in said[0]
    # the head's disk alone lacks ranks 8-15: never a step to resume from
    assert any("rank_8.pt is missing" in p for p in step_problems(head / "global_step_16"))


def test_verl_is_told_to_save_the_hf_model_and_resume_from_shards(python_split):
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.launch.verl_engine import verl_overrides

    cfg = ExperimentConfig.from_yaml(Path(__file__).resolve().parents[1] / "configs" / "codefu7b_stage2.yaml")
    rendered = dict(line.split("=", 1) for line in verl_overrides(cfg.validate()))
    assert rendered["actor_rollout_ref.actor.checkpoint.save_contents"] == "[model,optimizer,extra,hf_model]"
    assert rendered["actor_rollout_ref.actor.checkpoint.load_contents"] == "[model,optimizer,extra]"
    assert rendered["actor_rollout_ref.actor.ulysses_sequence_parallel_size"] == "4"
    assert rendered["actor_rollout_ref.model.use_remove_padding"] == "true"  # verl requires it with Ulysses


def test_a_ppo_step_is_whole_only_with_every_critic_shard(two_hosts, tmp_path):
    """PPO (algorithm.adv_estimator=gae): verl's critic writes its shards to global_step_N/critic as the actor does;
    a restored step missing one of them is passed over too."""
    from codefu_helpers.launch.verl_engine import resume_step, step_problems

    head, other = two_hosts
    restored = tmp_path / "restored"
    shutil.copytree(head, restored)
    shutil.copytree(other, restored, dirs_exist_ok=True)
    for step in (16, 32):
        critic = restored / f"global_step_{step}" / "critic"
        critic.mkdir()
        (critic / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 2, "world_size": WORLD}))
        for rank in range(WORLD):
            for kind in ("model", "optim", "extra_state"):
                torch.save({"rank": rank}, critic / f"{kind}_world_size_{WORLD}_rank_{rank}.pt")
    assert step_problems(restored / "global_step_32") == []
    (restored / "global_step_32" / "critic" / "optim_world_size_16_rank_3.pt").unlink()
    assert step_problems(restored / "global_step_32") == ["critic/optim_world_size_16_rank_3.pt is missing"]
    assert resume_step(restored, log=lambda line: None) == 16
