"""AnthropicLLM through the real anthropic SDK against a loopback fake of POST /v1/messages."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import rag.config
from rag.errors import ConfigError, ProviderError
from rag.providers.anthropic_llm import AnthropicLLM
from rag.providers.base import CitedSpan, Document, Message, ReplyBlock
from tests.builders import free_port
from tests.fakes.anthropic_server import DEFAULT_REPLY, AnthropicServer

SYSTEM = "Answer only from the numbered sources."
HISTORY = [Message("user", "What does the integral term do?"),
           Message("assistant", "It accumulates error."),
           Message("user", "And at steady state?")]
DOCUMENTS = [
    Document("PID Control > Integral action", "Proportional action alone leaves an offset. The "
             "integral term removes steady-state error by summing it over time."),
    Document("PID Control > Derivative action", "Derivative action damps fast motion."),
]
CITED_REPLY = ("The integral term removes steady-state error [S1], and derivative action damps "
               "motion [S2].\nConfidence: 0.9")
# what the fake makes of CITED_REPLY: each clause before a marker cites its best sentence
CITED_BLOCKS = [
    ReplyBlock("The integral term removes steady-state error", (CitedSpan(
        0, 44, 113, "The integral term removes steady-state error by summing it over time."),)),
    ReplyBlock(", and "),
    ReplyBlock("derivative action damps motion", (CitedSpan(
        1, 0, 36, "Derivative action damps fast motion."),)),
    ReplyBlock(".\nConfidence: 0.9"),
]


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as fake:
        yield fake


@pytest.fixture
def llm(server: AnthropicServer) -> AnthropicLLM:
    return AnthropicLLM(api_key="test-key", base_url=server.url)


def generate(llm: AnthropicLLM, timeout: float = 5.0) -> str:
    return llm.generate(SYSTEM, HISTORY, max_tokens=300, timeout=timeout)


def stream(llm: AnthropicLLM, timeout: float = 5.0) -> list[str]:
    return list(llm.stream(SYSTEM, HISTORY, max_tokens=300, timeout=timeout))




def test_generate_returns_the_reply_text(llm: AnthropicLLM) -> None:
    assert generate(llm) == DEFAULT_REPLY


def test_request_keeps_system_apart_and_sends_no_sampling_params(
        llm: AnthropicLLM, server: AnthropicServer) -> None:
    generate(llm)
    request = server.message_requests[0]
    assert request.body["system"] == SYSTEM
    assert request.body["messages"] == [{"role": m.role, "content": m.content} for m in HISTORY]
    assert request.body["max_tokens"] == 300
    assert request.body["model"] == "claude-sonnet-4-6"
    # API version 2026-10-21 answers 400 to temperature/top_p/top_k, so none are sent
    assert request.headers["anthropic-version"] == "2026-10-21"
    assert not {"temperature", "top_p", "top_k"} & set(request.body)
    assert request.headers["authorization"] == "Bearer test-key"


def test_stream_yields_deltas_that_join_to_the_reply(llm: AnthropicLLM,
                                                     server: AnthropicServer) -> None:
    server.plan(text="Integral action sums the error over time, so any offset keeps growing.")
    deltas = stream(llm)
    assert len(deltas) > 3
    assert "".join(deltas) == (
        "Integral action sums the error over time, so any offset keeps growing.")
    assert server.message_requests[0].body["stream"] is True


@pytest.mark.parametrize(("status", "sentence"), [
    (401, "Claude rejected the API key (401). Check ANTHROPIC_API_KEY."),
    (429, "Claude is rate-limiting requests (429); wait a moment and ask again."),
    (500, "Claude's service failed (HTTP 500); try again shortly."),
    (529, "Claude's service failed (HTTP 529); try again shortly."),
])
def test_http_errors_become_provider_errors(llm: AnthropicLLM, server: AnthropicServer,
                                            status: int, sentence: str) -> None:
    server.plan(status=status)
    server.plan(status=status)
    with pytest.raises(ProviderError) as from_generate:
        generate(llm)
    with pytest.raises(ProviderError) as from_stream:
        stream(llm)
    assert str(from_generate.value) == sentence == str(from_stream.value)
    assert len(server.message_requests) == 2  # max_retries=0: one attempt per call


def test_error_mid_stream_is_mapped(llm: AnthropicLLM, server: AnthropicServer) -> None:
    server.plan(stream_error="overloaded_error")
    deltas = llm.stream(SYSTEM, HISTORY, max_tokens=300, timeout=5.0)
    assert next(deltas) == "The integral "
    with pytest.raises(ProviderError, match=r"service failed \(HTTP 529\)"):
        next(deltas)


def test_unknown_model_names_the_setting(server: AnthropicServer) -> None:
    server.plan(status=404)
    llm = AnthropicLLM(model="claude-nonexistent", api_key="test-key", base_url=server.url)
    with pytest.raises(ProviderError, match="'claude-nonexistent'.*RAG_LLM_MODEL"):
        generate(llm)


def test_slow_reply_times_out(llm: AnthropicLLM, server: AnthropicServer) -> None:
    server.plan(delay=3.0)
    with pytest.raises(ProviderError, match=r"Claude did not answer within 0.5 s\."):
        generate(llm, timeout=0.5)


def test_stream_that_stalls_times_out(llm: AnthropicLLM, server: AnthropicServer) -> None:
    server.plan(stall=3.0)
    with pytest.raises(ProviderError, match=r"Claude did not answer within 0.5 s\."):
        stream(llm, timeout=0.5)


def test_unreachable_server_names_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    llm = AnthropicLLM(api_key="test-key", base_url=url)
    with pytest.raises(ProviderError, match=f"Could not reach Claude at {url}\\.$"):
        generate(llm)


def test_missing_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(rag.config, "PROJECT_ROOT", tmp_path)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY.*RAG_LLM=extractive"):
        AnthropicLLM()


def test_base_url_from_environment(monkeypatch: pytest.MonkeyPatch,
                                   server: AnthropicServer) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    assert generate(AnthropicLLM(api_key="test-key")) == DEFAULT_REPLY
    assert len(server.message_requests) == 1


def test_importing_the_module_does_not_import_anthropic() -> None:
    code = "import sys, rag.providers.anthropic_llm; print('anthropic' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=rag.config.PROJECT_ROOT, check=True)
    assert result.stdout.strip() == "False"


def test_missing_package_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # makes `import anthropic` raise
    llm = AnthropicLLM(api_key="test-key")
    with pytest.raises(ProviderError, match="pip install anthropic"):
        generate(llm)
    with pytest.raises(ProviderError, match="pip install anthropic"):
        stream(llm)


# -- cited answers (the citations feature) -------------------------------------------------------

def generate_cited(llm: AnthropicLLM) -> list[ReplyBlock]:
    return llm.generate_cited(SYSTEM, HISTORY, DOCUMENTS, max_tokens=300, timeout=5.0)


def stream_cited(llm: AnthropicLLM) -> list[str | ReplyBlock]:
    return list(llm.stream_cited(SYSTEM, HISTORY, DOCUMENTS, max_tokens=300, timeout=5.0))


def test_cited_request_sends_the_documents_with_citations_enabled(
        llm: AnthropicLLM, server: AnthropicServer) -> None:
    generate_cited(llm)
    body = server.message_requests[0].body
    assert body["system"] == SYSTEM and not {"temperature", "top_p", "top_k"} & set(body)
    *earlier, last = body["messages"]
    assert earlier == [{"role": m.role, "content": m.content} for m in HISTORY[:-1]]
    assert last == {"role": "user", "content": [
        {"type": "document", "title": "PID Control > Integral action",
         "citations": {"enabled": True},
         "source": {"type": "text", "media_type": "text/plain", "data": DOCUMENTS[0].text}},
        {"type": "document", "title": "PID Control > Derivative action",
         "citations": {"enabled": True},
         "source": {"type": "text", "media_type": "text/plain", "data": DOCUMENTS[1].text}},
        {"type": "text", "text": "And at steady state?"},
    ]}


def test_generate_cited_returns_blocks_with_their_char_locations(
        llm: AnthropicLLM, server: AnthropicServer) -> None:
    server.plan(text=CITED_REPLY)
    assert generate_cited(llm) == CITED_BLOCKS
    for block in CITED_BLOCKS:  # the offsets are the excerpt's own
        for span in block.spans:
            assert DOCUMENTS[span.document_index].text[span.start:span.end] == span.cited_text


def test_stream_cited_yields_deltas_and_blocks_built_from_citations_deltas(
        llm: AnthropicLLM, server: AnthropicServer) -> None:
    server.plan(text=CITED_REPLY)
    items = stream_cited(llm)
    deltas = [i for i in items if isinstance(i, str)]
    assert len(deltas) > 3 and "".join(deltas) == "".join(b.text for b in CITED_BLOCKS)
    # a streamed block starts with no citations: its spans came from citations_delta events
    assert [i for i in items if isinstance(i, ReplyBlock)] == CITED_BLOCKS
    assert isinstance(items[-1], ReplyBlock) and server.message_requests[0].body["stream"]


def test_cited_failures_become_provider_errors(llm: AnthropicLLM,
                                               server: AnthropicServer) -> None:
    server.plan(status=529)
    with pytest.raises(ProviderError, match=r"service failed \(HTTP 529\)"):
        generate_cited(llm)
    server.plan(text=CITED_REPLY, stream_error="overloaded_error")
    with pytest.raises(ProviderError, match=r"service failed \(HTTP 529\)"):
        stream_cited(llm)
