"""Tuning: sweep dense weight × threshold on a labelled question set, see what every setting does,
check the answers and how far their confidence can be trusted, pick an operating point and a
confidence gate, apply them, and replay logged questions under them."""

import streamlit as st

from pages.components.common.shared import AppContext, app_context, require_pipeline
from pages.components.tuning import charts, results
from pages.components.tuning.apply import apply_panel, gate_panel, replay_panel
from pages.components.tuning.run import (
    answers_button,
    cached_pools,
    chosen_point,
    evaluation_for,
    objective_controls,
    outcomes_at,
)
from pages.components.tuning.saved import export_panel, keep_run, runs_panel
from pages.components.tuning.sets import ActiveSet, display_path, question_set_panel
from pages.components.tuning.stages import stages_panel
from pages.components.tuning.starter import REFUSED_KEY, starter_panel
from pages.components.tuning.view import (
    answer_figures,
    curves_frame,
    distribution_frame,
    gate_provenance,
    limit_note,
    objective_matrix,
    objective_title,
    provenance,
)
from rag.errors import RagError
from rag.tuning.evaluate import Evaluation
from rag.tuning.question_sets import content_hash
from rag.tuning.recommend import FAR_LIMIT, apply_risks


def show_answers(ctx: AppContext, active: ActiveSet, ev: Evaluation, set_hash: str) -> None:
    """Answer accuracy, reliability by level, ECE, AUROC and the confidence gate."""
    st.subheader("Answers", anchor=False)
    if not ev.answers:
        answers_button(ev, set_hash)
        return
    results.answer_summary(ev)
    choice = results.gate_chooser(ev)
    gate_panel(ctx, choice, gate_provenance(active.name, ev.points["current"], choice,
                                            display_path(ctx.settings.book_dir)))


def show_results(ctx: AppContext, active: ActiveSet, ev: Evaluation, set_hash: str, title: str,
                 max_far: float | None) -> None:
    """Everything that follows from the evaluation, at the operating point the sliders choose."""
    s, questions, result, rec = ctx.settings, active.questions, ev.result, ev.recommendation
    if warnings := ev.warnings:
        st.warning(f"{len(warnings)} expected section(s) match nothing in this book (typos or "
                   "renamed anchors):  \n" + "  \n".join(warnings[:8])
                   + ("  \n…" if len(warnings) > 8 else ""), icon=":material/link_off:")
    st.caption(f"{len(questions)} questions ({result.n_in_scope} in scope, "
               f"{result.n_out_of_scope} out of scope, {ev.n_refused_by_capability} "
               f"refused by the capability guardrail whatever the scores) · top-k {s.top_k} · "
               f"pool {s.candidate_pool} · embedder {s.embedder}")
    st.session_state[REFUSED_KEY] = bool(rec.refusal)
    if rec.refusal:  # no point, no Apply: the labels cannot tell settings apart on this book
        st.error(f"**No recommended setting.** {rec.refusal}", icon=":material/block:")
        return
    results.recommendation_summary(rec, ev.current, title)
    show_answers(ctx, active, ev, set_hash)

    st.subheader("Operating point", anchor=False)
    st.caption("Starts at the recommendation; the charts, the per-question table, Apply and the "
               "replay all follow these two sliders.")
    w, t = chosen_point(rec)
    chosen = result.at(w, t)
    current, recommended = ev.current, rec.metrics
    if ev.answers:  # answer figures as rows below the retrieval ones
        current = current | answer_figures(ev.answers["current"])
        recommended = recommended | answer_figures(ev.answers["recommended"])
    results.figures_and_margin(rec, current, chosen, recommended)
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
    outcomes = outcomes_at(ctx, ev, (w, t)) if ev.answers else None
    if picked := results.question_outcomes(result, w, t, outcomes):
        with st.container(border=True):
            results.drill_down(ctx, picked, cached_pools(ctx)[picked], w, t)
    export_panel(ctx, active.name, ev, (w, t), outcomes, title, max_far)
    st.subheader("Retrieval stages", anchor=False)
    stages_panel(ctx, ev, active.name, set_hash, w, t)
    st.subheader("Apply", anchor=False)
    limit = FAR_LIMIT if rec.max_far is None else rec.max_far
    risks = apply_risks(chosen | (answer_figures(outcomes) if outcomes else {}), recommended,
                        limit)
    apply_panel(ctx, w, t, provenance(active.name, rec, (w, t), chosen,
                                      display_path(s.book_dir)), risks, limit_note(rec, limit))
    st.subheader("Replay logged questions", anchor=False)
    replay_panel(ctx, w, t)


ctx = app_context()
require_pipeline(ctx)
s = ctx.settings
st.header("Tuning", anchor=False)
st.caption("Every dense weight (0–1, step 0.05) × threshold (0–1, step 0.01) on labelled "
           "questions: what each setting answers, refuses and retrieves, the operating point "
           "your objective recommends, whether the answers hold their key facts, and what it "
           "would change for questions already asked.")
try:
    active = question_set_panel(sorted({c.section_ref for c in ctx.index.chunks}))
except RagError as e:
    st.error(str(e), icon=":material/error:")
    active = None
starter_panel(ctx, expanded=bool(st.session_state.get(REFUSED_KEY)))
if active is not None and active.questions:
    st.subheader("Sweep", anchor=False)
    objective, max_far = objective_controls()
    try:
        set_hash = content_hash(active.questions)
        evaluation = evaluation_for(ctx, active.questions, set_hash, objective, max_far)
        if evaluation is not None:
            keep_run(ctx, active.name, evaluation, set_hash, objective, max_far)
            show_results(ctx, active, evaluation, set_hash,
                         objective_title(objective, max_far, s.top_k), max_far)
    except RagError as e:
        st.error(str(e), icon=":material/error:")
runs_panel(ctx)
