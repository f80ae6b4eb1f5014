"""The OpenAPI schema tells the truth: a bearer security scheme on every endpoint that takes a key,
a typed response for every endpoint, and real answers, searches and health replies that fit
those types (the app sends records without validating them on the way out)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from rag.access.keys import ApiKeys
from rag.serve.app import create_app
from rag.serve.auth import Access
from rag.serve.schemas import AskRecord, Health, HealthUp, SearchResult
from rag.serve.service import Service

TOKEN = "schema-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
API = ("/v1/ask", "/v1/search", "/v1/health", "/v1/models", "/v1/chat/completions")


@pytest.fixture(scope="module")
def client(sample_index, sample_settings):
    service = Service.build(sample_settings, sample_index, None, None)
    with TestClient(create_app(service, Access(ApiKeys.parse(f"reader:{TOKEN}")))) as test:
        yield test


def resolve(schema: dict, node: dict) -> dict:
    ref = node.get("$ref", "")
    return schema["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else node


def test_a_bearer_scheme_and_a_typed_response_for_every_endpoint(client):
    schema = client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["apiKey"] == {
        "type": "http", "scheme": "bearer", "description": pytest.approx(
            schema["components"]["securitySchemes"]["apiKey"]["description"])}
    assert set(API) <= set(schema["paths"])
    for path in API:
        for method, operation in schema["paths"][path].items():
            assert {"apiKey": []} in operation.get("security", []), (method, path)
            ok = operation["responses"]["200"]["content"]
            typed = resolve(schema, next(iter(ok.values()))["schema"])
            assert typed.get("properties") or typed.get("anyOf"), (method, path, typed)
    ask = resolve(schema, schema["paths"]["/v1/ask"]["post"]["responses"]["200"]["content"][
        "application/json"]["schema"])
    assert {"answer_text", "citations", "status", "confidence_level"} <= set(ask["properties"])


@pytest.mark.parametrize("question", ["What is the zero moment point?",
                                      "What is the best pizza topping?"])
def test_real_answers_fit_the_documented_record(client, question):
    record = client.post("/v1/ask", json={"question": question}, headers=AUTH).json()
    AskRecord.model_validate(record)
    assert AskRecord.model_validate(record).status == record["status"]


def test_real_searches_and_health_fit_their_types(client):
    SearchResult.model_validate(client.post("/v1/search", headers=AUTH, json={
        "question": "How does a PID loop avoid windup?", "top_k": 3}).json())
    Health.model_validate(client.get("/v1/health", headers=AUTH).json())
    HealthUp.model_validate(client.get("/v1/health").json())
