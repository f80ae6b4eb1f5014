"""The tuning page's results: the recommendation and its margin, the figures beside the current
setting, the reliability tables, the answer checks with their risk–coverage curve, and the
per-question outcomes with a drill-down into the candidates of one question (the inspector's
table, or the inspector itself)."""

from __future__ import annotations

import streamlit as st

from pages.components.common.format import dash
from pages.components.common.shared import AppContext
from pages.components.inspector.view import candidate_table
from pages.components.tuning.charts import risk_coverage_figure
from pages.components.tuning.view import (
    answer_columns,
    answer_figures,
    fact_place_summary,
    figures_frame,
    level_frame,
    margin_frame,
    outcome_frame,
    risk_coverage_frame,
    uncertainty_note,
)
from rag.retrieval.hybrid import CandidatePool, rank_candidates
from rag.tuning.answers import AnswerOutcome
from rag.tuning.evaluate import Evaluation, gate_choice
from rag.tuning.recommend import Recommendation, calibrate
from rag.tuning.sweep import SweepResult
from rag.types import RetrievalSettings

NUMBER = st.column_config.NumberColumn(format="%.3f", width="small")
FIGURE_CONFIG = {"metric": st.column_config.TextColumn("Metric", width="medium"),
                 "current": NUMBER, "recommended": NUMBER, "chosen": NUMBER,
                 "change": st.column_config.NumberColumn("Δ rec. − current", format="%+.3f")}
QUESTION_COLUMNS = ["question", "outcome", "correct", "answer_correct", "with_more",
                    "missing_facts",
                    "fact_places", "confidence", "top_section", "best_blended", "expected",
                    "category", "scope", "answer"]
QUESTION_CONFIG = {
    "question": st.column_config.TextColumn("Question", width="large"),
    "scope": st.column_config.TextColumn("Scope", width="small"),
    "category": st.column_config.TextColumn("Category", width="small"),
    "expected": st.column_config.TextColumn("Expected sections"),
    "top_section": st.column_config.TextColumn("Top hit"),
    "best_blended": st.column_config.NumberColumn("Blended", format="%.3f", width="small"),
    "outcome": st.column_config.TextColumn("Outcome"),
    "correct": st.column_config.CheckboxColumn("Cites expected", width="small",
                                               help="Retrieval: answered in scope with an "
                                                    "expected section among the hits, or "
                                                    "refused out of scope"),
    "answer_correct": st.column_config.CheckboxColumn(
        "Answer correct", width="small", help="The answer holds every key fact (empty: no key "
                                              "facts, or the answers were not checked)"),
    "with_more": st.column_config.CheckboxColumn(
        "With more", width="small", help="The answer together with the passages shown under it "
                                         "(more from the book) holds every key fact"),
    "missing_facts": st.column_config.TextColumn("Key facts missing"),
    "fact_places": st.column_config.TextColumn(
        "Where the book has them", width="medium",
        help="Per missing key fact: in a section the answer cites (the answerer quoted other "
             "units), elsewhere in its evidence, in a section retrieval did not bring, or in no "
             "single unit of the book (split across two, or worded otherwise)"),
    "confidence": st.column_config.NumberColumn("Confidence", format="%.3f", width="small"),
    "answer": st.column_config.TextColumn("Answer", width="large"),
}
LEVEL_CONFIG = {"level": "Level", "count": st.column_config.NumberColumn(
                    "Questions", help="Judged questions (out of scope, or with key facts)"),
                "answered": "Answered", "correct": "Correct",
                "accuracy": st.column_config.NumberColumn("Accuracy", format="percent"),
                "interval": st.column_config.TextColumn(
                    "95 % interval", help="Where the level's accuracy lies, 19 times in 20, "
                                          "given so few answers (Wilson score interval)")}
ANSWER_METRICS = (("answer_accuracy", "Answer accuracy", "normal"),
                  ("answer_with_more", "With the passages under it", "normal"),
                  ("answer_false_rate", "False answers", "inverse"),
                  ("ece", "Calibration error (ECE)", "inverse"),
                  ("auroc", "Confidence AUROC", "normal"))
