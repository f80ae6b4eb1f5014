"""The retrieval inspector's pieces: controls, candidate table, contribution chart, chunk reader
and the side-by-side comparison. Ranking is rag.retrieve.rank_candidates, run per slider move."""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st

from pages.components.common.format import markdown_html
from pages.components.common.shared import AppContext, index_key
from pages.components.common.tables import (
    candidates_frame,
    contributions_frame,
    rank_changes,
    reason_text,
)
from pages.components.inspector.stages import stage_controls, stage_defaults
from rag.answer.response import book_section_names
from rag.config import Settings
from rag.retrieval.hybrid import CandidatePool, collect_candidates
from rag.types import Retrieval, RetrievalSettings

DEFAULTS_KEY = "_insp_defaults"  # the active settings the sliders were last defaulted from
POOL_SIZES = (10, 20, 30, 50, 75, 100, 150, 200, 300, 500)
DENSE_COLOR, BM25_COLOR, LINE_COLOR = "#2f5d8a", "#e39b3a", "#c0392b"
SCORE = st.column_config.NumberColumn(format="%.3f", width="small")
TABLE_CONFIG = {
    "rank": st.column_config.NumberColumn("Rank", width=48),
    "section": st.column_config.TextColumn("Section", width=210),
    "chapter": st.column_config.TextColumn("Chapter", width=120),
    "link": st.column_config.LinkColumn("Link", display_text="open ↗", width=62),
    "stable": st.column_config.CheckboxColumn("Stable", width=56,
                                              help="The section has an explicit {#anchor}."),
    "dense": st.column_config.NumberColumn("Dense", format="%.3f", width=62),
    "bm25_raw": st.column_config.NumberColumn("BM25 raw", format="%.2f", width=74),
    "bm25": st.column_config.NumberColumn("BM25", format="%.3f", width=62,
                                          help="BM25 divided by the book's best for the query."),
    "terms": st.column_config.NumberColumn("Term match", format="%.3f", width=74,
                                           help="Share of the question's terms in the chunk."),
    "authority": st.column_config.NumberColumn("Authority", format="%.2f", width=68),
    "recency": st.column_config.NumberColumn("Recency", format="%.2f", width=64),
    "part": st.column_config.NumberColumn(
        "Numbered part", format="%+.1f", width=100,
        help="The question names a numbered part (Module 2, week 5): +1 where the section sits "
             "in it, -1 in another of its kind, ±0.5 where only its text names one; the "
             "blended score moves by 0.15 × this."),
    "blended": st.column_config.NumberColumn("Blended", format="%.3f", width=68),
    "rerank": st.column_config.NumberColumn("Re-rank", format="%.3f", width=66,
                                            help="The re-ranker's score (empty: not re-scored)."),
    "moved": st.column_config.TextColumn("Re-rank moved", width=96,
                                         help="Whether re-ranking moved the chunk across the "
                                              "top-k cut."),
    "passed": st.column_config.CheckboxColumn("Passed", width=58),
    "selected": st.column_config.CheckboxColumn("Top-k", width=54),
    "reason": st.column_config.TextColumn("Excluded because", width=130),
    "change": st.column_config.TextColumn("Change", width=64),
    "rank_before": st.column_config.NumberColumn("Rank A", width=62),
    "blended_before": st.column_config.NumberColumn("Blended A", format="%.3f", width=74),
}
TABLE_COLUMNS = ["rank", "section", "link", "stable", "dense", "bm25_raw", "bm25", "blended",
                 "passed", "selected", "reason", "chapter"]
SIGNAL_COLUMNS = {"terms": "w_terms", "authority": "w_authority", "recency": "w_recency"}
RERANK_COLUMNS = ["rerank", "rank_before", "moved"]


def table_columns(settings: RetrievalSettings, with_part: bool = False) -> list[str]:
    """The table's columns: a signal's column once its weight counts, the numbered part's when
    the question names one (`with_part`), re-rank columns when re-ranking is on (each beside
    the scores it changes)."""
    columns = list(TABLE_COLUMNS)
    at = columns.index("blended")
    signals = [c for c, w in SIGNAL_COLUMNS.items() if c == "terms" or getattr(settings, w) > 0]
    signals += ["part"] if with_part else []
    columns[at:at] = signals
    if settings.rerank != "off":
        at = columns.index("blended") + 1
        columns[at:at] = RERANK_COLUMNS
    return columns


@dataclass(frozen=True)
class Controls:
    a: RetrievalSettings
    b: RetrievalSettings | None  # set in compare mode


@st.cache_resource(max_entries=64, show_spinner="Collecting candidates…")
def cached_pool(key: tuple, built_at: str, question: str, pool_size: int,
                _ctx: AppContext) -> CandidatePool:
    """Embedding and searching happen once per question and pool size; sliders only re-rank."""
    return collect_candidates(_ctx.index, question, pool_size)


