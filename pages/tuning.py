"""Tuning: sweep dense weight × threshold on a labelled question set, see what every setting does,
pick an operating point, apply it, and replay logged questions under it."""

import streamlit as st

from pages.components.tuning import charts
from pages.components.tuning import results
from pages.components.common.shared import AppContext, app_context, require_pipeline
from pages.components.tuning.apply import apply_panel, replay_panel
from pages.components.tuning.run import cached_pools, chosen_point, objective_controls, sweep_for
from pages.components.tuning.sets import ActiveSet, display_path, question_set_panel
from pages.components.tuning.view import (
    current_figures,
    curves_frame,
    distribution_frame,
    objective_matrix,
    objective_title,
    provenance,
)
from rag.errors import RagError
from rag.tuning.question_sets import content_hash
from rag.tuning.questions import unknown_entries
from rag.tuning.recommend import Recommendation, recommend
from rag.tuning.sweep import SweepResult


def show_results(ctx: AppContext, active: ActiveSet, result: SweepResult, rec: Recommendation,
                 current: dict[str, float], title: str, max_far: float | None) -> None:
    """Everything that follows from the sweep, at the operating point the sliders choose."""
    s, questions = ctx.settings, active.questions
    sections = sorted({c.section_ref for c in ctx.index.chunks})
    if warnings := unknown_entries(questions, sections):
        st.warning(f"{len(warnings)} expected section(s) match nothing in this book (typos or "
                   "renamed anchors):  \n" + "  \n".join(warnings[:8])
                   + ("  \n…" if len(warnings) > 8 else ""), icon=":material/link_off:")
    st.caption(f"{len(questions)} questions ({result.n_in_scope} in scope, "
               f"{result.n_out_of_scope} out of scope, {int(result.arrays.refused.sum())} "
               f"refused by the capability guardrail whatever the scores) · top-k {s.top_k} · "
               f"pool {s.candidate_pool} · embedder {s.embedder}")
    results.recommendation_summary(rec, current, title)

    st.subheader("Operating point", anchor=False)
    st.caption("Starts at the recommendation; the charts, the per-question table, Apply and the "
               "replay all follow these two sliders.")
    w, t = chosen_point(rec)
    chosen = result.at(w, t)
    results.figures_and_margin(rec, current, chosen)
    left, right = st.columns(2, gap="large")
    with left:
        st.plotly_chart(charts.heatmap_figure(
            objective_matrix(result, rec.objective, max_far), f"Objective: {title}",
            (rec.w_dense, rec.threshold), (s.w_dense, s.threshold), (w, t)),
            key="tuning_heatmap")
    with right:
        st.plotly_chart(charts.curves_figure(curves_frame(result, w), w, rec.threshold,
                                             s.threshold, t, max_far), key="tuning_curves")
    left, right = st.columns(2, gap="large")
    with left:
        st.plotly_chart(charts.distribution_figure(distribution_frame(result, w), w, t,
                                                   rec.threshold, s.threshold),
                        key="tuning_distribution")
    with right:
        results.calibration_table(result, w, t, (w, t) == (rec.w_dense, rec.threshold))

    st.subheader("Per question", anchor=False)
    if picked := results.question_outcomes(result, w, t):
        with st.container(border=True):
            results.drill_down(ctx, picked, cached_pools(ctx)[picked], w, t)
    st.subheader("Apply", anchor=False)
    apply_panel(ctx, w, t, provenance(active.name, rec, (w, t), chosen,
                                      display_path(s.book_dir)))
    st.subheader("Replay logged questions", anchor=False)
    replay_panel(ctx, w, t)


ctx = app_context()
require_pipeline(ctx)
s = ctx.settings
st.header("Tuning", anchor=False)
st.caption("Every dense weight (0–1, step 0.05) × threshold (0–1, step 0.01) on labelled "
           "questions: what each setting answers, refuses and retrieves, the operating point "
           "your objective recommends, and what it would change for questions already asked.")
try:
    active = question_set_panel()
except RagError as e:
    st.error(str(e), icon=":material/error:")
    st.stop()
if active is None or not active.questions:
    st.stop()

st.subheader("Sweep", anchor=False)
objective, max_far = objective_controls()
try:
    result = sweep_for(ctx, active.questions, content_hash(active.questions))
    if result is None:
        st.stop()
    current = current_figures(result.arrays, s.w_dense, s.threshold)
    rec = recommend(result, objective, max_far, current=(s.w_dense, s.threshold))
    show_results(ctx, active, result, rec, current, objective_title(objective, max_far, s.top_k),
                 max_far)
except RagError as e:
    st.error(str(e), icon=":material/error:")
