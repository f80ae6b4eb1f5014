"""Key-fact matching, the answer pass on the real pipeline, and the answer metrics on a hand-made
set of outcomes whose figures are worked out by hand below."""

from __future__ import annotations

import dataclasses

import pytest

from rag.answer.pipeline import Pipeline
from rag.errors import InputError
from rag.tuning.answers import (
    AnswerOutcome,
    answer_accuracy,
    answer_pass,
    confidence_auroc,
    expected_calibration_error,
    false_answer_rate,
    gate_for_accuracy,
    level_table,
    risk_coverage,
    summarise_answers,
)
from rag.tuning.key_facts import contains_key_facts, key_facts_found, normalise_text
from rag.tuning.questions import Question

# -- key facts ------------------------------------------------------------------------------------


def test_whole_words_only():
    assert contains_key_facts("Gazebo ships the ODE physics engine.", ["ODE"])
    assert not contains_key_facts("Each node publishes a topic.", ["ODE"])
    assert contains_key_facts("objects appear 5 cm away.", ["5 cm"])
    assert not contains_key_facts("objects appear 15 cm away", ["5 cm"])
    assert not contains_key_facts("objects appear 0.5 cm away", ["5 cm"])
    assert not contains_key_facts("a stiffness of 1,500 N/m", ["500 N/m"])
    assert contains_key_facts("a stiffness of 1,500 N/m", ["1,500 N/m"])
    assert not contains_key_facts("5 cms", ["5 cm"])


def test_a_number_and_its_unit_match_spaced_or_not():
    assert contains_key_facts("a workstation with 64GB RAM", ["64 GB"])
    assert contains_key_facts("a workstation with 64 GB RAM", ["64GB"])
    assert contains_key_facts("draws 7-15W at 40 TOPS", ["7-15 W", "40TOPS"])
    assert not contains_key_facts("164GB", ["64 GB"])  # still whole numbers
    assert not contains_key_facts("64 GBit", ["64 GB"])  # and whole units
    assert contains_key_facts("in 2 weeks", ["weeks"])  # a unit alone is still a word
    assert contains_key_facts("version 2023.1.1", ["2023.1.1"])


def test_case_whitespace_dashes_and_quotes_are_ignored():
    assert contains_key_facts("Rates of 200–1000\u00a0Hz\nand  25-40 encoders",
                              ["200-1000 hz", "25—40"])
    assert contains_key_facts("the sim\u2011to\u2011real gap", ["Sim-to-real gap"])
    assert contains_key_facts("the sim-to-real gap", ["sim to real"])
    assert contains_key_facts("the robot\u2019s heading", ["robot's heading"])


def test_markdown_and_citation_markers_are_ignored():
    answer = ("## Summary\n* The **Kalman** _gain_ is `uncertain` [S1].\n"
              "See [Zero Moment Point](https://book/zmp#def) [[2]](https://book/x) [1, 3].")
    assert normalise_text(answer) == ("summary the kalman gain is uncertain . see zero moment "
                                      "point .")
    assert contains_key_facts(answer, ["Kalman gain", "uncertain", "Zero Moment Point"])
    assert key_facts_found("robot [1] and [S2]", ["1", "S2", "robot"]) == (False, False, True)
    assert contains_key_facts("set `ROS_DOMAIN_ID` first", ["ROS_DOMAIN_ID"])


def test_backslash_escapes_of_canonical_markdown_are_read():
    # a section's canonical Markdown escapes what could read as markup: a cell's "0.3" is "0\\.3"
    assert key_facts_found("| Passive stereo | 0\\.3–10 m |", ["0.3–10 m"]) == (True,)
    assert contains_key_facts("call f(\\*args, \\*\\*kwargs\\*)", ["*args"])  # a star, not emphasis
    assert normalise_text("\\# not a heading \\[1\\]") == "# not a heading [1]"


def test_a_fact_with_a_star_keeps_it():
    # "A*" keeps its star (only paired marks are emphasis), so it is not any word "a"
    assert contains_key_facts("plan with the A* algorithm", ["A*"])
    assert contains_key_facts("plan with **A*** here", ["A*"])
    assert not contains_key_facts("a robot plans a path", ["A*"])
    assert contains_key_facts("costs $5–20 each, 40% of it", ["$5-20", "40%"])


def test_a_fact_with_several_wordings_needs_one_of_them():
    fact = "DDS | Data Distribution Service"
    assert key_facts_found("ROS 2 is built on DDS.", [fact, "DDS"]) == (True, True)
    assert contains_key_facts("It uses the Data Distribution Service.", [fact])
    assert not contains_key_facts("It uses a distribution service.", [fact])
    assert key_facts_found("with limits; without limits", ["with limits|defined limits",
                                                           "without limits"]) == (True, True)
    assert key_facts_found("rotation without limits", ["with limits | defined limits"]) == \
        (False,)  # each wording keeps its word edges
    assert key_facts_found("anything", ["** | —"]) == (False,)  # no wording can be checked


