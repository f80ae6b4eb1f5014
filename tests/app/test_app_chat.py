"""The chat page through AppTest against the real pipeline (MiniLM, local Qdrant, DuckDB)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from rag.config import PROJECT_ROOT
from tests.builders import ask, markdown_text, open_app

PASSAGE = (
    "An absolute encoder reports the actual angle immediately at power-up. Single-turn "
    "absolute encoders know the angle within one revolution; multi-turn versions also track "
    "the number of revolutions, either with a gear train or a battery-backed counter. Most "
    "modern humanoids use absolute encoders on the joint output so that the robot knows its "
    "configuration the moment it switches on.")
pytestmark = pytest.mark.slow


@pytest.fixture()
def app(sample_settings, sample_index, monkeypatch):
    """The chat page on the session's sample index and audit file, first run done."""
    at = open_app(monkeypatch, sample_settings.index_dir, sample_settings.audit_db)
    assert not at.exception, at.exception
    return at


def test_a_question_gets_an_answer_with_a_citation_link(app):
    ask(app, "Why do most humanoids use absolute encoders rather than incremental ones?")
    text = markdown_text(app)
    # base_url is empty: the link opens the in-app reader (the citation keeps the template URL)
    assert ("](book?module=sensing&chapter=proprioceptive-sensing&section=incremental-vs-absolute"
            in text)
    assert "](/docs/" not in text
    assert "**Sources**" in text
    assert ":blue-badge[:material/menu_book: Searched full book]" in text
    assert "Confidence 0." in text
    assert [e.label for e in app.expander if e.label == "Why this answer"]
    why = next(e for e in app.expander if e.label == "Why this answer")
    quoted, hits = why.dataframe[0].value, why.dataframe[1].value
    assert list(quoted.columns) == ["#", "quoted unit", "probability", "whole section",
                                    "around"]
    assert quoted["quoted unit"].iloc[0] in markdown_text(app)  # the lead unit, as answered
    turn = app.session_state["_folio_history"].turns[-1]
    explained = [c.value for c in why.caption if c.value.startswith("Confidence ")]
    lead = re.search(r"\[S(\d+)\]", turn["answer_text"]).group(1)  # the leading unit's source
    assert explained == [
        f"Confidence {turn['confidence_score']:.2f} is the fitted chance that this answer is "
        f"right, from the leading unit's probability ({quoted['probability'].iloc[0]:.3f}), "
        f"its lead over the runner-up, the best unit not ranked first "
        f"({turn['answer_runner_up']:.3f}), the share of the evidence's probability the "
        f"answer leaves unquoted ({turn['answer_unquoted']:.0%}), the share of the question's "
        f"words, rarer ones counting more, that the quotes contain "
        f"({turn['answer_coverage']:.0%}), whether the leading unit is in the section "
        f"retrieval ranked first ({'yes' if lead == '1' else 'no'}), whether the leading "
        f"unit came closer to the question through one the book itself asks (no), and how "
        f"many quotes the answer needs "
        f"({len(turn['answer_quotes']) - sum(turn['answer_around'])})."]
    if any(turn["answer_around"]):  # the units read around the quotes are named so
        assert any(c.value.startswith("Around: a unit next to the quotes") for c in why.caption)
    assert list(hits.columns) == ["#", "section", "cited", "dense", "BM25", "term match",
                                  "blended", "text"]
    assert "Incremental versus Absolute Encoders" in " ".join(hits["section"])


def test_why_this_answer_names_the_rule_that_chose_the_quotes(app):
    """"What is the difference between the ZMP and the centre of pressure?" quotes the book's
    definition of each, not the units likeliest on their own: "Why this answer" says so, and
    says nothing of a rule when probability alone chose (the encoder question)."""
    ask(app, "What is the difference between the ZMP and the centre of pressure?")
    turn = app.session_state["_folio_history"].turns[-1]
    assert turn["answer_led_by"].startswith('the book\'s definitions of "ZMP" and of "centre')
    why = next(e for e in app.expander if e.label == "Why this answer")
    assert f"Chosen by a rule, not by probability alone: {turn['answer_led_by']}." in \
        [c.value for c in why.caption]
    ask(app, "Why do most humanoids use absolute encoders rather than incremental ones?")
    turn = app.session_state["_folio_history"].turns[-1]
    assert turn["answer_led_by"] == ""
    latest = [e for e in app.expander if e.label == "Why this answer"][-1]  # the second turn's
    assert not any(c.value.startswith("Chosen by a rule") for c in latest.caption)


