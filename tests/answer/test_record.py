"""One answer record: the Response as the chat history and the audit row keep it, and back."""

from __future__ import annotations

import json

from rag.answer.record import EVIDENCE_KEYS, HEAVY_KEYS, from_record, history_record, to_record
from rag.audit.row import build_row
from rag.audit.schema import COLUMN_NAMES
from rag.notices import DENSE_UNAVAILABLE, make_notice
from tests.builders import make_error_response, make_response


def test_the_record_is_json_ready_and_its_keys_are_audit_columns():
    record = to_record(make_response("What is a blended score?", score=0.9))
    assert json.loads(json.dumps(record)) == record
    # kept as keys of their own for the browser history, and together as answer_evidence
    record_only = {*EVIDENCE_KEYS, "clear_selection"}
    assert set(record) - record_only <= set(COLUMN_NAMES)
    assert record["answer_evidence"] == {k: record[k] for k in EVIDENCE_KEYS}
    assert "answer_evidence" not in history_record(make_response())
    row = build_row(make_response(), log_id="L1", session_id="s", app_version="9")
    assert set(row) - record_only == set(COLUMN_NAMES)
    assert {k: row[k] for k in record if k not in ("answer_id", "timestamp")} == \
        {k: v for k, v in to_record(make_response()).items()
         if k not in ("answer_id", "timestamp")}


def test_a_record_reads_back_as_the_response():
    response = make_response("Why blend?", status="partial", score=0.74,
                             reason_codes=("confidence_low",), cite=2)
    back = from_record(to_record(response))
    assert back.answer == response.answer and back.status == "partial"
    assert back.citations == response.citations
    assert back.verdicts == response.verdicts and back.reason_codes == ("confidence_low",)
    assert (back.confidence.score, back.confidence.level) == (0.74, "medium")
    assert back.metadata["question"] == "Why blend?"
    assert back.metadata["mode_label"] == "Searched full book"
    assert to_record(back)["citations"] == to_record(response)["citations"]


def test_an_audit_row_and_a_history_entry_read_back_the_same():
    response = make_response("Same answer?")
    row = build_row(response, log_id="L2")
    entry = history_record(response)
    assert not set(HEAVY_KEYS) & set(entry)
    a, b = from_record(row), from_record(entry)
    assert (a.answer, a.citations, a.verdicts, a.status) == (b.answer, b.citations, b.verdicts,
                                                            b.status)


def test_notices_keep_their_codes_through_the_record():
    response = make_response()
    response.metadata["notices"] = [make_notice(DENSE_UNAVAILABLE, error="down").to_dict(),
                                    "an old log's bare message"]
    notices = from_record(to_record(response)).metadata["notices"]
    assert [n.code for n in notices] == ["dense_unavailable", "unknown"]
    assert notices[0].degraded and not notices[1].degraded


def test_an_error_response_has_a_record_too():
    record = to_record(make_error_response())
    assert record["status"] == "error" and record["chunks_returned"] == []
    assert from_record(record).error_message == make_error_response().error_message
