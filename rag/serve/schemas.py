"""What the API answers, as typed models for the OpenAPI schema (and so for /docs and generated
clients). Endpoints return the pipeline's records as they are, without validating each one on
the way out (that costs ~1 ms an answer); tests/serve/test_schemas.py checks that real records
fit these models, so the schema cannot drift from what is sent."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Open(BaseModel):
    """A record that may carry more keys than listed (added later, or for the audit)."""

    model_config = ConfigDict(extra="allow")


class Notice(BaseModel):
    code: str = Field(description="stable code (rag/notices.py)")
    message: str


class Citation(Open):
    marker: str
    text: str = Field(description='display form: [Source: Title (Page X) - "excerpt"]')
    url: str
    chunk_id: str
    module_id: str
    chapter_id: str
    section_id: str
    section_title: str
    page: int | None
    excerpt: str
    confidence: float = Field(description="the cited chunk's blended score")
    stable: bool = Field(description="whether section_id is an explicit anchor")
    page_end: int | None = None
    chapter_title: str = ""
    book_id: str | None = None


class GuardrailAction(BaseModel):
    guardrail: str
    reason_code: str
    action: str
    message: str


class Hit(Open):
    """One candidate chunk with every score component."""

    chunk_id: str
    module_id: str
    chapter_id: str
    section_id: str
    section_title: str
    chapter_title: str
    stable: bool
    page: int | None
    source: str
    dense: float
    bm25_raw: float
    bm25: float
    blended: float
    passed: bool
    selected: bool
    rank: int | None
    reason: str
    terms: float
    text: str | None = None


class AskRecord(Open):
    """One answer: the record the app's history keeps and the audit row stores."""

    query_id: str
    answer_id: str
    timestamp: str
    user_query_text: str
    source_mode: str | None
    mode_used: str | None
    fallback_reason: str | None
    query_type: str | None
    retrieval_query: str
    answer_text: str
    citations: list[Citation]
    cited_sections: list[str]
    confidence_score: float | None
    confidence_level: str
    retrieval_confidence: float | None
    generation_confidence: float | None
    guardrail_actions: list[GuardrailAction]
    reason_codes: list[str]
    notices: list[Notice]
    validation: dict[str, Any]
    status: Literal["success", "partial", "refused", "error"]
    success: bool
    error_stage: str
    error_message: str
    llm_provider: str
    llm_model: str
    chunks_retrieved_count: int | None
    chunks_used_count: int | None
    chunks_returned: list[dict[str, Any]]
    stage_latency_ms: dict[str, float]
    total_latency_ms: float | None
    book_id: str | None = None
    book_title: str | None = None


class SearchSettings(Open):
    w_dense: float
    w_bm25: float
    threshold: float
    top_k: int
    candidate_pool: int
    embedder: str


class SearchResult(BaseModel):
    """The inspector's view of one question."""

    query: str
    query_type: str
    settings: SearchSettings
    candidates: list[Hit]
    hits: list[Hit]
    notices: list[Notice]


class HealthUp(BaseModel):
    """What anyone may know: whether the server answers."""

    status: Literal["ok", "down"]


class BookSummary(BaseModel):
    id: str
    title: str


class EmbedderSummary(BaseModel):
    name: str
    model: str


class Health(HealthUp):
    """With a valid key (or on a loopback server without keys): what it answers from."""

    version: str
    book: BookSummary
    chunks: int
    embedder: EmbedderSummary
    llm: str
    auth: Literal["bearer", "local only"]
    audit: Literal["ok", "spooling", "off"]
    answerers: int = Field(description="answering processes (or threads) running")
    process: int = Field(description="the server process that answered (several with --workers)")


class ApiErrorBody(BaseModel):
    error: str = Field(description="stable code, e.g. unauthorized, rate_limited")
    message: str


class Model(BaseModel):
    id: str = Field(description='"folio/<book id>"')
    object: Literal["model"] = "model"
    owned_by: str
    created: int
    name: str = Field(description="the book's title")


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]


class FolioConfidence(BaseModel):
    score: float | None
    level: str | None


class FolioField(BaseModel):
    """What Folio adds to an OpenAI reply: how the answer came out, and what it cites."""

    query_id: str | None
    status: str | None
    confidence: FolioConfidence
    citations: list[Citation]
    notices: list[Notice]
    reason_codes: list[str]
    error_message: str


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str = Field(description="the answer in Markdown, its sources as links")


class Choice(BaseModel):
    index: int
    finish_reason: Literal["stop"]
    message: AssistantMessage


class ChatCompletion(BaseModel):
    """OpenAI's chat.completion object, plus `folio`. With "stream": true, the same content
    arrives as chat.completion.chunk events, the last carrying `folio`, then `data: [DONE]`."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    folio: FolioField
