"""Folio as an installable package: every file of the app ships, and `pip install .` into a fresh
virtualenv gives a `folio` command that ingests a book, answers from it and starts the app."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from rag.config import PROJECT_ROOT
from tests.builders import free_port

SHIPPED = ("app.py", ".streamlit/config.toml", "data/settings.toml")
SHIPPED_TREES = (("pages", "*.py"), ("data/book", "*"), ("data/eval", "*.yaml"))
SOURCES = ("pyproject.toml", "requirements.txt", "README.md", "rag", *SHIPPED, "pages",
           "data/book", "data/eval")
BOOK = """---
id: gears
title: Gears
---
# Gears

## Ratios {#ratios}

A gear ratio is the number of teeth on the driven gear divided by the number of teeth on the
driving gear. A higher ratio trades speed for torque at the output shaft of the gearbox.
"""


def data_files() -> dict[str, list[str]]:
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["setuptools"]["data-files"]


def test_every_file_of_the_app_ships_where_it_lies() -> None:
    listed = {}
    for folder, patterns in data_files().items():
        for pattern in patterns:
            for path in PROJECT_ROOT.glob(pattern):
                if path.is_file():
                    listed[path.relative_to(PROJECT_ROOT).as_posix()] = folder
    wanted = set(SHIPPED) | {
        p.relative_to(PROJECT_ROOT).as_posix() for tree, pattern in SHIPPED_TREES
        for p in (PROJECT_ROOT / tree).rglob(pattern) if p.is_file() and
        "__pycache__" not in p.parts}
    assert set(listed) == wanted  # a new pages/ folder needs its own data-files line
    for name, folder in listed.items():  # each file in share/folio as it lies in the checkout
        assert f"{folder}/{Path(name).name}" == f"share/folio/{name}"


def test_the_dependencies_are_requirements_txt_pins() -> None:
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["project"]["dynamic"] == ["dependencies"]
    assert config["tool"]["setuptools"]["dynamic"]["dependencies"] == {
        "file": ["requirements.txt"]}
    pins = [line.split("#")[0].strip() for line in
            (PROJECT_ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()]
    assert all("==" in pin for pin in pins if pin), pins  # every version pinned
    assert config["project"]["scripts"] == {"folio": "rag.__main__:folio"}


def fresh_venv(where: Path) -> Path:
    """A virtualenv with no packages of its own that sees this one's (torch included) through
    a .pth file, as --system-site-packages would for a venv made from the system Python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    Path(site.stdout.strip(), "folio-test-shared.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python


def copy_sources(target: Path) -> Path:
    """What a source distribution holds, outside the checkout (a build writes build/ there)."""
    for name in SOURCES:
        source = PROJECT_ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 600
        ) -> subprocess.CompletedProcess:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, (command, result.stdout[-2000:], result.stderr[-4000:])
    assert "Traceback" not in result.stderr
    return result


@pytest.mark.slow
def test_pip_install_gives_a_folio_command_that_ingests_answers_and_starts_the_app(
        tmp_path: Path) -> None:
    python = fresh_venv(tmp_path / "venv")
    source = copy_sources(tmp_path / "source")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "FOLIO_"))}
    env.update(HF_HUB_OFFLINE="1", PIP_NO_INPUT="1")
    if os.environ.get("RAG_ONNX_DIR"):  # the session's ONNX export of MiniLM, made once
        env["RAG_ONNX_DIR"] = os.environ["RAG_ONNX_DIR"]
    run([str(python), "-m", "pip", "install", "--no-build-isolation", "--no-index", "."],
        source, env)
    folio = str(tmp_path / "venv" / "bin" / "folio")
    home = tmp_path / "home"
    (home / "mybook").mkdir(parents=True)
    (home / "mybook" / "gears.md").write_text(BOOK, encoding="utf-8")

    usage = run([folio, "--help"], home, env)
    assert usage.stdout.startswith("usage: folio ")
    assert "{app,books,ingest,search,ask,audit,eval,serve}" in usage.stdout
    assert f"Set up a Folio folder in {home}: data/settings.toml, data/book, data/eval, " \
           ".streamlit/config.toml" in usage.stderr  # the first command lays the folder out
    ingest = run([folio, "ingest", "--book", "mybook"], home, env)
    assert "mybook: 1 files, 1 sections, 1 chunks" in ingest.stdout
    assert "Set up a Folio folder" not in ingest.stderr  # once
    assert (home / "data" / "settings.toml").is_file() and (home / "data" / "index").is_dir()
    answer = json.loads(run([folio, "ask", "What is a gear ratio?", "--book", "mybook",
                             "--json"], home, env).stdout)
    assert answer["status"] == "success" and "number of teeth" in answer["answer"]
    assert answer["citations"][0]["url"] == "/docs/gears#ratios"
    assert (home / "data" / "audit.duckdb").exists() or (home / "data" / "audit.spool").exists()
    assert_app_starts(folio, home, env)


def assert_app_starts(folio: str, home: Path, env: dict[str, str]) -> None:
    """`folio app` serves the shipped app.py, whose pages import from where they shipped."""
    share = Path(folio).parent.parent / "share" / "folio"
    check = ("import sys; sys.path.insert(0, sys.argv[1]); "
             "import pages.components.common.shared, pages.components.chat.asking")
    run([str(Path(folio).parent / "python"), "-c", check, str(share)], home, env)
    port = free_port()
    app = subprocess.Popen([folio, "app", "--server.port", str(port), "--server.headless",
                            "true"], cwd=home, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    try:
        deadline, health = time.monotonic() + 120, ""
        while time.monotonic() < deadline and app.poll() is None and health != "ok":
            time.sleep(0.5)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=2) as reply:
                    health = reply.read().decode()
            except OSError:
                continue
        assert health == "ok", app.stdout.read() if app.poll() is not None else "no answer"
        app.terminate()  # as a service manager stops it: Streamlit itself must stop
        app.wait(timeout=30)
        assert not serving(port), "`folio app` was stopped but Streamlit still serves"
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(timeout=30)


def serving(port: int, seconds: float = 10) -> bool:
    """Whether anything still accepts connections on the loopback port after `seconds`."""
    import socket

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        time.sleep(0.5)
    return True
