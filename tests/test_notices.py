"""Notices are codes with messages defined once; kinds, not words, decide what they mean."""

from __future__ import annotations

import pytest

from rag.notices import (
    AUDIT_UNAVAILABLE,
    DEGRADED,
    DENSE_UNAVAILABLE,
    FALLBACK,
    LLM_FALLBACK,
    NOTICES,
    SELECTION_STALE,
    UNKNOWN,
    Notice,
    make_notice,
    notice_from,
    notice_label,
)


def test_every_code_has_a_kind_a_label_and_a_message():
    for code, (kind, label, template) in NOTICES.items():
        assert kind in ("fallback", "degraded", "audit", "info") and label and template, code


@pytest.mark.parametrize(("code", "degraded"), [(DENSE_UNAVAILABLE, True), (LLM_FALLBACK, True),
                                                (SELECTION_STALE, False),
                                                (AUDIT_UNAVAILABLE, False)])
def test_only_service_fallbacks_degrade_an_answer(code, degraded):
    assert make_notice(code, error="boom").degraded is degraded


def test_messages_are_filled_and_rewording_changes_no_kind():
    notice = make_notice(DENSE_UNAVAILABLE, error="Qdrant is down")
    assert notice.message == "Dense search unavailable, BM25-only results: Qdrant is down"
    reworded = Notice(DENSE_UNAVAILABLE, "Vectors offline; keywords only.")
    assert reworded.kind == DEGRADED and make_notice(SELECTION_STALE).kind == FALLBACK


def test_notices_read_back_from_records_and_old_logs():
    assert notice_from(make_notice(SELECTION_STALE).to_dict()) == make_notice(SELECTION_STALE)
    assert notice_from("bare text from an old log") == Notice(UNKNOWN, "bare text from an old log")
    assert notice_from({"code": "made_up", "message": "x"}).code == UNKNOWN
    assert notice_label(SELECTION_STALE) == "selected text older than 5 minutes"
