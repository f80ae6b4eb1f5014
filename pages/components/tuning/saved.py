"""Tuning results kept and taken away: every evaluation is saved as a run (rag.tuning.runs), the
results at the chosen point download as CSV or one HTML report (export.py), and two kept runs
are set side by side with the questions whose outcome changed between them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import streamlit as st

from pages.components.common.shared import AppContext
from pages.components.tuning.export import ReportContext, html_report, questions_csv, sweep_csv
from pages.components.tuning.run import EVALUATION_KEY, index_identity
from pages.components.tuning.view import ANSWER_FIGURES, FIGURES
from rag.tuning.answers import AnswerOutcome
from rag.tuning.evaluate import CURRENT, RECOMMENDED, Evaluation
from rag.tuning.runs import (
    compare_figures,
    compare_questions,
    delete_run,
    load_runs,
    run_from_evaluation,
    runs_folder,
    save_run,
)

SAVED_KEY = "tuning_saved_run"  # what was saved last, so a rerun does not write it again
LABELS = {"w_dense": "Dense weight", "threshold": "Threshold", **FIGURES, **ANSWER_FIGURES}
SUMMARY_CONFIG = {
    "saved": st.column_config.TextColumn("Saved (UTC)"),
    "set": st.column_config.TextColumn("Question set"),
    "questions": st.column_config.NumberColumn("Questions", width="small"),
    "objective": st.column_config.TextColumn("Objective"),
    "active": st.column_config.TextColumn("Active (dense · threshold)"),
    "recommended": st.column_config.TextColumn("Recommended"),
    "f1": st.column_config.NumberColumn("F1 active", format="%.3f", width="small"),
    "f1_rec": st.column_config.NumberColumn("F1 recommended", format="%.3f", width="small"),
    "answers": st.column_config.NumberColumn(
        "Answers right, active", format="%.3f", width="small",
        help="Answer accuracy (key facts); blank when the run did not check the answers"),
    "answers_rec": st.column_config.NumberColumn("Answers right, recommended", format="%.3f",
                                                 width="small")}


def keep_run(ctx: AppContext, question_set: str, ev: Evaluation, set_hash: str,
             objective: str, max_far: float | None) -> None:
    """Save this evaluation as a run once (again when its answers have been checked since)."""
    cached = st.session_state.get(EVALUATION_KEY)
    marker = cached[0] if cached and cached[1] is ev else (set_hash, objective, max_far,
                                                            bool(ev.answers))
    if st.session_state.get(SAVED_KEY) == marker:
        return
    s = ctx.settings
    run = run_from_evaluation(ev, question_set=question_set, set_hash=set_hash,
                              book=s.resolved_title, book_id=s.book_id,
                              built_at=str(index_identity(ctx)[-1]), objective=objective,
                              max_far=max_far)
    try:
        save_run(runs_folder(s), run)
        for key in ("tuning_run_a", "tuning_run_b"):  # compare the newest with the one before
            st.session_state.pop(key, None)
    except OSError as e:
        st.caption(f":orange[:material/save:] This run could not be kept for later ({e}); its "
                   "results are still shown and can be downloaded below.")
    st.session_state[SAVED_KEY] = marker


def export_panel(ctx: AppContext, question_set: str, ev: Evaluation, point: tuple[float, float],
                 outcomes: Sequence[AnswerOutcome] | None, objective_title: str,
                 max_far: float | None) -> None:
    """Three downloads, each built only when clicked."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M")
    book, asked = _slug(ctx.settings.resolved_title), _slug(Path(question_set).stem)
    name = f"folio-tuning-{book}-{asked}-{stamp}"
    target = float(st.session_state.get("tuning_gate_target", 0.9))
    report = ReportContext(ctx.settings.resolved_title, question_set, objective_title, max_far,
                           point, target)
    where = f"dense {point[0]:.2f} · threshold {point[1]:.2f}"
    checked = "with each checked answer" if outcomes is not None else "(answers not checked)"
    left, middle, right = st.columns(3)
    left.download_button("Report (HTML)", lambda: html_report(ev, report, outcomes),
                         f"{name}.html", "text/html", icon=":material/description:",
                         on_click="ignore", width="stretch", key="tuning_export_html",
                         help="One file that opens offline: the figures, the recommendation, "
                              f"the charts and every question at {where}.")
    middle.download_button("Questions (CSV)", lambda: questions_csv(ev, point, outcomes),
                           f"{name}-questions.csv", "text/csv", icon=":material/download:",
                           on_click="ignore", width="stretch", key="tuning_export_questions",
                           help=f"Every question's outcome at {where}, {checked}.")
    right.download_button("Sweep grid (CSV)", lambda: sweep_csv(ev), f"{name}-sweep.csv",
                          "text/csv", icon=":material/grid_on:", on_click="ignore",
                          width="stretch", key="tuning_export_sweep",
                          help="Every dense weight × threshold, one column per metric.")


