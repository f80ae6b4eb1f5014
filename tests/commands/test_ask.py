"""`python -m rag ask`: answers with citations, --json, selections, and bad input as exit 2 with
one clear stderr line and no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rag.config
from rag.__main__ import main
from rag.config import PROJECT_ROOT
from tests.builders import SAMPLE_BOOK

QUESTION = "What does the integral term of a PID controller correct?"
PASSAGE = ("In our lab notes, the integral term of the PID controller on the ankle joint is "
           "clamped to twenty percent of the motor's torque limit, so it cannot wind up while "
           "the foot is blocked by an obstacle.")


@pytest.fixture
def ask(sample_index, sample_index_dir, capsys):
    """Run `ask` in this process against the session's index; returns (code, stdout, stderr)."""
    def run(*args: str) -> tuple[int, str, str]:
        code = main(["ask", *args, "--book", str(SAMPLE_BOOK), "--index", str(sample_index_dir),
                     "--no-audit"])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_answer_with_citations(ask) -> None:
    code, out, err = ask(QUESTION)
    assert code == 0, err
    lines = out.splitlines()
    assert '[Source: PID Control Basics - "' in lines[0]
    assert "Searched full book · status " in out
    assert "  [S1] " in out and " -> /docs/control/pid-control#" in out


def test_json_prints_the_response(ask) -> None:
    code, out, _ = ask(QUESTION, "--json")
    data = json.loads(out)
    assert code == 0 and data["status"] in ("success", "partial")
    assert data["metadata"]["mode_label"] == "Searched full book"
    assert data["citations"][0]["url"].startswith("/docs/control/pid-control#")
    assert data["metadata"]["session_id"] == "cli"


def test_selection_file(ask, tmp_path: Path) -> None:
    selection = tmp_path / "passage.txt"
    selection.write_text(PASSAGE, encoding="utf-8")
    code, out, err = ask("Why is the integral term clamped?", "--mode", "selection",
                         "--selection-file", str(selection))
    assert code == 0, err
    assert "Answered from selected text" in out and "-> (selection)" in out
    assert '[Source: Selected text - "' in out


def test_selection_mode_without_a_file_falls_back(ask) -> None:
    code, out, _ = ask(QUESTION, "--mode", "selection")
    assert code == 0
    assert "Searched full book (fallback: selection_missing)" in out
    assert "note: No text is selected, so the full book was searched instead." in out


def test_refusal_exits_0_with_the_message(ask) -> None:
    code, out, _ = ask("Write a Python class that implements a PID controller.")
    assert code == 0
    assert out.startswith("I can explain concepts from the book but cannot write code")
    assert "status refused" in out


@pytest.mark.parametrize(("question", "message"), [
    ("", "error: The question is empty; type a question about the book."),
    ("   ", "error: The question is empty; type a question about the book."),
    ("x" * 1001, "error: The question has 1001 characters; the limit is 1000. Shorten it and "
                 "ask again."),
    ("What\x00 is PID?", "error: The question contains a NUL byte; remove it and ask again."),
    ("What is \udcff PID?", "error: The question is not valid UTF-8 text; paste it again as "
                            "plain text."),
])
def test_bad_questions_exit_2(ask, question: str, message: str) -> None:
    code, out, err = ask(question)
    assert (code, out, err) == (2, "", message + "\n")


def test_bad_selection_files_exit_2(ask, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("Caf\u00e9 au lait, ".encode("latin-1") * 10)
    code, out, err = ask(QUESTION, "--mode", "selection", "--selection-file", str(bad))
    assert (code, out) == (2, "")
    assert err == (f"error: The selection file {bad} is not valid UTF-8 text (byte offset 3); "
                   "save it as UTF-8 and try again.\n")
    missing = tmp_path / "nope.txt"
    code, _, err = ask(QUESTION, "--selection-file", str(missing))
    assert (code, err) == (2, f"error: The selection file {missing} does not exist.\n")


def test_missing_anthropic_key_is_a_clear_message(ask, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(rag.config, "PROJECT_ROOT", tmp_path)  # no .streamlit/secrets.toml
    code, out, err = ask(QUESTION, "--llm", "anthropic")
    assert (code, out) == (2, "")
    assert err.startswith("error: Claude answers need ANTHROPIC_API_KEY") and "\n" == err[-1]


def test_unknown_llm_lists_the_choices(ask) -> None:
    code, _, err = ask(QUESTION, "--llm", "gpt")
    assert code == 2 and err == "error: Unknown answerer 'gpt'; choose one of anthropic, " \
                                "extractive, openai.\n"


@pytest.mark.parametrize("case", ["argument", "selection-file"])
def test_invalid_utf8_in_a_real_process_has_no_traceback(tmp_path: Path, case: str) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAG_", "ANTHROPIC", "COHERE", "QDRANT"))}
    env.update(HF_HUB_OFFLINE="1", PYTHONIOENCODING="utf-8")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe not text " * 10)
    question = b"What is \xff\xfe PID?" if case == "argument" else QUESTION.encode()
    extra = [] if case == "argument" else ["--mode", "selection", "--selection-file", str(bad)]
    result = subprocess.run(
        [sys.executable, "-m", "rag", "ask", question, "--index", str(tmp_path / "index"),
         "--no-audit", *extra], cwd=PROJECT_ROOT, env=env, capture_output=True, timeout=120)
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert "Traceback" not in stderr and result.stdout == b""
    assert stderr.startswith("error: The ") and "not valid UTF-8" in stderr
    assert stderr.count("\n") == 1
