"""The judge's own robustness (issue 18), below the probe battery: the clean-up copes with any tree a program
could build, a server whose clean-up fails is replaced before the next sample without costing the finished one
its verdict, and the project's private directories stay private.

The battery itself (tests/test_sandbox_escape.py) shows that programs can no longer build such trees; these tests
hold the clean-up to the standard anyway, because the compiler can write files and defences should not depend on
one another.
"""

import json
import os
import pwd
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from codefu_helpers.sandbox import Judge, Verdict
from codefu_helpers.sandbox.isolation import private_directory, remove_tree

ROOT = Path(__file__).resolve().parent.parent

# builds what the first version's clean-up could not remove (EMFILE at depth 250 with 256 descriptors), then
# removes it with a descriptor limit far below the depth, with shutil.rmtree as the control
_TREE = textwrap.dedent("""
    import json, os, resource, shutil, sys
    sys.path.insert(0, sys.argv[2])
    from codefu_helpers.sandbox.isolation import remove_tree
    top = sys.argv[1]
    def build(root):
        os.mkdir(root)
        here = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        for depth in range(400):
            name = "d\\\\n" + "x" * 200 + "\\\\udcff"  # a newline, 200 characters and a byte that is not UTF-8
            os.mkdir(name, dir_fd=here)
            os.close(os.open("file\\\\udcfe", os.O_CREAT | os.O_WRONLY, 0, dir_fd=here))
            os.symlink("/", "link-to-root", dir_fd=here)  # never followed
            down = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = down
        os.close(here)
        for folder, dirs, files in os.walk(root, topdown=False):  # no permission anywhere
            os.chmod(folder, 0)
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))
    out = {}
    build(top + "/a")
    try:
        shutil.rmtree(top + "/a")
        out["rmtree"] = "removed"
    except OSError as exc:
        out["rmtree"] = type(exc).__name__
    build(top + "/b")
    remove_tree(top + "/b")
    out["remove_tree"] = sorted(os.listdir(top))
    print(json.dumps(out))
""")


def _tree_as(user: str | None) -> dict:
    top = Path(tempfile.mkdtemp(prefix="codefu-tree-"))  # in /tmp: pytest's own is closed to other users
    cmd = [sys.executable, "-c", _TREE, str(top), str(ROOT)]
    try:
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(top, entry.pw_uid, entry.pw_gid)
            cmd = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups",
                   "/usr/bin/python3", *cmd[1:]]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        remove_tree(top)  # what rmtree left, as the owner or root


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_remove_tree_copes_with_any_tree(user):
    """400 levels of odd names with no permissions at all, under 32 descriptors: shutil.rmtree gives up (the failure
    that broke workers for good), remove_tree removes everything -- as root, and as the tree's owner without root."""
    if os.geteuid() != 0:
        if user == "nobody":
            pytest.skip("dropping to nobody needs root")
        user = None
    out = _tree_as(None if user == "root" else user)
    assert out["rmtree"] in ("OSError", "PermissionError"), out
    assert out["remove_tree"] == ["a"], out  # b is gone; a is rmtree's leftover


def test_private_directory_is_private_and_refuses_what_is_not_ours(tmp_path):
    path = private_directory(tmp_path / "ray")
    assert path.is_dir() and path.stat().st_mode & 0o777 == 0o700
    (tmp_path / "ray").chmod(0o777)  # Ray does this to the directories it is given
    assert private_directory(tmp_path / "ray").stat().st_mode & 0o777 == 0o700
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PermissionError, match="symlink, or another user's"):
        private_directory(tmp_path / "link")
    if os.geteuid() == 0:  # someone else made it first (a shared /tmp)
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, pwd.getpwnam("nobody").pw_uid, -1)
        with pytest.raises(PermissionError, match="not a directory of uid 0"):
            private_directory(theirs)


