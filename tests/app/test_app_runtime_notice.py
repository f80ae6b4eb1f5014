"""When ONNX Runtime cannot be used, the app still answers (through PyTorch) and says so: the
inspector shows the notice above its table, the chat under the answer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.builders import ask, markdown_text, open_app

QUESTION = "Why does a humanoid's heading estimate drift even though it can measure gravity?"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def blocked(sample_settings, sample_index, tmp_path_factory) -> dict[str, Path]:
    """A copy of the session's index (a fresh cache entry in the app) and an ONNX cache folder
    that cannot be created, its parent being a file."""
    work = tmp_path_factory.mktemp("onnx-blocked")
    index = work / "index"
    shutil.copytree(sample_settings.index_dir, index, ignore=shutil.ignore_patterns(".lock"))
    (work / "a-file").write_text("")
    return {"index": index, "onnx": work / "a-file" / "onnx", "audit": work / "audit.duckdb"}


def test_the_inspector_shows_that_pytorch_embedded_the_question(blocked, monkeypatch):
    at = open_app(monkeypatch, blocked["index"], blocked["audit"], page="pages/inspector.py",
                  RAG_ONNX_DIR=str(blocked["onnx"]))
    at.text_input(key="inspector_question").input(QUESTION).run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert any("ONNX Runtime could not be used" in w and "PyTorch" in w for w in warnings)
    assert len(at.dataframe[0].value) > 0  # the candidates are listed all the same


def test_the_chat_answer_carries_the_notice(blocked, monkeypatch):
    at = open_app(monkeypatch, blocked["index"], blocked["audit"],
                  RAG_ONNX_DIR=str(blocked["onnx"]))
    assert not at.exception, at.exception
    ask(at, QUESTION)
    shown = markdown_text(at) + "\n".join(w.value for w in at.warning)
    assert "embedded through PyTorch" in shown
    turn = at.session_state["_folio_history"].turns[-1]
    assert turn["answer_text"] and turn["citations"] and turn["success"]
    assert [n["code"] for n in turn["notices"]] == ["embed_runtime_fallback"]