def runs_panel(ctx: AppContext) -> None:
    """The kept runs of this book, newest first, and two of them side by side."""
    folder = runs_folder(ctx.settings)
    runs, unreadable = load_runs(folder)
    st.subheader("Past runs", anchor=False)
    if unreadable:
        st.caption(f":orange[:material/warning:] {unreadable} kept run file(s) could not be "
                   "read and are left out.")
    if not runs:
        st.caption("Every sweep you run is kept here (the newest 50 of this book), so you can "
                   "come back to it and compare two: before and after a re-ingest, another "
                   "embedder, an edited question set.")
        return
    table = pd.DataFrame([_summary(r) for r in runs]).astype(
        {"f1": float, "f1_rec": float, "answers": float, "answers_rec": float})  # None: blank
    st.dataframe(table, hide_index=True, width="stretch", key="tuning_runs_table",
                 column_config=SUMMARY_CONFIG)
    if len(runs) < 2:
        st.caption("Run another sweep (another set, objective or settings) to compare two.")
        return
    labels = {r.id: r.label for r in runs}
    left, right, at = st.columns([5, 5, 2], vertical_alignment="bottom")
    a_id = left.selectbox("Run A", list(labels), index=1, format_func=labels.get,
                          key="tuning_run_a")
    b_id = right.selectbox("Run B", list(labels), index=0, format_func=labels.get,
                           key="tuning_run_b")
    point = at.radio("At", [RECOMMENDED, CURRENT], key="tuning_runs_at",
                     format_func={RECOMMENDED: "recommended", CURRENT: "active"}.get,
                     help="Each run's recommended point, or the settings active when it ran.")
    a, b = (next(r for r in runs if r.id == i) for i in (a_id, b_id))
    if a.id == b.id:
        st.caption("Pick two different runs.")
        return
    for note in _differences(a, b):
        st.caption(f":material/info: {note}")
    st.dataframe(compare_figures(a, b, point, LABELS), hide_index=True, width="stretch",
                 key="tuning_runs_figures", column_config={
                     "metric": "Metric", "a": st.column_config.NumberColumn("A", format="%.3f"),
                     "b": st.column_config.NumberColumn("B", format="%.3f"),
                     "change": st.column_config.NumberColumn("B − A", format="%+.3f")})
    changed = compare_questions(a, b, point)
    if changed.empty:
        st.caption("No question's outcome differs between the two runs.")
    else:
        st.markdown(f"**{len(changed)} question(s) came out differently**")
        st.dataframe(changed, hide_index=True, width="stretch", key="tuning_runs_questions")
    if st.button("Forget run A", icon=":material/delete:", type="tertiary",
                 key="tuning_run_forget"):
        delete_run(folder, a.id)
        st.rerun()


def _summary(run) -> dict:
    rec = run.figures.get(RECOMMENDED, {})
    now = run.figures.get(CURRENT, {})
    point = run.points.get(RECOMMENDED)
    return {"saved": run.saved_at[:16].replace("T", " "), "set": run.question_set,
            "questions": len(run.questions), "objective": run.objective_text,
            "active": "{:.2f} · {:.2f}".format(*run.points[CURRENT]),
            "recommended": "none" if point is None else "{:.2f} · {:.2f}".format(*point),
            "f1": now.get("f1"), "f1_rec": rec.get("f1"),
            "answers": now.get("answer_accuracy"), "answers_rec": rec.get("answer_accuracy")}


def _differences(a, b) -> list[str]:
    """What besides the settings explains a difference between two runs."""
    notes = []
    if a.set_hash != b.set_hash:
        notes.append("The two runs asked different questions (another set, or the set was "
                     "edited): compare the questions they share.")
    if a.index_built_at != b.index_built_at:
        notes.append("The book was indexed again between them.")
    changed = [k for k in a.settings if a.settings.get(k) != b.settings.get(k)]
    if changed:
        notes.append("Settings that differ: " + ", ".join(
            f"{k} {a.settings.get(k)} → {b.settings.get(k)}" for k in changed) + ".")
    if a.answers_checked != b.answers_checked:
        notes.append("Only one of them checked the answers: answer figures are missing for "
                     "the other.")
    return notes


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "book"
