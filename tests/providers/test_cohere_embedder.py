"""CohereEmbedder through the real cohere SDK against a loopback fake of POST /v2/embed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import rag.config
from rag.errors import ConfigError, ProviderError
from rag.providers.cohere_embedder import CohereEmbedder, parse_retry_after, retry_delay
from tests.builders import free_port
from tests.fakes.cohere_server import CohereServer


@pytest.fixture
def server() -> Iterator[CohereServer]:
    with CohereServer() as fake:
        yield fake


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def no_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No key in the environment and a project root whose secrets.toml we control."""
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("COHERE_BASE_URL", raising=False)
    monkeypatch.setattr(rag.config, "PROJECT_ROOT", tmp_path)
    return tmp_path


def make_embedder(url: str, sleeps: list[float], **options: object) -> CohereEmbedder:
    return CohereEmbedder(api_key="test-key", base_url=url, sleep=sleeps.append, **options)




def test_documents_go_in_batches_of_96(server: CohereServer, sleeps: list[float]) -> None:
    texts = [f"passage number {i} about control loops" for i in range(200)]
    vectors = make_embedder(server.url, sleeps).embed_documents(texts)
    sizes = [len(r.body["texts"]) for r in server.embed_requests]
    assert sizes == [96, 96, 8]
    assert vectors.shape == (200, 1024)
    assert server.embed_requests[0].body["texts"][:2] == texts[:2]


def test_request_on_the_wire(server: CohereServer, sleeps: list[float]) -> None:
    embedder = make_embedder(server.url, sleeps, model="embed-english-v3.0")
    embedder.embed_documents(["a document"])
    embedder.embed_query("a question")
    document, query = (r.body for r in server.embed_requests)
    assert document["input_type"] == "search_document"
    assert query["input_type"] == "search_query"
    assert document["model"] == "embed-english-v3.0"
    assert document["embedding_types"] == ["float"]
    assert document["truncate"] == "END"
    assert server.embed_requests[0].headers["authorization"] == "Bearer test-key"


def test_vectors_are_unit_float32_and_similar_texts_score_higher(server: CohereServer,
                                                                 sleeps: list[float]) -> None:
    embedder = make_embedder(server.url, sleeps)
    docs = embedder.embed_documents(["the integral term removes steady state error",
                                     "bread needs flour water and salt"])
    query = embedder.embed_query("why does the integral term remove steady state error")
    assert docs.dtype == np.float32 and query.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert np.isclose(np.linalg.norm(query), 1.0, atol=1e-5)
    assert docs[0] @ query > docs[1] @ query


def test_dim_comes_from_the_response(sleeps: list[float]) -> None:
    with CohereServer(dim=384) as narrow:
        embedder = make_embedder(narrow.url, sleeps)
        vectors = embedder.embed_documents(["one", "two"])
    assert vectors.shape == (2, 384)
    assert embedder.dim == 384


def test_rate_limit_is_retried_after_the_servers_delay(server: CohereServer,
                                                       sleeps: list[float]) -> None:
    server.plan(status=429, headers={"Retry-After": "2"})
    vectors = make_embedder(server.url, sleeps).embed_documents(["retry me"])
    assert vectors.shape == (1, 1024)
    assert len(server.embed_requests) == 2
    assert sleeps == [2.0]


def test_server_errors_back_off_exponentially(server: CohereServer, sleeps: list[float]) -> None:
    for _ in range(3):
        server.plan(status=503)
    make_embedder(server.url, sleeps).embed_query("flaky")
    assert sleeps == [0.5, 1.0, 2.0]


def test_persistent_500_gives_up_after_max_retries(server: CohereServer,
                                                   sleeps: list[float]) -> None:
    for _ in range(5):
        server.plan(status=500)
    with pytest.raises(ProviderError, match=r"HTTP 500\) after 2 retries"):
        make_embedder(server.url, sleeps, max_retries=2).embed_query("down")
    assert len(server.embed_requests) == 3  # the SDK's own retries are off: the count is ours
    assert len(sleeps) == 2


def test_persistent_429_says_to_wait(server: CohereServer, sleeps: list[float]) -> None:
    for _ in range(2):
        server.plan(status=429)
    with pytest.raises(ProviderError, match="rate limit was hit") as caught:
        make_embedder(server.url, sleeps, max_retries=1).embed_query("busy")
    assert "try again" in str(caught.value)


def test_bad_key_is_not_retried(server: CohereServer, sleeps: list[float]) -> None:
    server.plan(status=401)
    with pytest.raises(ProviderError, match="COHERE_API_KEY") as caught:
        make_embedder(server.url, sleeps).embed_query("who am i")
    assert "(401)" in str(caught.value)
    assert len(server.embed_requests) == 1 and sleeps == []


def test_bad_request_is_reported_with_the_servers_message(server: CohereServer,
                                                          sleeps: list[float]) -> None:
    server.plan(status=400, body={"message": "invalid request: model not found"})
    with pytest.raises(ProviderError, match="HTTP 400.*model not found"):
        make_embedder(server.url, sleeps).embed_query("which model")


def test_unreachable_server_names_the_url(sleeps: list[float]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ProviderError, match=f"Could not reach Cohere at {url}"):
        make_embedder(url, sleeps, max_retries=1).embed_query("anyone there")
    assert sleeps == [0.5]


def test_slow_server_times_out(server: CohereServer, sleeps: list[float]) -> None:
    server.plan(delay=3.0)
    with pytest.raises(ProviderError, match="did not answer within 0.3 s"):
        make_embedder(server.url, sleeps, timeout=0.3, max_retries=0).embed_query("slow")


def test_missing_key_is_a_config_error(no_secrets: Path) -> None:
    with pytest.raises(ConfigError, match="COHERE_API_KEY.*RAG_EMBEDDER=local"):
        CohereEmbedder()


def test_key_and_url_come_from_secrets_and_env(no_secrets: Path, server: CohereServer,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (no_secrets / ".streamlit").mkdir()
    (no_secrets / ".streamlit" / "secrets.toml").write_text('COHERE_API_KEY = "from-file"\n')
    monkeypatch.setenv("COHERE_BASE_URL", server.url)
    CohereEmbedder().embed_query("configured elsewhere")
    assert server.embed_requests[0].headers["authorization"] == "Bearer from-file"


def test_count_tokens_overestimates_word_pieces() -> None:
    embedder = CohereEmbedder(api_key="unused")
    assert embedder.count_tokens("") == 0
    assert embedder.count_tokens("hello world") == 3  # 2 word pieces * 1.1, rounded up
    long_text = "proportional integral derivative " * 100
    assert embedder.count_tokens(long_text) > 300  # not cut at MiniLM's 128-token truncation


def test_retry_delay_caps_and_reads_retry_after() -> None:
    assert [retry_delay(n, None) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert retry_delay(0, {"retry-after": "3"}) == 3.0
    assert retry_delay(0, {"Retry-After": "3600"}) == 30.0
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None


def test_importing_the_module_does_not_import_cohere() -> None:
    code = "import sys, rag.providers.cohere_embedder; print('cohere' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=rag.config.PROJECT_ROOT, check=True)
    assert result.stdout.strip() == "False"


def test_missing_package_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cohere", None)  # makes `import cohere` raise ImportError
    with pytest.raises(ProviderError, match="pip install cohere"):
        CohereEmbedder(api_key="test-key").embed_query("no sdk")
