"""Stage 3, offline: extractive answers quote the book's own units and only those, cite the
section each came from, and refuse when nothing supports the question."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import yaml

from rag.answer.evidence import EvidenceUnit, with_definitions
from rag.answer.extractive import coverage, extractive_draft, unquoted_share
from rag.answer.llm import NOT_COVERED_SENTENCE
from rag.answer.passages import passage_text, whole_section
from rag.answer.pipeline import Pipeline
from rag.answer.quotes import (
    MAX_WORDS,
    Scored,
    choose,
    defined_pair,
    prerequisites,
)
from rag.answer.unit_scoring import FEATURES, WEIGHTS, unit_probabilities
from rag.book.sentences import COMMAND, split_section
from rag.config import load_settings
from rag.index.lexical import tokenize
from rag.index.load import load_index
from rag.index.sentences import SentenceTable
from rag.retrieval.hybrid import retrieve
from rag.tuning.answers import ANSWERED, answer_pass
from rag.tuning.key_facts import contains_key_facts
from rag.tuning.questions import load_questions
from tests.builders import SAMPLE_QUESTIONS, make_chunk, make_hit, shared_path

BOOK = "Foundations of Physical AI"
QUESTION = "What does the integral term of a PID controller correct?"
MARKED = re.compile(r"\s*\[S(\d+)\]\s*")
SAMPLE_SET = yaml.safe_load(SAMPLE_QUESTIONS.read_text())["questions"]
IN_SCOPE = [q["question"] for q in SAMPLE_SET if q["in_scope"]]
WITH_FACTS = [q for q in SAMPLE_SET if q["in_scope"] and q.get("key_facts")]
# Questions of the sample set whose offline answer quotes every key fact: 53 of 87 with the shipped
# unit model and int8 retrieval questions (2026-11-23, after the key-fact audit gave five facts
# their other wordings in the book; 48 before it). The floor was 45 when the count was 48 before
# the audit (a retrieval question flipping between fp32 and int8 moves it by one): 50 after it.
MIN_CORRECT = 50
# The same on the Physical AI book in ../shared (nobody here wrote it): 44 of 64 after the audit
# (40 before; the floor was 38): 42. 45 of 64 once a "Symptom:" unit no longer joins an answer,
# 46 once commented shell steps are units, 49 once a unit is also as close as the question the
# book asks itself (rag.book.quiz): 46.
MIN_CORRECT_PHYSICAL_AI = 46
# Of the 40 out-of-scope questions that share the Physical AI book's topic
# (data/eval/physical-ai-oos.yaml), 20 were answered before a weak unit that misses most of the
# question became a refusal (rag.answer.extractive.COVERAGE_FLOOR), 9 after, 7 once a name the
# book never mentions is refused (rag.answer.guardrails.unknown_names), 3 once a quantity no quote
# states is refused (rag.answer.quantity): a ceiling of 4.
MAX_TOPICAL_ANSWERED = 4
TABLE_QUESTIONS = [  # their sections hold Markdown tables, flattened into the chunk text
    "Roughly how many encoders, IMUs and cameras does a full-size humanoid carry, and at what "
    "rates?",
    "At what update rates do the different layers of a humanoid control stack typically run?",
]


def plain(text: str) -> str:
    """Book text as the extractive answerer sees it: one space between words, no ** or __."""
    return re.sub(r"\*\*|__", "", " ".join(text.split()))


def sentences_with_markers(text: str) -> list[tuple[str, int]]:
    parts = MARKED.split(text)
    assert parts[-1] == "", f"the answer must end with a marker: {text!r}"
    return [(parts[i].strip(), int(parts[i + 1])) for i in range(0, len(parts) - 1, 2)]



@pytest.fixture(scope="module")
def pipeline(sample_index, sample_settings) -> Pipeline:
    return Pipeline(sample_index, sample_settings)


def book_units(sample_index) -> set[str]:
    return set(sample_index.sentences.texts)


@pytest.mark.parametrize("question", IN_SCOPE[::6] + TABLE_QUESTIONS)
def test_extractive_answers_are_the_books_own_units(pipeline, sample_index, question) -> None:
    response = pipeline.answer(question)
    draft = response.draft
    assert draft is not None and draft.provider == "extractive"
    if response.status == "refused":
        assert draft.text == NOT_COVERED_SENTENCE
        return
    pairs = sentences_with_markers(draft.text)
    # 1-3 chosen quotes; the units read around them only while the answer stays in its budget
    assert len(draft.around) == len(draft.quotes) and 1 <= draft.around.count(False) <= 3
    if any(draft.around):
        assert sum(len(q.split()) for q in draft.quotes) <= MAX_WORDS
    units = book_units(sample_index)
    sources = draft.sources
    for sentence, n in pairs:
        assert sentence in units, f"{sentence!r} is not a unit of the book"
        assert not re.search(r"\]\(|\*\*|`|^#|\|", sentence)  # no raw Markdown, no table glue
        rows = sample_index.sentences.rows_for(sources[n - 1].chunk.section_key)
        assert sentence in {sample_index.sentences.texts[r] for r in rows}, \
            f"{sentence!r} is not in the section that [S{n}] cites"
    assert sorted(s for s, _ in pairs) == sorted(draft.quotes)
    assert 0.0 <= draft.generation_confidence <= 1.0 and draft.prompt == ""
    cited = {c.marker for c in response.citations}
    assert cited == set(draft.markers)


def test_extractive_answers_are_deterministic(sample_index, sample_settings) -> None:
    first, second = Pipeline(sample_index, sample_settings), Pipeline(sample_index, sample_settings)
    for question in IN_SCOPE[1::10]:
        a, b, c = first.answer(question), second.answer(question), first.answer(question)
        assert a.answer == b.answer == c.answer
        assert a.draft.quotes == b.draft.quotes == c.draft.quotes
        assert [x.url for x in a.citations] == [x.url for x in b.citations]


def test_sections_beyond_top_k_are_evidence_too(pipeline) -> None:
    """The section that says a humanoid hits the floor in 0.6-1.0 s ranks 7th for this question,
    outside the top 5: passing sections beyond top-k are scored, and would be cited."""
    response = pipeline.answer("How quickly does a full-size humanoid reach the floor once it "
                               "starts to topple?")
    sources = [h.chunk.section_ref for h in response.draft.sources]
    hits = [h.chunk.section_ref for h in response.retrieval.hits]
    assert "fall-management#fall-detection" in sources and \
        "fall-management#fall-detection" not in hits
    assert len(sources) > len(hits)
    assert {c.section_id for c in response.citations} <= {h.chunk.section_id for h in
                                                          response.draft.sources}


def test_extractive_refuses_when_nothing_supports_the_question() -> None:
    hits = [make_hit("Balance depends on where the centre of mass sits over the feet.", "a", 0.4)]
    draft = extractive_draft("Which football club won the league in 1998?", hits)
    assert draft.text == NOT_COVERED_SENTENCE and draft.markers == ()
    assert draft.generation_confidence is not None and draft.generation_confidence < 0.12


@pytest.mark.parametrize("question, probability, refused", [
    ("How is a Velodyne VLP-16 puck mounted and powered on a mobile base?", 0.15, True),  # topic
    ("How is a Velodyne VLP-16 puck mounted and powered on a mobile base?", 0.3, False),  # likely
    ("Which companies make 3D lidars that scan in full 360 degrees?", 0.2, False),  # covered
])
def test_a_weak_unit_that_misses_most_of_the_question_is_no_answer(
        monkeypatch, question, probability, refused) -> None:
    import rag.answer.extractive as extractive

    monkeypatch.setattr(extractive, "unit_probabilities",
                        lambda features: np.full(len(features), probability))
    hits = [make_hit("3D lidars scan in full 360 degrees, e.g. Velodyne and Ouster.", "a")]
    draft = extractive_draft(question, hits)
    assert (draft.text == NOT_COVERED_SENTENCE) is refused
    assert draft.calibrated is not refused


@pytest.mark.parametrize("probability, dense, refused", [
    (0.05, 0.54, True),  # under the support floor, the section not close: no answer
    (0.05, 0.55, False),  # the section as close as CLOSE_SECTION: the reader words it otherwise
    (0.20, 0.67, False),  # weak and missing most of the question, but the section is close
])
def test_a_close_section_keeps_a_weak_unit_as_the_answer(monkeypatch, probability, dense,
                                                          refused) -> None:
    """"What's the late penalty ...?" was refused with "Late Policy: 10% deduction per day" as
    its best unit (probability 0.107) while retrieval's first section was 0.67 close to it."""
    import rag.answer.extractive as extractive

    assert extractive.CLOSE_SECTION == 0.55
    monkeypatch.setattr(extractive, "unit_probabilities",
                        lambda features: np.full(len(features), probability))
    hits = [make_hit("Late Policy: 10% deduction per day, maximum 3 days late.", "a", dense)]
    draft = extractive_draft("What's the penalty if I hand in the project after the deadline?",
                             hits)
    assert (draft.text == NOT_COVERED_SENTENCE) is refused
    assert draft.calibrated is not refused
    if not refused:
        assert draft.quotes == ("Late Policy: 10% deduction per day, maximum 3 days late.",)


