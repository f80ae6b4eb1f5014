"""Numbered parts (rag.retrieval.parts): "What does Module 2 cover?" is ranked and answered from
Module 2, not from a section of Module 1 or one that only mentions Modules 3 and 4; a question
that names no part is ranked exactly as before."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rag.answer.evidence import EvidenceUnit
from rag.answer.pipeline import Pipeline
from rag.answer.quotes import Scored, in_named_part
from rag.config import load_settings
from rag.index.load import load_index
from rag.retrieval.hybrid import (
    CandidatePool,
    blend_scores,
    pool_from_record,
    pool_to_record,
    rank_candidates,
    retrieve,
)
from rag.retrieval.parts import (
    MENTION,
    PART_WEIGHT,
    asks_overview,
    is_entry,
    mentioned_in,
    named_parts,
    names_other_part,
    names_part,
    part_score,
    part_scores,
    parts_in,
    place_of,
)
from rag.types import Chunk, RetrievalSettings


@pytest.mark.parametrize(("text", "parts"), [
    ("Weeks 6-7: Robot Simulation (Module 2)", {"week": {6, 7}, "module": {2}}),
    ("week-1-2-sensors-overview", {"week": {1, 2}}),
    ("week-6-lesson-1-gazebo-setup", {"week": {6}, "lesson": {1}}),
    ("module-1-ros2", {"module": {1}}),
    ("What's covered in weeks 11 and 12?", {"week": {11, 12}}),
    ("Weeks 3–5", {"week": {3, 4, 5}}),
    ("Read chapter three first", {"chapter": {3}}),
    ("Module 4 Part 1", {"module": {4}, "part": {1}}),
    ("ROS 2 runs for 13 weeks on Ubuntu 22.04", {}),
    ("a lesson learned in module design", {}),
    ("Weeks 1 to 2026", {"week": {1}}),  # a year is no week
])
def test_the_parts_a_text_names(text: str, parts: dict) -> None:
    assert {kind: set(numbers) for kind, numbers in parts_in(text).items()} == parts


def chunk(module: str, chapter: str, path: tuple[str, ...], text: str = "t") -> Chunk:
    return Chunk(chunk_id=f"{module}/{chapter}/{path[-1]}", text=text, module_id=module,
                 chapter_id=chapter, section_id=path[-1].lower().replace(" ", "-"),
                 section_title=path[-1], chapter_title=path[0], heading_path=path,
                 stable=True, page=None, ordinal=0, token_count=len(text.split()))


def test_a_chunk_is_placed_by_its_folders_and_headings_not_by_its_text() -> None:
    inside = chunk("module-2-sim", "intro", ("Simulation", "Overview"))
    other = chunk("module-1-ros2", "faq", ("Module 1 FAQ", "Builds"))
    mentions = chunk("setup", "hardware", ("Hardware", "Kit"), "This kit covers Module 3.")
    asked = named_parts("What does Module 2 cover?")
    assert asked == {"module": frozenset({2})}
    assert place_of(mentions) == {}
    assert part_score(asked, place_of(inside)) == 1.0
    assert part_score(asked, place_of(other)) == -1.0
    assert part_score(asked, place_of(mentions), parts_in(mentions.text)) == -MENTION
    assert part_score(asked, {}, parts_in("Module 2 (Weeks 6-7): Gazebo")) == MENTION
    # a question naming two kinds: the mean of the two votes
    two = named_parts("What is due in week 6 of Module 2?")
    assert part_score(two, place_of(inside)) == 0.5
    assert list(part_scores("What does Module 2 cover?", [inside, other, mentions])) == \
        [1.0, -1.0, -MENTION]


def test_a_unit_that_names_only_other_parts_is_about_them() -> None:
    asked = named_parts("What does Module 2 cover?")
    assert names_other_part("This kit covers Module 3 (Isaac ROS) and Module 4 (VLA).", asked)
    assert not names_other_part("Module 2 (Weeks 6-7); Module 3 (Weeks 8-10)", asked)
    assert names_part("Module 2 (Weeks 6-7); Module 3 (Weeks 8-10)", asked)
    assert not names_other_part("Gazebo simulates physics.", asked)


def hand_pool(query: str, chunks: list[Chunk]) -> CandidatePool:
    n = len(chunks)
    return CandidatePool(query=query, chunks=tuple(chunks),
                         dense=np.linspace(0.6, 0.45, n).astype(np.float32),
                         bm25_raw=np.linspace(4.0, 1.0, n).astype(np.float32), bm25_max=4.0,
                         signals={"part": part_scores(query, chunks)})


def test_the_part_score_moves_the_blended_score_and_survives_a_replay() -> None:
    chunks = [chunk("module-1-ros2", "faq", ("Module 1 FAQ", f"Q{i}")) for i in range(3)]
    chunks.append(chunk("module-2-sim", "intro", ("Simulation", "Overview")))
    pool = hand_pool("What does Module 2 cover?", chunks)
    settings = RetrievalSettings(threshold=0.0, top_k=4)
    ranked = rank_candidates(pool, settings)
    hybrid = blend_scores(pool.dense, pool.bm25, settings.w_dense)
    by_id = {h.chunk.chunk_id: h for h in ranked.candidates}
    before = rank_candidates(dataclasses.replace(pool, signals={}), settings)
    assert [h.chunk.module_id for h in before.candidates][-1] == "module-2-sim"
    assert ranked.candidates[0].chunk.module_id == "module-2-sim"
    for c, base in zip(chunks, hybrid, strict=True):
        hit = by_id[c.chunk_id]
        assert hit.part == (1.0 if c.module_id == "module-2-sim" else -1.0)
        assert hit.blended == pytest.approx(base + PART_WEIGHT * hit.part, abs=1e-6)
    assert by_id[chunks[3].chunk_id].to_dict()["part"] == 1.0
    replayed = rank_candidates(pool_from_record(pool_to_record(ranked)), settings)
    assert [h.chunk.chunk_id for h in replayed.candidates] == \
        [h.chunk.chunk_id for h in ranked.candidates]
    assert [h.part for h in replayed.candidates] == [h.part for h in ranked.candidates]


def test_a_question_that_names_no_part_is_ranked_as_before() -> None:
    chunks = [chunk("module-1-ros2", "faq", ("Module 1 FAQ", f"Q{i}")) for i in range(4)]
    pool = hand_pool("What does a ROS 2 node do?", chunks)
    assert not pool.signal("part").any()
    ranked = rank_candidates(pool, RetrievalSettings(threshold=0.0))
    hybrid = blend_scores(pool.dense, pool.bm25, RetrievalSettings().w_dense)
    assert [h.blended for h in ranked.candidates] == pytest.approx(sorted(hybrid, reverse=True))
    assert all(h.part == 0.0 for h in ranked.candidates)
    bare = dataclasses.replace(pool, signals={})  # a pool recorded before parts were scored
    assert [h.blended for h in rank_candidates(bare, RetrievalSettings(threshold=0.0)).
            candidates] == [h.blended for h in ranked.candidates]


MODULES = {
    "module-1-ros2": ("ROS 2 Fundamentals", "# Module 1: ROS 2\n\n## What this module covers "
                      "{#covers}\n\nThis module covers ROS 2 nodes, topics, services and "
                      "launch files, the parts every later module builds on.\n\n"
                      "## Module assessment {#assessment}\n\nThe module ends with a package "
                      "project that covers publishers and subscribers.\n"),
    "module-2-simulation": ("Digital Twins", "# Digital Twins\n\n## What this module covers "
                            "{#covers}\n\n"
                            "This module covers simulation: Gazebo simulates the robot's "
                            "physics and Unity renders the scene.\n"),
    "setup": ("Hardware", "# Hardware\n\n## The kit {#kit}\n\nThis kit covers Module 3 "
              "(perception) and Module 4 (language), so buy it before week 8.\n"),
    "overview": ("Course Overview", "# Course Overview\n\n## Weekly plan {#plan}\n\n"
                 "| Week | Topics | Deliverable |\n|---|---|---|\n"
                 "| Week 4 | Services and actions | A service server |\n"
                 "| Week 5 | Launch files and robot descriptions | A launch file for two nodes |\n"
                 "| Week 6 | Physics engines | A simulated world |\n"),
}


@pytest.fixture(scope="module")
def parts_book(tmp_path_factory, embedder) -> tuple:
    root = tmp_path_factory.mktemp("parts") / "book"
    for module, (title, body) in MODULES.items():
        (root / module).mkdir(parents=True)
        (root / module / "intro.md").write_text(
            f"---\nid: intro\ntitle: {title}\n---\n{body}", encoding="utf-8")
    settings = load_settings(env={}, book_dir=root,
                             index_dir=tmp_path_factory.mktemp("parts-index"),
                             audit_db=tmp_path_factory.mktemp("parts-audit") / "a.duckdb")
    index, _ = load_index(settings)
    return index, settings


def test_module_2_is_found_and_answered_from_module_2(parts_book: tuple) -> None:
    """Real MiniLM, BM25 and Qdrant: the question's "Module 2" names a folder, not a word of
    the section that answers it."""
    index, settings = parts_book
    question = "What does Module 2 cover?"
    result = retrieve(index, question, settings.retrieval)
    parts = {h.chunk.module_id: h.part for h in result.candidates}
    assert parts["module-2-simulation"] == 1.0 and parts["module-1-ros2"] == -1.0
    assert parts["setup"] == -MENTION
    assert result.hits[0].chunk.module_id == "module-2-simulation"
    # the answerer's unit model finds little support in a book of three short sections: the
    # answer is refused, but names Module 2's section first and never quotes the kit
    response = Pipeline(index, settings).answer(question)
    assert "This kit covers" not in response.answer
    assert "The nearest sections are: Digital Twins › What this module covers;" in \
        response.answer or {c.module_id for c in response.citations} == {"module-2-simulation"}
    # the same book without a numbered part in the question: no part score anywhere
    plain = retrieve(index, "What does Gazebo simulate?", settings.retrieval)
    assert all(h.part == 0.0 for h in plain.candidates)


def scored(source: int, text: str, probability: float) -> Scored:
    unit = EvidenceUnit(source=source, position=0, text=text, kind="sentence", block=0,
                        heading=("H",))
    return Scored(unit, probability, frozenset(text.lower().split()))


def test_the_answer_quotes_units_about_the_part_named() -> None:
    question = "What does Module 2 cover?"
    kit = scored(0, "This kit covers Module 3 (Isaac ROS) and Module 4 (VLA).", 0.30)
    faq = scored(1, "This FAQ compiles the most common issues of the course.", 0.15)
    overview = scored(2, "This module covers Gazebo and Unity.", 0.07)
    syllabus = scored(3, "Module 2 (Weeks 6-7): Simulating sensors in Gazebo", 0.05)
    later = scored(2, "Completion of Module 1 (Weeks 3-5): ROS 2 Fundamentals", 0.20)
    units = [kit, faq, overview, syllabus, later]
    placed = [0.0, -1.0, 1.0, 0.0]  # the kit's section, Module 1's FAQ, Module 2, a syllabus
    assert in_named_part(units, placed, question) == [overview, syllabus]
    # nothing about Module 2: the units not about another module; all about others: all
    assert in_named_part([kit, faq], [0.0, 0.0], question) == [faq]
    assert in_named_part([kit, faq, later], [0.0, -1.0, 0.0], question) == [kit, faq, later]
    assert in_named_part(units, placed, "What does Gazebo simulate?") == units
    # placed in Module 4, the prerequisite naming Module 3 stays; about Module 4 first
    prerequisite = scored(0, "Completion of Module 3 (Weeks 8-10)", 0.2)
    assert in_named_part([prerequisite, kit], [1.0, 0.0],
                         "What should I finish before Module 4?") == [kit]
    assert in_named_part([prerequisite], [1.0], "What should I finish before Module 4?") == \
        [prerequisite]


def test_a_question_about_a_week_is_led_by_the_books_entry_for_it(parts_book: tuple) -> None:
    """The syllabus row that opens with "Week 5" is a candidate whatever its scores (its text
    names the week: mentioned_in) and leads the answer to "What will I learn in week 5?"."""
    index, settings = parts_book
    question = "What will I learn in week 5?"
    overview = [i for i, c in enumerate(index.chunks) if c.module_id == "overview"]
    assert set(overview) <= set(mentioned_in(index, question))
    assert mentioned_in(index, "What does Gazebo simulate?") == []
    result = retrieve(index, question, settings.retrieval)
    assert any(h.chunk.module_id == "overview" for h in result.candidates)
    response = Pipeline(index, settings).answer(question)
    assert response.status != "refused", response.answer
    assert response.answer.startswith("Week 5: Launch files and robot descriptions")
    assert response.citations[0].module_id == "overview"


def test_what_counts_as_a_parts_entry_and_an_overview_question() -> None:
    week5 = named_parts("week 5")
    assert is_entry("Week 5: Robot Description & Launch; Lesson 1: Launch Files", week5)
    assert is_entry("Weeks 3-5: ROS 2 Fundamentals (Module 1)", week5)
    assert not is_entry("Completed Week 5 Lesson 1 on launch files", week5)
    assert not is_entry("Week 6: Physics engines; A simulated world", week5)
    assert not is_entry("Module 5: Capstone", week5)  # another kind of part
    assert asks_overview("What will I learn in week 9?") == named_parts("week 9")
    assert asks_overview("What do we hand in at the end of week 6?") == named_parts("week 6")
    assert asks_overview("Which weeks is Module 3 taught in?") == named_parts("module 3")
    assert asks_overview("What GPU do I need for module 3?") == {}  # one thing in it
    assert asks_overview("What project do we do for the Module 3 assessment?") == {}
    assert asks_overview("What will I learn in this course?") == {}  # no numbered part
    # what happens in it, what we do in it: the part as a whole too
    assert asks_overview("What happens in week 12?") == named_parts("week 12")
    assert asks_overview("What do we do in week 7?") == named_parts("week 7")
    assert asks_overview("What's the schedule for week 4?") == named_parts("week 4")