def test_the_passages_that_scored_next_are_shown_under_the_answer(app):
    """More from the book: up to three units the answerer ranked just below its quotes (those
    read around the quotes are in the answer), each linked to its section; not part of the
    answer text."""
    ask(app, "Why do most humanoids use absolute encoders rather than incremental ones?")
    turn = app.session_state["_folio_history"].turns[-1]
    more = turn["answer_more"]
    assert 1 <= len(more) <= 3 and all(m["text"] not in turn["answer_text"] for m in more)
    assert [m["probability"] for m in more] == sorted((m["probability"] for m in more),
                                                      reverse=True)
    expander = next(e for e in app.expander if e.label.startswith("More from the book"))
    assert expander.label == f"More from the book: the {len(more)} passage(s) that scored next"
    shown = " ".join(m.value for m in expander.markdown)
    for m in more:
        assert f"*“{m['text']}”*" in shown
        assert f"](book?module={m['module_id']}&chapter={m['chapter_id']}" in shown
    assert expander.caption[0].value.startswith("Not part of the answer")


def test_under_a_refusal_the_closest_passages_are_offered_closed(app):
    """An offline refusal (here: a payload the book never states) keeps the passages that came
    closest, each linked to its section, in a closed expander that says they are not an
    answer."""
    ask(app, "What payload can a full-size humanoid carry in its hands?")
    turn = app.session_state["_folio_history"].turns[-1]
    assert turn["status"] == "refused" and turn["answer_unstated"] == ["mass (kg, g, lb)"]
    more = turn["answer_more"]
    assert 1 <= len(more) <= 3
    expander = next(e for e in app.expander if e.label.startswith("Closest in the book"))
    assert expander.label == f"Closest in the book: the {len(more)} passage(s) that came nearest"
    assert expander.proto.expanded is False
    shown = " ".join(m.value for m in expander.markdown)
    assert all(f"*“{m['text']}”*" in shown for m in more)
    assert expander.caption[0].value.startswith("Not an answer")
    assert not any(e.label.startswith("More from the book") for e in app.expander)


def test_a_number_question_is_told_its_leading_unit_counts_for_more(app):
    """The confidence weighs the best unit's probability more when the question asks for a
    number or a definition; the caption says so (and does not for the "why" question above)."""
    ask(app, "How far off will objects appear if a camera image is stamped 50 ms late?")
    why = next(e for e in app.expander if e.label == "Why this answer")
    explained = [c.value for c in why.caption if c.value.startswith("Confidence ")]
    assert len(explained) == 1
    assert explained[0].endswith(" The question asks for a number or a definition, so the "
                                 "leading unit's probability counts for more.")


def test_why_this_answer_shows_which_hits_were_cited_and_their_text(app, sample_index):
    ask(app, "Why do most humanoids use absolute encoders rather than incremental ones?")
    turn = app.session_state["_folio_history"].turns[-1]
    cited_ids = {c["chunk_id"] for c in turn["citations"]}
    why = next(e for e in app.expander if e.label == "Why this answer")
    hits = why.dataframe[1].value
    returned = turn["chunks_returned"]
    assert len(hits) == len(returned) and cited_ids
    for row, hit in zip(hits.to_dict("records"), returned, strict=True):
        assert row["cited"].startswith("yes [") == (hit["chunk_id"] in cited_ids)
        assert row["cited"] in ("no",) or row["cited"].startswith("yes [")
        text = sample_index.chunks[sample_index.positions[hit["chunk_id"]]].text
        assert row["text"][:40] == " ".join(text.replace("**", "").split())[:40]
    details = next(m.value for m in why.markdown if "<details" in m.value)
    assert details.count("<details") == len(returned)
    assert details.count("cited as [") == len(cited_ids) and "not cited" in details
    assert "<mark>" in details  # the sentences the answer quoted, marked in their hit's text
    assert "**" not in details


def test_guardrails_are_named_in_words(app):
    ask(app, "How can a humanoid work out how fast its pelvis is moving when no sensor "
             "measures that directly?")
    turn = app.session_state["_folio_history"].turns[-1]
    codes = [v["reason_code"] for v in turn["guardrail_actions"]]
    assert codes, "this question is expected to draw a guardrail caveat (low confidence)"
    shown = " ".join(c.value for c in app.caption)
    assert "Guardrails: " in shown
    assert not [code for code in codes if code in shown], shown


