"""One question through the pipeline: rate limits (this browser session's, then the client's,
shared with the API server), streamed answer, final render, history."""

from __future__ import annotations

import time

import streamlit as st

from pages.components.chat.history import History
from pages.components.chat.support import (
    StreamCapture,
    conversation_messages,
    rate_limit_message,
)
from pages.components.chat.view import kept_passage, remember_quotes, render_answer
from pages.components.common.shared import AppContext, client_limiter, rate_limiter
from pages.components.common.signin import current_client
from rag.access.ratelimit import default_state_path, rate_limit_per_minute
from rag.answer.record import history_record
from rag.errors import RagError


def ask(ctx: AppContext, h: History, question: str, mode: str, selection: str,
        selection_time) -> dict | None:
    """Answer `question` in the open chat; returns the new history entry (None when limited)."""
    settings = ctx.settings
    with st.chat_message("user"):
        st.markdown(question.replace("$", "\\$"))
    with st.chat_message("assistant"):
        decision = rate_limiter().check(h.session_id, time.monotonic(),
                                        limit=settings.rate_limit_per_minute)
        if not decision.allowed:
            st.warning(rate_limit_message(decision.limit, decision.retry_after_s),
                       icon=":material/hourglass_top:")
            return None
        if not _client_allowed(ctx, current_client()):
            return None
        turn = _answer(ctx, h, question, mode, selection, selection_time)
        if turn is None:
            return None
    h.add(turn)
    if turn["mode_used"] != "full-book" and selection:
        remember_quotes(selection, turn["answer_quotes"])
    return turn


def _client_allowed(ctx: AppContext, client: str) -> bool:
    """Count the question against the client's per-minute limit; a message when over it."""
    try:
        per_minute = rate_limit_per_minute(settings_file=ctx.settings.settings_file)
    except RagError as e:
        st.error(str(e))
        return False
    limiter = client_limiter(str(default_state_path(ctx.settings.audit_db)), per_minute)
    decision = limiter.check(client)
    if not decision.allowed:
        st.warning(decision.message(), icon=":material/hourglass_top:")
    return decision.allowed


def _answer(ctx: AppContext, h: History, question: str, mode: str, selection: str,
            selection_time) -> dict | None:
    status = st.empty()
    status.caption(":material/search: Searching the book…")
    stream = st.empty()
    capture = StreamCapture(ctx.pipeline.answer_stream(
        question, mode=mode, selection=selection or None, selection_time=selection_time,
        history=conversation_messages(h.turns, ctx.settings.history_messages),
        session_id=h.session_id, settings=ctx.settings, client_id=current_client()))

    def deltas():
        for delta in capture.deltas():
            status.empty()
            yield delta

    try:
        with stream.container():
            st.write_stream(deltas())
    except RagError as e:  # the pipeline turns its own failures into a Response; belt and braces
        status.empty()
        st.error(str(e))
        return None
    status.empty()
    stream.empty()
    if capture.response is None:
        st.error("The answer was interrupted; please ask again.")
        return None
    turn = history_record(capture.response)
    if turn.get("mode_used") not in (None, "full-book") and selection:
        turn["selection_text"] = kept_passage(selection, turn.get("answer_quotes") or [])
        turn["selection_chars"] = len(selection.strip())
    render_answer(turn, latest=True)
    return turn
