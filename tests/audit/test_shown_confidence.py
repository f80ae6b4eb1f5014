"""A question refused before any answer was drafted shows one confidence everywhere: the chat's
"Retrieval" badge, the audit explorer's list column, its confidence filter, histogram and means
(the stored confidence_score blends retrieval with a default for the missing draft)."""

from __future__ import annotations

import pytest

from pages.components.common.format import badges_markdown, drafted
from rag.answer.pipeline import Pipeline
from rag.answer.record import history_record
from rag.audit.store import AuditFilters, AuditStore

pytestmark = pytest.mark.slow
OFF_TOPIC = "Who won the football World Cup in 1998?"
IN_SCOPE = "Why do most humanoids use absolute encoders rather than incremental ones?"


@pytest.fixture(scope="module")
def asked(sample_index, sample_settings, tmp_path_factory):
    store = AuditStore(tmp_path_factory.mktemp("shown") / "audit.duckdb")
    pipeline = Pipeline(sample_index, sample_settings, audit=store)
    refused, answered = pipeline.answer(OFF_TOPIC), pipeline.answer(IN_SCOPE)
    store.flush()
    yield store, history_record(refused), history_record(answered)
    store.close()


def test_the_list_shows_what_the_chat_showed(asked):
    store, refused, answered = asked
    assert refused["status"] == "refused" and not drafted(refused)  # the premise
    shown = refused["retrieval_confidence"]
    assert refused["confidence_score"] != pytest.approx(shown, abs=0.005)
    assert f"Retrieval {shown:.2f}" in badges_markdown(refused)
    rows = store.query_logs().set_index("user_query_text")
    assert rows.loc[OFF_TOPIC, "shown_confidence"] == pytest.approx(shown)
    assert rows.loc[IN_SCOPE, "shown_confidence"] == pytest.approx(answered["confidence_score"])
    assert f"Confidence {answered['confidence_score']:.2f}" in badges_markdown(answered)


def test_filter_histogram_and_means_use_it(asked):
    store, refused, answered = asked
    shown, stored = refused["retrieval_confidence"], refused["confidence_score"]
    around = AuditFilters(min_confidence=shown - 0.005, max_confidence=shown + 0.005)
    assert list(store.query_logs(around)["user_query_text"]) == [OFF_TOPIC]
    at_stored = AuditFilters(min_confidence=stored - 0.005, max_confidence=stored + 0.005)
    assert OFF_TOPIC not in list(store.query_logs(at_stored)["user_query_text"])
    hist = store.confidence_histogram(bins=100)
    assert hist.loc[min(int(shown * 100), 99), "count"] >= 1
    mean = (shown + answered["confidence_score"]) / 2
    assert store.stats()["confidence_mean"] == pytest.approx(mean, abs=1e-4)
    asked_most = store.most_asked().set_index("question")
    assert asked_most.loc[OFF_TOPIC, "confidence_mean"] == pytest.approx(shown)
