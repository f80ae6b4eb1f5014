"""Tuning results that leave the page: the sweep's grid and the per-question outcomes as CSV, and
one self-contained HTML report (figures, recommendation, the page's charts with Plotly's script
inlined so it opens offline, every question). Pure: built from the evaluation and the chosen
point, no Streamlit, so tests read exactly the bytes the download buttons hand out."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd
import plotly.graph_objects as go

from pages.components.tuning import charts
from pages.components.tuning.view import (
    answer_columns,
    answer_figures,
    curves_frame,
    distribution_frame,
    figures_frame,
    objective_matrix,
    outcome_frame,
    risk_coverage_frame,
)
from rag.audit.safe_text import csv_text
from rag.tuning.answers import AnswerOutcome
from rag.tuning.evaluate import Evaluation, gate_choice

QUESTION_CSV = ["question", "scope", "category", "expected", "outcome", "top_section",
                "best_blended", "selected", "correct", "answer_status", "answer_correct",
                "with_more", "confidence", "missing_facts", "fact_places", "answer"]
REPORT_QUESTIONS = {"question": "Question", "scope": "Scope", "outcome": "Outcome",
                    "top_section": "Top hit", "best_blended": "Blended",
                    "correct": "Cites expected", "answer_correct": "Answer correct",
                    "confidence": "Confidence", "missing_facts": "Key facts missing"}
STYLE = """body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;
max-width:1200px;color:#1f2933;padding:0 1rem}h1{font-size:1.6rem}h2{font-size:1.2rem;
margin-top:2rem;border-bottom:1px solid #d5d8dc;padding-bottom:.3rem}table{border-collapse:
collapse;font-size:.85rem;margin:.5rem 0}th,td{border:1px solid #d5d8dc;padding:.25rem .5rem;
text-align:left;vertical-align:top}th{background:#f4f6f8}.meta td:first-child{font-weight:600}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:1rem}.note{color:#52606d;
font-size:.85rem}"""


@dataclass(frozen=True)
class ReportContext:
    """What the report says about where the figures come from."""

    book: str
    question_set: str
    objective_title: str
    max_far: float | None
    point: tuple[float, float]  # the operating point the sliders chose
    gate_target: float = 0.9


def sweep_csv(ev: Evaluation) -> bytes:
    """The whole grid, one row per (dense weight, threshold), one column per metric."""
    wide = ev.result.to_frame().pivot_table(index=["w_dense", "threshold"], columns="metric",
                                            values="value").reset_index()
    wide.columns.name = None
    return wide.round(4).to_csv(index=False).encode("utf-8")


def question_frame(ev: Evaluation, point: tuple[float, float],
                   outcomes: Sequence[AnswerOutcome] | None) -> pd.DataFrame:
    table = answer_columns(outcome_frame(ev.result, *point), outcomes)
    return table[[c for c in QUESTION_CSV if c in table.columns]]


def questions_csv(ev: Evaluation, point: tuple[float, float],
                  outcomes: Sequence[AnswerOutcome] | None) -> bytes:
    """Every question at the point (with its checked answer when there is one); a text cell a
    spreadsheet would run as a formula is kept as text."""
    frame = question_frame(ev, point, outcomes).map(csv_text)  # text cells only: numbers stay
    return frame.to_csv(index=False).encode("utf-8")


def html_report(ev: Evaluation, ctx: ReportContext,
                outcomes: Sequence[AnswerOutcome] | None, now: datetime | None = None) -> str:
    """The report as one HTML file: nothing is fetched when it is opened."""
    s, rec, (w, t) = ev.settings, ev.recommendation, ctx.point
    result = ev.result
    columns = {"current": dict(ev.current)}
    if not rec.refusal:
        columns["recommended"] = dict(rec.metrics)
    columns["chosen"] = result.at(w, t)
    for name in ("current", "recommended"):
        if name in ev.answers and name in columns:
            columns[name] |= answer_figures(ev.answers[name])
    if outcomes is not None:
        columns["chosen"] |= answer_figures(outcomes)
    figures = figures_frame(columns)
    meta = {"Book": ctx.book, "Question set": ctx.question_set,
            "Questions": f"{len(ev.questions)} ({result.n_in_scope} in scope, "
                         f"{result.n_out_of_scope} out of scope)",
            "Objective": ctx.objective_title,
            "Active settings": f"dense {s.w_dense:.2f} · threshold {s.threshold:.2f} · top-k "
                               f"{s.top_k} · pool {s.candidate_pool} · embedder {s.embedder}",
            "Recommended": ("none: " + rec.refusal) if rec.refusal else
                           f"dense {rec.w_dense:.2f} · threshold {rec.threshold:.2f} "
                           f"(objective {rec.value:.3f})",
            "Chosen point": f"dense {w:.2f} · threshold {t:.2f}",
            "Made": (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")}
    parts = [f"<h1>Tuning report — {html.escape(ctx.book)}</h1>",
             _table(pd.DataFrame(list(meta.items()), columns=["", ""]), "meta", header=False),
             "<h2>Figures</h2>", _table(figures.round(4), "figures"),
             "<h2>Charts</h2>", _charts(ev, ctx), "<h2>Questions at the chosen point</h2>"]
    table = question_frame(ev, (w, t), outcomes)
    shown = table[[c for c in REPORT_QUESTIONS if c in table.columns]]
    parts.append(_table(shown.rename(columns=REPORT_QUESTIONS), "questions"))
    if outcomes is None:
        parts.append('<p class="note">The answers were not checked at this point: the answer '
                     "columns are empty.</p>")
    body = "\n".join(parts)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Tuning report '
            f"— {html.escape(ctx.book)}</title><style>{STYLE}</style></head><body>{body}"
            "</body></html>")


def _charts(ev: Evaluation, ctx: ReportContext) -> str:
    s, rec, result, (w, t) = ev.settings, ev.recommendation, ev.result, ctx.point
    current = (s.w_dense, s.threshold)
    recommended = current if rec.refusal else (rec.w_dense, rec.threshold)
    figures: list[go.Figure] = [
        charts.heatmap_figure(objective_matrix(result, rec.objective, ctx.max_far),
                              f"Objective: {ctx.objective_title}", recommended, current, (w, t)),
        charts.curves_figure(curves_frame(result, w), w, recommended[1], s.threshold, t,
                             ctx.max_far),
        charts.distribution_figure(distribution_frame(result, w), w, t, recommended[1],
                                   s.threshold)]
    if ev.answers:
        gates = {name: gate_choice(found, ctx.gate_target) for name, found in ev.answers.items()}
        figures.append(charts.risk_coverage_figure(risk_coverage_frame(ev.answers),
                                                   ctx.gate_target, gates))
    for fig in figures:  # the page's figures lean on Streamlit's padding; a file has none
        fig.update_layout(margin={"l": 60, "r": 20, "t": 56, "b": 20})
    divs = [fig.to_html(full_html=False, include_plotlyjs=i == 0, config={"responsive": True})
            for i, fig in enumerate(figures)]  # the script once, inlined: opens offline
    return '<div class="charts">' + "".join(f"<div>{d}</div>" for d in divs) + "</div>"


def _table(frame: pd.DataFrame, css: str, header: bool = True) -> str:
    """A frame as an HTML table; every cell escaped (questions and answers are user text)."""
    return frame.to_html(index=False, header=header, classes=css, escape=True, na_rep="—",
                         border=0, float_format=lambda v: f"{v:.3f}")
