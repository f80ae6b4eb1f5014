"""A replay is of one book's logged questions unless asked for more: a pool's sections are its
own book's, so rows of other books are counted and left out, never re-ranked as this book's."""

from __future__ import annotations

import json

from rag.retrieval.hybrid import pool_to_record, rank_candidates
from rag.tuning.replay import replay
from rag.types import RetrievalSettings
from tests.builders import hand_set

LOGGED = RetrievalSettings(w_dense=1.0, threshold=0.55, top_k=2)
NEW = RetrievalSettings(w_dense=1.0, threshold=0.65, top_k=2)
BOOKS = ["book", "physical-ai-book", None, "book"]  # None: logged before books were recorded


def rows_of_books() -> list[dict]:
    questions, pools = hand_set()
    rows = []
    for n, (q, p, book) in enumerate(zip(questions, pools, BOOKS, strict=True)):
        rows.append({"log_id": f"log-{n}", "timestamp": f"2025-03-0{n + 1}T10:00:00Z",
                     "user_query_text": q.question, "book_id": book,
                     "candidate_pool": json.dumps(pool_to_record(rank_candidates(p, LOGGED))),
                     "settings": json.dumps({"w_dense": 1.0, "threshold": 0.55, "top_k": 2}),
                     "status": "success"})
    return rows


def test_only_the_chosen_books_rows_are_replayed_and_the_rest_counted():
    result = replay(rows_of_books(), NEW, books=("book",))
    assert list(result.rows["log_id"]) == ["log-0", "log-3"]
    assert set(result.rows["book_id"]) == {"book"}
    assert result.other_books == 2 and result.summary()["replayed"] == 2


def test_rows_of_no_recorded_book_are_their_own_choice_and_none_replays_all():
    unknown = replay(rows_of_books(), NEW, books=("",))
    assert list(unknown.rows["log_id"]) == ["log-2"] and unknown.other_books == 3
    everything = replay(rows_of_books(), NEW)
    assert len(everything.rows) == 4 and everything.other_books == 0
    assert list(everything.rows["book_id"]) == ["book", "physical-ai-book", "", "book"]
