"""Where a job's big files go: on the volume SageMaker provisions for the job, not on the container's root disk.

Key idea: SageMaker puts the job's own folders (/opt/ml/input/data, /opt/ml/checkpoints, /opt/ml/model, ...) on the
ML storage volume (EBS of `volume_size_in_gb`, or the instance's NVMe store on ml.p4d/p5/g5), while everything else
(/root, where every library caches by default, and /tmp) lives on the image's root filesystem, which is much smaller.
A 7B model is ~15 GB in the Hugging Face cache, vLLM/torch.compile/Triton/FlashInfer add compiled kernels, and Ray
keeps its session logs and spilled objects in its temp dir: on the root disk they fill it. So the entry point, before
anything downloads or compiles, measures the candidate folders (`CANDIDATES`, free bytes by statvfs), picks the one
with the most room, and points every cache variable that is not already set at a folder under it:

    HF_HOME, XDG_CACHE_HOME, VLLM_CACHE_ROOT, TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR, FLASHINFER_WORKSPACE_BASE,
    CODEFU_CACHE, CODEFU_SCRATCH (a remote rank's checkpoint part before the head copies it), PIP_CACHE_DIR

and Ray's temp dir (the head's `--temp-dir`, which every node of the cluster uses for its session and spilling). A
variable the job's environment sets stays as it is. pip's install of the job's requirements runs before the entry
point (the SDK's driver script): the job's environment turns pip's cache off for it (PIP_NO_CACHE_DIR=1). TMPDIR is
left alone: the judge builds its sandboxes' scratch folders there, which must stay apart from the protected /opt/ml.

    from codefu_helpers.launch.disks import place_caches
    placed = place_caches()   # {"root": "/opt/ml/input/data/codefu-cache", "free_gb": ..., "set": {...}}
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CACHE_VARIABLES", "CANDIDATES", "CACHE_FOLDER", "place_caches", "free_bytes"]

# the cache variables and their folder under the cache root
CACHE_VARIABLES = {
    "HF_HOME": "huggingface",
    "XDG_CACHE_HOME": "xdg",
    "VLLM_CACHE_ROOT": "vllm",
    "TRITON_CACHE_DIR": "triton",
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
    "FLASHINFER_WORKSPACE_BASE": "flashinfer",
    "CODEFU_CACHE": "codefu",
    "CODEFU_SCRATCH": "scratch",   # a worker's checkpoint part on another host than the head, before it is copied
    "PIP_CACHE_DIR": "pip",
}
# where the cache root may go: the job's data folder (on SageMaker's volume; never uploaded), then the root disk's
# own folders. Not /opt/ml/checkpoints (mirrored to S3), /opt/ml/model or /opt/ml/output (uploaded).
CANDIDATES = ("/opt/ml/input/data", "/tmp", os.path.expanduser("~"))
CACHE_FOLDER = "codefu-cache"


def free_bytes(path: str | Path) -> int:
    """Bytes an unprivileged write may still use on the filesystem holding `path` (0 when it does not exist)."""
    try:
        stats = os.statvfs(path)
    except OSError:
        return 0
    return stats.f_bavail * stats.f_frsize


def place_caches(candidates: tuple[str, ...] = CANDIDATES, environ: dict | None = None, log=print) -> dict:
    """Points the unset cache variables of `environ` (default os.environ) at folders under the candidate with the most
    free space (CACHE_FOLDER inside it), creates them, and returns {"root", "free_gb", "free_gb_by_candidate", "set",
    "kept"}: what it set, and the variables the environment had already set (left alone)."""
    environ = os.environ if environ is None else environ
    room = {c: free_bytes(c) for c in candidates}
    best = max(room, key=lambda c: (room[c], -candidates.index(c)))
    if room[best] == 0:
        raise SystemExit(f"none of {', '.join(candidates)} exists or has free space: no place for the job's caches")
    root = Path(best) / CACHE_FOLDER
    placed, kept = {}, {}
    for name, folder in CACHE_VARIABLES.items():
        if environ.get(name):
            kept[name] = environ[name]
            continue
        path = root / folder
        path.mkdir(parents=True, exist_ok=True)
        environ[name] = placed[name] = str(path)
    gb = {c: round(b / 2**30, 1) for c, b in room.items()}
    log(f"caches under {root} ({gb[best]} GB free; " + ", ".join(f"{c}: {g} GB" for c, g in gb.items() if c != best)
        + ")" + (f"; kept from the environment: {', '.join(kept)}" if kept else ""))
    return {"root": str(root), "free_gb": gb[best], "free_gb_by_candidate": gb, "set": placed, "kept": kept}