MARGIN_CONFIG = {
    "neighbour": st.column_config.TextColumn("Neighbour (dense · threshold)", width="medium"),
    "value": st.column_config.NumberColumn("Objective", format="%.3f", width="small"),
    "drop": st.column_config.NumberColumn("Drop", format="%+.3f", width="small"),
    "meets_limit": st.column_config.CheckboxColumn("Limit met", width="small"),
}
KEY_METRICS = (("f1", "F1", "normal"), ("recall_at_k", "Recall@k", "normal"),
               ("answer_rate", "Answer rate (in scope)", "normal"),
               ("false_answer_rate", "False-answer rate", "inverse"))


def is_current(rec: Recommendation, current: dict[str, float]) -> bool:
    """The recommendation is the current point (to the grid's two decimals)."""
    return round(rec.w_dense, 2) == round(current["w_dense"], 2) and \
        round(rec.threshold, 2) == round(current["threshold"], 2)


def recommendation_summary(rec: Recommendation, current: dict[str, float], title: str) -> None:
    if not rec.feasible:
        st.warning(f"No setting keeps the false-answer rate at or below "
                   f"{100 * (rec.max_far or 0):g} %; shown is the best setting among those with "
                   "the fewest false answers.", icon=":material/warning:")
    unchanged = is_current(rec, current)
    st.markdown(f"**Recommended: dense {rec.w_dense:.2f} · BM25 {1 - rec.w_dense:.2f} · "
                f"threshold {rec.threshold:.2f}** · {title} = {rec.value:.3f}"
                + (" · **the current settings: nothing to change**" if unchanged else ""))
    if unchanged:
        st.success("The current settings are already the recommended point; Apply would "
                   "change nothing.", icon=":material/check_circle:")
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
                       chosen: dict[str, float], recommended: dict | None = None) -> None:
    """`recommended` defaults to the recommendation's retrieval metrics."""
    columns = {"current": current, "recommended": recommended or rec.metrics}
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
    st.markdown(f"**Retrieval reliability at {where} (dense {w:.2f} · threshold {t:.2f})**")
    table = calibrate(result, w, t)
    table["rate"] = [dash(r, "{:.0%}") for r in table["rate"]]  # "—" where none was answered
    st.dataframe(table, hide_index=True, width="stretch",
                 key="tuning_calibration",
                 column_config={"level": "Level", "answered": st.column_config.NumberColumn(
                                    "Answered", help="In-scope questions answered"),
                                "cites_expected": st.column_config.NumberColumn(
                                    "Cite expected", help="…whose hits cite an expected section"),
                                "rate": st.column_config.TextColumn("Rate", alignment="right"),
                                "false_answers": st.column_config.NumberColumn(
                                    "False answers", help="Out-of-scope questions answered")})
    st.caption("Retrieval alone, before any answer is written: confidence here is 0.6 × best "
               "blended + 0.4 × 0.80 (a fixed generation part) with the design's levels (high > "
               "0.85, medium 0.70–0.85). A calibrated setting cites an expected section more "
               "often at higher levels. The answers' own confidence and levels are under "
               "Answers above.")


def _metric(label: str, value: float | None, before: float | None, colors: str) -> None:
    if value is None or before is None:
        st.metric(label, "–" if value is None else f"{value:.3f}", border=True)
        return
    diff = value - before
    same = abs(diff) < 5e-4
    st.metric(label, f"{value:.3f}", delta="±0.000" if same else f"{diff:+.3f}",
              delta_color="off" if same else colors, delta_arrow="off" if same else "auto",
              delta_description=f"vs current {before:.3f}", border=True)