def test_an_answer_carries_the_units_that_scored_next() -> None:
    """Draft.more: up to three quotable units below the quoted ones, best first, none that a
    quote holds; a refusal has those that came closest."""
    question = "What does the integral term of a PID controller correct?"
    hits = [make_hit("The integral term removes steady-state error. It sums the error over time. "
                     "Windup happens when the actuator saturates. The derivative term damps "
                     "overshoot. A PID loop runs at a fixed rate.", "a", 0.7),
            make_hit("Gain scheduling changes the gains with the operating point. Feed-forward "
                     "adds the expected torque.", "b", 0.5)]
    draft = extractive_draft(question, hits, max_sentences=1)
    assert len(draft.quotes) == 1 and len(draft.more) == 3
    texts = [t for t, _, _ in draft.more]
    assert draft.quotes[0] not in texts and len(set(texts)) == 3
    probabilities = [p for _, _, p in draft.more]
    assert probabilities == sorted(probabilities, reverse=True)
    assert all(p <= draft.supports[0] for p in probabilities)
    assert {source for _, source, _ in draft.more} <= {0, 1}
    refused = extractive_draft("Which football club won the league in 1998?", hits[1:])
    assert refused.text == NOT_COVERED_SENTENCE and refused.quotes == ()
    # a refusal keeps the units that came closest, best first: none of them is an answer
    closest = [p for _, _, p in refused.more]
    assert 1 <= len(closest) <= 2 and closest == sorted(closest, reverse=True)


