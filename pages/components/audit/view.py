"""The audit explorer's pieces: filters, KPIs, the paged log with its drill-down, the SQL console
and the exports (charts are in audit_charts.py). Every number comes from the audit store."""

from __future__ import annotations

import dataclasses
import math
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import streamlit as st

from pages.components.common.book_scope import book_filter, book_label
from pages.components.common.tables import build_filters, kpi_values
from rag.answer.guardrails import REASON_CODES
from rag.answer.query_types import QUERY_TYPES, TYPE_LABELS
from rag.audit.filters import STATUSES, AuditFilters
from rag.audit.state import DAMAGED, FAILING
from rag.config import Settings
from rag.errors import AuditError
from rag.providers.registry import LLMS
from rag.types import MODE_NAMES, MODES

LIST_CONFIG = {
    "timestamp": st.column_config.DatetimeColumn("Time (UTC)", format="YYYY-MM-DD HH:mm:ss",
                                                 width=140),
    "user_query_text": st.column_config.TextColumn("Question", width=250),
    "book": st.column_config.TextColumn("Book", width=130),
    "status": st.column_config.TextColumn("Status", width=66),
    "query_type": st.column_config.TextColumn("Type", width=90,
                                              help="The question's type, which steered its "
                                                   "retrieval."),
    "mode_used": st.column_config.TextColumn("Mode used", width=100),
    "shown_confidence": st.column_config.ProgressColumn(
        "Confidence", format="%.2f", min_value=0.0, max_value=1.0, width=100,
        help="As the chat showed it: for a question refused before any answer was drafted, "
             "retrieval's score (the chat's 'Retrieval' badge)."),
    "total_latency_ms": st.column_config.NumberColumn("Latency ms", format="%.0f", width=80),
    "reason_codes": st.column_config.ListColumn("Guardrails", width=150),
    "llm_provider": st.column_config.TextColumn("Answerer", width=80),
    "client_id": st.column_config.TextColumn("Client", width=100,
                                             help="Who asked: an API key's name, a signed-in "
                                                  "role (role:…), or local."),
}
PAGE_SIZES = (25, 50, 100)


def filters(reader, settings: Settings) -> AuditFilters:
    """The filter bar, this book preselected; values survive page switches."""
    today = datetime.now(UTC).date()
    with st.container(border=True):
        # The date range gets 3/5 of a row: "2026/10/31 – 2026/11/29" and its calendar button
        # need ~240 px; in 2/9 of the row it was cut to "2026/10/31 – 2026/11" in a 1400 px
        # window and to its start date at 1100 (seen in Chromium); now whole down to 900.
        row = st.columns([2, 3], gap="small")
        books = book_filter(reader, settings, "audit_book", row[0])
        days = row[1].date_input("Time range (UTC)", (today - timedelta(days=29), today),
                                 key="audit_days", persist_state="session")
        row = st.columns(4, gap="small")
        modes = row[0].multiselect("Mode", MODES, format_func=MODE_NAMES.get, key="audit_modes",
                                   persist_state="session", placeholder="All modes")
        statuses = row[1].multiselect("Status", STATUSES, key="audit_statuses",
                                      persist_state="session", placeholder="All statuses")
        providers = row[2].multiselect("Answerer", list(LLMS), key="audit_providers",
                                       persist_state="session", placeholder="All answerers")
        reasons = row[3].multiselect("Guardrail reason", REASON_CODES, key="audit_reasons",
                                     persist_state="session", placeholder="Any or none")
        row = st.columns([2, 2, 2, 3], gap="small")  # the search box's label on one line
        types = row[0].multiselect("Question type", QUERY_TYPES, key="audit_types",
                                   format_func=TYPE_LABELS.get, persist_state="session",
                                   placeholder="All types")
        clients = row[1].multiselect("Client", _clients(reader), key="audit_clients",
                                     format_func=lambda c: c or "unknown (before clients)",
                                     persist_state="session", placeholder="All clients")
        confidence = row[2].slider("Confidence", 0.0, 1.0, (0.0, 1.0), 0.05, key="audit_conf",
                                   persist_state="session")
        text = row[3].text_input("Search questions and answers", key="audit_text",
                                 persist_state="session", placeholder="e.g. encoder")
    days = tuple(days) if isinstance(days, (tuple, list)) else (days,)
    chosen = build_filters(days if days else None, modes, statuses, confidence, reasons,
                           providers, text)
    return dataclasses.replace(chosen, books=books, query_types=tuple(types),
                               clients=tuple(clients))


def state_notice(audit) -> None:
    """What the store did or cannot do (rag.audit.state): a damaged file moved aside, or
    answers waiting in the spool for a reason other than a busy file (which the read says)."""
    state = audit.state()
    if state.moved_aside:
        st.warning(f"The audit file was damaged and was moved to `{state.moved_aside}` (kept, "
                   "nothing deleted); a new one was started. Questions answered before the move "
                   "are in the moved file.", icon=":material/build:")
    if state.code in (DAMAGED, FAILING):
        st.error(state.message, icon=":material/error:")