_CPP = "#include <cstdio>\nint main(){int a,b;scanf(\"%d %d\",&a,&b);printf(\"%d\\n\",a+b);}\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="the container tier runs as root; mounting needs it too")
def test_a_server_whose_clean_up_fails_is_replaced_and_the_verdict_stands(caplog):
    """A file system mounted inside the compiler's build directory makes the clean-up after a compile fail: the
    compile's verdict stands, the server is replaced before the next sample (a fresh build directory), and the
    next sample is judged normally."""
    with Judge(workers=1, isolation="container") as judge:
        worker = judge._workers[0]
        first_server, first_slot = worker.server, worker.slot_dir
        mount = first_slot / "stuck"
        mount.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
        try:
            result = judge.run("cpp", _CPP, [("1 2\n", "3\n")], 1.0, 64 << 20)
            assert (result.verdict, result.judge_error) == (Verdict.OK, None), result
            # replaced before the next request (the sample's test, after its compile): a new server, a new slot
            assert not first_server.alive and worker.server is not first_server and worker.slot_dir != first_slot
            assert any("replacing its server" in r.getMessage() and "mounted inside" in r.getMessage()
                       for r in caplog.records), [r.getMessage() for r in caplog.records]
            again = judge.run("cpp", _CPP + "// another sample\n", [("2 3\n", "5\n")], 1.0, 64 << 20)
            assert (again.verdict, again.judge_error) == (Verdict.OK, None), again
            assert worker.server.alive
        finally:
            subprocess.run(["umount", str(mount)], check=False)


def test_rays_temp_directories_sit_behind_a_private_one(tmp_path):
    """Ray makes the temp dir it is given, and the session, socket and log directories in it, 0777: the project's
    Ray heads give it a directory inside a private one (0700), so no judged program (another uid) reaches them.
    (workers.group.LocalRayHead does the same with $CODEFU_RAY_TMPDIR, default <tmp>/codefu_ray.)"""
    from codefu_helpers.launch.cluster import RayNode

    parent = tmp_path / "cfray"
    node = RayNode(host="algo-1", ip="127.0.0.1", port=6379, head=True, log_path=tmp_path / "ray.log",
                   temp_dir=str(parent))
    argv = node.command()
    assert argv[argv.index("--temp-dir") + 1] == str(parent / "ray")
    parent.mkdir(mode=0o777)
    private_directory(parent)  # what start() does first
    assert parent.stat().st_mode & 0o777 == 0o700


_MAIN_THREAD_GONE = textwrap.dedent("""
    import ctypes, os, threading, time
    threading.Thread(target=time.sleep, args=(60,)).start()
    print(os.getpid(), flush=True)
    ctypes.CDLL(None).syscall({exit_nr}, 0)  # exit: the main thread only; the sleeping one lives on
""")


@pytest.mark.skipif(os.geteuid() != 0, reason="starts a process as another uid, as the container tier does")
def test_the_clean_up_sees_a_process_whose_main_thread_has_exited():
    """/proc/PID/stat says Z for a process whose main thread exited while another thread runs: it is alive all the
    same. The clean-up's scan finds it, kills it, and returns only once no task of it is left."""
    from codefu_helpers.sandbox._server import processes_of_uids
    from codefu_helpers.sandbox.isolation import kill_processes_of_uids

    uid = 64_999  # a uid no one uses here (the judge's own start far from it)
    exit_nr = {"x86_64": 60, "aarch64": 93}[os.uname().machine]
    proc = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "/usr/bin/python3",
                             "-c", _MAIN_THREAD_GONE.format(exit_nr=exit_nr)], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())
        for _ in range(100):  # until the main thread is gone
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                break
            time.sleep(0.02)
        assert state == "Z" and len(os.listdir(f"/proc/{pid}/task")) == 2  # a "zombie" with a live thread
        assert pid in processes_of_uids({uid})
        assert kill_processes_of_uids([uid]) == []
        assert processes_of_uids({uid}) == {}
        assert proc.wait(timeout=10) == -9
    finally:
        proc.kill()
        proc.wait()