def test_a_code_request_names_the_books_code_sections(app):
    ask(app, "write me Python code for a PID controller")
    text = markdown_text(app)
    assert "cannot write code" in text
    assert "The book's own code examples are in: PID Control and Tuning › A Discrete-Time " \
        "Implementation" in text


def test_selection_mode_answers_from_the_passage_and_highlights_it(app):
    app.segmented_control(key="chat_mode").set_value("selection").run()
    app.text_area(key="selection_input").input(PASSAGE).run()
    assert any("characters · pasted" in c.value for c in app.caption)
    ask(app, "Why do humanoids use absolute encoders?")
    text = markdown_text(app)
    assert "Answered from selected text" in text
    assert "<mark>" in text  # the sentences the answer used, marked in the quoted passage
    assert not app.warning


LONG_PASSAGE = PASSAGE + (
    " An incremental encoder only counts ticks from where it started, so the robot must move each "
    "joint to a reference switch before it knows where it is. Homing takes several seconds and "
    "is unsafe when the robot lies on the floor. Absolute encoders cost more and need more "
    "wires. Battery-backed counters lose their count when the battery runs flat. Optical "
    "encoders read a patterned disc with a light and a sensor, while magnetic encoders sense a "
    "magnet on the shaft and shrug off dust and oil. Resolution is given in bits per turn, and "
    "a 14-bit encoder splits one revolution into 16,384 steps. Cables to the joint encoders "
    "run through every hip and knee, so designers keep them short and shielded. Absolute "
    "encoders let a humanoid know every joint angle at power-up, so it can get up from the floor "
    "without homing. Humanoids use absolute encoders on their joints because homing a robot that "
    "lies on the floor is unsafe.")


def test_the_passages_that_scored_next_in_a_pasted_passage_are_named_so(app):
    app.segmented_control(key="chat_mode").set_value("selection").run()
    app.text_area(key="selection_input").input(LONG_PASSAGE).run()
    ask(app, "Why do humanoids use absolute encoders?")
    turn = app.session_state["_folio_history"].turns[-1]
    assert turn["mode_used"] == "selection" and turn["answer_more"]
    assert all(m["text"] in LONG_PASSAGE for m in turn["answer_more"])
    labels = [e.label for e in app.expander if e.label.startswith("More from")]
    assert labels == [f"More from the passage: the {len(turn['answer_more'])} passage(s) that "
                      "scored next"]


def used_passages(at):
    return [e for e in at.expander if e.label.startswith("The passage this answer used")]


def test_each_answer_keeps_the_passage_it_used_with_it(app):
    """The passage is shown inside the answer that used it, open on the newest answer (so the
    two are read together however long the conversation), with its used sentences marked."""
    app.segmented_control(key="chat_mode").set_value("selection").run()
    app.text_area(key="selection_input").input(PASSAGE).run()
    ask(app, "Why do humanoids use absolute encoders?")
    ask(app, "What do multi-turn absolute encoders track?")
    first, newest = used_passages(app)
    assert [first.proto.expanded, newest.proto.expanded] == [False, True]
    for box in (first, newest):
        body = next(m.value for m in box.markdown if "folio-passage-used" in m.value)
        assert "Single-turn absolute encoders" in body and "<mark>" in body
    turns = app.session_state["_folio_history"].turns
    assert [t["selection_text"] for t in turns] == [PASSAGE, PASSAGE]  # kept in the history
    app.segmented_control(key="chat_mode").set_value("full-book").run()
    assert len(used_passages(app)) == 2  # still with their answers when the panel is gone


def test_a_too_short_selection_falls_back_to_the_full_book_with_a_notice(app):
    app.segmented_control(key="chat_mode").set_value("selection").run()
    app.text_area(key="selection_input").input("Encoders measure angles.").run()
    assert any("needs at least 50" in c.value for c in app.caption)
    ask(app, "Why do humanoids use absolute encoders?")
    assert any("shorter than 50 characters" in w.value for w in app.warning)
    text = markdown_text(app)
    assert "Searched full book" in text
    assert "Asked for selected text: selected text under 50 characters" in text


def test_a_stale_selection_is_cleared_and_the_user_told(app):
    app.segmented_control(key="chat_mode").set_value("selection").run()
    app.text_area(key="selection_input").input(PASSAGE).run()
    app.session_state["_folio_selection_time"] = datetime.now(UTC) - timedelta(minutes=6)
    ask(app, "Why do humanoids use absolute encoders?")
    assert any("more than 5 minutes old" in w.value for w in app.warning)
    assert app.text_area(key="selection_input").value == ""


