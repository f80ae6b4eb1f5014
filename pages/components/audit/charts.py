"""The audit explorer's charts: questions per day, latency, confidence, refusal reasons, and the
most- and never-cited sections. Every number comes from the audit store's query functions, over
the book(s) the filters choose; never-cited sections only for the book being read, whose
sections are known."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from pages.components.common.book_scope import book_label, logged_books
from pages.components.common.tables import book_sections, section_name
from rag.audit.filters import AuditFilters
from rag.config import Settings

COLORS = {"answered": "#2f5d8a", "refused": "#e39b3a", "errors": "#c0392b", "p50": "#7fa7cf",
          "p95": "#2f5d8a", "count": "#2f5d8a"}
DAY_MS = 86_400_000


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


def charts(reader, f: AuditFilters, chunks, settings: Settings) -> None:
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
    _sections(reader, f, chunks, settings)


def cited_names(cited, labels: dict[str, str], current_id: str, titles: dict[str, str],
                with_chapter: bool) -> list[str]:
    """Bar labels: the section as readers know it when it is the current book's, else its
    stable ID; with the book's name when the bars come from more than one book."""
    several = cited["book_id"].nunique() > 1
    return [(section_name(s, labels, with_chapter) if b == current_id else s)
            + (f" · {titles.get(b, book_label(b, None))}" if several else "")
            for b, s in zip(cited["book_id"], cited["section"], strict=True)]


def _sections(reader, f: AuditFilters, chunks, settings: Settings) -> None:
    this_book = f.books == (settings.book_id,)
    labels = book_sections(chunks)  # the current book's sections, by stable id
    books = logged_books(reader)
    titles = {str(b): book_label(b, t) for b, t in zip(books["book_id"], books["book_title"],
                                                       strict=True)}
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**Most-cited sections**")
        cited = reader.sections_cited(f, 10)
        if cited.empty:
            st.caption("No answer cited a section yet.")
        else:
            fig = _figure(max(160, 30 * len(cited) + 40))
            fig.add_bar(y=cited_names(cited, labels, settings.book_id, titles, False),
                        x=cited["answers"], orientation="h", marker_color=COLORS["count"],
                        name="answers",
                        customdata=cited_names(cited, labels, settings.book_id, titles, True),
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
        if not this_book:
            st.markdown("**Never-cited sections**")
            st.caption(f"Counted only for the book Folio is reading, {settings.resolved_title}, "
                       "whose sections are known here: choose it in the Book filter.")
            return
        never = reader.sections_never_cited(f, list(labels))
        st.markdown(f"**Never-cited sections** ({len(never)} of {len(labels)} in "
                    f"{settings.resolved_title})")
        st.dataframe([{"section": labels[s], "id": s} for s in never], hide_index=True,
                     width="stretch", height=420, column_config={
                         "section": st.column_config.TextColumn("Section", width=300),
                         "id": st.column_config.TextColumn("Stable ID", width=200)})
