"""The OpenAI-compatible endpoint driven by the real `openai` SDK against a real uvicorn serving
the sample book (real MiniLM, Qdrant local, DuckDB audit): models, answers with their sources as
Markdown links, streaming chunks, history, and the same keys, limits and audit rows as /v1/ask."""

from __future__ import annotations

import openai
import pytest

from rag.access.keys import ApiKeys
from rag.access.ratelimit import RateLimiter
from rag.audit.store import AuditStore
from rag.serve.app import create_app
from rag.serve.auth import Access
from rag.serve.service import Service
from tests.builders import uvicorn_thread

TOKEN = "openai-sdk-token-0123456789"
QUESTION = "What is the zero moment point?"


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    store = AuditStore(tmp_path_factory.mktemp("openai-audit") / "audit.duckdb",
                       flush_interval=0.05)
    yield store
    store.close()


@pytest.fixture(scope="module")
def service(sample_index, sample_settings, audit) -> Service:
    return Service.build(sample_settings, sample_index, None, audit)


@pytest.fixture(scope="module")
def url(service):
    app = create_app(service, Access(ApiKeys.parse(f"open-webui:{TOKEN}")))
    with uvicorn_thread(app) as base:
        yield base


@pytest.fixture()
def client(url) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, max_retries=0, timeout=60)


def audit_row(audit: AuditStore, session: str) -> dict:
    audit.flush()
    rows = audit.query_logs(limit=500)
    ids = list(rows.loc[rows["session_id"] == session, "log_id"])
    assert len(ids) == 1, ids
    return audit.get_log(ids[0])


def test_one_model_per_served_book(client, sample_settings):
    models = client.models.list().data
    assert [m.id for m in models] == [f"folio/{sample_settings.book_id}"]
    assert models[0].owned_by == "folio"


def test_an_answer_with_its_sources_as_links(client, audit, sample_settings):
    model = f"folio/{sample_settings.book_id}"
    reply = client.chat.completions.create(
        model=model, user="sdk-json", messages=[
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": QUESTION}])
    text = reply.choices[0].message.content
    folio = reply.model_extra["folio"]
    assert reply.model == model and reply.choices[0].finish_reason == "stop"
    assert "ZMP" in text and "**Sources**" in text
    first = folio["citations"][0]
    assert f"[[{first['marker']}]]({first['url']})" in text  # the marker links its section
    assert f"[{first['section_title']}]({first['url']})" in text
    assert folio["status"] in ("success", "partial") and folio["confidence"]["level"]
    row = audit_row(audit, "sdk-json")
    assert row["client_id"] == "open-webui" and row["query_id"] == folio["query_id"]


def test_a_streamed_answer_in_chunks(client, audit, sample_settings):
    model = f"folio/{sample_settings.book_id}"
    stream = client.chat.completions.create(
        model=model, stream=True, user="sdk-stream",
        messages=[{"role": "user", "content": QUESTION}])
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    folio = chunks[-1].model_extra["folio"]
    assert "ZMP" in text and "**Sources**" in text and folio["citations"]
    row = audit_row(audit, "sdk-stream")
    assert row["client_id"] == "open-webui" and row["answer_text"] in text


def test_earlier_messages_make_a_follow_up_standalone(client, audit, sample_settings):
    client.chat.completions.create(
        model=f"folio/{sample_settings.book_id}", user="sdk-follow-up", messages=[
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": "It is a point on the ground.\n\n**Sources**\n- x"},
            {"role": "user", "content": "How is it computed?"}])
    assert "zero moment point" in audit_row(audit, "sdk-follow-up")["retrieval_query"]


def test_keys_models_and_limits_are_enforced(url, service, tmp_path, sample_settings):
    with pytest.raises(openai.AuthenticationError) as refused:
        openai.OpenAI(base_url=f"{url}/v1", api_key="not-a-key-at-all-xxxx",
                      max_retries=0).models.list()
    assert refused.value.status_code == 401 and "API key" in refused.value.message
    sdk = openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, max_retries=0)
    with pytest.raises(openai.NotFoundError) as unknown:
        sdk.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x?"}])
    assert f"folio/{sample_settings.book_id}" in unknown.value.message
    with pytest.raises(openai.UnprocessableEntityError):
        sdk.chat.completions.create(model=f"folio/{sample_settings.book_id}",
                                    messages=[{"role": "assistant", "content": "no question"}])
    limited = create_app(service, Access(ApiKeys.parse(f"open-webui:{TOKEN}"),
                                         RateLimiter(tmp_path / "rl.sqlite", 1)))
    with uvicorn_thread(limited) as other:
        sdk = openai.OpenAI(base_url=f"{other}/v1", api_key=TOKEN, max_retries=0, timeout=60)
        body = {"model": f"folio/{sample_settings.book_id}",
                "messages": [{"role": "user", "content": QUESTION}]}
        sdk.chat.completions.create(**body)
        with pytest.raises(openai.RateLimitError) as over:
            sdk.chat.completions.create(**body)
    assert "1 question per minute" in over.value.message
