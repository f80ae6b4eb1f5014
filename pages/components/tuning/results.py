"""The tuning page's results: the recommendation and its margin, the figures beside the current
setting, the reliability table, and the per-question outcomes with a drill-down into the
candidates of one question (the inspector's table, or the inspector itself)."""

from __future__ import annotations

import streamlit as st

from pages.components.common.shared import AppContext
from pages.components.inspector.view import candidate_table
from pages.components.tuning.view import figures_frame, margin_frame, outcome_frame
from rag.retrieval.hybrid import CandidatePool, rank_candidates
from rag.tuning.recommend import Recommendation, calibrate
from rag.tuning.sweep import SweepResult
from rag.types import RetrievalSettings

NUMBER = st.column_config.NumberColumn(format="%.3f", width="small")
FIGURE_CONFIG = {"metric": st.column_config.TextColumn("Metric", width="medium"),
                 "current": NUMBER, "recommended": NUMBER, "chosen": NUMBER,
                 "change": st.column_config.NumberColumn("Δ rec. − current", format="%+.3f")}
QUESTION_COLUMNS = ["question", "outcome", "correct", "top_section", "best_blended", "expected",
                    "category", "scope"]
QUESTION_CONFIG = {
    "question": st.column_config.TextColumn("Question", width="large"),
    "scope": st.column_config.TextColumn("Scope", width="small"),
    "category": st.column_config.TextColumn("Category", width="small"),
    "expected": st.column_config.TextColumn("Expected sections"),
    "top_section": st.column_config.TextColumn("Top hit"),
    "best_blended": st.column_config.NumberColumn("Blended", format="%.3f", width="small"),
    "outcome": st.column_config.TextColumn("Outcome"),
    "correct": st.column_config.CheckboxColumn("Correct", width="small"),
}
MARGIN_CONFIG = {
    "neighbour": st.column_config.TextColumn("Neighbour (dense · threshold)", width="medium"),
    "value": st.column_config.NumberColumn("Objective", format="%.3f", width="small"),
    "drop": st.column_config.NumberColumn("Drop", format="%+.3f", width="small"),
    "meets_limit": st.column_config.CheckboxColumn("Limit met", width="small"),
}
KEY_METRICS = (("f1", "F1", "normal"), ("recall_at_k", "Recall@k", "normal"),
               ("answer_rate", "Answer rate (in scope)", "normal"),
               ("false_answer_rate", "False-answer rate", "inverse"))


def recommendation_summary(rec: Recommendation, current: dict[str, float], title: str) -> None:
    if not rec.feasible:
        st.warning(f"No setting keeps the false-answer rate at or below "
                   f"{100 * (rec.max_far or 0):g} %; shown is the best setting among those with "
                   "the fewest false answers.", icon=":material/warning:")
    st.markdown(f"**Recommended: dense {rec.w_dense:.2f} · BM25 {1 - rec.w_dense:.2f} · "
                f"threshold {rec.threshold:.2f}** · {title} = {rec.value:.3f}")
    st.caption(f"{rec.plateau_size} grid point(s) reach this value; the recommended one lies "
               "deepest inside that plateau, so small changes in the data move it least. "
               f"Current: dense {current['w_dense']:.2f} · threshold {current['threshold']:.2f}.")
    for column, (key, label, colors) in zip(st.columns(len(KEY_METRICS)), KEY_METRICS,
                                            strict=True):
        with column:
            diff = rec.metrics[key] - current[key]
            same = abs(diff) < 5e-4
            st.metric(label, f"{rec.metrics[key]:.3f}",
                      delta="±0.000" if same else f"{diff:+.3f}",
                      delta_color="off" if same else colors,
                      delta_arrow="off" if same else "auto",
                      delta_description=f"vs current {current[key]:.3f}", border=True)


