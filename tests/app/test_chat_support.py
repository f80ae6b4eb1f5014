"""The pages' pure helpers: history pruning, rate limit message, highlighting, formatting, tables.

No Streamlit here; ranking inputs are hand-made candidate pools so expected ranks and changes can
be worked out by hand."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest

from pages.components.chat.support import (
    HISTORY_MAX_QUESTIONS,
    LEGACY_STORAGE_KEY,
    StreamCapture,
    conversation_messages,
    format_age,
    legacy_turns_of_book,
    merge_history,
    parse_history,
    prune_history,
    rate_limit_message,
    selection_caption,
    serialize_history,
    storage_key,
)
from pages.components.common.citing import (
    answer_markdown,
    cited_name,
    more_markdown,
    sources_markdown,
)
from pages.components.common.format import (
    badges_markdown,
    highlight_sentences,
    highlight_terms,
    notice_lines,
    term_spans,
    verdict_caption,
)
from pages.components.common.tables import (
    book_sections,
    build_filters,
    candidates_frame,
    contributions_frame,
    hit_name,
    kpi_values,
    quote_frame,
    rank_changes,
    section_name,
    turn_hits_frame,
)
from rag.answer.record import history_record
from rag.notices import SELECTION_TOO_SHORT, make_notice
from rag.retrieval.hybrid import CandidatePool, rank_candidates
from rag.types import Chunk, Citation, Confidence, Response, RetrievalSettings, Verdict

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def turn(i: int, age: timedelta = timedelta(hours=1), **extra) -> dict:
    return {"query_id": f"q{i}", "user_query_text": f"question {i}",
            "answer_text": f"answer {i} [S1]",
            "status": "success", "timestamp": (NOW - age).isoformat(), **extra}


# -- history ------------------------------------------------------------------------------------

def test_prune_keeps_the_last_twenty_questions_in_order():
    turns = [turn(i, timedelta(minutes=100 - i)) for i in range(25)]
    kept = prune_history(turns, NOW)
    assert len(kept) == HISTORY_MAX_QUESTIONS == 20
    assert [t["query_id"] for t in kept] == [f"q{i}" for i in range(5, 25)]


def test_prune_drops_entries_older_than_seven_days_and_malformed_ones():
    turns = [turn(1, timedelta(days=7, seconds=1)), turn(2, timedelta(days=6, hours=23)),
             {"user_query_text": "no timestamp"}, {"timestamp": NOW.isoformat()}, "garbage",
             {**turn(3), "timestamp": "not a date"}, turn(4, timedelta(days=-1))]
    assert [t["query_id"] for t in prune_history(turns, NOW)] == ["q2"]


def test_prune_reads_naive_timestamps_as_utc():
    naive = {**turn(1), "timestamp": (NOW - timedelta(days=1)).replace(tzinfo=None).isoformat()}
    assert prune_history([naive], NOW) == [naive]


def test_history_round_trip_is_pruned_on_load():
    turns = [turn(i, timedelta(days=10 if i == 0 else 1)) for i in range(3)]
    stored = parse_history(serialize_history("abc123", turns), NOW)
    assert stored.session_id == "abc123"
    assert [t["query_id"] for t in stored.turns] == ["q1", "q2"]


@pytest.mark.parametrize("raw", [None, "", "{not json", "[]", json.dumps({"version": 99}),
                                 json.dumps({"version": 1, "turns": "x", "session_id": 5})])
def test_unreadable_storage_counts_as_no_history(raw):
    stored = parse_history(raw, NOW)
    assert stored.turns == [] and stored.session_id == ""


def test_each_book_keeps_its_history_under_its_own_key():
    keys = {storage_key("book"), storage_key("physical-ai-book"), LEGACY_STORAGE_KEY}
    assert len(keys) == 3 and all(k.startswith("folio.chat.history") for k in keys)


@pytest.mark.parametrize(("books", "moved"), [
    (["book", "book"], True),  # provably this book's: moved under its key
    (["book", "physical-ai-book"], False),  # partly another book's: left where it is
    (["book", None], False),  # a turn that does not say its book proves nothing
    ([None, None], False),  # an older Folio's history: never shown under a book
])
def test_unkeyed_history_moves_only_when_every_turn_is_this_books(books, moved):
    turns = [turn(i, **({"book_id": b} if b else {})) for i, b in enumerate(books)]
    legacy = legacy_turns_of_book(serialize_history("old-session", turns), "book", NOW)
    if moved:
        assert legacy.session_id == "old-session"
        assert [t["query_id"] for t in legacy.turns] == ["q0", "q1"]
    else:
        assert legacy is None
    assert legacy_turns_of_book(None, "book", NOW) is None
    assert legacy_turns_of_book(serialize_history("s", []), "book", NOW) is None


def test_merge_keeps_stored_turns_then_new_ones_without_duplicates():
    stored, current = [turn(1), turn(2)], [turn(2), turn(3)]
    assert [t["query_id"] for t in merge_history(stored, current, NOW)] == ["q1", "q2", "q3"]


def test_conversation_messages_alternate_and_skip_failed_answers():
    turns = [turn(1), {**turn(2), "status": "error", "answer_text": ""}, turn(3)]
    messages = conversation_messages(turns, 10)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "user", "assistant"]
    assert conversation_messages(turns, 2) == messages[-2:]
    assert conversation_messages(turns, 0) == []


def make_response(**changes) -> Response:
    chunk = Chunk("c1", "Encoders measure joint angles.", "sensing", "proprio", "encoders",
                  "Joint Encoders", "Proprioception", ("Proprioception", "Joint Encoders"), True,
                  12, 0, 6)
    from rag.types import Hit, Retrieval

    hit = Hit(chunk, 0.8, 3.0, 1.0, 0.83, 1, True, True)
    retrieval = Retrieval("encoders", RetrievalSettings(), (hit,), (hit,))
    citation = Citation("S1", '[Source: Joint Encoders (Page 12) - "Encoders…"]',
                        "/docs/sensing/proprio#encoders", "c1", "sensing", "proprio", "encoders",
                        "Joint Encoders", 12, "Encoders measure joint angles.", 0.83, True)
    values = dict(answer="Encoders measure joint angles. [S1]", citations=(citation,),
                  metadata={"query_id": "q1", "timestamp": NOW.isoformat(), "mode": "selection",
                            "mode_used": "full-book", "fallback_reason": "selection_too_short",
                            "mode_label": "Searched full book", "retrieval_query": "encoders",
                            "question": "What do encoders do?",
                            "notices": [make_notice(SELECTION_TOO_SHORT).to_dict()],
                            "latency_ms": {"retrieval": 12.0, "total": 40.0}},
                  validation={}, confidence=Confidence(0.83, 0.8, 0.818, "medium"),
                  status="success", retrieval=retrieval,
                  verdicts=(Verdict("confidence", "confidence_hedge", "warn", "Note: x"),))
    values.update(changes)
    return Response(**values)


def test_history_entry_is_the_answer_record_json_ready_and_complete():
    entry = history_record(make_response())
    assert json.loads(json.dumps(entry)) == entry
    assert entry["user_query_text"] == "What do encoders do?"
    assert entry["mode_used"] == "full-book" and entry["fallback_reason"] == "selection_too_short"
    assert entry["citations"][0]["url"] == "/docs/sensing/proprio#encoders"
    hit = entry["chunks_returned"][0]
    assert (hit["chapter_title"], hit["section_title"], hit["source"]) == (
        "Proprioception", "Joint Encoders", "book")
    assert (hit["dense"], hit["bm25"], hit["blended"], hit["passed"]) == (0.8, 1.0, 0.83, True)
    assert entry["guardrail_actions"][0]["reason_code"] == "confidence_hedge"
    assert "candidate_pool" not in entry and "llm_prompt" not in entry  # audit-only keys
    assert turn_hits_frame(entry["chunks_returned"]).loc[0, "section"] == \
        "Proprioception › Joint Encoders"


def test_stream_capture_separates_text_from_the_response():
    response = make_response()
    capture = StreamCapture(iter(["Enc", "", "oders", response]))
    assert list(capture.deltas()) == ["Enc", "oders"]
    assert capture.response is response


# -- rate limit message and selection --------------------------------------------------------------

def test_rate_limit_message_names_limit_and_wait():
    assert "30 questions" in rate_limit_message(30, 12.4)
    assert "12 s" in rate_limit_message(30, 12.4)


@pytest.mark.parametrize("seconds, text", [(0, "0 s ago"), (59, "59 s ago"), (60, "1 min ago"),
                                           (3599, "59 min ago"), (7200, "2 h ago")])
def test_format_age(seconds, text):
    assert format_age(seconds) == text


def test_selection_caption_counts_ages_and_explains():
    pasted = NOW - timedelta(seconds=90)
    assert selection_caption("x" * 1234, pasted, NOW) == "1,234 characters · pasted 1 min ago"
    assert "needs at least 50" in selection_caption("too short", pasted, NOW)
    assert "older than 5 minutes" in selection_caption("x" * 60, NOW - timedelta(minutes=6), NOW)
    assert selection_caption("", None, NOW) == "0 characters"


# -- highlighting -------------------------------------------------------------------------------

def test_terms_match_by_stem_and_skip_stop_words():
    text = "The heading drifts while gyroscopes measure rotation; drift is the problem."
    html = highlight_terms(text, "Why does heading drift?")
    assert html.count("<mark>") == 3
    assert "<mark>heading</mark>" in html and "<mark>drifts</mark>" in html
    assert "<mark>drift</mark>" in html and "<mark>The</mark>" not in html


def test_highlighting_escapes_everything_else():
    html = highlight_terms("<script>alert(1)</script> costs $5\nencoder", "encoder")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "&#36;5" in html and "<br>" in html and "<mark>encoder</mark>" in html


def test_no_query_terms_means_no_marks():
    assert term_spans("anything at all", "the of and") == []


def test_quoted_sentences_are_found_across_line_breaks_and_bold():
    text = "Intro line.\nEncoders **measure**\njoint angles precisely. Other text."
    html = highlight_sentences(text, ["Encoders measure joint angles precisely.", "Not there."])
    assert html.count("<mark>") == 1
    assert html.startswith("Intro line.<br><mark>Encoders")


# -- answer formatting --------------------------------------------------------------------------

CITES = [{"marker": "S2", "url": "/docs/a/b#c", "section_title": 'Joint "Encoders" [1]',
          "page": 4, "excerpt": "Encoders measure…", "stable": True},
         {"marker": "S1", "url": "", "section_title": "Selected text", "excerpt": "x $5",
          "stable": False}]


def test_markers_become_numbered_links_in_citation_order():
    md = answer_markdown("First [S2]. Second [S1]. Dangling [S9]. Costs $5.", CITES)
    assert md.startswith('First [[1]](/docs/a/b#c "Joint \'Encoders\' (1)")')
    assert "Second [2]." in md and "[S9]" not in md and "\\$5" in md


def test_sources_list_links_titles_and_shows_pages():
    lines = sources_markdown(CITES).splitlines()
    assert lines[0].startswith("1. [Joint 'Encoders' (1)](/docs/a/b#c) · page 4 — ")
    assert lines[1].startswith("2. **Selected text** — ") and "\\$5" in lines[1]


def test_sources_and_passages_name_the_chapter_with_the_section():
    glossary = {"marker": "S1", "url": "/docs/r/glossary", "section_title": "N",
                "chapter_title": "Glossary", "excerpt": "Nav2: ROS 2 navigation", "stable": False}
    assert sources_markdown([glossary]).startswith(
        "1. [Glossary › N](/docs/r/glossary) · derived anchor — ")
    assert answer_markdown("Nav2 [S1].", [glossary]).endswith(
        '[[1]](/docs/r/glossary "Glossary › N").')
    assert more_markdown([{**glossary, "text": "Nav2 …", "probability": 0.07}]) == \
        "- *“Nav2 …”* — [Glossary › N](/docs/r/glossary) · 0.07"
    # the chapter's own text, a pasted passage and an older row without the chapter: the section
    intro = {**glossary, "section_title": "Glossary"}
    pasted = {"marker": "S2", "url": "", "section_title": "Selected text",
              "chapter_title": "Selected text", "excerpt": "x", "stable": False}
    older = {k: v for k, v in glossary.items() if k != "chapter_title"}
    assert [cited_name(c) for c in (intro, pasted, older)] == ["Glossary", "Selected text", "N"]


def test_badges_show_mode_used_fallback_confidence_status_and_latency():
    entry = history_record(make_response(status="partial"))
    md = badges_markdown(entry)
    assert ":blue-badge[:material/menu_book: Searched full book]" in md
    assert "Asked for selected text: selected text under 50 characters" in md
    assert ":orange-badge[Confidence 0.82 · medium]" in md
    assert "Partial answer" in md and "0.04 s" in md


def test_a_refusal_made_before_any_draft_shows_retrievals_score_not_a_confidence():
    """"Confidence 0.72 · medium" beside "Refused" read as doubt in the refusal: a refusal made
    before anything was drafted (no synthesis stage ran) shows what the score is."""
    stages = {"context": 0.1, "retrieval": 8.9, "guardrails": 1.0, "total": 15.0}
    refused = {"status": "refused", "confidence_score": 0.72, "confidence_level": "medium",
               "retrieval_confidence": 0.664, "mode_used": "full-book", "stage_latency_ms": stages}
    md = badges_markdown(refused)
    assert ":gray-badge[Retrieval 0.66]" in md and "Confidence" not in md and "Refused" in md
    logged = {**refused, "stage_latency_ms": json.dumps(stages)}  # as the audit log reads back
    assert ":gray-badge[Retrieval 0.66]" in badges_markdown(logged)
    drafted = {**refused, "stage_latency_ms": {**stages, "synthesis": 9.0},
               "confidence_score": 0.31, "confidence_level": "low"}  # the answerer's refusal
    assert ":red-badge[Confidence 0.31 · low]" in badges_markdown(drafted)
    assert "Confidence 0.72" in badges_markdown({**refused, "stage_latency_ms": None})


def test_error_badge_names_the_stage():
    assert badges_markdown({"status": "error", "error_stage": "retrieval"}) == \
        ":red-badge[:material/error: Error in retrieval]"


def test_notices_and_verdicts_are_worded_for_readers():
    entry = history_record(make_response())
    assert notice_lines(entry)[0][0] == "warning"  # a fallback, decided by its code
    assert notice_lines({"notices": ["Something informative."]}) == [  # a log before codes
        ("info", "Something informative.")]
    reworded = {"notices": [{"code": SELECTION_TOO_SHORT, "message": "Reworded, no key words"}]}
    assert notice_lines(reworded) == [("warning", "Reworded, no key words")]
    assert verdict_caption(entry) == "Guardrails: hedged wording (added a caveat)"
    assert verdict_caption({"guardrail_actions": []}) == ""


# -- tables -------------------------------------------------------------------------------------

def chunk(i: int, section: str, stable: bool = True) -> Chunk:
    return Chunk(f"c{i}", f"text {i}", "mod", "chap", section, f"Section {section}", "Chapter",
                 ("Chapter", f"Section {section}"), stable, None, i, 10)


@pytest.fixture()
def pool() -> CandidatePool:
    # blended at w=0.8: c0 .8*.9+.2*.2=.76 · c1 .8*.5+.2*1=.60 · c2 .8*.7=.56 · c3 .8*.2+.2*.5=.26
    chunks = (chunk(0, "a"), chunk(1, "b", stable=False), chunk(2, "a"), chunk(3, "c"))
    return CandidatePool("q", chunks, np.array([0.9, 0.5, 0.7, 0.2], dtype=np.float32),
                         np.array([1.0, 5.0, 0.0, 2.5], dtype=np.float32), 5.0)


def test_candidates_frame_carries_every_component(pool):
    retrieval = rank_candidates(pool, RetrievalSettings(0.8, 0.3, 5, 50))
    frame = candidates_frame(retrieval, "{base_url}/docs/{module_id}/{chapter_id}#{section_id}",
                             "https://book.example")
    assert list(frame["chunk_id"]) == ["c0", "c1", "c2", "c3"]
    assert list(frame["reason"]) == ["", "", "duplicate section", "below threshold"]
    assert frame.loc[0, "link"] == "https://book.example/docs/mod/chap#a"
    assert frame.loc[1, "link"] == "https://book.example/docs/mod/chap#b"  # derived: its heading
    assert list(frame["stable"]) == [True, False, True, True]
    assert frame.loc[0, "blended"] == pytest.approx(0.76, abs=1e-6)


def test_contributions_add_up_to_the_blended_score(pool):
    retrieval = rank_candidates(pool, RetrievalSettings(0.8, 0.3, 5, 50))
    frame = contributions_frame(retrieval, limit=3)
    assert len(frame) == 3
    assert np.allclose(frame["dense_part"] + frame["bm25_part"], frame["blended"], atol=1e-5)
    assert list(frame["status"]) == ["in top-k", "in top-k", "passed"]


def test_contributions_with_signals_still_add_up(pool):
    signals = {"terms": np.linspace(0.9, 0.1, len(pool.chunks)).astype(np.float32)}
    weighted = dataclasses.replace(pool, signals=signals)
    retrieval = rank_candidates(weighted, RetrievalSettings(0.8, 0.3, 5, 50, w_terms=0.25))
    frame = contributions_frame(retrieval)
    parts = frame["dense_part"] + frame["bm25_part"] + frame["terms_part"]
    assert np.allclose(parts, frame["blended"], atol=1e-5)
    assert frame["terms_part"].max() > 0 and not frame["authority_part"].any()


def test_rank_changes_mark_moves_new_and_dropped(pool):
    a = rank_candidates(pool, RetrievalSettings(0.8, 0.3, 1, 50))  # top-1: c0
    # w=0.2: c0 .18+.16=.34 · c1 .1+.8=.90 · c2 .14 · c3 .04+.4=.44 -> c1, c3, c0, c2
    b = rank_candidates(pool, RetrievalSettings(0.2, 0.3, 1, 50))
    changes = rank_changes(a, b).set_index("chunk_id")
    assert changes.loc["c1", "change"] == "new"
    assert changes.loc["c0", "change"] == "dropped"
    assert changes.loc["c3", "change"] == "↑2"
    assert changes.loc["c2", "change"] == "↓1"
    assert rank_changes(a, a)["change"].eq("=").all()


def test_filters_from_widgets():
    f = build_filters((date(2026, 3, 1), date(2026, 3, 2)), ["selection"], ["refused"],
                      (0.0, 1.0), ["content_not_covered"], ["extractive"], "  encoder ")
    assert f.start == datetime(2026, 3, 1, tzinfo=UTC)
    assert f.end == datetime(2026, 3, 3, tzinfo=UTC)  # the last day is included
    assert f.min_confidence is None and f.max_confidence is None
    assert f.modes == ("selection",) and f.text == "encoder"
    narrowed = build_filters(None, confidence=(0.2, 0.9))
    assert (narrowed.start, narrowed.min_confidence, narrowed.max_confidence) == (None, 0.2, 0.9)


def test_kpis_are_formatted():
    stats = {"total": 8, "answer_rate": 0.75, "refusal_rate": 0.125, "error_rate": 0.125,
             "latency_p95_ms": 1234.0}
    assert kpi_values(stats) == [("Questions", "8"), ("Answer rate", "75 %"),
                                 ("Refusal rate", "12 %"), ("Error rate", "12 %"),
                                 ("Latency p95", "1.23 s")]
    assert kpi_values({"total": 0, "latency_p95_ms": None})[1:] == [
        ("Answer rate", "–"), ("Refusal rate", "–"), ("Error rate", "–"), ("Latency p95", "–")]


def test_book_sections_in_book_order_and_selection_names():
    labels = book_sections([chunk(0, "a"), chunk(1, "b"), chunk(2, "a")])
    assert labels == {"mod/chap#a": "Chapter › Section a", "mod/chap#b": "Chapter › Section b"}
    assert section_name("mod/chap#b", labels, with_chapter=False) == "Section b"
    assert section_name("/selection#", labels) == "Pasted selection"


def test_quoted_units_are_listed_with_their_probability():
    frame = quote_frame(["First unit.", "Second unit."], [0.61, 0.2])
    assert list(frame.columns) == ["#", "quoted unit", "probability", "whole section", "around"]
    assert frame.loc[0, "quoted unit"] == "First unit." and frame.loc[1, "probability"] == 0.2
    assert not frame["whole section"].any()  # a record from before passages says nothing
    whole = quote_frame(["Pros: Cheap; Light", "Unit."], [0.5, 0.2], [True, False])
    assert whole["whole section"].tolist() == [True, False]
    assert not whole["around"].any()  # a record from before units were read around the quotes
    around = quote_frame(["Lead.", "Next."], [0.5, 0.2], [False, False], [False, True])
    assert around["around"].tolist() == [False, True]


def test_why_this_answer_shows_a_signal_or_rerank_only_once_it_counted():
    entry = history_record(make_response())
    plain = turn_hits_frame(entry["chunks_returned"])
    assert {"term match", "re-rank", "authority", "recency"}.isdisjoint(plain.columns)
    hits = [{**entry["chunks_returned"][0], "terms": 0.62, "rerank": 0.71, "rank_before": 3}]
    shown = turn_hits_frame(hits)
    assert shown.loc[0, "term match"] == 0.62 and shown.loc[0, "re-rank"] == 0.71
    assert "authority" not in shown.columns


def test_why_this_answer_names_a_same_titled_section_with_its_heading():
    """The Physical AI book has three "Advantages" in "Lab Infrastructure Options", one per
    option: the retrieval table named them alike."""
    hit = {**history_record(make_response())["chunks_returned"][0], "module_id": "labs",
           "chapter_id": "options", "section_id": "advantages-1", "section_title": "Advantages",
           "chapter_title": "Lab Infrastructure Options"}
    names = {"labs/options#advantages-1": "Option 2: Cloud-Native Lab › Advantages"}
    assert hit_name(hit) == "Lab Infrastructure Options › Advantages"
    assert hit_name(hit, names) == "Lab Infrastructure Options › Option 2: Cloud-Native Lab › " \
        "Advantages"
    assert turn_hits_frame([hit], names=names).loc[0, "section"] == hit_name(hit, names)


def test_contributions_with_a_numbered_part_still_add_up(pool):
    """A question naming "Module 2" moves each candidate by PART_WEIGHT x its part score; the
    table shows the score and the chart's parts (one of them negative) add up to the blend."""
    from rag.retrieval.parts import PART_WEIGHT

    part = np.array([1.0, -1.0, 0.0, -0.5][:len(pool.chunks)], dtype=np.float32)
    moved = dataclasses.replace(pool, signals={"part": part})
    retrieval = rank_candidates(moved, RetrievalSettings(0.8, 0.3, 5, 50))
    frame = contributions_frame(retrieval)
    parts = frame["dense_part"] + frame["bm25_part"] + frame["part_part"]
    assert np.allclose(parts, frame["blended"], atol=1e-5)
    assert frame["part_part"].min() == pytest.approx(-PART_WEIGHT)
    table = candidates_frame(retrieval, "", "")
    assert sorted(table["part"]) == sorted(part.tolist())
