"""The audit explorer's pieces: filters, KPIs, charts, the paged log with its drill-down, the SQL
console and the exports. Every number comes from the audit store's query functions."""

from __future__ import annotations

import math
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from rag.audit_filters import STATUSES, AuditFilters
from rag.errors import AuditError
from rag.guardrails import REASON_CODES
from rag.providers.registry import LLMS
from rag.types import MODES
from rag.ui_format import MODE_LABELS
from rag.ui_tables import book_sections, build_filters, kpi_values, section_name

COLORS = {"answered": "#2f5d8a", "refused": "#e39b3a", "errors": "#c0392b", "p50": "#7fa7cf",
          "p95": "#2f5d8a", "count": "#2f5d8a"}
LIST_CONFIG = {
    "timestamp": st.column_config.DatetimeColumn("Time (UTC)", format="YYYY-MM-DD HH:mm:ss",
                                                 width=140),
    "user_query_text": st.column_config.TextColumn("Question", width=250),
    "status": st.column_config.TextColumn("Status", width=66),
    "mode_used": st.column_config.TextColumn("Mode used", width=100),
    "confidence_score": st.column_config.ProgressColumn("Confidence", format="%.2f",
                                                        min_value=0.0, max_value=1.0, width=100),
    "total_latency_ms": st.column_config.NumberColumn("Latency ms", format="%.0f", width=80),
    "reason_codes": st.column_config.ListColumn("Guardrails", width=150),
    "llm_provider": st.column_config.TextColumn("Answerer", width=80),
}
PAGE_SIZES = (25, 50, 100)
DAY_MS = 86_400_000


def filters() -> AuditFilters:
    """The filter bar; values survive page switches."""
    today = datetime.now(UTC).date()
    with st.container(border=True):
        row = st.columns([2, 2, 2, 2], gap="small")
        days = row[0].date_input("Time range (UTC)", (today - timedelta(days=29), today),
                                 key="audit_days", persist_state="session")
        modes = row[1].multiselect("Mode", MODES, format_func=MODE_LABELS.get, key="audit_modes",
                                   persist_state="session", placeholder="All modes")
        statuses = row[2].multiselect("Status", STATUSES, key="audit_statuses",
                                      persist_state="session", placeholder="All statuses")
        providers = row[3].multiselect("Answerer", list(LLMS), key="audit_providers",
                                       persist_state="session", placeholder="All answerers")
        row = st.columns([2, 2, 4], gap="small")
        confidence = row[0].slider("Confidence", 0.0, 1.0, (0.0, 1.0), 0.05, key="audit_conf",
                                   persist_state="session")
        reasons = row[1].multiselect("Guardrail reason", REASON_CODES, key="audit_reasons",
                                     persist_state="session", placeholder="Any or none")
        text = row[2].text_input("Search questions and answers", key="audit_text",
                                 persist_state="session", placeholder="e.g. encoder")
    days = tuple(days) if isinstance(days, (tuple, list)) else (days,)
    return build_filters(days if days else None, modes, statuses, confidence, reasons,
                         providers, text)


def kpis(reader, f: AuditFilters) -> int:
    stats = reader.stats(f)
    for column, (label, value) in zip(st.columns(5), kpi_values(stats), strict=True):
        column.metric(label, value, border=True)
    return int(stats.get("total") or 0)


def _figure(height: int = 300) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(height=height, margin={"l": 10, "r": 10, "t": 28, "b": 10},
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.0,
                              "xanchor": "right", "x": 1})
    return fig


def _counts(values) -> dict:
    """A y axis for whole counts: no 0.2-question ticks when there are only a few."""
    top = max([0, *[int(v) for v in values]])
    return {"rangemode": "tozero", "dtick": 1} if top <= 6 else {"rangemode": "tozero"}