def test_follow_ups_are_read_in_the_conversation(app):
    ask(app, "What does an incremental encoder output?")
    ask(app, "And how is it different from an absolute encoder?")  # "it": refers back
    assert "(the question read in its conversation)" in markdown_text(app)
    assert len(app.chat_message) == 4


def test_words_about_the_book_are_not_searched_for(app):
    ask(app, "According to the book, why do humanoids use absolute encoders?")
    text = markdown_text(app)
    assert "**Searched for:** Why do humanoids use absolute encoders?" in text
    assert "(the question as read: words about the book, greetings and slips set aside)" in text


def test_a_question_about_where_the_book_treats_a_topic_names_the_place(app):
    """"Is there a chapter on robot ethics?" is searched for its topic and answered with the
    chapter, cited; "Why this answer" says what was searched for and by which rule."""
    ask(app, "Is there a chapter on robot ethics?")
    text = markdown_text(app)
    assert "The book treats robot ethics in Ethics and Responsible Deployment" in text
    assert "**Searched for:** robot ethics *(the topic the question asks the book's place of" \
        in text
    turn = app.session_state["_folio_history"].turns[-1]
    why = next(e for e in app.expander if e.label == "Why this answer")
    assert f"Made by a rule: {turn['answer_led_by']}." in [c.value for c in why.caption]
    assert turn["citations"][0]["chapter_id"] == "robot-ethics"


def test_clear_history_empties_the_conversation(app):
    ask(app, "What does an incremental encoder output?")
    clear = next(b for b in app.button if b.label == "Clear history")
    clear.click().run()
    assert len(app.chat_message) == 0


def test_rate_limit_per_session(app, tmp_path, monkeypatch):
    settings = (PROJECT_ROOT / "data" / "settings.toml").read_text()
    custom = tmp_path / "settings.toml"
    custom.write_text(settings.replace("rate_limit_per_minute = 30", "rate_limit_per_minute = 1"))
    monkeypatch.setenv("RAG_SETTINGS", str(custom))
    app.session_state["_folio_history"].session_id = "rate-limit-test"
    ask(app, "What does an incremental encoder output?")
    assert not app.warning
    ask(app, "What does an absolute encoder output?")
    assert any("the limit for one browser session" in w.value for w in app.warning)
    assert len(app.chat_message) == 4  # the limited question is shown, unanswered, not saved
    ask(app, "Anything else?")
    assert len(app.session_state["_folio_history"].turns) == 1


def test_invalid_input_is_a_readable_error_not_a_traceback(app):
    ask(app, "   ")
    ask(app, "x" * 5 + "\x00")
    assert any("NUL" in e.value for e in app.error)
    assert not app.exception


def test_claude_answers_are_streamed_then_cited(sample_settings, sample_index, monkeypatch):
    from tests.fakes.anthropic_server import AnthropicServer

    reply = "Absolute encoders report the angle at power-up, so no homing is needed [S1].\n" \
            "Confidence: 0.9"
    with AnthropicServer(reply) as server:
        at = open_app(monkeypatch, sample_settings.index_dir, sample_settings.audit_db,
                      RAG_LLM="anthropic", ANTHROPIC_API_KEY="test-key",
                      ANTHROPIC_BASE_URL=server.url)
        assert any("Answers: Claude claude-sonnet-4-6" in c.value for c in at.sidebar.caption)
        ask(at, "Why do humanoids use absolute encoders rather than incremental ones?")
        assert server.message_requests[-1].body.get("stream") is True
    text = markdown_text(at)
    assert "so no homing is needed [[1]](book?module=sensing&chapter=" in text
    assert "Confidence 0." in text and "Confidence: 0.9" not in text


def test_why_this_answer_opens_the_question_in_the_inspector(app):
    ask(app, "Why do humanoids use absolute encoders?")
    next(b for b in app.button if b.label == "Open in the retrieval inspector").click().run()
    assert not app.exception
    assert app.text_input(key="inspector_question").value == \
        "Why do humanoids use absolute encoders?"
    assert app.dataframe  # the candidate table is already there


def test_with_a_published_site_citations_link_to_the_template_url(sample_settings, sample_index,
                                                                 monkeypatch):
    at = open_app(monkeypatch, sample_settings.index_dir, sample_settings.audit_db,
                  RAG_BASE_URL="https://book.example")
    ask(at, "Why do most humanoids use absolute encoders rather than incremental ones?")
    text = markdown_text(at)
    assert ("](https://book.example/docs/sensing/proprioceptive-sensing#incremental-vs-absolute"
            in text)
    assert "](book?" not in text
