"""Apply a tuned setting or confidence gate to the settings file (with its history), and replay
logged questions under it to see which outcomes it would have changed."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence

import streamlit as st

from pages.components.common.book_scope import book_filter
from pages.components.common.provenance import threshold_provenance, tuned_note, with_books
from pages.components.common.shared import AppContext
from pages.components.tuning.sets import display_path
from pages.components.tuning.view import (
    REPLAY_LIMIT,
    history_frame,
    load_replay_rows,
    replay_filters,
)
from rag.audit.importer import SpoolSnapshot
from rag.config import load_settings, read_settings_file
from rag.errors import AuditError, RagError
from rag.tuning.replay import ANSWERED_TO_REFUSED, REFUSED_TO_ANSWERED, TOP_CHANGED, replay
from rag.tuning.settings_writer import write_gate, write_settings
from rag.types import RetrievalSettings

APPLIED_KEY, REPLAY_KEY = "tuning_applied", "tuning_replay_rows"
CONFIRM_KEY = "tuning_apply_pending"  # the point whose Apply waits for a confirmation
GATE_APPLIED_KEY = "tuning_gate_applied"
CHANGED_COLUMNS = ["timestamp", "question", "change", "old_answered", "new_answered",
                   "old_top_section", "new_top_section", "old_best", "new_best", "status"]
CHANGED_CONFIG = {
    "timestamp": st.column_config.DatetimeColumn("Asked (UTC)", format="YYYY-MM-DD HH:mm"),
    "question": st.column_config.TextColumn("Question", width="large"),
    "change": "Change", "old_answered": "Answered then", "new_answered": "Answered now",
    "old_top_section": "Top section then", "new_top_section": "Top section now",
    "old_best": st.column_config.NumberColumn("Best then", format="%.3f"),
    "new_best": st.column_config.NumberColumn("Best now", format="%.3f"),
    "status": "Logged status",
}


def apply_panel(ctx: AppContext, w: float, t: float, provenance: dict,
                risks: Sequence[str] = (), limit_note: str = "") -> None:
    """Apply the chosen point; when `risks` name what it makes worse (rag.tuning.recommend.
    apply_risks), only after the user confirms them."""
    s = ctx.settings
    same = abs(s.w_dense - w) < 1e-9 and abs(s.threshold - t) < 1e-9
    st.markdown(f"Active: dense **{s.w_dense:.2f}** · threshold **{s.threshold:.2f}** "
                f"(from: {threshold_provenance(s)})  \nChosen: dense "
                f"**{w:.2f}** · threshold **{t:.2f}**")
    if st.button(f"Apply dense {w:.2f} · threshold {t:.2f}", type="primary", disabled=same,
                 icon=":material/check:", key="tuning_apply",
                 help=f"Writes [retrieval] w_dense and [embedders.{s.embedder}] threshold to "
                      f"{display_path(s.settings_file)}; the old values go to [[history]]."):
        if risks:
            st.session_state[CONFIRM_KEY] = (w, t)
        else:
            _apply(ctx, w, t, provenance)
    if st.session_state.get(CONFIRM_KEY) not in (None, (w, t)) or same:
        st.session_state.pop(CONFIRM_KEY, None)  # the point moved: ask again for the new one
    if st.session_state.get(CONFIRM_KEY) == (w, t):
        _confirm(ctx, w, t, provenance, risks, limit_note)
    if same:
        st.caption("The chosen point is the active setting.")
    if message := st.session_state.pop(APPLIED_KEY, None):
        st.success(message[0], icon=":material/check_circle:")
        if message[1]:
            st.warning(message[1], icon=":material/warning:")
    try:
        data = read_settings_file(s.settings_file)
        history = with_books(history_frame(data), data, s)
    except RagError as e:
        st.error(str(e), icon=":material/error:")
        return
    if len(history):
        st.markdown("**Earlier values** (newest first, from `[[history]]`)")
        st.dataframe(history, hide_index=True, width="stretch", height=min(300, 38 + 35 *
                                                                           len(history)),
                     key="tuning_history")


def _confirm(ctx: AppContext, w: float, t: float, provenance: dict, risks: Sequence[str],
             limit_note: str) -> None:
    """What gets worse, with Confirm and Cancel; only Confirm writes the settings."""
    with st.container(border=True, key="tuning_apply_confirmation"):
        st.warning(f"Applying dense {w:.2f} · threshold {t:.2f} makes this worse:  \n"
                   + "  \n".join(f"- {risk}" for risk in risks), icon=":material/warning:")
        if limit_note:
            st.caption(limit_note)
        confirm, cancel, _ = st.columns([2, 1, 3])
        if confirm.button("Confirm: apply anyway", type="primary", key="tuning_apply_confirm",
                          icon=":material/check:"):
            st.session_state.pop(CONFIRM_KEY, None)
            _apply(ctx, w, t, provenance)
        if cancel.button("Cancel", key="tuning_apply_cancel", icon=":material/close:"):
            st.session_state.pop(CONFIRM_KEY, None)
            st.rerun()


def _was(value: object) -> str:
    return "–" if value == "" else f"{float(value):.2f}"


def _apply(ctx: AppContext, w: float, t: float, provenance: dict) -> None:
    s = ctx.settings
    try:
        entry = write_settings(s.settings_file, w, t, s.embedder, provenance)
        now = load_settings()  # what the chat will use on its next question
    except (RagError, OSError) as e:
        st.error(f"Not applied: {e}", icon=":material/error:")
        return
    note = ""
    if (abs(now.w_dense - w) > 1e-9) or abs(now.threshold - t) > 1e-9:
        note = (f"The environment overrides the file (RAG_DENSE_WEIGHT / RAG_THRESHOLD), so the "
                f"app still uses dense {now.w_dense:.2f} · threshold {now.threshold:.2f}.")
    st.session_state[APPLIED_KEY] = (
        f"Applied dense {w:.2f} · threshold {t:.2f} to {display_path(s.settings_file)} "
        f"(was dense {_was(entry['previous_w_dense'])} · threshold "
        f"{_was(entry['previous_threshold'])}). "
        "The chat uses them from its next question.", note)
    st.rerun()


def gate_panel(ctx: AppContext, choice: dict, provenance: dict) -> None:
    """Apply the confidence gate a target accuracy implies at the active settings."""
    s, gate = ctx.settings, choice.get("gate")
    st.markdown(f"Active gates: answer at confidence ≥ **{s.gate_answer:.3f}**, with a caveat "
                f"≥ **{s.gate_caveat:.3f}**, refused below{tuned_note(s, 'gate')}.")
    same = gate is not None and abs(gate - s.gate_caveat) < 5e-5
    label = "No gate reaches the target" if gate is None else f"Apply confidence gate {gate:.3f}"
    if st.button(label, icon=":material/shield:", key="tuning_apply_gate",
                 disabled=gate is None or same,
                 help=f"Writes [embedders.{s.embedder}] gate_caveat (and gate_answer when it is "
                      f"lower) to {display_path(s.settings_file)}; the old values go to "
                      "[[history]]."):
        _apply_gate(ctx, float(gate), provenance)
    if same:
        st.caption("This gate is the active one.")
    if message := st.session_state.pop(GATE_APPLIED_KEY, None):
        st.success(message, icon=":material/check_circle:")


def _apply_gate(ctx: AppContext, gate: float, provenance: dict) -> None:
    s = ctx.settings
    try:
        entry = write_gate(s.settings_file, gate, s.embedder, provenance)
    except (RagError, OSError) as e:
        st.error(f"Not applied: {e}", icon=":material/error:")
        return
    st.session_state[GATE_APPLIED_KEY] = (
        f"Applied confidence gate {entry['gate_caveat']:.3f} (plain answers from "
        f"{entry['gate_answer']:.3f}) to {display_path(s.settings_file)}; it was "
        f"{_was(entry['previous_gate_caveat'])}. The chat uses it from its next question.")
    st.rerun()


def _read(ctx: AppContext, days: tuple, limit: int, books: tuple) -> tuple[list[dict], str]:
    """Logged rows from DuckDB; while another process holds the file, the spooled rows only."""
    filters = dataclasses.replace(replay_filters(days), books=books)
    try:
        return load_replay_rows(ctx.audit, filters, limit), ""
    except AuditError as e:
        spool = SpoolSnapshot(ctx.settings.audit_db)
        try:
            rows = load_replay_rows(spool, filters, limit)
        finally:
            spool.close()
        return rows, (f"The audit database cannot be read right now ({e}). Replaying only the "
                      f"{len(rows)} question(s) still waiting in this machine's spool.")


def _rows(ctx: AppContext, days: tuple, limit: int, reload: bool, books: tuple) -> list[dict]:
    key = (days, limit, books)
    cached = st.session_state.get(REPLAY_KEY)
    if cached is None or cached[0] != key or reload:
        with st.spinner("Reading logged questions…"):
            rows, note = _read(ctx, days, limit, books)
        cached = (key, rows, note)
        if not note:  # a busy database is asked again on the next run
            st.session_state[REPLAY_KEY] = cached
    if cached[2]:
        st.warning(cached[2], icon=":material/lock_clock:")
    return cached[1]


def replay_panel(ctx: AppContext, w: float, t: float) -> None:
    s = ctx.settings
    if ctx.audit is None:
        st.info(f"The audit log is unavailable ({ctx.audit_error}); replay needs logged "
                "questions.", icon=":material/history_toggle_off:")
        return
    today = dt.datetime.now(dt.UTC).date()
    books = book_filter(ctx.audit, s, "tuning_replay_book")  # this book's questions by default
    when, most, again = st.columns([3, 2, 1], gap="medium", vertical_alignment="bottom")
    with when:
        days = st.date_input("Asked between (UTC)", (today - dt.timedelta(days=30), today),
                             key="tuning_replay_days", max_value=today)
    with most:
        limit = st.number_input("Newest questions to replay", 1, 5000, REPLAY_LIMIT, step=50,
                                key="tuning_replay_limit")
    with again:
        reload = st.button("Reload", icon=":material/refresh:", key="tuning_replay_reload",
                           width="stretch")
    days = tuple(days) if isinstance(days, tuple | list) else (days,)
    if not days:
        st.caption("Pick a date range.")
        return
    rows = _rows(ctx, days, int(limit), reload, books)
    if not rows:
        st.info("No questions were logged in this range yet. Ask some in the chat (every answer "
                "is logged with its candidates), or widen the range.",
                icon=":material/inbox:")
        return
    result = replay(rows, RetrievalSettings(w, t, s.top_k, s.candidate_pool), books=books or None)
    summary = result.summary()
    st.caption(f"Each logged question re-ranked from its stored candidates (nothing embedded): "
               f"outcome under the settings it was asked with vs dense {w:.2f} · threshold "
               f"{t:.2f}.")
    labels = (("Replayed", "replayed"), ("Answered → refused", ANSWERED_TO_REFUSED),
              ("Refused → answered", REFUSED_TO_ANSWERED), ("Top section changed", TOP_CHANGED))
    for column, (label, key) in zip(st.columns(len(labels)), labels, strict=True):
        column.metric(label, summary[key], border=True)
    if result.changed.empty:
        st.success("No logged question would change its outcome.", icon=":material/check:")
    else:
        st.dataframe(result.changed, hide_index=True, width="stretch", key="tuning_replay",
                     column_order=CHANGED_COLUMNS, column_config=CHANGED_CONFIG)
    if result.skipped:
        with st.expander(f"{len(result.skipped)} logged question(s) could not be replayed"):
            st.markdown("\n".join(f"- {reason}" for reason in result.skipped))
