"""Tuning results that leave the page (pages/components/tuning/export.py): the sweep grid and the
per-question outcomes as CSV, equal to the evaluation's own figures with a formula-shaped
question kept as text, and one HTML report that escapes user text and draws its charts in
Chromium with every network request refused."""

from __future__ import annotations

import csv
import dataclasses
import io
import re

import pytest

from pages.components.tuning.export import (
    ReportContext,
    html_report,
    questions_csv,
    sweep_csv,
)
from rag.tuning.evaluate import CURRENT, evaluate_set
from rag.tuning.questions import Question, load_questions
from tests.builders import SAMPLE_QUESTIONS, chromium, refuse_network, shoot

pytestmark = pytest.mark.slow
HOSTILE = Question(question="=HYPERLINK(\"http://x\",\"<script>alert(1)</script> encoders\")",
                   expected_sections=(), in_scope=False, category="off_topic")


@pytest.fixture(scope="module")
def evaluated(sample_index, sample_settings):
    questions = load_questions(SAMPLE_QUESTIONS)
    subset = [*questions[:6], *[q for q in questions if not q.in_scope][:2], HOSTILE]
    return evaluate_set(sample_index, sample_settings, subset)


def rows(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"))))


def report_context(ev) -> ReportContext:
    rec = ev.recommendation
    return ReportContext("Sample <Book>", "subset.yaml", "Max F1 (top-5)", None,
                         (rec.w_dense, rec.threshold))


def test_the_sweep_grid_is_the_sweeps_every_point(evaluated):
    grid = rows(sweep_csv(evaluated))
    result = evaluated.result
    assert len(grid) == len(result.weights) * len(result.thresholds)
    assert set(result.grids) <= set(grid[0])
    for row in grid[:: max(1, len(grid) // 40)]:
        at = result.at(float(row["w_dense"]), float(row["threshold"]))
        assert float(row["f1"]) == pytest.approx(at["f1"], abs=1e-4)
        assert float(row["false_answer_rate"]) == pytest.approx(at["false_answer_rate"],
                                                                abs=1e-4)


def test_questions_csv_is_the_table_with_formulas_kept_as_text(evaluated):
    point = evaluated.points[CURRENT]
    table = rows(questions_csv(evaluated, point, evaluated.answers[CURRENT]))
    expected = evaluated.result.question_table(*point)
    assert [r["question"].removeprefix("'") for r in table] == list(expected["question"])
    assert table[-1]["question"] == "'" + HOSTILE.question  # a spreadsheet shows it, never runs it
    assert [r["correct"] == "True" for r in table] == list(expected["correct"])
    checked = [o.correct for o in evaluated.answers[CURRENT]]
    assert [r["answer_correct"] == "True" for r in table] == checked
    unchecked = rows(questions_csv(evaluated, point, None))
    assert all(r["answer_correct"] == "" and r["answer"] == "" for r in unchecked)


def test_the_report_escapes_user_text_and_names_its_sources(evaluated):
    page = html_report(evaluated, report_context(evaluated), evaluated.answers[CURRENT])
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Tuning report — Sample &lt;Book&gt;" in page
    assert "subset.yaml" in page and "Answer accuracy (key facts)" in page
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=|<link[^>]*\shref=", page)  # inlined
    assert page.count('class="plotly-graph-div"') == 4  # heatmap, curves, distribution, risk
    without = html_report(dataclasses.replace(evaluated, answers={}), report_context(evaluated),
                          None)
    assert without.count('class="plotly-graph-div"') == 3
    assert "The answers were not checked at this point" in without


@pytest.mark.browser
def test_the_report_draws_its_charts_offline(evaluated, browser, tmp_path):
    chromium()
    path = tmp_path / "report.html"
    path.write_text(html_report(evaluated, report_context(evaluated),
                                evaluated.answers[CURRENT]), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    try:
        fetched = refuse_network(context, lambda url: url.startswith(("data:", "blob:", "file:")))
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        page.locator(".plotly .main-svg").first.wait_for(timeout=30_000)
        assert page.locator(".js-plotly-plot").count() == 4
        assert page.locator(".js-plotly-plot .heatmaplayer, .js-plotly-plot image").count() >= 1
        shoot(page, "tuning-report", full_page=True)
        assert not errors, errors
        assert fetched == []  # the report's script and styles are all inside it
    finally:
        context.close()
