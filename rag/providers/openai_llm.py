"""Any OpenAI-compatible chat model (Ollama, vLLM, llama.cpp's llama-server, LM Studio, OpenAI)
through the openai SDK's Chat Completions, with every SDK failure turned into a ProviderError.

These servers have no citations feature: rag.answer.llm puts the excerpts into the user's turn,
fenced and labelled [S1], [S2], ..., and reads the labels the model writes after its claims
(rag.answer.markers). This class only sends messages and returns text (native_citations False).

A stream is only whole when a choice reports its finish_reason: a server that dies mid-answer can
end the body cleanly, which the SDK reads as the end of the stream. Streams are read on a daemon
thread so that a server that stalls or trickles tokens cannot hold the caller past its timeout.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from rag.config import get_secret
from rag.config.answer import shown_url
from rag.errors import ConfigError, ProviderError
from rag.providers.base import LLM, Message, bounded_stream, within_deadline

OPENAI_HOST = "api.openai.com"
MISSING_SERVER = ("Answers through an OpenAI-compatible server need its URL: set RAG_LLM_BASE_URL "
                  "or [answer.openai] base_url in data/settings.toml (Ollama: "
                  "http://localhost:11434/v1), or use RAG_LLM=extractive for offline answers.")
MISSING_MODEL = ("Answers through an OpenAI-compatible server need a model name: set "
                 "RAG_LLM_MODEL or [answer.openai] model in data/settings.toml (for Ollama, one "
                 "`ollama list` shows, e.g. llama3.1:8b).")
MISSING_KEY = ("OpenAI's API needs OPENAI_API_KEY: set it in the environment or "
               ".streamlit/secrets.toml, or use RAG_LLM=extractive for offline answers.")
# Reasoning models served by Ollama or llama.cpp (DeepSeek-R1, Qwen3) may write their thinking
# into the content between these tags; it is no part of the answer.
THINKING_RE = re.compile(r"<think>.*?(?:</think>\s*|$)", re.DOTALL)


class OpenAICompatibleLLM(LLM):
    name = "openai"
    native_citations = False

    def __init__(self, model: str, base_url: str = "", api_key: str | None = None,
                 max_retries: int = 0) -> None:
        url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").strip().rstrip("/")
        if not url:
            raise ConfigError(MISSING_SERVER)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"The OpenAI-compatible server's URL {url!r} (RAG_LLM_BASE_URL or "
                              "[answer.openai] base_url) must start with http:// or https://, "
                              "e.g. http://localhost:11434/v1.")
        if not model.strip():
            raise ConfigError(MISSING_MODEL)
        self.api_key = get_secret("OPENAI_API_KEY") if api_key is None else api_key
        self.official = parts.hostname == OPENAI_HOST
        if self.official and not self.api_key:
            raise ConfigError(MISSING_KEY)
        self.base_url, self.model, self.max_retries = url, model.strip(), max_retries
        self.server = shown_url(url)  # never a user:password in a message
        self._client: Any = None

    def generate(self, system: str, messages: list[Message], max_tokens: int,
                 timeout: float) -> str:
        errors = sdk_errors()
        timeout = within_deadline(timeout)
        try:
            reply = self.client().chat.completions.create(
                **self._request(system, messages, max_tokens), timeout=timeout)
        except errors as e:
            raise ProviderError(self.describe_error(e, timeout)) from e
        choices = getattr(reply, "choices", None) or []
        content = getattr(getattr(choices[0], "message", None), "content", None) \
            if choices else None
        if not isinstance(content, str):
            raise ProviderError(f"The model server at {self.server} sent a reply with no text "
                                "(is it an OpenAI-compatible chat endpoint?); try again.")
        return THINKING_RE.sub("", content)

    def stream(self, system: str, messages: list[Message], max_tokens: int,
               timeout: float) -> Iterator[str]:
        errors = sdk_errors()
        timeout = within_deadline(timeout)
        started = False
        try:
            for piece in bounded_stream(lambda: self._deltas(system, messages, max_tokens,
                                                             timeout), timeout):
                started = True
                yield piece
        except TimeoutError as e:
            raise ProviderError(f"The model at {self.server} did not finish its answer within "
                                f"{timeout:.3g} s.") from e
        except errors as e:
            raise ProviderError(self.describe_error(e, timeout, started)) from e

    def _deltas(self, system: str, messages: list[Message], max_tokens: int,
                timeout: float) -> Iterator[str]:
        """The reply's text deltas, thinking left out; raises when the stream breaks off."""
        finished = thinking = seen = False
        with self.client().chat.completions.create(
                **self._request(system, messages, max_tokens), stream=True,
                timeout=timeout) as chunks:
            for chunk in chunks:
                seen = True
                for choice in getattr(chunk, "choices", None) or ():
                    finished = finished or bool(choice.finish_reason)
                    text = getattr(choice.delta, "content", None) if choice.delta else None
                    if text:
                        thinking, text = strip_thinking(text, thinking)
                        if text:
                            yield text
        if not finished:
            raise IncompleteStream(seen)

    def client(self) -> Any:
        if self._client is None:
            openai = import_openai()
            self._client = openai.OpenAI(api_key=self.api_key or "unused",
                                         base_url=self.base_url, max_retries=self.max_retries)
        return self._client

    def _request(self, system: str, messages: list[Message], max_tokens: int) -> dict[str, Any]:
        """The system prompt as the first message (Chat Completions has no separate field).
        OpenAI's own newer models refuse max_tokens and any temperature but 1; the servers of
        local models know only max_tokens, and answer more faithfully at temperature 0."""
        turns = [{"role": "system", "content": system},
                 *({"role": m.role, "content": m.content} for m in messages)]
        request: dict[str, Any] = {"model": self.model, "messages": turns}
        if not self.api_key:  # a keyless local server gets no Authorization header at all
            request["extra_headers"] = {"Authorization": import_openai().Omit()}
        if self.official:
            return {**request, "max_completion_tokens": max_tokens}
        return {**request, "max_tokens": max_tokens, "temperature": 0}

    def describe_error(self, error: Exception, timeout: float, started: bool = False) -> str:
        """The sentence a user sees for an SDK exception."""
        import httpx2
        import openai

        where = f"the model server at {self.server}"
        if isinstance(error, IncompleteStream) and not error.args[0]:
            return (f"{where[0].upper()}{where[1:]} sent no answer stream; is {self.base_url} "
                    "an OpenAI-compatible API (it usually ends in /v1)?")
        if isinstance(error, IncompleteStream):
            return f"The answer from {where} broke off before it ended; ask again."
        if isinstance(error, ValueError):  # a reply that is not the JSON it should be
            return f"{where[0].upper()}{where[1:]} sent a reply Folio could not read; try again."
        if isinstance(error, openai.APITimeoutError):
            return f"The model at {self.server} did not answer within {timeout:.3g} s."
        if isinstance(error, openai.APIConnectionError | httpx2.TransportError):
            if isinstance(error.__cause__, httpx2.ConnectError) and not started:
                return f"Could not reach {where}: is it running?"
            return f"The connection to {where} broke mid-answer; ask again."
        if not isinstance(error, openai.APIStatusError):
            detail = getattr(error, "message", "") or str(error)
            return f"The model at {self.server} failed mid-answer ({detail[:200]}); ask again."
        return self.describe_status(error.status_code, error_detail(error))

    def describe_status(self, status: int, detail: str) -> str:
        where = f"The model server at {self.server}"
        if status in (401, 403):
            return (f"{where} rejected the API key ({status}). Set OPENAI_API_KEY in the "
                    "environment or .streamlit/secrets.toml.")
        if status == 429:
            return f"{where} is rate-limiting requests (429); wait a moment and ask again."
        if status == 404 and "model" in detail.lower():
            return (f"{where} does not know the model {self.model!r} (404: {detail}). Set "
                    "RAG_LLM_MODEL or [answer.openai] model to one it serves.")
        if status == 404:
            return (f"{where} has no chat endpoint (404); its OpenAI-compatible URL usually ends "
                    "in /v1, e.g. http://localhost:11434/v1.")
        if status >= 500:
            return f"{where} failed (HTTP {status}: {detail}); try again shortly."
        return f"{where} refused the request (HTTP {status}): {detail}"


