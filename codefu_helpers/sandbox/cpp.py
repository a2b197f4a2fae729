"""C++ compilation settings and the precompiled header for <bits/stdc++.h>.

Submissions compile as GNU C++17 with -O2 and ONLINE_JUDGE defined, like Codeforces' "GNU G++17". Almost every
competitive solution starts with `#include <bits/stdc++.h>`, which costs g++ about a second to parse; a
precompiled header (PCH) built once per machine cuts a compile from ~1.4 s to ~0.3 s. GCC uses it
automatically: with `-I PCH_DIR`, `#include <bits/stdc++.h>` finds `PCH_DIR/bits/stdc++.h.gch` first, and
silently falls back to the real header when the PCH does not match the flags or compiler.

The PCH is built on the host from the system's own header (trusted input, so no sandbox is needed) into the
judge cache (`~/.cache/codefu/judge`, or $CODEFU_JUDGE_CACHE), under a directory named by a hash of the
compiler version and flags, and guarded by a file lock so parallel processes build it once. The sandbox sees
the cache read-only at /judge/cache, so a PCH built after the servers started is still visible to them.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

log = logging.getLogger(__name__)

CXX = "/usr/bin/g++"
CXX_FLAGS = ("-std=gnu++17", "-O2", "-pipe", "-DONLINE_JUDGE")


def default_cache_root() -> Path:
    env = os.environ.get("CODEFU_JUDGE_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codefu" / "judge"


@lru_cache(maxsize=4)
def compiler_identity(cxx: str = CXX) -> str | None:
    """`g++ -dumpfullversion -dumpmachine` plus the flags, or None when there is no C++ compiler."""
    if not Path(cxx).exists():
        return None
    try:
        out = subprocess.run([cxx, "-dumpfullversion", "-dumpmachine"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return " ".join(out.split()) + " | " + " ".join(CXX_FLAGS)


def stdcxx_header(cxx: str = CXX) -> Path | None:
    """Where <bits/stdc++.h> lives for this compiler (found by asking the preprocessor, not by guessing)."""
    try:
        proc = subprocess.run([cxx, *CXX_FLAGS, "-x", "c++", "-E", "-H", "-o", os.devnull, "-"],
                              input="#include <bits/stdc++.h>\n", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    for line in proc.stderr.splitlines():
        if line.startswith(". ") and line.endswith("bits/stdc++.h"):
            return Path(line[2:].strip())
    return None


def ensure_pch(cache_root: Path, cxx: str = CXX) -> Path | None:
    """The directory to pass as -I (holding bits/stdc++.h.gch), building it first if needed; None if impossible."""
    identity = compiler_identity(cxx)
    if identity is None:
        return None
    key = hashlib.sha256(identity.encode()).hexdigest()[:16]
    pch_dir = cache_root / f"pch-{key}"
    gch = pch_dir / "bits" / "stdc++.h.gch"
    if gch.exists():
        return pch_dir
    cache_root.mkdir(parents=True, exist_ok=True)
    with open(cache_root / f".pch-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same PCH right now
        if gch.exists():
            return pch_dir
        header = stdcxx_header(cxx)
        if header is None:
            log.warning("no <bits/stdc++.h> found for %s: compiling without a precompiled header", cxx)
            return None
        shutil.rmtree(pch_dir, ignore_errors=True)  # a leftover without its .gch
        tmp_dir = cache_root / f".pch-{key}.{os.getpid()}"
        shutil.rmtree(tmp_dir, ignore_errors=True)
        (tmp_dir / "bits").mkdir(parents=True)
        proc = subprocess.run([cxx, *CXX_FLAGS, "-x", "c++-header", str(header), "-o",
                               str(tmp_dir / "bits" / "stdc++.h.gch")], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            shutil.rmtree(tmp_dir, ignore_errors=True)
            log.warning("building the precompiled header failed, compiling without it:\n%s", proc.stderr[-2000:])
            return None
        for path in (tmp_dir, tmp_dir / "bits"):
            path.chmod(0o755)  # the sandbox reads it as another uid
        (tmp_dir / "bits" / "stdc++.h.gch").chmod(0o644)
        os.replace(tmp_dir, pch_dir)
    return pch_dir


def compile_argv(pch_include: str | None, source_name: str = "solution.cpp", binary_name: str = "solution"
                 ) -> list[str]:
    """The g++ command run inside the sandbox (pch_include as the sandbox sees it, or None)."""
    argv = [CXX, *CXX_FLAGS]
    if pch_include:
        argv.append(f"-I{pch_include}")
    return argv + ["-o", binary_name, source_name]


def cache_key(source: str, identity: str) -> str:
    return hashlib.sha256(identity.encode() + b"\0" + source.encode("utf-8", "surrogateescape")).hexdigest()