def charts(reader, f: AuditFilters, chunks) -> None:
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**Questions per day**")
        days = reader.questions_per_day(f)
        fig = _figure()
        for name in ("answered", "refused", "errors"):
            fig.add_bar(x=days["day"], y=days[name], name=name, marker_color=COLORS[name],
                        width=DAY_MS * 0.8)
        period = [f.start, f.end] if f.start and f.end else None
        fig.update_layout(barmode="stack", xaxis={"type": "date", "range": period},
                          yaxis=_counts(days["questions"]))
        st.plotly_chart(fig, key="chart_per_day")
        st.markdown("**Confidence**")
        hist = reader.confidence_histogram(f, 10)
        fig = _figure()
        fig.add_bar(x=(hist["bin_start"] + hist["bin_end"]) / 2, y=hist["count"],
                    width=(hist["bin_end"] - hist["bin_start"]) * 0.92, name="answers",
                    marker_color=COLORS["count"],
                    hovertemplate="%{x:.2f} ± 0.05: %{y} answers<extra></extra>")
        fig.update_layout(xaxis={"range": [0, 1], "dtick": 0.1, "title": "confidence"},
                          yaxis={"title": "answers", **_counts(hist["count"])})
        st.plotly_chart(fig, key="chart_confidence")
    with right:
        st.markdown("**Latency per stage (ms)**")
        lat = reader.latency_by_stage(f)
        fig = _figure()
        for name in ("p50", "p95"):
            fig.add_bar(x=lat["stage"], y=lat[f"{name}_ms"], name=name, marker_color=COLORS[name])
        fig.update_layout(barmode="group")
        st.plotly_chart(fig, key="chart_latency")
        st.markdown("**Refusal reasons**")
        reasons = reader.refusal_reasons(f)
        if reasons.empty:
            st.caption("No guardrail acted on these questions.")
        else:
            fig = _figure(max(160, 34 * len(reasons) + 60))
            fig.add_bar(y=reasons["reason_code"], x=reasons["refused"], orientation="h",
                        name="refused", marker_color=COLORS["refused"])
            fig.add_bar(y=reasons["reason_code"], x=reasons["total"] - reasons["refused"],
                        orientation="h", name="warned only", marker_color=COLORS["p50"])
            fig.update_layout(barmode="stack", yaxis={"autorange": "reversed",
                                                      "automargin": True})
            st.plotly_chart(fig, key="chart_reasons")
    _sections(reader, f, chunks)


def _sections(reader, f: AuditFilters, chunks) -> None:
    labels = book_sections(chunks)
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**Most-cited sections**")
        cited = reader.sections_cited(f, 10)
        if cited.empty:
            st.caption("No answer cited a section yet.")
        else:
            fig = _figure(max(160, 30 * len(cited) + 40))
            fig.add_bar(y=[section_name(s, labels, False) for s in cited["section"]],
                        x=cited["answers"], orientation="h", marker_color=COLORS["count"],
                        name="answers", customdata=[section_name(s, labels) for s in
                                                    cited["section"]],
                        hovertemplate="%{customdata}: %{x} answers<extra></extra>")
            fig.update_layout(yaxis={"autorange": "reversed", "automargin": True})
            st.plotly_chart(fig, key="chart_cited")
        st.markdown("**Most-asked questions**")
        st.dataframe(reader.most_asked(f, 10), hide_index=True, width="stretch",
                     column_order=["question", "count", "answered", "confidence_mean"],
                     column_config={
                         "question": st.column_config.TextColumn("Question", width=300),
                         "count": st.column_config.NumberColumn("Asked", width=60),
                         "answered": st.column_config.NumberColumn("Answered", width=75),
                         "confidence_mean": st.column_config.NumberColumn(
                             "Mean conf.", format="%.2f", width=80)})
    with right:
        never = reader.sections_never_cited(f, list(labels))
        st.markdown(f"**Never-cited sections** ({len(never)} of {len(labels)})")
        st.dataframe([{"section": labels[s], "id": s} for s in never], hide_index=True,
                     width="stretch", height=420, column_config={
                         "section": st.column_config.TextColumn("Section", width=300),
                         "id": st.column_config.TextColumn("Stable ID", width=200)})


def log_table(reader, f: AuditFilters, total: int) -> str | None:
    """One page of logs, newest first; returns the selected row's log_id."""
    size_col, page_col, info_col, csv_col, parquet_col = st.columns(
        [1, 1, 2, 1, 1], vertical_alignment="bottom")
    exports(reader, f, total, csv_col, parquet_col)
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
    event = st.dataframe(frame, key="audit_table", hide_index=True, width="stretch",
                         column_order=list(LIST_CONFIG), column_config=LIST_CONFIG,
                         on_select="rerun", selection_mode="single-row")
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
    what = f"All {total} filtered rows, every column."
    left.download_button("CSV", make("csv"), f"folio-audit-{stamp}.csv", "text/csv",
                         icon=":material/download:", on_click="ignore", disabled=not total,
                         width="stretch", help=what)
    right.download_button("Parquet", make("parquet"), f"folio-audit-{stamp}.parquet",
                          "application/vnd.apache.parquet", icon=":material/download:",
                          on_click="ignore", disabled=not total, width="stretch", help=what)


def console(audit) -> None:
    st.caption("One read-only statement over `audit_logs` (and `audit_archive`, `audit_all`). "
               "Writes, file access and extensions are refused.")
    sql = st.text_area("SQL", "SELECT status, count(*) AS questions, round(avg(confidence_score), "
                       "3) AS mean_confidence\nFROM audit_logs GROUP BY status ORDER BY "
                       "questions DESC", height=120, key="audit_sql", persist_state="session")
    cap_col, run_col, _ = st.columns([1, 1, 3], vertical_alignment="bottom")
    max_rows = cap_col.number_input("Row cap", 1, 10_000, 1000, key="audit_sql_rows")
    if run_col.button("Run query", type="primary", icon=":material/play_arrow:"):
        try:
            st.session_state["_audit_console"] = (sql, audit.run_console_query(sql, max_rows, 5.0))
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