def figures_and_margin(rec: Recommendation, current: dict[str, float],
                       chosen: dict[str, float]) -> None:
    columns = {"current": current, "recommended": rec.metrics}
    if (chosen["w_dense"], chosen["threshold"]) != (rec.w_dense, rec.threshold):
        columns["chosen"] = chosen
    left, right = st.columns([5, 4], gap="large")
    with left:
        st.markdown("**Figures: current setting vs recommended**")
        frame = figures_frame(columns)
        st.dataframe(frame, hide_index=True, width="stretch", height=38 + 35 * len(frame),
                     column_config=FIGURE_CONFIG, key="tuning_figures")
    with right:
        st.markdown("**Margin: the objective one step (±0.05) away**")
        margin = margin_frame(rec)
        if rec.max_far is None:
            margin = margin.drop(columns="meets_limit")
        st.dataframe(margin, hide_index=True, width="stretch", key="tuning_margin",
                     column_config=MARGIN_CONFIG)
        worst = rec.margin.get("worst_drop", 0.0)
        st.caption("Flat around the point: a robust choice." if worst <= 0.005 else
                   f"The objective drops by up to {worst:.3f} a step away: a sharp optimum.")


def calibration_table(result: SweepResult, w: float, t: float, is_recommended: bool) -> None:
    where = "the recommended point" if is_recommended else "the chosen point"
    st.markdown(f"**Reliability at {where} (dense {w:.2f} · threshold {t:.2f})**")
    st.dataframe(calibrate(result, w, t), hide_index=True, width="stretch",
                 key="tuning_calibration",
                 column_config={"level": "Level", "answered": st.column_config.NumberColumn(
                                    "Answered", help="In-scope questions answered"),
                                "cites_expected": st.column_config.NumberColumn(
                                    "Cite expected", help="…whose hits cite an expected section"),
                                "rate": st.column_config.NumberColumn("Rate", format="percent"),
                                "false_answers": st.column_config.NumberColumn(
                                    "False answers", help="Out-of-scope questions answered")})
    st.caption("Confidence here is 0.6 × best blended + 0.4 × 0.80 (no stated generation "
               "confidence); high > 0.85, medium 0.70–0.85, low < 0.70. A calibrated setting "
               "cites an expected section more often at higher levels.")


def question_outcomes(result: SweepResult, w: float, t: float) -> str | None:
    """The per-question table at (w, t); returns the selected question, if any."""
    table = outcome_frame(result, w, t)
    wrong = int((~table["correct"]).sum())
    head, toggle = st.columns([3, 1], vertical_alignment="bottom")
    with head:
        st.markdown(f"**{len(table)} questions at dense {w:.2f} · threshold {t:.2f}:** "
                    f"{int(table['answered'].sum())} answered, {wrong} not as expected. "
                    "Select a row to see its candidates.")
    with toggle:
        only_wrong = st.toggle("Only the wrong ones", key="tuning_only_wrong",
                               disabled=wrong == 0)
    if only_wrong:
        table = table[~table["correct"]].reset_index(drop=True)
    event = st.dataframe(table, key="tuning_questions", hide_index=True, width="stretch",
                         height=360, column_order=QUESTION_COLUMNS,
                         column_config=QUESTION_CONFIG, on_select="rerun",
                         selection_mode="single-row")
    rows = list(event.selection.rows) if event and event.selection else []
    return str(table.iloc[rows[0]]["question"]) if rows and rows[0] < len(table) else None


def drill_down(ctx: AppContext, question: str, pool: CandidatePool, w: float, t: float) -> None:
    s = ctx.settings
    settings = RetrievalSettings(w, t, s.top_k, s.candidate_pool)
    retrieval = rank_candidates(pool, settings)
    head, button = st.columns([4, 1], vertical_alignment="bottom")
    with head:
        st.markdown(f"**Candidates for:** {question}")
        st.caption(f"{len(retrieval.candidates)} candidates · {len(retrieval.hits)} in the top-k "
                   f"· best blended {retrieval.best_score:.3f} at dense {w:.2f} · threshold "
                   f"{t:.2f}")
    with button:
        if st.button("Open in the inspector", icon=":material/manage_search:",
                     key="tuning_open_inspector", width="stretch"):
            st.session_state.update({"inspector_question": question, "insp_w": w, "insp_t": t,
                                     "insp_k": min(s.top_k, 20),
                                     "insp_pool": s.candidate_pool, "insp_compare": False})
            st.switch_page("pages/inspector.py")
    candidate_table(retrieval, ctx, key="tuning_candidates")
