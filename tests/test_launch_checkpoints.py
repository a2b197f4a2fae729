"""Checkpoints a restarted SageMaker job can trust: the completeness marker is written last, lists every file with
its size, and a checkpoint whose upload (or restore) stopped part-way is passed over for the last complete one.

SageMaker uploads /opt/ml/checkpoints file by file as files appear and restores the S3 prefix onto a fresh disk, so
any subset of a checkpoint's files can be what a restarted job finds. These tests build such subsets from a real
`write_checkpoint` and check what `latest_checkpoint` returns; the simulation test (test_launch_simulate.py) does the
same through a real interrupted upload.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codefu_helpers.checkpoint import (COMPLETE_MARKER, TrainerState, folder_manifest, latest_checkpoint,
                                       list_checkpoints, skipped_checkpoints, verify_checkpoint, write_checkpoint)


def _write(root: Path, step: int, keep_last: int = 2) -> Path:
    def parts(folder: Path) -> None:
        (folder / "dcp").mkdir()
        (folder / "dcp" / "__0_0.distcp").write_bytes(bytes(range(256)) * (step + 3))
        (folder / "dcp" / ".metadata").write_text(json.dumps({"step": step}))
        (folder / "scheduler.pt").write_bytes(b"s" * step)

    return write_checkpoint(root, TrainerState(step=step, data_position=step * 4, mlflow_run_id=None, config={}),
                            parts, keep_last=keep_last)


def test_the_marker_is_written_last_and_lists_every_other_file_with_its_size(tmp_path):
    folder = _write(tmp_path, 3)
    marker = folder / COMPLETE_MARKER
    files = json.loads(marker.read_text())["files"]
    on_disk = folder_manifest(folder)
    assert files == {rel: size for rel, size in on_disk.items() if rel != COMPLETE_MARKER}
    assert set(files) == {"dcp/__0_0.distcp", "dcp/.metadata", "scheduler.pt", "trainer_state.json"}
    newest_other = max((folder / rel).stat().st_mtime_ns for rel in files)
    assert marker.stat().st_mtime_ns >= newest_other
    assert verify_checkpoint(folder) == [] and latest_checkpoint(tmp_path) == folder


@pytest.mark.parametrize("damage, reason", [
    (lambda f: (f / COMPLETE_MARKER).unlink(), "no checkpoint_complete.json"),
    (lambda f: (f / "dcp" / "__0_0.distcp").unlink(), "dcp/__0_0.distcp is missing"),
    (lambda f: (f / "dcp" / "__0_0.distcp").write_bytes(b"half"), "dcp/__0_0.distcp has 4 bytes"),
    (lambda f: (f / COMPLETE_MARKER).write_text("{"), "is unreadable"),
], ids=["marker-not-uploaded", "shard-not-uploaded", "shard-uploaded-part-way", "marker-garbled"])
def test_a_restore_with_part_of_the_newest_checkpoint_resumes_from_the_one_before(tmp_path, damage, reason):
    _write(tmp_path, 2)
    newest = _write(tmp_path, 4)
    damage(newest)
    assert latest_checkpoint(tmp_path).name == "step_000002"
    skipped = skipped_checkpoints(tmp_path)
    assert list(skipped) == [newest] and any(reason in p for p in skipped[newest]), skipped


def test_a_folder_with_state_but_no_shards_is_never_trusted(tmp_path):
    """What S3 holds when the upload stopped after trainer_state.json: the old resume logic took it."""
    complete = _write(tmp_path, 1)
    partial = tmp_path / "step_000002"
    partial.mkdir()
    shutil.copy(complete / "trainer_state.json", partial / "trainer_state.json")
    assert list_checkpoints(tmp_path) == [complete] and latest_checkpoint(tmp_path) == complete


def test_pruning_keeps_the_previous_complete_checkpoint_while_the_new_one_uploads(tmp_path):
    for step in (1, 2, 3):
        _write(tmp_path, step, keep_last=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000002", "step_000003"]
    # an incomplete newer folder (a restore of a partial upload) never causes a complete one to be pruned
    (tmp_path / "step_000009").mkdir()
    _write(tmp_path, 4, keep_last=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000003", "step_000004"]
    assert (tmp_path / "step_000009").exists()


def test_a_stale_shard_of_the_same_size_is_caught_by_its_sha256_before_a_resume(tmp_path):
    """A restart restores S3 onto a fresh disk: a file left there by an earlier attempt can have the right name and
    size but other bytes. Sizes pass it; the marker's sha256, checked before a resume, does not."""
    from codefu_helpers.checkpoint import missing_files

    _write(tmp_path, 2)
    newest = _write(tmp_path, 4)
    shard = newest / "dcp" / "__0_0.distcp"
    shard.write_bytes(bytes(reversed(shard.read_bytes())))  # same size, other content
    assert latest_checkpoint(tmp_path) == newest  # the cheap check (pruning, listing) sees sizes only
    assert latest_checkpoint(tmp_path, content=True).name == "step_000002"
    assert skipped_checkpoints(tmp_path, content=True) == {
        newest: ["dcp/__0_0.distcp has other content than the marker's sha256 (same size)"]}
    marker = json.loads((newest / COMPLETE_MARKER).read_text())
    manifest = {rel: [size, marker["sha256"][rel]] for rel, size in marker["files"].items()}
    assert missing_files(newest, manifest) == ["dcp/__0_0.distcp"]  # what a remote host is sent again
    assert missing_files(newest, marker["files"]) == []


def test_a_checkpoint_is_written_in_place_once_and_old_temporary_folders_are_pruned(tmp_path):
    """SageMaker uploads files as they appear: writing into a temporary folder and renaming it uploaded every
    checkpoint twice. Parts go straight into step_NNNNNN; the marker alone says it is whole."""
    leftover = tmp_path / ".tmp_step_000001"  # an interrupted save of the older write-then-rename
    (leftover / "dcp").mkdir(parents=True)
    seen = []

    def parts(folder: Path) -> None:
        seen.append(folder.name)
        assert not (folder / COMPLETE_MARKER).exists()
        (folder / "scheduler.pt").write_bytes(b"s")

    folder = write_checkpoint(tmp_path, TrainerState(step=3, data_position=12, mlflow_run_id=None, config={}), parts)
    assert seen == ["step_000003"] and folder.name == "step_000003" and verify_checkpoint(folder, content=True) == []
    assert not leftover.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["step_000003"]