def test_the_response_links_each_unit_that_scored_next_to_its_section(pipeline) -> None:
    response = pipeline.answer("Why do most humanoids use absolute encoders rather than "
                               "incremental ones?")
    more = response.metadata["more_from_book"]
    assert [m["text"] for m in more] == [t for t, _, _ in response.draft.more]
    for m, (_, source, probability) in zip(more, response.draft.more, strict=True):
        chunk = response.draft.sources[source].chunk
        assert (m["section_id"], m["chunk_id"], m["probability"]) == (
            chunk.section_id, chunk.chunk_id, round(probability, 4))
        assert m["url"].endswith(f"/docs/{chunk.module_id}/{chunk.chapter_id}#{chunk.section_id}")
        assert (m["section_title"], m["chapter_title"]) == (chunk.section_title,
                                                            chunk.chapter_title)
    for c in response.citations:  # each names its chapter too, as the chat's Sources show it
        chunk = next(h.chunk for h in response.draft.sources if h.chunk.chunk_id == c.chunk_id)
        assert c.chapter_title == chunk.chapter_title != ""
    refused = pipeline.answer("Which football club won the league in 1998?")
    assert refused.status == "refused" and "more_from_book" not in refused.metadata


def test_extractive_skips_code_tables_headings_and_lead_ins() -> None:
    hits = [make_hit("## Integral Action\n\nThe integral term removes the steady-state error "
                     "that remains under load. The integral term works like this:\n\n"
                     "```python\nintegral += error * dt  # the integral term of the loop\n"
                     "x = 1\ny = 2\n```\n\n"
                     "- **Integral windup** happens when the integral term keeps growing while "
                     "the actuator is saturated.\n", "basics", 0.6)]
    draft = extractive_draft("What does the integral term remove?", hits, max_sentences=3)
    assert ("The integral term removes the steady-state error that remains under load."
            in draft.quotes)
    assert not any("integral +=" in q or q.endswith(":") or "##" in q for q in draft.quotes)
    assert all(m == "S1" for m in draft.markers)
    assert "**" not in draft.text  # list mark and ** stripped from the item


def test_extractive_without_hits_is_empty() -> None:
    draft = extractive_draft("Anything?", [])
    assert (draft.text, draft.markers, draft.quotes) == ("", (), ())


