"""The chat page answered by an OpenAI-compatible model (the loopback fake of Chat Completions):
the provider in the sidebar, a streamed answer with verified citations, a flagged claim, and the
offline answer with a notice when the server dies mid-answer."""

from __future__ import annotations

import pytest

from tests.builders import ask, markdown_text, open_app
from tests.fakes.openai_server import OpenAIServer

QUESTION = "Why do humanoids use absolute encoders rather than incremental ones?"
REPLY = ("Absolute encoders report the angle at power-up, so no homing is needed [S1].\n"
         "Confidence: 0.9")
pytestmark = pytest.mark.slow


@pytest.fixture()
def server():
    with OpenAIServer(REPLY) as fake:
        yield fake


@pytest.fixture()
def app(sample_settings, sample_index, monkeypatch, server):
    at = open_app(monkeypatch, sample_settings.index_dir, sample_settings.audit_db,
                  RAG_LLM="openai", RAG_LLM_BASE_URL=server.base_url,
                  RAG_LLM_MODEL="llama3.1:8b")
    assert not at.exception, at.exception
    return at


def test_the_sidebar_names_the_model_and_its_server(app, server):
    assert any(f"Answers: llama3.1:8b at {server.base_url} (OpenAI-compatible)" in c.value
               for c in app.sidebar.caption)


def test_answers_are_streamed_then_cited(app, server):
    ask(app, QUESTION)
    assert server.chat_requests[-1].body.get("stream") is True
    text = markdown_text(app)
    assert "so no homing is needed [[1]](book?module=sensing&chapter=" in text
    assert "Confidence 0." in text and "Confidence: 0.9" not in text
    turn = app.session_state["_folio_history"].turns[-1]
    assert (turn["llm_provider"], turn["llm_model"], turn["status"]) == (
        "openai", "llama3.1:8b", "success")


def test_an_unsupported_claim_is_flagged_in_the_chat(app, server):
    server.plan(text="Absolute encoders report the angle at power-up [S1]. They were invented "
                     "by lunar surveyors in the Bronze Age.\nConfidence: 0.9")
    ask(app, QUESTION)
    text = markdown_text(app)
    assert 'Unverified claim: "They were invented by lunar surveyors in the Bronze Age." (it ' \
           "cites no excerpt); check it against the book." in text
    assert any(c.value.startswith("Guardrails: ") and "claim not supported by its source "
               "(added a caveat)" in c.value for c in app.caption)


def test_a_server_dying_mid_answer_leaves_the_offline_answer_with_a_notice(app, server):
    server.plan(cut="close")
    ask(app, QUESTION)
    turn = app.session_state["_folio_history"].turns[-1]
    assert turn["llm_provider"] == "extractive" and turn["status"] == "partial"
    notice = (f"The connection to the model server at {server.base_url} broke mid-answer; ask "
              "again. Answered from the book's own sentences instead.")
    assert [w.value for w in app.warning] == [notice]
    assert "[[1]](book?module=sensing" in markdown_text(app)  # the offline answer's citation
