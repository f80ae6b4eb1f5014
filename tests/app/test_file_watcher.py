"""The project's Streamlit configuration keeps the file watcher out of .venv: `streamlit run` with
.streamlit/config.toml next to a large virtual environment puts no inotify watch in it, and
reading thousands of files there (as importing torch does) leaves the log clean of "Inotify
queue overflowed". A tiny app stands in for app.py: the watcher does not depend on the app."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import websockets

from rag.config import PROJECT_ROOT
from tests.builders import free_port, wait_healthy

pytestmark = pytest.mark.slow
DIRS, FILES = 300, 20  # a venv-like tree: 300 folders of 20 modules


def inotify_inodes(pid: int) -> set[int]:
    """The inodes of every directory the process watches through inotify."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:
            continue
        for line in info.splitlines():
            if line.startswith("inotify wd:"):
                field = next(f for f in line.split() if f.startswith("ino:"))
                inodes.add(int(field[4:], 16))
    return inodes


@pytest.mark.skipif(sys.platform != "linux", reason="inotify and /proc are Linux's")
def test_the_watcher_ignores_the_virtual_environment(tmp_path):
    shutil.copytree(PROJECT_ROOT / ".streamlit", tmp_path / ".streamlit",
                    ignore=shutil.ignore_patterns("secrets.toml"))
    (tmp_path / "app.py").write_text("import streamlit as st\nst.write('hello')\n")
    venv_dirs = []
    for i in range(DIRS):
        folder = tmp_path / ".venv" / "lib" / f"pkg{i}"
        folder.mkdir(parents=True)
        venv_dirs.append(folder)
        for j in range(FILES):
            (folder / f"m{j}.py").write_text("x = 1\n")
    venv_inodes = {d.stat().st_ino for d in [tmp_path / ".venv", *venv_dirs]}
    port = free_port()
    log_path = tmp_path / "streamlit.log"
    with open(log_path, "w") as log:
        # no watcher option on the command line: the project's config.toml decides
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.address", "127.0.0.1"],
            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process)

        async def session() -> set[int]:
            """A browser session (it starts the watcher), reading the venv five times over."""
            async with websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream",
                                          subprotocols=["streamlit"]):
                await asyncio.sleep(3)
                watched = inotify_inodes(process.pid)
                for _ in range(5):
                    for folder in venv_dirs:
                        for module in folder.iterdir():
                            module.read_bytes()
                await asyncio.sleep(2)
                return watched

        watched = asyncio.run(session())
        assert process.poll() is None
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    assert not watched & venv_inodes, f"{len(watched & venv_inodes)} .venv folders watched"
    log = log_path.read_text()
    assert "Inotify" not in log, log[-2000:]
    assert "Traceback" not in log, log[-2000:]