def test_extractive_without_a_question_vector_uses_words(sample_index, sample_settings) -> None:
    hits = retrieve(sample_index, QUESTION, sample_settings.retrieval).hits
    draft = extractive_draft(QUESTION, hits, table=sample_index.sentences, query_vector=None)
    assert draft.quotes and "integral" in " ".join(draft.quotes).lower()


def two_unit_draft(embedder, question: str, text: str, section: str, blended: float):
    """The extractive draft of up to two units of one section holding `text`, scored by the
    real embedder (no sentence table: the units are embedded on the fly)."""
    return extractive_draft(question, [make_hit(text, section, blended)],
                            query_vector=embedder.embed_query(question),
                            embed=embedder.embed_documents, max_sentences=2)


def test_a_second_unit_covers_the_other_part_of_the_question(embedder) -> None:
    draft = two_unit_draft(
        embedder, "What is a PD loop, and where does its damping come from?",
        "A PD loop combines a proportional term with a derivative term. "
        "The proportional term alone makes the joint ring like a spring. "
        "Many robots run the loop at one kilohertz on the motor driver. "
        "Damping comes from the derivative term, which opposes the joint's velocity.", "pd", 0.6)
    assert draft.quotes[0] == "A PD loop combines a proportional term with a derivative term."
    assert draft.quotes[1] == ("Damping comes from the derivative term, which opposes the "
                               "joint's velocity.")  # adds "damping", not just more "PD loop"


def test_a_unit_that_answers_the_books_own_review_question_is_scored_by_it_too(embedder) -> None:
    """The reader's "what goes wrong if ..." is close to the book's review question, not to the
    answer's wording ("hands control to the executor"): with the question in the text, the
    answer's units are likelier (rag.book.quiz); without it, the same units score lower."""
    quiz = ("A node publishes its readings on a topic, and a launch file starts several nodes at "
            "once. Timers fire at a fixed period and call a function of the node.\n\n"
            "**Question 1**: Why is it important to call spin in your program?\n\n"
            "**Answer 1**: Spin hands control to the executor, which delivers incoming messages "
            "and timer events to their callbacks. Otherwise the script reaches its last line and "
            "terminates straight away.\n")
    bare = quiz.replace("**Question 1**: Why is it important to call spin in your program?", "")
    question = "What goes wrong if my program never calls spin?"
    asked, unasked = (extractive_draft(question, [make_hit(text, "spin", 0.6)],
                                       query_vector=embedder.embed_query(question),
                                       embed=embedder.embed_documents) for text in (quiz, bare))
    assert asked.quotes[0].startswith("Spin hands control to the executor")
    support = dict(zip(asked.quotes, asked.supports, strict=True))
    before = dict(zip(unasked.quotes, unasked.supports, strict=True))
    for answer in (asked.quotes[0], "Otherwise the script reaches its last line and terminates "
                                    "straight away."):
        assert support[answer] > before[answer] + 0.1


def scored_unit(source: int, position: int, probability: float) -> Scored:
    return Scored(EvidenceUnit(source, position, f"unit {source}.{position}", "prose", 0,
                               ("Section",)), probability, frozenset())


def test_a_unit_elsewhere_joins_only_when_nothing_near_the_best_comes_close() -> None:
    """The rest of an answer comes from near the best unit; another section's unit joins when
    it is likely enough (from 0.3 of the best) and nothing near is close to it."""
    best, near, far = scored_unit(0, 3, 0.5), scored_unit(0, 4, 0.2), scored_unit(2, 0, 0.3)
    assert choose([best, near, far], 2, "q") == [best, near]  # the near one, though less likely
    alone = scored_unit(0, 4, 0.05)  # nothing near comes close: the far one joins
    assert choose([best, alone, far], 2, "q") == [best, far]
    unlikely = scored_unit(2, 0, 0.12)  # under 0.3 of the best: never
    assert choose([best, unlikely], 3, "q") == [best]
    assert choose([best, near, far], 3, "q") == [best, near, far]  # the rest in book order


