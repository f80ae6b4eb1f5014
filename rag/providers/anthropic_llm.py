"""Claude through the Anthropic Messages API, with every SDK failure turned into a ProviderError.

The SDK (2.x) sends anthropic-version 2026-10-21, which rejects temperature, top_p and top_k with
a 400 even at their defaults, and has dropped them from its signatures. So no sampling parameter
is part of the LLM interface; answers are steered by the prompt instead.

Cited answers use the Messages API citations feature: each excerpt goes as a plain-text document
block with citations enabled, and the reply's text blocks carry `char_location` citations
(document_index, start/end char index, cited_text); a stream adds them with `citations_delta`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from rag.config import get_secret
from rag.errors import ConfigError, ProviderError
from rag.providers.base import LLM, CitedSpan, Document, Message, ReplyBlock, within_deadline

DEFAULT_MODEL = "claude-sonnet-4-6"
MISSING_KEY = ("Claude answers need ANTHROPIC_API_KEY: set it in the environment or "
               ".streamlit/secrets.toml, or use RAG_LLM=extractive for offline answers.")
# Errors sent inside a 200 stream carry only a type; this is the status the same error has alone.
ERROR_TYPE_STATUS = {
    "invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
    "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
    "api_error": 500, "overloaded_error": 529,
}


class AnthropicLLM(LLM):
    name = "anthropic"
    native_citations = True

    def __init__(self, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 base_url: str | None = None, max_retries: int = 0) -> None:
        self.api_key = api_key or get_secret("ANTHROPIC_API_KEY")
        if not self.api_key:
            raise ConfigError(MISSING_KEY)
        self.model = model
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.max_retries = max_retries
        self._client: Any = None

    def generate(self, system: str, messages: list[Message], max_tokens: int,
                 timeout: float) -> str:
        errors = sdk_errors()
        timeout = within_deadline(timeout)
        request = self._request(system, messages, max_tokens, timeout)
        try:
            reply = self.client().messages.create(**request)
        except errors as e:
            raise ProviderError(self.describe_error(e, timeout)) from e
        return "".join(block.text for block in reply.content if block.type == "text")

    def stream(self, system: str, messages: list[Message], max_tokens: int,
               timeout: float) -> Iterator[str]:
        errors = sdk_errors()
        timeout = within_deadline(timeout)
        request = self._request(system, messages, max_tokens, timeout)
        try:
            with self.client().messages.stream(**request) as reply:
                yield from reply.text_stream
        except errors as e:
            raise ProviderError(self.describe_error(e, timeout)) from e

    def generate_cited(self, system: str, messages: list[Message], documents: list[Document],
                       max_tokens: int, timeout: float) -> list[ReplyBlock]:
        errors = sdk_errors()
        timeout = within_deadline(timeout)
        request = self._request(system, messages, max_tokens, timeout, documents)
        try:
            reply = self.client().messages.create(**request)
        except errors as e:
            raise ProviderError(self.describe_error(e, timeout)) from e
        return [reply_block(block) for block in reply.content if block.type == "text"]

    def stream_cited(self, system: str, messages: list[Message], documents: list[Document],
                     max_tokens: int, timeout: float) -> Iterator[str | ReplyBlock]:
        errors = sdk_errors()
        timeout = within_deadline(timeout)
        request = self._request(system, messages, max_tokens, timeout, documents)
        try:
            with self.client().messages.stream(**request) as reply:
                for event in reply:  # the SDK folds citations_delta events into the block
                    if event.type == "text":
                        yield event.text
                    elif event.type == "content_block_stop" and \
                            event.content_block.type == "text":
                        yield reply_block(event.content_block)
        except errors as e:
            raise ProviderError(self.describe_error(e, timeout)) from e

    def client(self) -> Any:
        if self._client is None:
            anthropic = import_anthropic()
            self._client = anthropic.Anthropic(api_key=self.api_key, base_url=self.base_url,
                                               max_retries=self.max_retries)
        return self._client

    def _request(self, system: str, messages: list[Message], max_tokens: int,
                 timeout: float, documents: list[Document] | None = None) -> dict[str, Any]:
        """No temperature: API version 2026-10-21 answers 400 to it (see the module docstring).
        Documents go before the text of the last message, the user's turn."""
        turns: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in messages]
        if documents and turns:
            last = turns[-1]
            last["content"] = [*map(document_block, documents),
                               {"type": "text", "text": last["content"]}]
        return {"model": self.model, "system": system, "max_tokens": max_tokens,
                "messages": turns, "timeout": timeout}

    def describe_error(self, error: Exception, timeout: float) -> str:
        """The sentence a user sees for an SDK exception."""
        import anthropic
        import httpx2

        if isinstance(error, anthropic.APITimeoutError | httpx2.TimeoutException):
            return f"Claude did not answer within {timeout:.3g} s."
        url = str(self.client().base_url).rstrip("/")
        if isinstance(error, anthropic.APIConnectionError):
            return f"Could not reach Claude at {url}."
        if isinstance(error, httpx2.TransportError):
            return (f"The connection to Claude at {url} broke mid-answer "
                    f"({type(error).__name__}); ask again.")
        if not isinstance(error, anthropic.APIStatusError):
            return f"Claude sent a reply Folio could not read ({error}); try again."
        status = error.status_code
        if status < 400:  # an error event inside a streamed (200) reply
            status = ERROR_TYPE_STATUS.get(str(error.type), 500)
        detail = error.api_message or error.message
        if status == 401:
            return "Claude rejected the API key (401). Check ANTHROPIC_API_KEY."
        if status == 429:
            return "Claude is rate-limiting requests (429); wait a moment and ask again."
        if status >= 500:
            return f"Claude's service failed (HTTP {status}); try again shortly."
        if status == 404:
            return (f"Claude does not know the model {self.model!r} (404); set RAG_LLM_MODEL "
                    "to a current model name.")
        return f"Claude refused the request (HTTP {status}): {detail}"


def document_block(document: Document) -> dict[str, Any]:
    return {"type": "document", "title": document.title, "citations": {"enabled": True},
            "source": {"type": "text", "media_type": "text/plain", "data": document.text}}


def reply_block(block: Any) -> ReplyBlock:
    """A text block of the SDK's reply; only char_location citations point into plain text."""
    spans = tuple(CitedSpan(c.document_index, c.start_char_index, c.end_char_index, c.cited_text)
                  for c in block.citations or () if c.type == "char_location")
    return ReplyBlock(block.text, spans)


def sdk_errors() -> tuple[type[Exception], ...]:
    """What the SDK raises: its own errors, and raw httpx2 ones from a stream being read."""
    anthropic = import_anthropic()
    import httpx2

    return (anthropic.APIError, httpx2.TransportError)


def import_anthropic() -> Any:
    try:
        import anthropic
    except ImportError as e:
        raise ProviderError("Claude answers need the anthropic package: run "
                            "`pip install anthropic`, or use RAG_LLM=extractive.") from e
    return anthropic
