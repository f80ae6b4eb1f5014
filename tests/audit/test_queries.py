"""The explorer's read side over five hand-made rows, with hand-computed expectations."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta, timezone

import pandas as pd
import pyarrow.parquet as pq
import pytest

from rag.audit.schema import COLUMN_NAMES
from rag.audit.store import AuditFilters, AuditStore
from rag.errors import InputError
from tests.builders import make_error_response, make_response

DAY1 = datetime(2025, 3, 1, 10, 0)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """r1..r4 answered/refused over two days with totals 30/60/90/120 ms; r5 an error."""
    db = tmp_path_factory.mktemp("queries") / "audit.duckdb"
    responses = [
        make_response("What is BM25?", score=0.90, timestamp=DAY1, latency=(10, 20, 30),
                      seed=1),
        make_response("what is BM25?", status="partial", score=0.75, mode="selection",
                      reason_codes=("caveat",), timestamp=DAY1 + timedelta(hours=1),
                      latency=(20, 40, 60), seed=2),
        make_response("Who wrote the book?", status="refused", score=0.40, provider="anthropic",
                      reason_codes=("low_confidence",), answer="I cannot answer that.",
                      timestamp=DAY1 + timedelta(days=1), latency=(30, 60, 90), seed=3, cite=0),
        make_response("Weather today?", status="refused", score=0.55, provider="anthropic",
                      mode="selection+book", reason_codes=("low_confidence", "off_topic"),
                      answer="Off topic.", timestamp=DAY1 + timedelta(days=1, hours=1),
                      latency=(40, 80, 120), seed=4, cite=2),
        make_error_response(timestamp=(DAY1 + timedelta(days=2)).isoformat()),
    ]
    store = AuditStore(db)
    ids = [store.record(r) for r in responses]
    store.flush()
    yield store, ids, responses
    store.close()


def test_stats_are_the_hand_computed_figures(sample):
    store, _, _ = sample
    stats = store.stats()
    assert {k: stats[k] for k in ("total", "answered", "partial", "refused", "errors")} == {
        "total": 5, "answered": 2, "partial": 1, "refused": 2, "errors": 1}
    assert stats["first"] == DAY1 and stats["last"] == DAY1 + timedelta(days=2)
    assert stats["latency_p50_ms"] == 75.0  # quantile_cont of 30, 60, 90, 120
    assert stats["latency_p95_ms"] == pytest.approx(115.5)
    assert stats["confidence_mean"] == pytest.approx(0.65)  # error rows excluded
    assert (stats["answer_rate"], stats["refusal_rate"], stats["error_rate"]) == (0.4, 0.4, 0.2)


@pytest.mark.parametrize(("filters", "expected"), [
    (AuditFilters(), [5, 4, 3, 2, 1]),
    (AuditFilters(start=DAY1 + timedelta(days=1)), [5, 4, 3]),
    (AuditFilters(end=DAY1 + timedelta(days=1)), [2, 1]),
    (AuditFilters(start=datetime(2025, 3, 2, 11, 0, tzinfo=timezone(timedelta(hours=1)))),
     [5, 4, 3]),
    (AuditFilters(modes=("selection",)), [2]),
    (AuditFilters(statuses=("refused", "error")), [5, 4, 3]),
    (AuditFilters(min_confidence=0.5, max_confidence=0.8), [4, 2]),
    (AuditFilters(reason_codes=("low_confidence",)), [4, 3]),
    (AuditFilters(reason_codes=("off_topic", "caveat")), [4, 2]),
    (AuditFilters(providers=("anthropic",)), [4, 3]),
    (AuditFilters(text="bm25"), [2, 1]),
    (AuditFilters(text="OFF TOPIC"), [4]),
    (AuditFilters(statuses=("refused",), providers=("extractive",)), []),
])
def test_filters_select_the_expected_rows_newest_first(sample, filters, expected):
    store, ids, _ = sample
    page = store.query_logs(filters)
    assert list(page["log_id"]) == [ids[n - 1] for n in expected]
    assert store.count_logs(filters) == len(expected)


def test_paging_walks_the_rows_in_order(sample):
    store, ids, _ = sample
    first, second = store.query_logs(limit=2), store.query_logs(limit=2, offset=2)
    assert list(first["log_id"]) + list(second["log_id"]) == [ids[4], ids[3], ids[2], ids[1]]
    assert "candidate_pool" not in first.columns
    with pytest.raises(InputError):
        store.query_logs(limit=-1)


def test_get_log_returns_everything_with_json_parsed(sample):
    store, ids, responses = sample
    record = store.get_log(ids[3])
    assert set(record) == set(COLUMN_NAMES)
    assert record["reason_codes"] == ["low_confidence", "off_topic"]
    assert len(record["candidate_pool"]["candidates"]) == 8
    assert [c["chunk_id"] for c in record["citations"]] == [
        c.chunk_id for c in responses[3].citations]
    assert store.get_log("no-such-id") is None


def test_questions_per_day(sample):
    days = sample[0].questions_per_day()
    assert days.to_dict("list") == {
        "day": [pd.Timestamp(date(2025, 3, d)) for d in (1, 2, 3)],
        "questions": [2, 2, 1], "answered": [2, 0, 0], "refused": [0, 2, 0],
        "errors": [0, 0, 1]}


def test_latency_by_stage(sample):
    table = sample[0].latency_by_stage().set_index("stage")
    assert table.loc["retrieval", "p50_ms"] == 25.0 and table.loc["synthesis", "p50_ms"] == 50.0
    assert table.loc["total", "p95_ms"] == pytest.approx(115.5)
    assert table.loc["total", "count"] == 4  # the error row reports no latency


def test_confidence_histogram(sample):
    hist = sample[0].confidence_histogram(bins=10)
    assert list(hist["count"]) == [0, 0, 0, 0, 1, 1, 0, 1, 0, 1]
    assert (hist["bin_start"].iloc[9], hist["bin_end"].iloc[9]) == (0.9, 1.0)
    assert list(sample[0].confidence_histogram(bins=2)["count"]) == [1, 3]
    with pytest.raises(InputError):
        sample[0].confidence_histogram(bins=0)


def test_refusal_reasons(sample):
    reasons = sample[0].refusal_reasons()
    assert reasons.to_dict("records") == [
        {"reason_code": "low_confidence", "refused": 2, "total": 2},
        {"reason_code": "off_topic", "refused": 1, "total": 1},
        {"reason_code": "caveat", "refused": 0, "total": 1}]


def test_most_asked_groups_case_insensitively_and_shows_the_latest_wording(sample):
    top = sample[0].most_asked(n=2)
    assert list(top["question"]) == ["what is BM25?", "Weather today?"]
    assert list(top["count"]) == [2, 1]


def test_sections_cited_and_never_cited(sample):
    store, _, responses = sample
    expected = Counter(f"m1/ch1#{c.section_id}" for r in responses for c in r.citations)
    cited = store.sections_cited(n=10)
    assert dict(zip(cited["section"], cited["answers"], strict=True)) == dict(expected)
    everything = [f"m1/ch1#s{i}" for i in range(8)] + ["ch1#s0", "ch9#nowhere"]
    never = store.sections_never_cited(None, everything)
    cited_ids = {key.split("#")[1] for key in expected}
    assert never == [s for s in everything if s.split("#")[1] not in cited_ids]
    assert "ch9#nowhere" in never


def test_export_csv_and_parquet_round_trip(sample, tmp_path):
    store, ids, _ = sample
    assert store.export(None, tmp_path / "all.csv", "csv") == 5
    frame = pd.read_csv(tmp_path / "all.csv")
    assert list(frame.columns) == list(COLUMN_NAMES) and len(frame) == 5
    assert frame.loc[frame["log_id"] == ids[3], "reason_codes"].item() == (
        '["low_confidence","off_topic"]')
    refused = AuditFilters(statuses=("refused",))
    assert store.export(refused, tmp_path / "refused.parquet", "parquet") == 2
    table = pq.read_table(tmp_path / "refused.parquet")
    assert sorted(table.column("log_id").to_pylist()) == sorted(ids[2:4])
    assert table.column("reason_codes").to_pylist()[0] == ["low_confidence"]


def test_export_refuses_unknown_formats_and_missing_folders(sample, tmp_path):
    store = sample[0]
    with pytest.raises(InputError, match="csv or parquet"):
        store.export(None, tmp_path / "x.json", "json")
    with pytest.raises(InputError, match="not a folder"):
        store.export(None, tmp_path / "missing" / "x.csv", "csv")


def test_an_empty_log_gives_zeros_not_errors(tmp_path):
    with AuditStore(tmp_path / "audit.duckdb") as store:
        stats = store.stats()
        assert (stats["total"], stats["first"], stats["latency_p50_ms"]) == (0, None, None)
        assert stats["answer_rate"] == 0.0
        assert store.query_logs().empty and store.questions_per_day().empty
        assert list(store.latency_by_stage()["count"]) == [0, 0, 0]
        assert store.confidence_histogram()["count"].sum() == 0
        assert store.sections_never_cited(None, ["ch1#a"]) == ["ch1#a"]


def test_filters_take_aware_datetimes_as_utc(sample):
    aware = AuditFilters(end=datetime(2025, 3, 1, 10, 30, tzinfo=UTC))
    assert sample[0].count_logs(aware) == 1


def test_stage_latency_ignores_stages_that_did_not_run(tmp_path):
    with AuditStore(tmp_path / "audit.duckdb") as store:
        store.record(make_response("refused before synthesis", status="refused",
                                   latency=(10, 0, 15)))
        store.record(make_response("answered", latency=(20, 40, 70)))
        table = store.latency_by_stage().set_index("stage")
    assert (table.loc["synthesis", "p50_ms"], table.loc["synthesis", "count"]) == (40.0, 1)
    assert table.loc["retrieval", "count"] == 2
