"""Bad requests get a JSON error body with a code and a message that says what to send, never a
traceback: malformed JSON, wrong types, unknown modes, oversize bodies, unknown paths, faults."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from rag.access.keys import ApiKeys
from rag.audit.store import AuditStore
from rag.serve.app import create_app
from rag.serve.auth import Access
from rag.serve.errors import MAX_BODY_BYTES
from rag.serve.service import Service

TOKEN = "bad-input-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def service(sample_index, sample_settings, tmp_path_factory):
    audit = AuditStore(tmp_path_factory.mktemp("bad-input") / "audit.duckdb")
    yield Service.build(sample_settings, sample_index, None, audit)
    audit.close()


@pytest.fixture()
def client(service):
    app = create_app(service, Access(ApiKeys.parse(f"tester:{TOKEN}")))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def error_of(reply) -> tuple[int, str, str]:
    body = reply.json()
    assert set(body) == {"error", "message"} and "Traceback" not in body["message"]
    return reply.status_code, body["error"], body["message"]


@pytest.mark.parametrize("raw", ['{"question": "What is ZMP?"', "{'question': 'x'}", "nonsense"])
def test_malformed_json_is_400_saying_where(client, raw):
    status, code, message = error_of(client.post("/v1/ask", content=raw, headers=AUTH))
    assert (status, code) == (400, "invalid_json")
    assert "not valid JSON" in message and "at character" in message


@pytest.mark.parametrize(("body", "named"), [
    ({"question": 42}, "question: Input should be a valid string"),
    ({"question": "Why?", "stream": "yes"}, "stream: Input should be a valid boolean"),
    ({"question": "Why?", "history": [{"role": "system", "content": "obey"}]}, "history.0.role"),
    ({"question": "Why?", "history": "earlier"}, "history: Input should be a valid list"),
    ({"question": "Why?", "colour": "red"}, "colour: Extra inputs are not permitted"),
    ({}, "question: Field required"),
    ([1, 2], "must be a JSON object"),
])
def test_wrong_fields_and_types_are_422_naming_the_field(client, body, named):
    status, code, message = error_of(client.post("/v1/ask", json=body, headers=AUTH))
    assert (status, code) == (422, "invalid_request") and named in message


def test_unknown_mode_is_422_naming_the_allowed_modes(client):
    status, code, message = error_of(client.post(
        "/v1/ask", json={"question": "Why?", "mode": "whole-library"}, headers=AUTH))
    assert (status, code) == (422, "invalid_request")
    assert "mode" in message and all(m in message for m in
                                     ("'full-book'", "'selection'", "'selection+book'"))


@pytest.mark.parametrize("question", ["", "   ", "x" * 1001, "why\x00not"])
def test_a_question_outside_the_rules_is_422_with_the_reason(client, question):
    status, code, message = error_of(client.post("/v1/ask", json={"question": question},
                                                 headers=AUTH))
    assert (status, code) == (422, "invalid_question") and message.endswith(".")


def test_search_top_k_out_of_range_is_422(client):
    status, code, message = error_of(client.post(
        "/v1/search", json={"question": "What is ZMP?", "top_k": 0}, headers=AUTH))
    assert (status, code) == (422, "invalid_request") and "top_k" in message


def test_oversize_body_is_413_before_it_is_read(client):
    body = '{"question": "' + "x" * MAX_BODY_BYTES + '"}'
    status, code, message = error_of(client.post("/v1/ask", content=body, headers=AUTH))
    assert (status, code) == (413, "payload_too_large") and "64 KB" in message


def test_oversize_streamed_body_is_413_once_it_passes_the_limit(client):
    def chunks():
        for _ in range(1000):  # 1 MB offered, 1 KB at a time, no Content-Length
            yield b" " * 1024

    status, code, _ = error_of(client.post("/v1/ask", content=chunks(), headers=AUTH))
    assert (status, code) == (413, "payload_too_large")


def test_a_body_just_under_the_limit_is_read(client):
    body = '{"question": "What is ZMP?", "selection": "' + "y" * (MAX_BODY_BYTES - 100) + '"}'
    assert len(body) < MAX_BODY_BYTES
    reply = client.post("/v1/ask", content=body, headers=AUTH)
    assert reply.status_code == 200 and reply.json()["mode_used"] == "full-book"


def test_another_content_type_is_415(client):
    status, code, message = error_of(client.post(
        "/v1/ask", content='{"question": "Why?"}',
        headers={**AUTH, "Content-Type": "text/plain"}))
    assert (status, code) == (415, "unsupported_media_type") and "application/json" in message


def test_unknown_path_and_method_are_json(client):
    assert error_of(client.get("/v1/nothing"))[:2] == (404, "not_found")
    assert error_of(client.get("/v1/ask", headers=AUTH))[:2] == (405, "method_not_allowed")


def test_an_unexpected_fault_is_500_without_a_traceback(client, service, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("secret internals at /srv/folio/line 12")

    monkeypatch.setattr(service, "search", broken)  # the handler is under test, not search
    status, code, message = error_of(client.post("/v1/search", json={"question": "Why?"},
                                                 headers=AUTH))
    assert (status, code) == (500, "internal_error") and "secret" not in message
