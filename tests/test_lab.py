"""`make lab` starts JupyterLab on the codefu kernel, prints its URL and needs no browser."""

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_lab_serves_the_codefu_kernel_and_prints_the_url():
    port = _free_port()
    proc = subprocess.Popen(["make", "-s", "lab", f"LAB_PORT={port}"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        url, lines, deadline = None, [], time.monotonic() + 180
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline()
            lines.append(line)
            match = re.search(rf"(http://127\.0\.0\.1:{port}/lab\?token=\w+)", line)
            url = match.group(1) if match else None
        assert url, "no URL printed:\n" + "".join(lines[-30:])
        token = url.split("token=")[1]
        specs = None
        while specs is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/kernelspecs?token={token}", timeout=30) as r:
                    specs = json.loads(r.read())
            except OSError as exc:  # printed just before it accepts connections, on a loaded machine
                assert proc.poll() is None, f"jupyter exited ({exc}):\n" + "".join(lines[-30:])
                time.sleep(1)
        assert specs is not None, "the printed URL never answered"
        assert specs["default"] == "codefu" and "codefu" in specs["kernelspecs"]
        assert specs["kernelspecs"]["codefu"]["spec"]["display_name"] == "CodeFu (.venv)"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
