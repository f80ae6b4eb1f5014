"""OpenAICompatibleLLM through the real openai SDK against a loopback fake of an OpenAI-compatible
server's POST /v1/chat/completions: the request, streaming, and every way the server can fail."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rag.config
from rag.config import load_settings
from rag.errors import ConfigError, ProviderError
from rag.providers.base import Message
from rag.providers.openai_llm import OpenAICompatibleLLM, strip_thinking
from rag.providers.registry import LLMS, get_llm
from tests.builders import free_port
from tests.fakes.openai_server import DEFAULT_REPLY, OpenAIServer

SYSTEM = "Answer only from the labelled excerpts."
HISTORY = [Message("user", "What does the integral term do?"),
           Message("assistant", "It accumulates error."),
           Message("user", "And at steady state?")]
STREAMED = "Integral action sums the error over time, so any offset keeps growing."


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as fake:
        yield fake


@pytest.fixture
def llm(server: OpenAIServer) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM("llama3.1:8b", server.base_url, api_key="")


def generate(llm: OpenAICompatibleLLM, timeout: float = 5.0) -> str:
    return llm.generate(SYSTEM, HISTORY, max_tokens=300, timeout=timeout)


def stream(llm: OpenAICompatibleLLM, timeout: float = 5.0) -> list[str]:
    return list(llm.stream(SYSTEM, HISTORY, max_tokens=300, timeout=timeout))


def test_generate_returns_the_reply_text(llm: OpenAICompatibleLLM) -> None:
    assert generate(llm) == DEFAULT_REPLY


def test_request_sends_the_system_prompt_first_and_no_key_to_a_keyless_server(
        llm: OpenAICompatibleLLM, server: OpenAIServer) -> None:
    generate(llm)
    (request,) = server.chat_requests
    assert request.body["messages"] == [
        {"role": "system", "content": SYSTEM},
        *({"role": m.role, "content": m.content} for m in HISTORY)]
    assert request.body["model"] == "llama3.1:8b"
    assert (request.body["max_tokens"], request.body["temperature"]) == (300, 0)
    assert "authorization" not in request.headers  # no made-up key is sent anywhere


def test_a_key_goes_as_a_bearer_token(monkeypatch: pytest.MonkeyPatch,
                                      server: OpenAIServer) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-secret")
    generate(OpenAICompatibleLLM("llama3.1:8b", server.base_url))
    assert server.chat_requests[0].headers["authorization"] == "Bearer sk-local-secret"


def test_stream_yields_deltas_that_join_to_the_reply(llm: OpenAICompatibleLLM,
                                                     server: OpenAIServer) -> None:
    server.plan(text=STREAMED)
    deltas = stream(llm)
    assert len(deltas) > 3 and "".join(deltas) == STREAMED
    assert server.chat_requests[0].body["stream"] is True


@pytest.mark.parametrize(("status", "sentence"), [
    (401, "rejected the API key (401). Set OPENAI_API_KEY in the environment or "
          ".streamlit/secrets.toml."),
    (429, "is rate-limiting requests (429); wait a moment and ask again."),
    (500, "failed (HTTP 500: The server had an error while processing your request.); try "
          "again shortly."),
    (503, "failed (HTTP 503: The engine is currently overloaded, please try again later.); "
          "try again shortly."),
    (400, "refused the request (HTTP 400): This model's maximum context length is 8192 "
          "tokens."),
])
def test_http_errors_become_provider_errors(llm: OpenAICompatibleLLM, server: OpenAIServer,
                                            status: int, sentence: str) -> None:
    server.plan(status=status, headers={"Retry-After": "0"})
    server.plan(status=status, headers={"Retry-After": "0"})
    with pytest.raises(ProviderError) as from_generate:
        generate(llm)
    with pytest.raises(ProviderError) as from_stream:
        stream(llm)
    expected = f"The model server at {server.base_url} {sentence}"
    assert str(from_generate.value) == expected == str(from_stream.value)
    assert len(server.chat_requests) == 2  # max_retries=0: one attempt per call


def test_an_unknown_model_names_the_setting(server: OpenAIServer) -> None:
    fake = OpenAIServer(models=("llama3.1:8b",)).start()
    try:
        llm = OpenAICompatibleLLM("mistral", fake.base_url, api_key="")
        with pytest.raises(ProviderError, match=r"does not know the model 'mistral' \(404: model "
                                                r"\"mistral\" not found, try pulling it first\)\. "
                                                r"Set RAG_LLM_MODEL"):
            generate(llm)
    finally:
        fake.stop()


def test_a_base_url_without_v1_is_explained(server: OpenAIServer) -> None:
    llm = OpenAICompatibleLLM("llama3.1:8b", server.url, api_key="")  # no /v1
    with pytest.raises(ProviderError, match=r"has no chat endpoint \(404\); its "
                                            r"OpenAI-compatible URL usually ends in /v1"):
        generate(llm)


@pytest.mark.parametrize(("cut", "sentence"), [
    ("close", "The connection to the model server at {url} broke mid-answer; ask again."),
    ("reset", "The connection to the model server at {url} broke mid-answer; ask again."),
    ("end", "The answer from the model server at {url} broke off before it ended; ask again."),
])
def test_a_stream_that_breaks_off_mid_answer_is_a_provider_error(
        llm: OpenAICompatibleLLM, server: OpenAIServer, cut: str, sentence: str) -> None:
    server.plan(cut=cut)
    deltas = llm.stream(SYSTEM, HISTORY, max_tokens=300, timeout=5.0)
    assert next(deltas) == "The integral "  # the first delta arrived before the server died
    started = time.perf_counter()
    with pytest.raises(ProviderError) as error:
        list(deltas)
    assert str(error.value) == sentence.format(url=server.base_url)
    assert time.perf_counter() - started < 1.0  # noticed at once, not at a timeout


def test_an_error_event_mid_stream_is_a_provider_error(llm: OpenAICompatibleLLM,
                                                       server: OpenAIServer) -> None:
    server.plan(stream_error="CUDA out of memory")
    with pytest.raises(ProviderError, match=r"failed mid-answer \(CUDA out of memory\)"):
        stream(llm)


def test_a_server_that_is_no_openai_api_is_named_so(llm: OpenAICompatibleLLM,
                                                    server: OpenAIServer) -> None:
    page = "<html><body>Welcome to nginx!</body></html>"
    server.plan(body=page)
    server.plan(body=page)
    with pytest.raises(ProviderError, match="sent a reply with no text"):
        generate(llm)
    with pytest.raises(ProviderError, match="sent no answer stream; is .* an OpenAI-compatible "
                                            "API"):
        stream(llm)


def test_slow_reply_times_out(llm: OpenAICompatibleLLM, server: OpenAIServer) -> None:
    server.plan(delay=3.0)
    with pytest.raises(ProviderError, match=r"did not answer within 0\.5 s\.$"):
        generate(llm, timeout=0.5)


def test_a_stream_that_stalls_mid_answer_ends_at_its_timeout(llm: OpenAICompatibleLLM,
                                                            server: OpenAIServer) -> None:
    server.plan(stall=3.0)
    started = time.perf_counter()
    with pytest.raises(ProviderError, match=r"did not finish its answer within 0\.5 s\.$"):
        stream(llm, timeout=0.5)
    assert time.perf_counter() - started < 0.9


def test_unreachable_server_names_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    llm = OpenAICompatibleLLM("llama3.1:8b", url, api_key="")
    with pytest.raises(ProviderError, match=f"Could not reach the model server at {url}: is it "
                                            "running\\?$"):
        generate(llm)
    with pytest.raises(ProviderError, match="Could not reach"):
        stream(llm)


def test_a_url_with_credentials_never_shows_them(server: OpenAIServer) -> None:
    url = server.base_url.replace("http://", "http://user:hunter2@")
    server.plan(status=500)
    with pytest.raises(ProviderError) as error:
        generate(OpenAICompatibleLLM("llama3.1:8b", url, api_key=""))
    assert "hunter2" not in str(error.value) and server.base_url in str(error.value)


def test_thinking_is_left_out_of_the_answer(llm: OpenAICompatibleLLM,
                                            server: OpenAIServer) -> None:
    server.plan(text="<think>\nThe user asks about PID.\n</think>\n\nIt removes offset [S1].")
    server.plan(text="<think> The user asks about PID. </think> It removes offset [S1].")
    assert generate(llm) == "It removes offset [S1]."
    assert "".join(stream(llm)) == "It removes offset [S1]."
    assert strip_thinking("a <think>b", False) == (True, "a ")
    assert strip_thinking("c</think> d", True) == (False, "d")


@pytest.mark.parametrize(("settings", "message"), [
    ({"RAG_LLM_BASE_URL": "", "RAG_LLM_MODEL": "llama3"}, "need its URL: set RAG_LLM_BASE_URL"),
    ({"RAG_LLM_BASE_URL": "localhost:11434/v1", "RAG_LLM_MODEL": "llama3"},
     "must start with http:// or https://"),
    ({"RAG_LLM_BASE_URL": "http://localhost:11434/v1"}, "need a model name: set RAG_LLM_MODEL"),
    ({"RAG_LLM_BASE_URL": "https://api.openai.com/v1", "RAG_LLM_MODEL": "gpt-5"},
     "OpenAI's API needs OPENAI_API_KEY"),
])
def test_missing_or_wrong_settings_are_config_errors(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, settings: dict[str, str],
        message: str) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setattr(rag.config, "PROJECT_ROOT", tmp_path)  # no .streamlit/secrets.toml
    empty = tmp_path / "settings.toml"
    empty.write_text("")
    loaded = load_settings(settings_file=empty, env={"RAG_LLM": "openai", **settings})
    with pytest.raises(ConfigError, match=message):
        get_llm(loaded)


def test_settings_file_environment_and_secrets_reach_the_server(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, server: OpenAIServer) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(rag.config, "PROJECT_ROOT", tmp_path)
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text('OPENAI_API_KEY = "from-secrets"\n')
    file = tmp_path / "settings.toml"
    file.write_text(f'[answer]\nllm = "openai"\nmodel = "claude-sonnet-4-6"\n\n'
                    f'[answer.openai]\nbase_url = "{server.base_url}"\nmodel = "qwen3:4b"\n')
    from_file = load_settings(settings_file=file, env={})
    assert (from_file.llm, from_file.answer_model) == ("openai", "qwen3:4b")
    assert from_file.llm_model == "claude-sonnet-4-6"  # Claude's own stays apart
    generate(get_llm(from_file))
    request = server.chat_requests[-1]
    assert request.body["model"] == "qwen3:4b"
    assert request.headers["authorization"] == "Bearer from-secrets"
    # the environment names the model of the answerer in use; a flag picks the answerer
    from_env = load_settings(settings_file=file, env={"RAG_LLM_MODEL": "phi4"})
    assert (from_env.openai_model, from_env.llm_model) == ("phi4", "claude-sonnet-4-6")
    flagged = load_settings(settings_file=file, env={"RAG_LLM_MODEL": "claude-x"},
                            llm="anthropic")
    assert (flagged.llm_model, flagged.openai_model) == ("claude-x", "qwen3:4b")
    assert from_file.snapshot()["llm_base_url"] == server.base_url


def test_the_settings_file_checks_the_server_table(tmp_path: Path) -> None:
    file = tmp_path / "settings.toml"
    file.write_text('[answer.openai]\nbase_url = 11434\n')
    with pytest.raises(ConfigError, match=r"\[answer.openai\] base_url must be text in quotes, "
                                          r"not 11434\."):
        load_settings(settings_file=file, env={})


def test_an_unknown_answerer_lists_the_registry(settings_for) -> None:
    with pytest.raises(ConfigError) as error:
        get_llm(settings_for(llm="ollama"))
    assert str(error.value) == ("Unknown answerer 'ollama'; choose one of "
                                f"{', '.join(sorted(LLMS))}.")
    assert "openai" in LLMS


def test_importing_the_module_does_not_import_openai() -> None:
    code = "import sys, rag.providers.openai_llm; print('openai' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=rag.config.PROJECT_ROOT, check=True)
    assert result.stdout.strip() == "False"


def test_missing_package_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch,
                                               server: OpenAIServer) -> None:
    llm = OpenAICompatibleLLM("llama3.1:8b", server.base_url, api_key="")
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` raise
    with pytest.raises(ProviderError, match="pip install openai"):
        generate(llm)
    with pytest.raises(ProviderError, match="pip install openai"):
        stream(llm)
