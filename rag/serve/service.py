"""What the endpoints do, in plain synchronous functions run off the event loop (in an answering
process, rag.serve.worker, or a thread): answer one question through the process's Pipeline (its
audit row naming the client), search the book as the inspector does; and what the server says
about its book (/v1/health, /v1/models)."""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from rag.answer.pipeline import TIMEOUT_MESSAGE, Pipeline
from rag.answer.query_types import classify
from rag.answer.record import to_record
from rag.answer.response import error_response
from rag.answer.turn import Turn
from rag.config import Settings
from rag.index.build import BookIndex
from rag.retrieval.search import search_book, search_record
from rag.serve.models import AskRequest
from rag.serve.stream import RequestAudit
from rag.types import Response

# What the API's record leaves out: the audit row keeps them (the audit explorer shows them),
# /v1/search shows the candidates. They were 24 of an answer's 32 KB, all encoded, copied
# between processes and sent for every answer (candidate_pool alone 21 KB).
AUDIT_ONLY = ("candidate_pool", "llm_prompt", "llm_response", "answer_evidence")


def api_record(response: Response) -> dict[str, Any]:
    record = to_record(response)
    for key in AUDIT_ONLY:
        record.pop(key, None)
    return record


class TextSink(Protocol):
    """Where a streamed answer's text goes (rag.serve.stream.Delivery, or the worker's pipe)."""

    disconnected: Any  # threading.Event

    def put_delta(self, text: str) -> None: ...

    def put_replace(self, text: str) -> None: ...


@dataclass(frozen=True)
class BookInfo:
    """The served book as /v1/health and /v1/models describe it."""

    book_id: str
    title: str
    chunks: int
    embedder: str
    embedder_model: str
    llm: str
    built_at: str  # when the index was built (ISO), "" when unknown

    @classmethod
    def of(cls, settings: Settings, index: BookIndex) -> BookInfo:
        return cls(settings.book_id, settings.resolved_title, len(index.chunks),
                   settings.embedder, index.embedder.model_id, settings.llm,
                   str(index.manifest.get("built_at", "")))


def finish_stream(sink: TextSink, sent: str, final: str) -> None:
    """The rest of the answer after what was streamed: its caveat or notes as one more delta,
    or, when guardrails replaced the text (a refusal), the whole final text to show instead."""
    if final.startswith(sent):
        if final[len(sent):]:
            sink.put_delta(final[len(sent):])
    else:
        sink.put_replace(final)


@dataclass
class Service:
    """One book, one Pipeline and one audit store per process."""

    settings: Settings
    index: BookIndex
    pipeline: Pipeline
    audit: Any = None  # rag.audit.store.AuditStore, or None when not logging

    @classmethod
    def build(cls, settings: Settings, index: BookIndex, llm: Any = None,
              audit: Any = None) -> Service:
        return cls(settings, index, Pipeline(index, settings, llm, audit), audit)

    @property
    def info(self) -> BookInfo:
        return BookInfo.of(self.settings, self.index)

    @property
    def streams_text(self) -> bool:
        """Whether an LLM writes the answer piece by piece; the offline answer comes whole."""
        return self.pipeline.llm is not None and self.settings.llm != "extractive"

    def answer(self, request: AskRequest, client: str, sink: TextSink | None = None
               ) -> dict[str, Any]:
        """The answer's record (rag.answer.record.to_record, the audit row's shape); with a
        sink, its text as it is written, ending with exactly the record's answer_text."""
        pipeline = copy.copy(self.pipeline)  # shallow: the index, models and store are shared
        pipeline.audit = RequestAudit(self.audit, sink) if self.audit is not None else None
        response, sent = None, []
        for item in pipeline.answer_stream(
                request.question, mode=request.mode, selection=request.selection,
                history=[m.model_dump() for m in request.history],
                session_id=request.session_id, stream=sink is not None, client_id=client):
            if isinstance(item, Response):
                response = item
            elif sink is not None and self.streams_text:
                sink.put_delta(item)
                sent.append(item)
        assert response is not None  # answer_stream always ends with its Response
        if sink is not None:  # an offline draft waits for its guardrails (~5 ms): no refusal
            finish_stream(sink, "".join(sent), response.answer or "")  # after an answer
        return api_record(response)

    def search(self, question: str, top_k: int | None = None) -> dict[str, Any]:
        """Every candidate with every score component, as `rag search --json` prints them."""
        kind = classify(question)
        chosen = self.settings.retrieval_for(kind)
        if top_k is not None:
            chosen = replace(chosen, top_k=top_k, candidate_pool=max(chosen.candidate_pool,
                                                                     top_k))
        return search_record(search_book(self.index, question, chosen), kind,
                             self.settings.embedder)

    def close(self) -> None:
        if self.audit is not None:
            self.audit.close()


def service_for_worker(settings: Settings) -> Service:
    """An answering process's service (rag.serve.worker): the index the server has brought up
    to date, opened read-only, and this process's own audit segment."""
    from rag.audit.store import AuditStore
    from rag.index.load import load_index
    from rag.providers.registry import get_llm

    index, _ = load_index(settings, build=False)
    return Service.build(settings, index, get_llm(settings), AuditStore(settings.audit_db))


def abandoned_record(settings: Settings, request: AskRequest, client: str, over_budget: bool,
                     reason: str, started: float, audit: Any = None) -> dict[str, Any]:
    """The record (and audit row) of a question whose answering process was stopped: over its
    budget, the rejection the pipeline itself gives a question over budget."""
    turn = Turn(question=request.question, settings=settings, started=started)
    meta = {"query_id": str(uuid.uuid4()), "session_id": request.session_id,
            "mode": request.mode, "question": request.question,
            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds")}
    message = TIMEOUT_MESSAGE if over_budget else \
        f"The server could not answer this question ({reason}); ask again."
    response = error_response(turn, meta, "answer", message)
    if audit is not None:
        audit.record(response, session_id=request.session_id, client_id=client)
    return api_record(response)
