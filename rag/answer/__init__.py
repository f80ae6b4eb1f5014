"""Stages 1, 3 and 4, answering: which context answers (`context`), a draft from the book's own
sentences (`extractive`) or from Claude (`llm`), stable-ID citations (`citations`), guardrails and
confidence (`guardrails`, `confidence`), the Response (`response`) and its one record shape
(`record`); `pipeline` runs them in order within a time budget."""

from __future__ import annotations

from rag.answer.pipeline import Pipeline
from rag.answer.record import from_record, history_record, to_record

__all__ = [
    "Pipeline", "from_record", "history_record", "to_record"
]