def test_per_fact_results_and_unusable_facts():
    assert key_facts_found("yaw drifts", ["yaw", "bias"]) == (True, False)
    assert not contains_key_facts("yaw drifts", ["yaw", "bias"])
    assert key_facts_found("anything — at all", ["—", "**"]) == (False, False)
    assert contains_key_facts("no facts to check", [])


# -- metrics on hand-made outcomes ---------------------------------------------------------------

def outcome(in_scope: bool, status: str, confidence: float, level: str,
            found: tuple[bool, ...] = (), held: bool = False) -> AnswerOutcome:
    facts = tuple(f"fact {i}" for i in range(len(found)))
    return AnswerOutcome(f"q{confidence}{status}{in_scope}{found}", in_scope, facts, status,
                         confidence, level, found, held_by_gate=held)


HAND = [
    outcome(True, "success", 0.9, "high", (True,)),  # o1 right
    outcome(True, "partial", 0.8, "medium", (True, False)),  # o2 answered, a fact missing
    outcome(True, "success", 0.7, "medium", (True,)),  # o3 right
    outcome(True, "refused", 0.4, "low", (False,)),  # o4 refused
    outcome(True, "refused", 0.45, "low", (True,), held=True),  # o5 held by the gate alone
    outcome(True, "success", 0.95, "high"),  # o6 no key facts: retrieval only
    outcome(False, "success", 0.7, "medium"),  # o7 a false answer
    outcome(False, "refused", 0.3, "low"),  # o8 rightly refused
]


def test_accuracy_and_false_answers():
    assert answer_accuracy(HAND) == pytest.approx(2 / 5)  # o1, o3 of o1..o5
    assert false_answer_rate(HAND) == pytest.approx(1 / 2)  # o7 of o7, o8
    assert [o.correct for o in HAND] == [True, False, True, False, False, False, False, False]
    assert HAND[1].missing_facts == ("fact 1",)
    assert answer_accuracy(HAND[5:6]) is None and false_answer_rate(HAND[:6]) is None


def test_levels_count_judged_questions():
    rows = level_table(HAND)
    assert [{k: v for k, v in r.items() if k != "interval"} for r in rows] == [
        {"level": "high", "count": 1, "answered": 1, "correct": 1, "accuracy": 1.0},  # o6 out
        {"level": "medium", "count": 3, "answered": 3, "correct": 1, "accuracy": 1 / 3},
        {"level": "low", "count": 3, "answered": 0, "correct": 0, "accuracy": None}]
    # the Wilson interval of correct / answered: 1 of 1 is anywhere from 21 % to 100 %
    assert rows[0]["interval"] == pytest.approx((0.2065, 1.0), abs=1e-4)
    assert rows[2]["interval"] is None


def test_expected_calibration_error():
    # answered and judged: o1 (0.9, right), o2 (0.8, wrong), o3 (0.7, right), o7 (0.7, wrong)
    # bins 9: |1 - 0.9| × 1/4; 8: |0 - 0.8| × 1/4; 7: |0.5 - 0.7| × 2/4
    assert expected_calibration_error(HAND) == pytest.approx(0.025 + 0.2 + 0.1)
    assert expected_calibration_error(HAND[3:4]) is None
    # 0.3 goes to bin 3 (0.3 × 10 is a hair above or below 3 in floating point)
    pair = [outcome(True, "success", 0.3, "low", (True,)),
            outcome(True, "success", 0.39, "low", (False,))]
    assert expected_calibration_error(pair) == pytest.approx(abs(0.5 - 0.345))


def test_auroc_counts_ties_half():
    # right {0.9, 0.7} vs wrong {0.8, 0.7}: 0.9 beats both, 0.7 loses to 0.8 and ties 0.7
    assert confidence_auroc(HAND) == pytest.approx(2.5 / 4)
    assert confidence_auroc([HAND[0], HAND[2]]) is None  # all right
    assert confidence_auroc([HAND[1]]) is None


def test_risk_coverage_and_the_gate_for_a_target():
    # answerable and judged: o1 .9, o2 .8, o3 .7, o7 .7, o5 .45 (held); 7 judged questions
    curve = risk_coverage(HAND)
    assert [r["gate"] for r in curve] == [0.45, 0.7, 0.8, 0.9]
    assert [r["answered"] for r in curve] == [5, 4, 2, 1]
    assert [r["answer_rate"] for r in curve] == pytest.approx([5 / 7, 4 / 7, 2 / 7, 1 / 7])
    assert [r["accuracy"] for r in curve] == pytest.approx([3 / 5, 2 / 4, 1 / 2, 1.0])
    assert gate_for_accuracy(curve, 0.6) == 0.45  # lowest gate, though 0.7 falls below again
    assert gate_for_accuracy(curve, 0.55) == 0.45
    assert gate_for_accuracy(curve, 0.7) == 0.9
    assert gate_for_accuracy(curve[:3], 0.7) is None
    with pytest.raises(InputError, match="between 0 and 1"):
        gate_for_accuracy(curve, 1.5)