def pool_for(ctx: AppContext, question: str, pool_size: int) -> CandidatePool:
    return cached_pool(index_key(ctx.settings), str(ctx.status.get("built_at", "")), question,
                       pool_size, ctx)


def control_defaults(s: Settings) -> dict[str, float | int | str]:
    """Each control's value under the active settings, by widget key."""
    return {"insp_w": s.w_dense, "insp_t": s.threshold, "insp_k": min(s.top_k, 20),
            "insp_pool": s.candidate_pool, "insp_w_b": round(max(0.0, s.w_dense - 0.35), 2),
            "insp_t_b": s.threshold, **stage_defaults(s)}


def reset_controls(settings: Settings) -> None:
    """Every control back to the active settings. The values are written to the widgets' keys
    (a button's on_click runs before the script), never just deleted: a deleted key re-renders
    the widget at its old default, so the browser would keep showing, and send back, the value
    it had while the table is ranked at the default."""
    st.session_state.update(control_defaults(settings))


def _ensure_defaults(settings: Settings) -> None:
    """Controls not set yet start at the active settings (set through session state, so no
    widget is given a value of its own: one source of truth)."""
    for key, value in control_defaults(settings).items():
        if key not in st.session_state:
            st.session_state[key] = value


def _weight(suffix: str, label: str) -> float:
    w = st.slider(f"Dense weight{label}", 0.0, 1.0, step=0.01, key=f"insp_w{suffix}",
                  persist_state="session",
                  help="Blended = dense weight × dense + BM25 weight × normalised BM25.")
    st.caption(f"BM25 weight{label} = 1 − dense = **{1 - w:.2f}**")
    return w


def _threshold(suffix: str, label: str) -> float:
    return st.slider(f"Threshold{label}", 0.0, 1.0, step=0.01, key=f"insp_t{suffix}",
                     persist_state="session",
                     help="Candidates whose blended score is below this are not used.")


def controls(ctx: AppContext, compare: bool) -> Controls:
    """Sliders defaulting to the active settings; in compare mode a second weight/threshold.
    When the active settings change (a tuning Apply), the sliders move to the new values."""
    s = ctx.settings
    active = (s.w_dense, s.threshold, s.top_k, s.candidate_pool, s.w_terms, s.w_authority,
              s.w_recency, s.rerank, s.rerank_weight, s.rerank_depth)
    if st.session_state.get(DEFAULTS_KEY, active) != active:
        reset_controls(s)
    st.session_state[DEFAULTS_KEY] = active
    _ensure_defaults(s)
    cols = st.columns(4, gap="medium")
    with cols[0]:
        w = _weight("", " A" if compare else "")
    with cols[1]:
        t = _threshold("", " A" if compare else "")
    if compare:
        with cols[2]:
            wb = _weight("_b", " B")
        with cols[3]:
            tb = _threshold("_b", " B")
        cols = st.columns(4, gap="medium")[:2]
    else:
        cols = cols[2:]
    with cols[0]:
        k = st.slider("Top-k", 1, 20, key="insp_k", persist_state="session")
    with cols[1]:
        pool = st.select_slider("Candidate pool", sorted({*POOL_SIZES, s.candidate_pool}),
                                key="insp_pool", persist_state="session",
                                help="Top-N by dense ∪ top-N by BM25. Changing it searches "
                                     "again; every other control only re-ranks.")
    stages = stage_controls(s, ctx.index)
    a = RetrievalSettings(w, t, k, pool, **stages)
    return Controls(a, RetrievalSettings(wb, tb, k, pool, **stages) if compare else None)


def candidate_table(retrieval: Retrieval, ctx: AppContext, key: str) -> int | None:
    """The sortable table of every candidate; returns the selected row (position) if any."""
    frame = candidates_frame(retrieval, ctx.settings.url_template, ctx.settings.base_url,
                             book_section_names(ctx.index))
    event = st.dataframe(frame, key=key, hide_index=True, width="stretch", height=380,
                         column_order=table_columns(retrieval.settings,
                                                    any(h.part for h in retrieval.candidates)),
                         column_config={**TABLE_CONFIG, "rank_before": st.column_config.
                                        NumberColumn("Rank before re-rank", width=80)}
                         if retrieval.settings.rerank != "off" else TABLE_CONFIG,
                         on_select="rerun", selection_mode="single-row")
    rows = list(event.selection.rows) if event and event.selection else []
    return rows[0] if rows else None


