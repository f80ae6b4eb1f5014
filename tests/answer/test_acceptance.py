"""Acceptance on data/eval/questions.yaml with the shipped offline defaults: answers cite an
expected section, and must-not-answer questions are refused for the right reason.

    .venv/bin/pytest tests/test_eval_acceptance.py -s     # prints the figures
"""

from __future__ import annotations

import pytest
import yaml

from rag.answer.pipeline import Pipeline
from rag.config import DEFAULT_SETTINGS_FILE
from rag.types import Citation, Response
from tests.builders import SAMPLE_QUESTIONS

CITED_TARGET = 0.70
REFUSED_TARGET = 0.90
RIGHT_REASONS = {
    "code": {"capability_code"},
    "realtime": {"capability_realtime"},
    "off_topic": {"content_not_covered", "content_off_topic"},
}


def cites_expected(citation: Citation, expected: list[str]) -> bool:
    """`chapter#section` must match exactly; a bare `chapter` accepts any of its sections."""
    return any(e == f"{citation.chapter_id}#{citation.section_id}"
               or ("#" not in e and e == citation.chapter_id) for e in expected)


def refusal_reason(response: Response) -> str | None:
    """The reason code whose message became the answer (the first override)."""
    if response.status != "refused":
        return None
    return response.validation["boundary_violations"][0]


@pytest.fixture(scope="module")
def results(sample_index, sample_settings) -> list[tuple[dict, Response]]:
    assert sample_settings.settings_file == DEFAULT_SETTINGS_FILE  # the shipped defaults
    assert (sample_settings.embedder, sample_settings.llm) == ("local", "extractive")
    pipeline = Pipeline(sample_index, sample_settings)
    questions = yaml.safe_load(SAMPLE_QUESTIONS.read_text(encoding="utf-8"))["questions"]
    return [(q, pipeline.answer(q["question"])) for q in questions]


def test_in_scope_answers_cite_an_expected_section(results, sample_settings) -> None:
    in_scope = [(q, r) for q, r in results if q["in_scope"]]
    misses = [f"  {q['question']!r}: {r.status} {r.reason_codes}, cited "
              f"{[f'{c.chapter_id}#{c.section_id}' for c in r.citations]}, expected "
              f"{q['expected_sections']}"
              for q, r in in_scope if not any(cites_expected(c, q["expected_sections"])
                                              for c in r.citations)]
    share = 1 - len(misses) / len(in_scope)
    figure = (f"in-scope answers citing an expected section: {len(in_scope) - len(misses)}/"
              f"{len(in_scope)} = {share:.1%} (target {CITED_TARGET:.0%}; threshold "
              f"{sample_settings.threshold}, {sample_settings.threshold_source})")
    print("\n" + figure + ("\n" + "\n".join(misses) if misses else ""))
    assert share >= CITED_TARGET, figure + "\n" + "\n".join(misses)


def test_out_of_scope_questions_are_refused_for_the_right_reason(results) -> None:
    out_of_scope = [(q, r) for q, r in results if not q["in_scope"]]
    assert {q["category"] for q, _ in out_of_scope} == set(RIGHT_REASONS)
    wrong = [f"  {q['question']!r} ({q['category']}): {r.status}, {refusal_reason(r)}"
             for q, r in out_of_scope if refusal_reason(r) not in RIGHT_REASONS[q["category"]]]
    share = 1 - len(wrong) / len(out_of_scope)
    by_category = {cat: sum(1 for q, r in out_of_scope if q["category"] == cat
                            and refusal_reason(r) in reasons)
                   for cat, reasons in RIGHT_REASONS.items()}
    totals = {cat: sum(1 for q, _ in out_of_scope if q["category"] == cat)
              for cat in RIGHT_REASONS}
    figure = (f"out-of-scope questions refused with the right reason: "
              f"{len(out_of_scope) - len(wrong)}/{len(out_of_scope)} = {share:.1%} (target "
              f"{REFUSED_TARGET:.0%}; " + ", ".join(f"{c} {by_category[c]}/{totals[c]}"
                                                   for c in RIGHT_REASONS) + ")")
    print("\n" + figure + ("\n" + "\n".join(wrong) if wrong else ""))
    assert share >= REFUSED_TARGET, figure + "\n" + "\n".join(wrong)


def test_no_answer_is_an_error(results) -> None:
    errors = [(q["question"], r.error_stage, r.error_message) for q, r in results
              if r.status == "error"]
    assert errors == []
