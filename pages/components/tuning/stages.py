"""The tuning page's retrieval-stage panel: term match and re-ranking switched on and off at the
chosen point, and per-type points, applied only when cross-validation shows they win."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pandas as pd
import streamlit as st

from pages.components.common.format import words
from pages.components.common.shared import AppContext
from pages.components.tuning.sets import display_path
from rag.answer.query_types import TYPE_LABELS
from rag.errors import RagError
from rag.tuning.evaluate import Evaluation, book_sections
from rag.tuning.per_type import cross_validate
from rag.tuning.settings_writer import write_type_points
from rag.tuning.stages import stage_comparison

TYPES_APPLIED_KEY = "_tuning_types_applied"
REPORT_KEY = "_tuning_types_report"  # (set name, size, TypeReport) of the last check
STAGE_CONFIG = {
    "variant": st.column_config.TextColumn("Variant", width=190),
    "w_terms": st.column_config.NumberColumn("Term match weight", format="%.2f", width=110),
    "rerank": st.column_config.TextColumn("Re-ranking", width=90),
    "hit_at_k": st.column_config.NumberColumn("hit@k", format="%.3f", width=70),
    "mrr": st.column_config.NumberColumn("MRR", format="%.3f", width=70),
    "ndcg_at_k": st.column_config.NumberColumn("nDCG@k", format="%.3f", width=70),
    "f1": st.column_config.NumberColumn("F1", format="%.3f", width=70),
    "false_answer_rate": st.column_config.NumberColumn("False answers", format="%.3f",
                                                       width=90),
}


@st.cache_data(show_spinner="Ranking every question with each stage on and off…",
               max_entries=8)
def _comparison(_ctx: AppContext, _ev: Evaluation, key: tuple, w: float, t: float) -> list[dict]:
    s = dataclasses.replace(_ctx.settings.retrieval, w_dense=w, threshold=t)
    return stage_comparison(_ctx.index, _ev.questions, _ev.pools, s, book_sections(_ctx.index))


def stages_panel(ctx: AppContext, ev: Evaluation, set_name: str, set_hash: str, w: float,
                 t: float) -> None:
    st.caption("The same questions ranked as the app ranks them at the chosen point, with each "
               "stage switched on or off (re-ranking by the offline re-ranker).")
    rows = _comparison(ctx, ev, (set_hash, ctx.settings.w_terms, ctx.settings.rerank), w, t)
    frame = pd.DataFrame(rows)
    frame["variant"] = [v[:1].upper() + v[1:] for v in frame["variant"]]
    st.dataframe(frame, hide_index=True, width="stretch", column_config=STAGE_CONFIG)
    types_panel(ctx, ev, set_name)


def types_panel(ctx: AppContext, ev: Evaluation, set_name: str) -> None:
    s = ctx.settings
    active = ", ".join(f"{TYPE_LABELS.get(k, k)} {p.get('w_dense', 0):.2f}/"
                       f"{p.get('threshold', 0):.2f}" for k, p in s.type_settings.items())
    st.markdown("**Per-type points** — " + (f"active: {active}." if active else
                                             "none active: one point serves every question."))
    if st.button("Check per-type points (5-fold cross-validation)",
                 icon=":material/category:", key="tuning_types_check"):
        report = cross_validate(ev.questions, [ev.pools[q.question] for q in ev.questions],
                                s.top_k, ev.recommendation.objective)
        st.session_state[REPORT_KEY] = (set_name, len(ev.questions), report)
    if message := st.session_state.pop(TYPES_APPLIED_KEY, None):
        st.success(message, icon=":material/check_circle:")
    stored = st.session_state.get(REPORT_KEY)
    if stored and stored[:2] == (set_name, len(ev.questions)):
        _show_report(ctx, stored[2], set_name)


def _show_report(ctx: AppContext, report, set_name: str) -> None:
    counts = ", ".join(f"{TYPE_LABELS[k]} {n}" for k, n in report.counts.items() if n)
    st.caption(f"In-scope questions per type (from the set's categories): {counts or 'none'}.")
    if report.points:
        st.dataframe(pd.DataFrame([{"type": TYPE_LABELS.get(k, k), **p}
                                   for k, p in report.points.items()]), hide_index=True)
    (st.success if report.adopt else st.info)(words(report.reason))
    if report.adopt and st.button("Apply per-type points", key="tuning_types_apply",
                                  icon=":material/check:"):
        _apply(ctx, report, set_name)


def _apply(ctx: AppContext, report, set_name: str) -> None:
    s = ctx.settings
    provenance = {"question_set": set_name, "objective": "per-type cross-validation",
                  "date": dt.date.today().isoformat(), "book": display_path(s.book_dir),
                  "single_f1": report.single_f1, "per_type_f1": report.per_type_f1}
    try:
        write_type_points(s.settings_file, report.points, s.embedder, provenance)
    except (RagError, OSError) as e:
        st.error(f"Not applied: {e}", icon=":material/error:")
        return
    st.session_state.pop(REPORT_KEY, None)
    st.session_state[TYPES_APPLIED_KEY] = (
        f"Applied per-type points to {display_path(s.settings_file)}; the chat uses them from "
        "its next question.")
    st.rerun()