def test_a_question_about_what_is_needed_first_is_answered_by_the_prerequisites() -> None:
    """"What should I already be comfortable with before I start the lesson on URDF?" quoted
    the lesson's learning objectives: its "Prerequisites" section, ranked 8th by retrieval,
    scored low. The chapter's prerequisites answer it however they scored; other chapters'
    do not, nor does any other question get them."""
    def unit(source: int, position: int, text: str, heading: str, p: float) -> Scored:
        return Scored(EvidenceUnit(source, position, text, "item", 0, ("URDF and SDF", heading)),
                      p, frozenset(tokenize(text)))
    objectives = unit(0, 0, "By the end of this lesson, you will be able to: Understand URDF",
                      "Learning Objectives", 0.4)
    xml = unit(1, 1, "Basic understanding of XML syntax", "Prerequisites", 0.02)
    frames = unit(1, 2, "Familiarity with 3D coordinate systems", "Prerequisites", 0.01)
    other = unit(2, 0, "Completed Module 3", "Prerequisites", 0.3)  # another chapter's
    # the evidence's sections (units' sources 0-2), by chapter
    chapters = [dataclasses.replace(make_hit("", f"s{n}"), chunk=make_chunk(n, chapter))
                for n, chapter in enumerate(("urdf-sdf", "urdf-sdf", "vla"))]
    scored = [objectives, xml, frames, other]
    question = "Before I start the lesson on URDF, what should I already be comfortable with?"
    assert prerequisites(scored, chapters, objectives, 3, question) == [xml, frames]
    assert prerequisites(scored, chapters, objectives, 3, "What will I learn about URDF?") == []
    assert prerequisites(scored, chapters, xml, 3, question) == []  # the lead is one already
    labelled = Scored(EvidenceUnit(1, 0, "Prerequisites: Week 5 Lesson 1, basic XML knowledge",
                                   "prose", 0, ("URDF",)), 0.01, frozenset())
    assert prerequisites([objectives, labelled], chapters, objectives, 3,
                         "What do I need to know before I begin?") == [labelled]


def sentence_table(embedder, hits: list) -> SentenceTable:
    """The sentence table an index would keep for these hits' sections: every unit, embedded."""
    units = [(h.chunk.section_key, u) for h in hits
             for u in split_section(h.chunk.text, h.chunk.section_title)]
    return SentenceTable([k for k, _ in units], [u.text for _, u in units],
                         [u.kind for _, u in units], [u.block for _, u in units],
                         embedder.embed_documents([u.text for _, u in units]))


def test_a_section_defining_the_asked_subject_joins_the_evidence(embedder) -> None:
    """A glossary section lists dozens of terms, so its chunk ranks low for any one: "What is
    Isaac ROS?" found its entry 35th and quoted the commands that clone Isaac ROS. A candidate
    section that defines the question's subject joins the evidence (with_definitions), where
    the unit model weighs its definition against the commands."""
    install = ("Get the Rover SDK onto the robot:\n\n```bash\ngit clone "
               "https://example.org/rover_sdk.git && cd rover_sdk\n```\n\nBuild the Rover SDK "
               "workspace:\n\n```bash\ncolcon build --packages-select rover_sdk\n```\n")
    glossary = ("**Rover Arm**\n: The five-joint arm on the rover's deck.\n\n**Rover SDK**\n: "
                "The vendor's library of drivers and motion primitives for the rover.\n\n"
                "**Rover Mast**\n: The camera mast.\n")
    hits = [make_hit(install, "install", 0.9)]
    entry = dataclasses.replace(make_hit(glossary, "glossary", 0.3), passed=False,
                                selected=False, rank=40)
    table = sentence_table(embedder, [*hits, entry])
    question = "What is the Rover SDK?"
    vector = embedder.embed_query(question)
    alone = extractive_draft(question, hits, [*hits], table, vector, embedder.embed_documents)
    assert [h.chunk.section_id for h in alone.sources] == ["install"]
    draft = extractive_draft(question, hits, [*hits, entry], table, vector,
                             embedder.embed_documents)
    assert [h.chunk.section_id for h in draft.sources] == ["install", "glossary"]
    assert "Rover SDK: The vendor's library of drivers and motion primitives for the rover." \
        in draft.quotes + tuple(text for text, _, _ in draft.more)
    assert with_definitions(list(hits), [entry], ("",), table) == hits  # no subject: no lookup
    assert with_definitions(list(hits), [entry], ("Rover SDK",), None) == hits