def test_summary_is_rounded_and_counts_exclusions():
    s = summarise_answers(HAND)
    assert (s["n_questions"], s["n_with_key_facts"], s["n_without_key_facts"],
            s["n_out_of_scope"], s["correct"], s["answered_out_of_scope"]) == (8, 5, 1, 2, 2, 1)
    assert (s["accuracy"], s["false_answer_rate"], s["ece"], s["auroc"]) == (0.4, 0.5, 0.325,
                                                                           0.625)
    assert s["per_level"][1]["accuracy"] == 0.3333
    assert s["per_level"][1]["interval"] == [0.0615, 0.7923]  # 1 of 3, Wilson, rounded
    assert s["per_level"][2]["interval"] is None
    # right {0.9, 0.7} vs wrong {0.8, 0.7}: a bootstrap interval around the AUROC of 0.625
    low, high = s["auroc_interval"]
    assert 0.0 <= low <= 0.625 <= high <= 1.0
    check = s["calibration"]
    assert check["mean_confidence"] == 0.775 and check["accuracy"] == 0.5
    assert 0 < check["expected_if_calibrated"] <= check["chance_high"]
    assert check["beyond_chance"] == (0.325 > check["chance_high"])
    assert s["risk_coverage"][0] == {"gate": 0.45, "answered": 5, "answer_rate": 0.7143,
                                     "correct": 3, "accuracy": 0.6}


def test_accuracy_with_the_passages_shown_under_the_answer():
    """correct_with_more: answered in scope, and the answer or the passages under it hold every
    key fact; without passages it is plain correctness."""
    more = [dataclasses.replace(HAND[1], found_with_more=(True, True)),  # o2: the rest below
            dataclasses.replace(HAND[3], found_with_more=(True,)),  # refused: nothing shown
            dataclasses.replace(HAND[6], found_with_more=())]  # out of scope: never right
    assert [o.correct_with_more for o in more] == [True, False, False]
    assert [o.correct_with_more for o in HAND] == [o.correct for o in HAND]
    s = summarise_answers([*HAND[:1], more[0], *HAND[2:]])
    assert (s["correct"], s["correct_with_more"], s["accuracy_with_more"]) == (2, 3, 0.6)
    assert more[0].to_dict()["correct_with_more"] is True
    assert HAND[5].to_dict()["correct_with_more"] is None  # no key facts: not judged


# -- the answer pass on the real pipeline ---------------------------------------------------------

QUESTIONS = [
    Question("If a camera image is stamped 50 ms late while the robot walks at 1 m/s, how far off "
             "will objects appear?", ("sensing-intro#timing-sync",), True, "factual", 1,
             ("5 cm",)),
    Question("Write a Python function that computes the ZMP.", (), False, "code", 2),
]


@pytest.fixture(scope="module")
def offline(sample_index, sample_settings) -> Pipeline:
    return Pipeline(sample_index, sample_settings, llm=None, audit=None)


def test_answer_pass_judges_what_the_pipeline_returns(offline, sample_settings):
    w, t = sample_settings.w_dense, sample_settings.threshold
    outcomes = answer_pass(offline, QUESTIONS, sample_settings, w, t)
    variant = dataclasses.replace(sample_settings, w_dense=w, threshold=t)
    for q, o in zip(QUESTIONS, outcomes, strict=True):
        response = offline.answer(q.question, settings=variant)
        assert (o.question, o.in_scope, o.key_facts) == (q.question, q.in_scope, q.key_facts)
        assert (o.status, o.confidence, o.level) == (response.status, response.confidence.score,
                                                     response.confidence.level)
        assert o.reason_codes == response.reason_codes and o.answer == response.answer
        assert o.answered == (response.status in ("success", "partial")) and o.latency_ms > 0
        assert o.correct == (o.answered and q.in_scope
                             and contains_key_facts(response.answer, q.key_facts))
        shown = " ".join([response.answer, *(m["text"] for m in
                                             response.metadata.get("more_from_book", []))])
        assert o.correct_with_more == (o.answered and q.in_scope
                                       and contains_key_facts(shown, q.key_facts))
        closest = " ".join(m["text"] for m in response.metadata.get("more_from_book", []))
        assert o.shown_when_refused == (response.status == "refused" and q.in_scope
                                        and bool(closest) and bool(q.key_facts)
                                        and contains_key_facts(closest, q.key_facts))
    code = outcomes[1]
    assert (code.answered, code.correct, code.held_by_gate) == (False, False, False)
    assert "capability_code" in code.reason_codes


def test_a_gate_refusal_is_held_and_judged_on_the_draft(offline, sample_settings):
    strict = dataclasses.replace(sample_settings, gate_answer=1.0, gate_caveat=1.0)
    first = answer_pass(offline, QUESTIONS[:1], strict, strict.w_dense, strict.threshold)[0]
    response = offline.answer(QUESTIONS[0].question, settings=strict)
    assert response.status == "refused" and response.draft is not None
    assert first.held_by_gate and not first.answered and not first.correct
    assert first.right_if_answered == contains_key_facts(response.draft.text, ("5 cm",))
    assert risk_coverage([first])[0]["answered"] == 1  # a lower gate would answer it
