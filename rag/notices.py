"""Notices: what happened to a question besides its answer, as a code and a message defined once.

A status or a display style is decided from the code (its kind), never from the message's words,
so rewording a message changes nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Kinds: "fallback" = another mode than asked was used (the answer is still whole); "degraded" =
# a service failed and a weaker path answered (the answer is partial); "audit" = the answer is
# whole but was not logged; "info" = nothing went wrong.
FALLBACK, DEGRADED, AUDIT, INFO = "fallback", "degraded", "audit", "info"

SELECTION_TOO_SHORT = "selection_too_short"
SELECTION_TOO_LONG = "selection_too_long"
SELECTION_STALE = "selection_stale"
SELECTION_MISSING = "selection_missing"
UNKNOWN_MODE = "unknown_mode"
DENSE_UNAVAILABLE = "dense_unavailable"
LLM_FALLBACK = "llm_fallback"
EMBED_RUNTIME_FALLBACK = "embed_runtime_fallback"
RERANK_FAILED = "rerank_failed"
AUDIT_UNAVAILABLE = "audit_unavailable"
CLIENT_DISCONNECTED = "client_disconnected"  # an API client left before the answer ended
READ_AS = "read_as"  # a misspelt word of the question read as meant (rag.answer.spelling)
NOT_ENGLISH = "not_english"  # the question's words are mostly not English (rag.answer.spelling)
UNKNOWN = "unknown"  # a message from a log written before notices had codes

NOTICES: dict[str, tuple[str, str, str]] = {  # code -> (kind, short label, message template)
    SELECTION_TOO_SHORT: (FALLBACK, "selected text under 50 characters",
                          "The selected text is shorter than 50 characters, so the full book "
                          "was searched instead."),
    SELECTION_TOO_LONG: (FALLBACK, "selected text over 20,000 characters",
                         "The selected text is longer than 20,000 characters, so the full book "
                         "was searched instead."),
    SELECTION_STALE: (FALLBACK, "selected text older than 5 minutes",
                      "The selected text is more than 5 minutes old and was cleared; the full "
                      "book was searched instead."),
    SELECTION_MISSING: (FALLBACK, "no text selected",
                        "No text is selected, so the full book was searched instead."),
    UNKNOWN_MODE: (FALLBACK, "unknown mode",
                   "Unknown answer mode; the full book was searched instead."),
    DENSE_UNAVAILABLE: (DEGRADED, "BM25 only",
                        "Dense search unavailable, BM25-only results: {error}"),
    LLM_FALLBACK: (DEGRADED, "extractive fallback",
                   "{error} Answered from the book's own sentences instead."),
    RERANK_FAILED: (FALLBACK, "not re-ranked",
                    "{error} The hybrid order was kept (not re-ranked)."),
    EMBED_RUNTIME_FALLBACK: (FALLBACK, "PyTorch embeddings",
                             "ONNX Runtime could not be used, so the question was embedded through "
                             "PyTorch (same vectors, slower): {error}"),
    AUDIT_UNAVAILABLE: (AUDIT, "not logged", "Audit log: {error}"),
    CLIENT_DISCONNECTED: (INFO, "client disconnected",
                          "The client disconnected before the answer was delivered; it was "
                          "answered and logged in full."),
    READ_AS: (INFO, "slip of the keyboard read", "Read {words}, taken for a slip of the keyboard."),
    NOT_ENGLISH: (INFO, "question not in English",
                  "This question does not look like English. The book is searched and answered "
                  "in English, so ask in English for the best answer."),
    UNKNOWN: (INFO, "notice", "{error}"),
}


@dataclass(frozen=True)
class Notice:
    code: str
    message: str

    @property
    def kind(self) -> str:
        return NOTICES.get(self.code, NOTICES[UNKNOWN])[0]

    @property
    def label(self) -> str:
        return NOTICES.get(self.code, NOTICES[UNKNOWN])[1]

    @property
    def degraded(self) -> bool:
        """A service fell back to a weaker path, so the answer counts as partial."""
        return self.kind == DEGRADED

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def make_notice(code: str, **fields: Any) -> Notice:
    """The notice for `code`, its message filled from `fields` (e.g. error=...)."""
    _, _, template = NOTICES[code]
    return Notice(code, template.format(**fields).strip())


def notice_label(code: str) -> str:
    """The short form of a code, e.g. a fallback reason on a badge."""
    return NOTICES.get(code, (INFO, code, ""))[1]


def notice_from(value: Any) -> Notice:
    """A notice read back from a record: {"code", "message"}, or a bare message from old logs."""
    if isinstance(value, Notice):
        return value
    if isinstance(value, dict):
        code = str(value.get("code") or UNKNOWN)
        return Notice(code if code in NOTICES else UNKNOWN, str(value.get("message") or ""))
    return Notice(UNKNOWN, str(value))
