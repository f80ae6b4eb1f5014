"""Replaying logged candidate pools under new settings lists the questions whose outcome changes."""

from __future__ import annotations

import json

from rag.retrieval.hybrid import pool_to_record, rank_candidates
from rag.tuning.replay import (
    ANSWERED_TO_REFUSED,
    REFUSED_TO_ANSWERED,
    TOP_CHANGED,
    logged_settings,
    replay,
)
from rag.types import RetrievalSettings
from tests.builders import hand_set

LOGGED = RetrievalSettings(w_dense=1.0, threshold=0.55, top_k=2)


def audit_rows() -> list[dict]:
    """Rows shaped like the audit store's: pools as pool_to_record JSON, settings as JSON."""
    questions, pools = hand_set()
    rows = []
    for n, (q, p) in enumerate(zip(questions, pools, strict=True)):
        retrieval = rank_candidates(p, LOGGED)
        rows.append({"log_id": f"log-{n}", "timestamp": f"2025-03-0{n + 1}T10:00:00Z",
                     "user_query_text": q.question,
                     "candidate_pool": json.dumps(pool_to_record(retrieval)),
                     "settings": json.dumps({"w_dense": 1.0, "w_bm25": 0.0, "threshold": 0.55,
                                             "top_k": 2, "embedder": "local"}),
                     "status": "success" if retrieval.hits else "refused"})
    return rows


def test_replay_lists_changed_outcomes():
    result = replay(audit_rows(), RetrievalSettings(w_dense=0.5, threshold=0.48, top_k=2))
    rows = result.rows.set_index("log_id")
    # log-0: a#1 (dense 0.9) led; blended with BM25 the second chunk of a#2 leads (0.75).
    assert rows.loc["log-0", "change"] == TOP_CHANGED
    assert (rows.loc["log-0", "old_top_section"], rows.loc["log-0", "new_top_section"]) == \
        ("a#1", "a#2")
    assert (rows.loc["log-0", "old_best"], rows.loc["log-0", "new_best"]) == (0.9, 0.75)
    # log-2: the bread question was refused at 0.3 and would now pass at 0.65.
    assert rows.loc["log-2", "change"] == REFUSED_TO_ANSWERED
    assert rows.loc["log-2", "status"] == "refused"
    # log-3: a code request stays refused by the capability guardrail whatever the scores.
    assert rows.loc["log-3", "change"] == "" and not rows.loc["log-3", "new_answered"]
    assert list(result.changed["log_id"]) == ["log-0", "log-1", "log-2"]
    assert result.summary() == {"replayed": 4, "skipped": 0, ANSWERED_TO_REFUSED: 0,
                                REFUSED_TO_ANSWERED: 1, TOP_CHANGED: 2}


def test_replay_raising_the_threshold_refuses():
    result = replay(audit_rows(), RetrievalSettings(w_dense=1.0, threshold=0.85, top_k=2))
    changes = dict(zip(result.rows["log_id"], result.rows["change"], strict=True))
    assert changes == {"log-0": "", "log-1": ANSWERED_TO_REFUSED, "log-2": "", "log-3": ""}


def test_replay_with_explicit_old_settings_and_time_range():
    rows = audit_rows()
    result = replay(rows, LOGGED, old=LOGGED, since="2025-03-02", until="2025-03-03T23:59:59Z")
    assert list(result.rows["log_id"]) == ["log-1", "log-2"]
    assert result.changed.empty


def test_replay_skips_rows_without_a_usable_pool():
    rows = audit_rows()[:1] + [
        {"log_id": "broken", "timestamp": "2025-03-09", "user_query_text": "Q?",
         "candidate_pool": "{not json", "settings": "{}", "status": "error"},
        {"log_id": "no-pool", "timestamp": "2025-03-09", "user_query_text": "Q?",
         "candidate_pool": None, "settings": "{}", "status": "error"},
        {"log_id": "bad-settings", "timestamp": "2025-03-09", "user_query_text": "Q?",
         "candidate_pool": audit_rows()[0]["candidate_pool"],
         "settings": json.dumps({"w_dense": 3}), "status": "success"}]
    result = replay(rows, LOGGED)
    assert list(result.rows["log_id"]) == ["log-0"]
    assert [s.split(":")[0] for s in result.skipped] == ["broken", "no-pool", "bad-settings"]


def test_logged_settings_defaults_missing_keys():
    assert logged_settings('{"threshold": 0.4}') == RetrievalSettings(threshold=0.4)
    assert logged_settings({"w_dense": 0.7, "top_k": 3}).top_k == 3
