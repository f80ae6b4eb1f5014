"""What the endpoints do, in plain synchronous functions run off the event loop: answer one
question through the process's Pipeline (its audit row naming the client), search the book as
the inspector does, and describe the server for /v1/health."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, replace
from typing import Any

import rag
from rag.answer.pipeline import Pipeline
from rag.answer.query_types import classify
from rag.answer.record import to_record
from rag.config import Settings
from rag.index.build import BookIndex
from rag.retrieval.search import search_book, search_record
from rag.serve.models import AskRequest
from rag.serve.stream import Delivery, RequestAudit
from rag.types import Response


@dataclass
class Service:
    """One book, one Pipeline and one audit store per server process."""

    settings: Settings
    index: BookIndex
    pipeline: Pipeline
    audit: Any = None  # rag.audit.store.AuditStore, or None when not logging

    @classmethod
    def build(cls, settings: Settings, index: BookIndex, llm: Any = None,
              audit: Any = None) -> Service:
        return cls(settings, index, Pipeline(index, settings, llm, audit), audit)

    def answer(self, request: AskRequest, client: str, delivery: Delivery | None = None
               ) -> dict[str, Any]:
        """The answer's record (rag.answer.record.to_record, the audit row's shape); with a
        delivery, its text deltas are handed over as they are written."""
        pipeline = copy.copy(self.pipeline)  # shallow: the index, models and store are shared
        pipeline.audit = RequestAudit(self.audit, delivery) if self.audit is not None else None
        response = None
        for item in pipeline.answer_stream(
                request.question, mode=request.mode, selection=request.selection,
                history=[m.model_dump() for m in request.history],
                session_id=request.session_id, stream=delivery is not None, client_id=client):
            if isinstance(item, Response):
                response = item
            elif delivery is not None:
                delivery.put_delta(item)
        assert response is not None  # answer_stream always ends with its Response
        return to_record(response)

    def search(self, question: str, top_k: int | None = None) -> dict[str, Any]:
        """Every candidate with every score component, as `rag search --json` prints them."""
        kind = classify(question)
        chosen = self.settings.retrieval_for(kind)
        if top_k is not None:
            chosen = replace(chosen, top_k=top_k, candidate_pool=max(chosen.candidate_pool,
                                                                     top_k))
        return search_record(search_book(self.index, question, chosen), kind,
                             self.settings.embedder)

    def health(self, auth: str) -> dict[str, Any]:
        s = self.settings
        return {
            "status": "ok", "version": rag.__version__,
            "book": {"id": s.book_id, "title": s.resolved_title},
            "chunks": len(self.index.chunks),
            "embedder": {"name": s.embedder, "model": self.index.embedder.model_id},
            "llm": s.llm, "auth": auth, "process": os.getpid(),  # which worker answered
            # "spooling": answers wait on disk while another process holds the audit file
            "audit": "off" if self.audit is None else
            "spooling" if getattr(self.audit, "unavailable", "") else "ok",
        }
