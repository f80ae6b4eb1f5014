"""`python -m rag ingest` says which runtime embedded the book, and why when it is not the one
asked for; a wrong runtime setting is a user error, not a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.config import PROJECT_ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tiny") / "book"
    (root / "control").mkdir(parents=True)
    (root / "control" / "pid.md").write_text(
        "---\nid: pid\ntitle: PID control\n---\n# PID control\n\n## Windup {#windup}\n\n"
        "Integral windup happens when the actuator saturates; clamping the integrator avoids "
        "it.\n", encoding="utf-8")
    return root


def ingest(*args: str | Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "QDRANT_"))}
    clean.update(HF_HUB_OFFLINE="1", RAG_SETTINGS=str(PROJECT_ROOT / "data" / "settings.toml"),
                 **env)
    return subprocess.run([sys.executable, "-m", "rag", "ingest", *map(str, args)],
                          cwd=PROJECT_ROOT, env=clean, capture_output=True, text=True,
                          timeout=300)


def test_json_names_the_runtime(tiny_book: Path, tmp_path: Path, onnx_dir: Path) -> None:
    result = ingest("--book", tiny_book, "--index", tmp_path / "index", "--json",
                    RAG_ONNX_DIR=str(onnx_dir))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["embedder_runtime"], data["notices"]) == ("onnx", [])
    assert data["embedded"] == data["chunks"] >= 1


def test_a_failed_export_is_reported_and_the_book_still_indexed(tiny_book: Path,
                                                                tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    result = ingest("--book", tiny_book, "--index", tmp_path / "index",
                    RAG_ONNX_DIR=str(tmp_path / "a-file" / "onnx"))
    assert result.returncode == 0, result.stderr
    assert "embedder: sentence-transformers/all-MiniLM-L6-v2 through PyTorch" in result.stdout
    assert "note: ONNX Runtime could not be used" in result.stdout
    assert "cannot write the ONNX model" in result.stdout and "Traceback" not in result.stderr


def test_an_unknown_runtime_is_a_user_error(tiny_book: Path, tmp_path: Path) -> None:
    result = ingest("--book", tiny_book, "--index", tmp_path / "index",
                    RAG_EMBED_RUNTIME="tensorflow")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: ") and "must be onnx or torch" in result.stderr
    assert "Traceback" not in result.stderr