def contribution_chart(retrieval: Retrieval, limit: int, title: str = "") -> go.Figure:
    frame = contributions_frame(retrieval, limit).iloc[::-1]  # best at the top
    opacity = [1.0 if s == "in top-k" else 0.45 for s in frame["status"]]
    fig = go.Figure()
    parts = [("dense_part", "dense × weight", DENSE_COLOR),
             ("bm25_part", "BM25 × weight", BM25_COLOR)]
    parts += [(f"{name}_part", f"{label} × weight", color) for name, label, color in (
        ("terms", "term match", "#4a9d6e"), ("authority", "authority", "#8e6bb8"),
        ("recency", "recency", "#7f8c8d"), ("part", "numbered part", "#b5651d"))
        if frame[f"{name}_part"].any()]
    for column, name, color in parts:
        fig.add_bar(y=frame["label"], x=frame[column], name=name, orientation="h",
                    marker={"color": color, "opacity": opacity},
                    customdata=frame[["blended", "status"]],
                    hovertemplate="%{y}<br>" + name + " %{x:.3f}<br>blended %{customdata[0]:.3f}"
                                  " · %{customdata[1]}<extra></extra>")
    threshold = retrieval.settings.threshold
    fig.add_vline(x=threshold, line={"color": LINE_COLOR, "dash": "dash", "width": 2},
                  annotation_text=f"threshold {threshold:.2f}",
                  annotation_position="bottom right", annotation_font_color=LINE_COLOR)
    # "relative": a numbered part's move is negative for a section of another part
    fig.update_layout(barmode="relative", height=max(260, 26 * len(frame) + 90),
                      margin={"l": 10, "r": 10, "t": 60 if title else 36, "b": 10},
                      title=title or None,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.0,
                              "xanchor": "left", "x": 0, "traceorder": "normal"},
                      xaxis={"title": "blended score",
                             "range": [min(0.0, float(frame["part_part"].min()) * 1.3),
                                       max(0.5, threshold, retrieval.best_score) * 1.08]},
                      yaxis={"automargin": True, "tickfont": {"size": 11}})
    return fig


def chunk_reader(retrieval: Retrieval, row: int | None, question: str) -> None:
    hit = retrieval.candidates[row if row is not None else 0]
    c = hit.chunk
    where = "Selected row" if row is not None else "Top candidate (select a row to read another)"
    # the whole heading path: "Advantages" sits under one of three options
    path = " › ".join(c.heading_path) if len(c.heading_path) > 1 and \
        c.heading_path[0] == c.chapter_title else f"{c.chapter_title} › {c.section_title}"
    st.markdown(f"**{where}: #{hit.rank} {path}**")
    status = "in top-k" if hit.selected else reason_text(hit.reason) or "passed"
    extra = "".join(f" · {label} {getattr(hit, name):.3f}" for name, label in (
        ("terms", "term match"), ("authority", "authority"), ("recency", "recency"),
        ("part", "numbered part")) if name == "terms" or getattr(hit, name))
    if hit.rerank is not None:
        extra += f" · re-rank {hit.rerank:.3f} (rank before {hit.rank_before})"
    st.caption(f"dense {hit.dense:.3f} · BM25 {hit.bm25:.3f} (raw {hit.bm25_raw:.2f}){extra} · "
               f"blended {hit.blended:.3f} · {status} · {c.token_count} tokens · "
               f"`{c.chapter_id}#{c.section_id}`"
               + ("" if c.stable else " · derived ID"))
    st.markdown('<div class="folio-chunk" style="border:1px solid #dfe3e8;border-radius:6px;'
                'padding:0.7rem 0.9rem;line-height:1.55;max-height:24rem;overflow-y:auto">'
                f"{markdown_html(c.text, question)}</div>", unsafe_allow_html=True)


def compare_view(a: Retrieval, b: Retrieval, limit: int) -> None:
    left, right = st.columns(2, gap="medium")
    with left:
        st.markdown(f"**A** · dense {a.settings.w_dense:.2f} / BM25 {a.settings.w_bm25:.2f} · "
                    f"threshold {a.settings.threshold:.2f}")
        st.dataframe(rank_changes(a, a), hide_index=True, width="stretch", height=380,
                     column_order=["rank", "section", "blended", "selected"],
                     column_config=TABLE_CONFIG)
        st.plotly_chart(contribution_chart(a, limit), key="chart_a")
    with right:
        st.markdown(f"**B** · dense {b.settings.w_dense:.2f} / BM25 {b.settings.w_bm25:.2f} · "
                    f"threshold {b.settings.threshold:.2f}")
        changes = rank_changes(a, b)
        st.dataframe(changes, hide_index=True, width="stretch", height=380,
                     column_order=["rank", "change", "section", "blended", "selected",
                                   "rank_before"], column_config=TABLE_CONFIG)
        st.plotly_chart(contribution_chart(b, limit), key="chart_b")
    moved = changes[changes["change"].isin(["new", "dropped"])]
    if moved.empty:
        st.caption("Both settings select the same chunks.")
    else:
        st.caption("Top-k changes: " + " · ".join(
            f"{r.section} (new at #{r.rank})" if r.change == "new"
            else f"{r.section} (dropped, was #{r.rank_before})" for r in moved.itertuples()))
