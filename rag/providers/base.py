"""The two provider interfaces: embedders and LLMs. Batching lives here, backends stay small."""

from __future__ import annotations

import queue
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

# When the network calls of the current stage must have given up (time.monotonic()); None: no
# limit but each provider's own timeout. A context variable, so it reaches the embedder through
# retrieval code that knows nothing of budgets, and stays with the thread that set it.
_DEADLINE: ContextVar[float | None] = ContextVar("folio_network_deadline", default=None)


@contextmanager
def network_deadline(seconds: float) -> Iterator[None]:
    """Network calls made inside give up within `seconds` (or an earlier enclosing limit)."""
    deadline = time.monotonic() + max(seconds, 0.0)
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def seconds_left() -> float | None:
    """Time left before the current network deadline, or None when there is none."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


def within_deadline(timeout: float) -> float:
    """The caller's timeout, cut so the call gives up by the stage's network deadline (then the
    pipeline still has time to answer extractively instead of timing out)."""
    left = seconds_left()
    return timeout if left is None else max(min(timeout, left), 0.05)


T = TypeVar("T")
_END = object()


def bounded_stream(make: Callable[[], Iterator[T]], seconds: float) -> Iterator[T]:
    """The items of make()'s iterator, read on a daemon thread, ending with TimeoutError once
    `seconds` have passed: a socket's read timeout restarts with every byte, so a server that
    trickles tokens or stalls between them would otherwise hold the caller for as long as it
    likes. The reader stops at its next item once the caller has stopped listening."""
    items: queue.Queue = queue.Queue()
    gone = threading.Event()

    def read() -> None:
        try:
            for item in make():
                items.put(item)
                if gone.is_set():
                    return
            items.put(_END)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread as-is
            items.put(e)

    threading.Thread(target=read, name="folio-llm-stream", daemon=True).start()
    deadline = time.monotonic() + seconds
    try:
        while True:
            try:
                item = items.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise TimeoutError(f"no complete reply within {seconds:.3g} s") from None
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        gone.set()


class Embedder(ABC):
    """Turns text into unit-length float32 vectors."""

    name: str = ""
    model_id: str = ""
    max_tokens: int = 256
    dim: int = 0
    batch_size: int = 64

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens in the embedder's own tokenizer, special tokens excluded."""

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return [self.count_tokens(t) for t in texts]

    @abstractmethod
    def _embed_batch(self, texts: list[str], input_type: str) -> np.ndarray:
        """Embed one batch; input_type is "document" or "query"."""

    def embed_documents(self, texts: list[str], progress=None) -> np.ndarray:
        out = []
        for start in range(0, len(texts), self.batch_size):
            out.append(self._embed_batch(texts[start:start + self.batch_size], "document"))
            if progress is not None:
                progress(min(start + self.batch_size, len(texts)), len(texts))
        if not out:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize(np.vstack(out))

    def embed_query(self, text: str) -> np.ndarray:
        """The question's vector for retrieval (may be a faster, close approximation)."""
        return normalize(self._embed_batch([text], "query"))[0]

    def embed_query_exact(self, text: str) -> np.ndarray:
        """The question's vector in the same space as embed_documents', exactly: what the
        answerer compares with the book's sentence vectors."""
        return self.embed_query(text)

    def query_is_exact(self) -> bool:
        """Whether embed_query already is embed_query_exact (no approximate copy answers
        retrieval's questions), so one vector serves both."""
        return True


def normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


@dataclass(frozen=True)
class Message:
    role: str  # "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Document:
    """A text the model may cite; citation offsets index into `text`."""

    title: str
    text: str


@dataclass(frozen=True)
class CitedSpan:
    """Where a reply block says its words come from: documents[document_index].text[start:end]."""

    document_index: int  # 0-based, in the order the documents were sent
    start: int
    end: int
    cited_text: str  # the text the provider says it cited, as it reported it


@dataclass(frozen=True)
class ReplyBlock:
    """One stretch of a cited reply and the spans it cites (none for connecting prose)."""

    text: str
    spans: tuple[CitedSpan, ...] = ()


class LLM(ABC):
    """A chat model. The system prompt and the messages are kept apart on purpose.

    native_citations: the provider cites documents itself (Claude's citations feature), through
    generate_cited and stream_cited; without it, rag.answer.llm sends the excerpts as labelled
    text and reads the labels the model writes."""

    name: str = ""
    model: str = ""
    native_citations: bool = False

    @abstractmethod
    def generate(self, system: str, messages: list[Message], max_tokens: int,
                 timeout: float) -> str:
        """The whole reply text."""

    @abstractmethod
    def stream(self, system: str, messages: list[Message], max_tokens: int,
               timeout: float) -> Iterator[str]:
        """Text deltas as they arrive."""

    def generate_cited(self, system: str, messages: list[Message], documents: list[Document],
                       max_tokens: int, timeout: float) -> list[ReplyBlock]:
        """The reply as blocks citing `documents`, which go with the last (user) message
        (providers with native_citations only)."""
        raise NotImplementedError(f"{self.name} has no citations feature")

    def stream_cited(self, system: str, messages: list[Message], documents: list[Document],
                     max_tokens: int, timeout: float) -> Iterator[str | ReplyBlock]:
        """Text deltas as they arrive, and each block once it is complete (providers with
        native_citations only)."""
        raise NotImplementedError(f"{self.name} has no citations feature")


def as_messages(history: Sequence[Message | dict]) -> list[Message]:
    """A conversation's user and assistant turns with text, as Messages (dicts accepted)."""
    out = []
    for m in history:
        role, content = (m.role, m.content) if isinstance(m, Message) else \
            (str(m.get("role", "")), str(m.get("content", "")))
        if role in ("user", "assistant") and content.strip():
            out.append(Message(role, content))
    return out
