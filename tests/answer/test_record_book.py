"""The answer record carries its book: the audit row's book columns, a book id on every citation
(so a link built from the citation alone names its book), and both survive the browser history."""

from __future__ import annotations

import dataclasses

from rag.answer.record import from_record, history_record, to_record
from rag.audit.row import build_row
from tests.builders import make_response


def of_book(book_id: str, title: str):
    response = make_response("Where is the capture point?", cite=2)
    return dataclasses.replace(response, settings={**response.settings, "book_id": book_id,
                                                   "book_title": title})


def test_the_record_and_its_citations_name_the_book():
    record = to_record(of_book("physical-ai-book", "Physical AI"))
    assert (record["book_id"], record["book_title"]) == ("physical-ai-book", "Physical AI")
    assert [c["book_id"] for c in record["citations"]] == ["physical-ai-book"] * 2
    row = build_row(of_book("book", "Foundations"), log_id="L1")
    assert (row["book_id"], row["book_title"]) == ("book", "Foundations")


def test_a_history_entry_keeps_the_book_through_a_round_trip():
    entry = history_record(of_book("book", "Foundations"))
    assert "settings" not in entry and entry["book_id"] == "book"
    again = to_record(from_record(entry))
    assert (again["book_id"], again["book_title"]) == ("book", "Foundations")
    assert again["citations"] == entry["citations"]


def test_a_response_made_without_a_book_records_none():
    record = to_record(make_response())
    assert (record["book_id"], record["book_title"]) == (None, None)
    assert all("book_id" not in c for c in record["citations"])


def test_the_pipeline_records_the_book_it_answered_from(pipeline, sample_settings):
    response = pipeline.answer("What does an incremental encoder output?")
    record = to_record(response)
    assert record["book_id"] == sample_settings.book_id == "book"
    assert record["book_title"] == "Foundations of Physical AI"
    assert record["citations"] and {c["book_id"] for c in record["citations"]} == {"book"}
