"""Protecting the host's answers by permissions, where Landlock cannot (the container tier on a kernel without it).

A SageMaker training job runs as root and owns its container, so on a host without Landlock it need not expose the
data to judged programs (which run as other uids): before the judge starts, the entry point takes every permission
for "others" off the paths that hold answers or secrets (`protect_host_files`), and the judge checks that
protection with canaries before it accepts the tier (`verify_protection`): a file with a random token planted in
each protected directory, which a program judged in the sandbox must fail to read. A path that fails the check
stops the judge, naming it.

    paths = protect_host_files(job_paths())          # as root, before the judge starts
    os.environ[PROTECTED_PATHS_ENV] = os.pathsep.join(paths)
    judge = Judge()                                  # verifies them, and the tier says so
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from pathlib import Path

PROTECTED_PATHS_ENV = "CODEFU_JUDGE_PROTECTED_PATHS"  # os.pathsep-separated: what protect_host_files protected
CANARY_PREFIX = ".codefu-canary-"

# what a SageMaker job holds that a judged program must not read: every input channel (the dataset with its
# answers, the config), the model and checkpoint directories, the output, the code; and the caches of models and
# datasets in root's home
SAGEMAKER_PATHS = ("/opt/ml",)


def job_paths(extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The paths a training job protects, those that exist: /opt/ml (the code is in /opt/ml/code), the caches
    ($HF_HOME, ~/.cache) and `extra` (the job's cache root wherever it went)."""
    home = Path(os.path.expanduser("~"))
    candidates = [*SAGEMAKER_PATHS, os.environ.get("HF_HOME", ""), str(home / ".cache"), *extra]
    out = []
    for path in candidates:
        if path and os.path.isdir(path) and path != "/" and not any(
                path == kept or path.startswith(kept.rstrip("/") + "/") for kept in out):
            out.append(os.path.realpath(path))
    return out


def protect_host_files(paths: list[str]) -> list[str]:
    """Takes every permission for "others" off each directory in `paths` (root only: the judged programs run as
    other uids, in no group of these files), so that no program can enter it; returns the paths protected. The
    owner and the group keep theirs: the job itself runs as root."""
    if os.geteuid() != 0:
        raise PermissionError("protect_host_files changes the modes of the job's directories and needs root")
    done = []
    for path in paths:
        mode = os.stat(path).st_mode
        if not stat.S_ISDIR(mode):
            raise ValueError(f"{path!r} is not a directory: protect the directory that holds it")
        os.chmod(path, stat.S_IMODE(mode) & ~0o007)
        done.append(path)
    return done


def protected_paths_from_env() -> list[str]:
    text = os.environ.get(PROTECTED_PATHS_ENV, "")
    return [p for p in text.split(os.pathsep) if p]


_READER = """
import json
out = {{}}
for path in {paths!r}:
    try:
        with open(path, "rb") as fh:
            out[path] = "READ " + fh.read(200).decode("utf-8", "replace")
    except OSError as e:
        out[path] = type(e).__name__
print(json.dumps(out))
"""


def verify_protection(judge, paths: list[str]) -> dict[str, str]:
    """Plants a canary (a world-readable file holding a random token) in each directory of `paths`, has a program
    try to read them all on every worker of `judge`, and removes them. Returns {path: what the program got} (the
    exception's name); raises PermissionError naming every path whose canary a program could read, or whose check
    could not run."""
    from .results import Verdict

    canaries, tokens = {}, {}
    try:
        for path in paths:
            if not os.path.isdir(path):
                raise ValueError(f"protected path {path!r} is not a directory (${PROTECTED_PATHS_ENV})")
            token = secrets.token_hex(16)
            canary = os.path.join(path, CANARY_PREFIX + secrets.token_hex(4))
            with open(os.open(canary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), "w") as fh:
                fh.write(f"answer-{token}\n")
            os.chmod(canary, 0o644)  # whatever the umask: only the directory may keep a program out
            canaries[path], tokens[canary] = canary, token
        source = _READER.format(paths=sorted(tokens))
        results = judge.run_many([{"language": "python", "source": source, "tests": [("", "")], "time_limit": 2.0,
                                   "memory_limit_bytes": 128 << 20}] * max(1, judge.workers))
    finally:
        for canary in canaries.values():
            try:
                os.unlink(canary)
            except OSError:
                pass
    seen, exposed = {}, []
    for result in results:
        output = result.tests[0].output if result.tests else ""
        if result.verdict is Verdict.JUDGE_ERROR or not output.strip():
            raise PermissionError(f"the protection of {paths} could not be checked: the canary reader got "
                                  f"{result.verdict.value} ({result.judge_error or result.tests[0].stderr[-300:]})")
        said = json.loads(output.strip().splitlines()[-1])
        for canary, token in tokens.items():
            got = said.get(canary, "")
            if token in got or got.startswith("READ"):
                exposed.append(os.path.dirname(canary))
            seen[os.path.dirname(canary)] = got
    if exposed:
        raise PermissionError(f"a judged program read the canary planted in {sorted(set(exposed))}: those paths are "
                              "not protected (their mode, or that of a directory above, still lets others in)")
    return seen