def glossary_draft(embedder, question: str, hits: list, entries: list):
    """extractive_draft() over `hits` with `entries` as candidates that retrieval did not
    select, every unit of both in the sentence table."""
    return extractive_draft(question, hits, [*hits, *entries],
                            sentence_table(embedder, [*hits, *entries]),
                            embedder.embed_query(question), embedder.embed_documents)


def test_a_comparison_is_answered_by_the_books_definitions_of_both_things(embedder) -> None:
    """"What's the difference between forward and inverse kinematics?" was refused: each
    glossary entry alone scored low against a question naming two things, and the chapter that
    names both defines neither. The book defining both is the answer, in the question's order,
    each from the section that defines it (with_definitions brings in both glossary pages)."""
    chapter = ("Kinematics comes up in every arm lesson. Forward and inverse kinematics both "
               "appear in the grasping lab, and both use the arm's joint angles.\n")
    f_page = ("**Force Sensor**\n: Measures contact force.\n\n**Forward Kinematics**\n: "
              "Calculating where the gripper is from the joint angles.\n")
    i_page = ("**IMU**\n: Measures acceleration and rotation.\n\n**Inverse Kinematics**\n: "
              "Calculating the joint angles that put the gripper at a target.\n")
    hits = [make_hit(chapter, "arm", 0.9)]
    entries = [dataclasses.replace(make_hit(text, name, 0.3), passed=False, selected=False,
                                   rank=30 + n)
               for n, (text, name) in enumerate(((f_page, "glossary-f"), (i_page, "glossary-i")))]
    question = "What's the difference between inverse and forward kinematics?"
    draft = glossary_draft(embedder, question, hits, entries)
    inverse = "Inverse Kinematics: Calculating the joint angles that put the gripper at a target."
    forward = "Forward Kinematics: Calculating where the gripper is from the joint angles."
    assert set(draft.quotes) == {inverse, forward}
    assert [h.chunk.section_id for h in draft.sources] == ["arm", "glossary-i", "glossary-f"]
    assert draft.text.startswith(f"{inverse} [S2] {forward} [S3]")  # as the question asks
    # the quotes and their probabilities lead with the likelier, as the confidence reads them
    assert list(draft.supports) == sorted(draft.supports, reverse=True)
    assert draft.led_by == 'the book\'s definitions of "inverse kinematics" and of "forward ' \
        'kinematics", the two things the question compares'  # shown in "Why this answer"


def test_a_pair_of_definitions_needs_both_and_prefers_the_likelier() -> None:
    """defined_pair(): the likeliest quotable unit defining each thing, never a command; None
    when the evidence defines only one (the answerer then ranks as it always has)."""
    def unit(position: int, text: str, probability: float, kind: str = "prose") -> Scored:
        return Scored(EvidenceUnit(0, position, text, kind, 0, ("Glossary",)), probability,
                      frozenset())
    capex = unit(0, "CapEx (Capital Expenditure): Upfront costs for equipment.", 0.05)
    capex_total = unit(1, "CapEx: Total Cost $89,000", 0.02)
    opex = unit(2, "OpEx (Operational Expenditure): Recurring costs.", 0.04)
    run = unit(3, "OpEx: ros2 run cost_tracker report", 0.5, COMMAND)
    other = unit(4, "Budgets are set each spring.", 0.3)
    question = "What's the difference between CapEx and OpEx?"
    compared = ("CapEx", "OpEx")
    assert defined_pair([capex, capex_total, opex, run, other], compared, question) == \
        [capex, opex]
    assert defined_pair([capex, run, other], compared, question) is None
    assert defined_pair([capex, opex], (), question) is None


def test_offline_answers_hold_the_books_key_facts(pipeline) -> None:
    """A guard on the whole answerer (retrieval, unit model, choice of units): on the sample set
    it must not fall below today's share of right answers."""
    correct = [q["question"] for q in WITH_FACTS
               if (r := pipeline.answer(q["question"])).status in ANSWERED
               and contains_key_facts(r.answer, q["key_facts"])]
    assert len(WITH_FACTS) == 87
    assert len(correct) >= MIN_CORRECT, f"{len(correct)}/{len(WITH_FACTS)} answers hold the facts"