def _clients(reader) -> list[str]:
    try:
        return reader.clients()
    except AuditError:  # the filter bar still renders; the tables below say what is wrong
        return []


def kpis(reader, f: AuditFilters) -> int:
    stats = reader.stats(f)
    for column, (label, value) in zip(st.columns(5), kpi_values(stats), strict=True):
        column.metric(label, value, border=True)
    return int(stats.get("total") or 0)


def log_table(reader, f: AuditFilters, total: int) -> str | None:
    """One page of logs, newest first, the exports below it; returns the selected row's log_id.

    The exports sit under the table: above it, the table's hover toolbar (search, download,
    full screen) covered the Parquet button."""
    size_col, page_col, info_col = st.columns([1, 1, 4], vertical_alignment="bottom")
    size = size_col.selectbox("Rows per page", PAGE_SIZES, key="audit_page_size")
    pages = max(1, math.ceil(total / size))
    if st.session_state.get("audit_page", 1) > pages:  # the filters left fewer pages
        st.session_state["audit_page"] = 1
    page = page_col.number_input("Page", 1, pages, 1, key="audit_page")
    view = (f, size, page)
    if st.session_state.get("_audit_view") != view:  # a row number means nothing on new rows
        st.session_state.pop("audit_table", None)
        st.session_state["_audit_view"] = view
    first = (page - 1) * size
    info_col.caption(f"Rows {first + 1 if total else 0}–{min(first + size, total)} of {total}. "
                     "Select a row to see everything recorded for it.")
    frame = reader.query_logs(f, limit=size, offset=first)
    frame["book"] = [book_label(i, t) for i, t in zip(frame["book_id"], frame["book_title"],
                                                      strict=True)]
    frame["query_type"] = [TYPE_LABELS.get(t, "") if isinstance(t, str) else ""
                           for t in frame["query_type"]]
    event = st.dataframe(frame, key="audit_table", hide_index=True, width="stretch",
                         column_order=list(LIST_CONFIG), column_config=LIST_CONFIG,
                         on_select="rerun", selection_mode="single-row")
    csv_col, parquet_col, _ = st.columns([1, 1, 4], vertical_alignment="center")
    exports(reader, f, total, csv_col, parquet_col)
    rows = list(event.selection.rows) if event and event.selection else []
    return str(frame.iloc[rows[0]]["log_id"]) if rows and rows[0] < len(frame) else None


def exports(reader, f: AuditFilters, total: int, left, right) -> None:
    """CSV and Parquet of every filtered row (all columns), written only when clicked."""
    def make(fmt: str):
        def build() -> bytes:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / f"audit.{fmt}"
                reader.export(f, path, fmt)
                return path.read_bytes()
        return build

    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M")
    scope = (f.books[0] or "unknown-book") if len(f.books) == 1 else "all-books"
    name = f"folio-audit-{scope}-{stamp}"
    what = (f"All {total} filtered rows, every column "
            f"({'every book' if not f.books else 'the book chosen in the filter'}).")
    left.download_button("CSV", make("csv"), f"{name}.csv", "text/csv",
                         icon=":material/download:", on_click="ignore", disabled=not total,
                         width="stretch", help=what)
    right.download_button("Parquet", make("parquet"), f"{name}.parquet",
                          "application/vnd.apache.parquet", icon=":material/download:",
                          on_click="ignore", disabled=not total, width="stretch", help=what)


def console(audit, book_id: str) -> None:
    st.caption("One read-only statement over `book_logs` (this book's questions, archived "
               "months included), `audit_logs`, `audit_archive` and `audit_all` (every book). "
               "Writes, file access and extensions are refused.")
    sql = st.text_area("SQL", "SELECT status, count(*) AS questions, round(avg(confidence_score), "
                       "3) AS mean_confidence\nFROM book_logs GROUP BY status ORDER BY "
                       "questions DESC", height=120, key="audit_sql", persist_state="session")
    cap_col, run_col, _ = st.columns([1, 1, 3], vertical_alignment="bottom")
    max_rows = cap_col.number_input("Row cap", 1, 10_000, 1000, key="audit_sql_rows")
    if run_col.button("Run query", type="primary", icon=":material/play_arrow:"):
        try:
            st.session_state["_audit_console"] = (
                sql, audit.run_console_query(sql, max_rows, 5.0, book_id=book_id))
        except AuditError as e:
            st.session_state["_audit_console"] = (sql, e)
    result = st.session_state.get("_audit_console")
    if not result or result[0] != sql:
        return
    outcome = result[1]
    if isinstance(outcome, AuditError):
        message = str(outcome)
        (st.warning if message.startswith("Query refused") else st.error)(
            message, icon=":material/block:")
        return
    st.dataframe(outcome, hide_index=True, width="stretch")
    if outcome.attrs.get("truncated"):
        st.caption(f"Showing the first {max_rows} rows; raise the row cap or add LIMIT.")