class IncompleteStream(Exception):
    """The stream ended without a finish_reason: the server stopped mid-answer (args[0]: any
    chunk came at all)."""


def strip_thinking(text: str, thinking: bool) -> tuple[bool, str]:
    """A delta without the parts inside <think>...</think>; `thinking`: inside one already.
    A tag split across deltas is not recognised (servers send each tag as one token)."""
    out = []
    while text:
        if thinking:
            end = text.find("</think>")
            if end < 0:
                return True, "".join(out)
            text, thinking = text[end + len("</think>"):].lstrip(), False
        else:
            start = text.find("<think>")
            if start < 0:
                out.append(text)
                break
            out.append(text[:start])
            text, thinking = text[start + len("<think>"):], True
    return thinking, "".join(out)


def error_detail(error: Any) -> str:
    """The server's own message (OpenAI, vLLM and Ollama all send {"error": {"message"}})."""
    body = getattr(error, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str):
        message = getattr(error, "message", "") or ""
    return " ".join(message.split())[:200]


def sdk_errors() -> tuple[type[Exception], ...]:
    """What reading a reply can raise: the SDK's errors, raw httpx2 ones from a body being read,
    a stream that breaks off, and ValueError from an event that is not JSON."""
    openai = import_openai()
    import httpx2

    return (openai.OpenAIError, httpx2.TransportError, IncompleteStream, ValueError)


def import_openai() -> Any:
    try:
        import openai
    except ImportError as e:
        raise ProviderError("Answers through an OpenAI-compatible server need the openai "
                            "package: run `pip install openai`, or use RAG_LLM=extractive.") from e
    return openai