def test_on_a_book_we_did_not_write_answers_hold_its_key_facts_and_none_is_false(
        embedder, tmp_path_factory) -> None:
    """The guard above on the Physical AI book (indexed here, about a minute): no fewer right
    answers than before this floor was set, and no out-of-scope question answered."""
    settings = load_settings(env={}, book_dir=shared_path("physical-ai-book"),
                             index_dir=tmp_path_factory.mktemp("physical-ai-index"),
                             audit_db=tmp_path_factory.mktemp("audit") / "audit.duckdb")
    index, _ = load_index(settings)
    outcomes = answer_pass(Pipeline(index, settings),
                           load_questions(SAMPLE_QUESTIONS.with_name("physical-ai.yaml")),
                           settings, settings.w_dense, settings.threshold)
    graded = [o for o in outcomes if o.in_scope and o.key_facts]
    correct = [o.question for o in graded if o.correct]
    false = [o.question for o in outcomes if not o.in_scope and o.answered]
    assert len(graded) == 64
    assert len(correct) >= MIN_CORRECT_PHYSICAL_AI, f"{len(correct)}/64 answers hold the facts"
    assert false == []
    topical = answer_pass(Pipeline(index, settings),
                          load_questions(SAMPLE_QUESTIONS.with_name("physical-ai-oos.yaml")),
                          settings, settings.w_dense, settings.threshold)
    answered = [o.question for o in topical if o.answered]
    assert len(topical) == 40 and all(not o.in_scope for o in topical)
    assert len(answered) <= MAX_TOPICAL_ANSWERED, answered


def test_unit_probabilities_follow_the_fitted_weights() -> None:
    """Every feature has a weight, and a unit that matches the question better on a feature with
    a positive weight is more likely to hold the answer (the model is monotone in it)."""
    assert set(WEIGHTS) == set(FEATURES)
    base = np.zeros((1, len(FEATURES)))
    for name in ("cosine", "lexical", "prior", "defines_subject"):
        better = base.copy()
        better[0, FEATURES.index(name)] = 1.0
        assert WEIGHTS[name] > 0
        assert unit_probabilities(better)[0] > unit_probabilities(base)[0]
    worse = base.copy()
    worse[0, FEATURES.index("detour")] = 1.0  # "See the next chapter" does not answer
    assert unit_probabilities(worse)[0] < unit_probabilities(base)[0]


def test_the_unquoted_share_is_the_evidence_probability_the_answer_leaves_out() -> None:
    units = [Scored(EvidenceUnit(0, i, f"unit {i}", "prose", 0, ("Section",)), p, frozenset())
             for i, p in enumerate((0.5, 0.2, 0.2, 0.1))]
    assert unquoted_share(units, units[:2]) == pytest.approx(0.3)
    assert unquoted_share(units, units) == 0.0
    nothing = [Scored(u.unit, 0.0, frozenset()) for u in units]
    assert unquoted_share(nothing, nothing[:1]) == 0.0  # no probability anywhere: nothing left out


def test_coverage_weighs_the_question_terms_the_quotes_hold_by_their_rarity() -> None:
    def quoted(*stems: str) -> Scored:
        return Scored(EvidenceUnit(0, 0, "unit", "prose", 0, ("S",)), 0.5, frozenset(stems))

    idf = {"zmp": 3.0, "foot": 1.0}
    assert coverage(idf, [quoted("zmp", "robot")]) == 0.75
    assert coverage(idf, [quoted("foot"), quoted("zmp")]) == 1.0
    assert coverage(idf, [quoted("robot")]) == 0.0
    assert coverage({}, [quoted("robot")]) == 1.0  # a question without terms: nothing left out


