"""One book never leaks into another in the audit log: every row records its book (m004), the
read side filters by book, the same section id in two books is two sections, the console has a
view of the current book, and rows logged before books were recorded read as an unknown book."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

import duckdb
import pyarrow.parquet as pq
import pytest

from rag.audit.filters import UNKNOWN_BOOK
from rag.audit.retention import archive_rows
from rag.audit.schema import MIGRATIONS, apply_migrations
from rag.audit.store import AuditFilters, AuditStore
from rag.errors import AuditError
from tests.builders import make_response

DAY = datetime(2025, 6, 2, 9, 0)


def of_book(book_id: str, title: str, question: str, **kwargs):
    """A response asked of one book, as the pipeline's settings snapshot records it."""
    response = make_response(question, **kwargs)
    return dataclasses.replace(response, settings={**response.settings, "book_id": book_id,
                                                   "book_title": title})


@pytest.fixture()
def two_books(tmp_path):
    """An audit file upgraded from m003 with one row of no book, then rows of two books that
    cite the same section ids."""
    db = tmp_path / "audit.duckdb"
    with duckdb.connect(str(db)) as con:
        apply_migrations(con, MIGRATIONS[:3])
        con.execute("INSERT INTO audit_logs (log_id, timestamp, status, success, "
                    "user_query_text, cited_sections) VALUES ('old', ?, 'success', true, "
                    "'asked before books', ['m1/ch1#s0'])", [DAY - timedelta(days=1)])
    store = AuditStore(db)
    ids = {
        "sample-1": store.record(of_book("book", "Foundations", "Capture point?",
                                         timestamp=DAY, seed=1)),
        "sample-2": store.record(of_book("book", "Foundations", "Capture point again?",
                                         timestamp=DAY + timedelta(hours=1), seed=1)),
        "other": store.record(of_book("physical-ai-book", "Physical AI", "What is ROS 2?",
                                      timestamp=DAY + timedelta(hours=2), seed=1)),
    }
    store.flush()
    yield store, ids
    store.close()


def test_old_rows_have_no_book_and_new_rows_record_theirs(two_books):
    store, ids = two_books
    assert (store.get_log("old")["book_id"], store.get_log("old")["book_title"]) == (None, None)
    row = store.get_log(ids["other"])
    assert (row["book_id"], row["book_title"]) == ("physical-ai-book", "Physical AI")
    assert {c["book_id"] for c in row["citations"]} == {"physical-ai-book"}
    books = store.books()
    assert list(books["book_id"]) == ["physical-ai-book", "book", UNKNOWN_BOOK]
    assert list(books["questions"]) == [1, 2, 1]
    assert books.set_index("book_id").loc["book", "book_title"] == "Foundations"


@pytest.mark.parametrize(("books", "expected"), [
    (("book",), ["Capture point again?", "Capture point?"]),
    (("physical-ai-book",), ["What is ROS 2?"]),
    ((UNKNOWN_BOOK,), ["asked before books"]),
    (("book", UNKNOWN_BOOK), ["Capture point again?", "Capture point?", "asked before books"]),
    ((), ["What is ROS 2?", "Capture point again?", "Capture point?", "asked before books"]),
])
def test_the_book_filter_selects_that_books_rows(two_books, books, expected):
    store, _ = two_books
    frame = store.query_logs(AuditFilters(books=books))
    assert list(frame["user_query_text"]) == expected
    assert store.stats(AuditFilters(books=books))["total"] == len(expected)


def test_the_same_section_in_two_books_is_counted_per_book(two_books):
    store, _ = two_books
    top = make_response(seed=1).citations[0]  # cited by all three new answers
    section = f"{top.module_id}/{top.chapter_id}#{top.section_id}"
    assert section != "m1/ch1#s0"
    every = store.sections_cited(AuditFilters(), 10)
    counts = {(b, s): n for b, s, n in every[["book_id", "section", "answers"]].itertuples(
        index=False)}
    assert counts[("book", section)] == 2 and counts[("physical-ai-book", section)] == 1
    assert counts[(UNKNOWN_BOOK, "m1/ch1#s0")] == 1
    mine = store.sections_cited(AuditFilters(books=("physical-ai-book",)), 10)
    assert list(zip(mine["section"], mine["answers"], strict=True)) == [(section, 1)]
    # never-cited is counted against one book's sections, with that book's filter
    never = store.sections_never_cited(AuditFilters(books=("physical-ai-book",)),
                                       ["m1/ch1#s0", section])
    assert never == ["m1/ch1#s0"]  # cited only by the row of no book, not by this book


def test_export_writes_only_the_chosen_books_rows_with_their_book(two_books, tmp_path):
    store, ids = two_books
    out = tmp_path / "book.parquet"
    assert store.export(AuditFilters(books=("book",)), out, "parquet") == 2
    table = pq.read_table(out)
    assert sorted(table.column("log_id").to_pylist()) == sorted([ids["sample-1"],
                                                                 ids["sample-2"]])
    assert set(table.column("book_id").to_pylist()) == {"book"}
    assert set(table.column("book_title").to_pylist()) == {"Foundations"}


def test_the_console_has_a_view_of_the_current_books_rows(two_books):
    store, _ = two_books
    count = "SELECT count(*) AS n FROM book_logs"
    assert store.run_console_query(count, book_id="book").iloc[0]["n"] == 2
    assert store.run_console_query(count, book_id="physical-ai-book").iloc[0]["n"] == 1
    assert store.run_console_query(count, book_id=UNKNOWN_BOOK).iloc[0]["n"] == 1
    everything = store.run_console_query("SELECT count(*) AS n FROM audit_all", book_id="book")
    assert everything.iloc[0]["n"] == 4
    with pytest.raises(AuditError, match="book_logs"):  # no book given: no such view
        store.run_console_query(count)


def test_archived_months_from_before_books_read_as_unknown(tmp_path):
    """A month archived to Parquet by an older Folio has no book columns; the union still
    reads, its rows count as the unknown book, and the console's book view leaves them out."""
    db = tmp_path / "audit.duckdb"
    archive = tmp_path / "audit" / "archive"
    with duckdb.connect(str(db)) as con:
        apply_migrations(con, MIGRATIONS[:3])
        con.execute("INSERT INTO audit_logs (log_id, timestamp, status, success, "
                    "user_query_text) VALUES ('ancient', '2024-01-05 10:00', 'success', true, "
                    "'archived long ago')")
        assert archive_rows(con, archive, datetime(2024, 2, 1)) == 1
    with AuditStore(db) as store:
        assert store.archive_dir == archive
        store.record(of_book("book", "Foundations", "New question?", timestamp=DAY))
        store.flush()
        unknown = store.query_logs(AuditFilters(books=(UNKNOWN_BOOK,)), include_archive=True)
        assert list(unknown["user_query_text"]) == ["archived long ago"]
        assert list(store.books(include_archive=True)["book_id"]) == ["book", UNKNOWN_BOOK]
        view = store.run_console_query("SELECT user_query_text FROM book_logs", book_id="book")
        assert list(view["user_query_text"]) == ["New question?"]