def answer_summary(ev: Evaluation) -> None:
    """Answer accuracy, false answers, ECE and AUROC at the recommended point vs current, and
    the reliability of each confidence level at both."""
    now, rec = answer_figures(ev.answers["current"]), answer_figures(ev.answers["recommended"])
    for column, (key, label, colors) in zip(st.columns(len(ANSWER_METRICS)), ANSWER_METRICS,
                                            strict=True):
        with column:
            _metric(label, rec[key], now[key], colors)
    first = ev.answers["current"]
    graded = sum(o.in_scope and bool(o.key_facts) for o in first)
    st.caption(f"Recommended point vs current. Accuracy: answered with every key fact, over the "
               f"{graded} in-scope questions with key facts; "
               f"{sum(o.in_scope and not o.key_facts for o in first)} in-scope question(s) "
               "without key facts count for retrieval only. With the passages under it: the "
               "answer or the passages shown under it (more from the book) hold every key fact. "
               "ECE: the gap between confidence and accuracy over 10 confidence bins "
               "(0 = calibrated). AUROC: how well confidence "
               "separates right answers from wrong ones (0.5 = not at all).")
    places = fact_place_summary(first)
    shown = sum(o.shown_when_refused for o in first)
    if shown:  # under an offline refusal, the closest passages are offered as not an answer
        places = (f"{places} " if places else "") + (
            f"{shown} refused in-scope question(s) had the book's answer in the closest passages "
            "shown under the refusal.")
    if places:
        st.caption(f"Current point. {places}")
    for name in ("current", "recommended"):
        if note := uncertainty_note(ev.answers[name]):
            st.caption(f"{name.capitalize()} point. {note}")
    for column, name in zip(st.columns(2, gap="large"), ("current", "recommended"), strict=True):
        w, t = ev.points[name]
        with column:
            st.markdown(f"**By confidence level, {name} (dense {w:.2f} · threshold {t:.2f})**")
            st.dataframe(level_frame(ev.answers[name]), hide_index=True, width="stretch",
                         key=f"tuning_levels_{name}", column_config=LEVEL_CONFIG)


def gate_chooser(ev: Evaluation) -> dict:
    """Target accuracy → the gate it implies on each point's risk–coverage curve; returns the
    choice at the active settings (the gate Apply writes)."""
    target = st.slider("Target answer accuracy", 0.0, 1.0, 0.9, 0.01, key="tuning_gate_target",
                       help="The lowest confidence gate whose answers reach this accuracy: "
                            "answers below the gate are refused.")
    choices = {name: gate_choice(outcomes, target) for name, outcomes in ev.answers.items()}
    st.plotly_chart(risk_coverage_figure(risk_coverage_frame(ev.answers), target, choices),
                    key="tuning_risk_coverage")
    for name, c in choices.items():
        st.caption(f"{name}: " + ("no gate reaches this accuracy." if c["gate"] is None else
                                  f"gate {c['gate']:.3f} keeps {c['answered']} answers "
                                  f"({c['answer_rate']:.0%} of judged questions) at accuracy "
                                  f"{c['accuracy']:.3f} (95 % interval {c['interval'][0]:.2f}–"
                                  f"{c['interval'][1]:.2f})."))
    return choices["current"]


def question_outcomes(result: SweepResult, w: float, t: float,
                      answers: list[AnswerOutcome] | None = None) -> str | None:
    """The per-question table at (w, t) with the answers' outcomes there when checked; returns
    the selected question, if any."""
    table = answer_columns(outcome_frame(result, w, t), answers)
    bad = ~table["correct"] | table["answer_correct"].eq(False)
    checked = "" if answers is None else (
        f" {int(table['answer_correct'].eq(True).sum())} of "
        f"{int(table['answer_correct'].notna().sum())} judged answers correct.")
    head, toggle = st.columns([3, 1], vertical_alignment="bottom")
    with head:
        st.markdown(f"**{len(table)} questions at dense {w:.2f} · threshold {t:.2f}:** "
                    f"{int(table['answered'].sum())} answered, {int(bad.sum())} not as "
                    f"expected.{checked} Select a row to see its candidates.")
    with toggle:
        only_wrong = st.toggle("Only the wrong ones", key="tuning_only_wrong",
                               disabled=not bad.any())
    if only_wrong:
        table = table[bad].reset_index(drop=True)
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