def test_a_short_list_section_is_quoted_whole_in_place_of_its_lead() -> None:
    """The unit model scores each line of a section against the question alone: to "What
    downsides should I warn them about?" it quoted one line of a four-line "Disadvantages" list.
    A short section (a list or table, at most two sentences of prose, 80 words or fewer) that
    holds the lead is quoted whole, once, in the book's order, as likely as the lead; quotes
    from other sections follow while the answer stays within MAX_WORDS."""

    def unit(source: int, position: int, text: str, probability: float,
             kind: str = "item") -> Scored:
        return Scored(EvidenceUnit(source, position, text, kind, 0, ("Hybrid", "Disadvantages")),
                      probability, frozenset(tokenize(text)))
    title = unit(0, 0, "Disadvantages", 0.05, "heading")
    lines = [unit(0, 1, "Disadvantages: Requires managing two environments", 0.30),
             unit(0, 2, "Disadvantages: Needs physical lab space", 0.10),
             unit(0, 3, "Disadvantages: Higher total cost than cloud alone", 0.08)]
    elsewhere = unit(1, 4, "Latency Issues: Cannot control physical robots from the cloud", 0.2)
    scored = [title, *lines, elsewhere]
    quoted = whole_section([lines[0], elsewhere], scored)
    assert [q.unit.kind for q in quoted] == ["passage", "item"]
    assert quoted[0].unit.text == ("Disadvantages: Requires managing two environments; Needs "
                                   "physical lab space; Higher total cost than cloud alone")
    assert quoted[0].probability == 0.30 and quoted[1] is elsewhere
    # nothing to add, a section over the word limit, or one of prose: the units stay
    assert whole_section([lines[0], lines[1], lines[2]], scored)[0] is lines[0]
    assert whole_section([lines[0]], scored, limit=10) == [lines[0]]
    # a quote from another short section is read whole too, once, within MAX_WORDS
    due = unit(2, 1, "Due: End of Week 7", 0.15)
    late = unit(2, 2, "Late Policy: 10% deduction per day", 0.14)
    quoted = whole_section([lines[0], due], [*scored, due, late])
    assert [q.unit.text for q in quoted[1:]] == ["Due: End of Week 7; Late Policy: 10% "
                                                 "deduction per day"]
    essay = [unit(0, n, f"Sentence {n} of an essay on the hybrid lab.", 0.2, "prose")
             for n in range(1, 4)]
    assert whole_section([essay[0]], [title, *essay]) == [essay[0]]


def test_a_passage_says_each_label_once_and_drops_a_list_of_the_labels() -> None:
    """A passage of units reads as the book does: the unit that only lists the labels of the
    items after it goes (its lead-in stays when it says more than a label), a label repeated on
    consecutive units is said once, and units that end no sentence are joined by "; "."""
    assert passage_text([
        "Working with physical robots introduces unique challenges: Real-world uncertainty; "
        "Safety requirements",
        "Real-world uncertainty: Sensor noise, unpredictable environments",
        "Safety requirements: Robots must operate safely around humans"]) == (
        "Working with physical robots introduces unique challenges: Real-world uncertainty: "
        "Sensor noise, unpredictable environments; Safety requirements: Robots must operate "
        "safely around humans")
    assert passage_text(["Cause: Calling rclpy.init() twice",
                         "Solution: Only call rclpy.init() once",
                         "Solution: Call rclpy.shutdown() before re-initializing",
                         "Check it again."]) == (
        "Cause: Calling rclpy.init() twice; Solution: Only call rclpy.init() once; Call "
        "rclpy.shutdown() before re-initializing; Check it again.")
    assert passage_text(["Purpose; File Types", "Purpose: Simplify startup",
                         "File Types: Python and XML"]) == \
        "Purpose: Simplify startup; File Types: Python and XML"
    assert passage_text(["Module 1 is tested with Humble (LTS)",
                         "Module 1 is tested with Humble (LTS): Released May 2022; Ubuntu 22.04"]
                        ) == "Module 1 is tested with Humble (LTS): Released May 2022; Ubuntu 22.04"
    assert passage_text(["Cause: Spinning twice", "Solution: Spin once and shut down:"]) == \
        "Cause: Spinning twice; Solution: Spin once and shut down"
    assert passage_text(["Tools: RQt; rosbag2", "Install them first."]) == \
        "Tools: RQt; rosbag2; Install them first."


def test_the_draft_marks_a_quote_that_is_a_whole_section() -> None:
    """Draft.whole tells, per quote, a short section read whole from a single unit: the chat's
    "Why this answer" and the audit row (answer_whole) say which is which."""
    hits = [make_hit("## Disadvantages\n\n- Requires managing two separate computing environments\n"
                     "- Needs physical lab space for the shared robots\n"
                     "- Higher total cost than a lab that is cloud only\n"
                     "- Students must learn to deploy models to the edge\n"
                     "- Network outages stop the cloud half of the work\n", "cons", 0.7)]
    draft = extractive_draft("What downsides does the hybrid lab have?", hits)
    assert draft.quotes and len(draft.whole) == len(draft.quotes)
    assert draft.whole[0] and "Needs physical lab space" in draft.quotes[0]
    assert not draft.more  # its other lines are in the quote, not under it
    single = extractive_draft("What downsides does the hybrid lab have?", hits, max_sentences=1)
    assert single.whole == (False,)
