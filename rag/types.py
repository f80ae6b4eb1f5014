"""Frozen dataclasses passed between stages. Nothing here does I/O."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rag.notices import Notice

MODES = ("full-book", "selection", "selection+book")
MODE_NAMES = {"full-book": "Full book", "selection": "Selected text",  # what a user picks
              "selection+book": "Selected text + book"}
MODE_LABELS = {"full-book": "Searched full book", "selection": "Answered from selected text",
               "selection+book": "Answered from selected text + book"}  # what was done


@dataclass(frozen=True)
class Section:
    """One heading's worth of text, with the stable IDs a URL is built from."""

    module_id: str
    chapter_id: str
    section_id: str  # "" = the chapter's text before its first heading
    title: str
    chapter_title: str
    heading_path: tuple[str, ...]
    stable: bool  # False when section_id is a generated slug, not an explicit {#anchor}
    text: str
    page: int | None
    source_path: str  # relative to the book folder
    has_code: bool = False
    page_end: int | None = None  # a PDF section's last page (page is its first); None: unknown
    authority: float | None = None  # chapter frontmatter `authority` (0-1), a composite signal
    last_updated: str | None = None  # chapter frontmatter `last_updated` (ISO date)

    @property
    def key(self) -> str:
        return f"{self.module_id}/{self.chapter_id}#{self.section_id}"


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    text: str
    module_id: str
    chapter_id: str
    section_id: str
    section_title: str
    chapter_title: str
    heading_path: tuple[str, ...]
    stable: bool
    page: int | None
    ordinal: int
    token_count: int
    has_code: bool = False
    source: str = "book"  # "book" or "selection"
    source_path: str = ""
    page_end: int | None = None  # the last page the chunk's text is on (PDF books)
    authority: float | None = None  # from its chapter's frontmatter (see Section)
    last_updated: str | None = None

    @property
    def section_key(self) -> str:
        return f"{self.module_id}/{self.chapter_id}#{self.section_id}"

    @property
    def section_ref(self) -> str:
        """The `chapter_id#section_id` form used by question sets."""
        return f"{self.chapter_id}#{self.section_id}"


# The names settings may use for the retrieval stages (checked in rag.config.check).
RERANKERS = ("off", "offline", "cohere")
QUERY_TYPES = ("factual", "conceptual", "comparison", "procedural", "code", "realtime")
LOCAL_CLIENT = "local"  # the audit's client for questions asked without a key or sign-in
MAX_SIGNALS = 0.9  # the composite signals may take at most this share of the blended score


@dataclass(frozen=True)
class RetrievalSettings:
    w_dense: float = 0.85
    threshold: float = 0.60
    top_k: int = 5
    candidate_pool: int = 50
    # Composite signals (each in [0, 1]): blended = (1 - sum of their weights) x hybrid + sum of
    # weight x signal, where hybrid = w_dense x dense + w_bm25 x bm25. All 0: the hybrid alone.
    w_terms: float = 0.0  # share of the question's terms (IDF-weighted) in the chunk
    w_authority: float = 0.0  # frontmatter `authority`
    w_recency: float = 0.0  # frontmatter `last_updated`, newest in the book = 1
    # Re-ranking of the best passing candidates: "off", "offline" or "cohere"; the order is
    # (1 - rerank_weight) x blended + rerank_weight x re-rank score over the top rerank_depth.
    rerank: str = "off"
    rerank_weight: float = 0.5
    rerank_depth: int = 20
    rerank_model: str = "rerank-v3.5"  # Cohere's model, when rerank = "cohere"

    @property
    def w_bm25(self) -> float:
        return round(1.0 - self.w_dense, 10)

    @property
    def signal_weights(self) -> dict[str, float]:
        """The composite signals that count (weight > 0), by name."""
        weights = {"terms": self.w_terms, "authority": self.w_authority,
                   "recency": self.w_recency}
        return {name: w for name, w in weights.items() if w > 0}


@dataclass(frozen=True)
class Hit:
    """A candidate chunk with every score component, so any page can explain its ranking."""

    chunk: Chunk
    dense: float
    bm25_raw: float
    bm25: float
    blended: float
    rank: int  # 1-based rank by blended score among all candidates
    passed: bool  # blended >= threshold
    selected: bool  # in the final top-k
    reason: str = ""  # why not selected: below_threshold | duplicate_section | beyond_top_k
    terms: float = 0.0  # composite signals, each in [0, 1] (see RetrievalSettings)
    authority: float = 0.0
    recency: float = 0.0
    part: float = 0.0  # in the numbered part the question names +1, in another -1 (retrieval.parts)
    rerank: float | None = None  # the re-ranker's score; None: not re-ranked
    rank_before: int | None = None  # rank by blended score before re-ranking
    moved: str = ""  # "in": re-ranking brought it into the top-k, "out": pushed it out

    def to_dict(self, with_text: bool = True) -> dict[str, Any]:
        c = self.chunk
        out = {
            "chunk_id": c.chunk_id, "module_id": c.module_id, "chapter_id": c.chapter_id,
            "section_id": c.section_id, "section_title": c.section_title,
            "chapter_title": c.chapter_title, "stable": c.stable,
            "page": c.page, "source": c.source, "dense": self.dense, "bm25_raw": self.bm25_raw,
            "bm25": self.bm25, "blended": self.blended, "passed": self.passed,
            "selected": self.selected, "rank": self.rank, "reason": self.reason,
            "terms": self.terms, "authority": self.authority, "recency": self.recency,
            "part": self.part, "rerank": self.rerank, "rank_before": self.rank_before,
            "moved": self.moved,
        }
        if with_text:
            out["text"] = c.text
        return out


@dataclass(frozen=True)
class Retrieval:
    query: str
    settings: RetrievalSettings
    candidates: tuple[Hit, ...]  # sorted by blended score, best first
    hits: tuple[Hit, ...]  # the selected ones, best first
    notices: tuple[Notice, ...] = ()
    latency_ms: dict[str, float] = field(default_factory=dict)
    bm25_max: float = 0.0  # the book-wide BM25 maximum the bm25 components were divided by

    @property
    def best_score(self) -> float:
        """The best blended score (the first candidate's, unless re-ranking reordered them)."""
        return max((h.blended for h in self.candidates), default=0.0)


@dataclass(frozen=True)
class Draft:
    """What synthesis produced, before citations and guardrails."""

    text: str
    markers: tuple[str, ...]  # markers the text uses, e.g. ("S1", "S3")
    generation_confidence: float | None  # the model's stated confidence, None when absent
    provider: str
    model: str
    prompt: str = ""
    raw_response: str = ""
    quotes: tuple[str, ...] = ()  # book sentences the answer used verbatim (extractive answers)
    claims: tuple = ()  # rag.answer.claims.ClaimCheck per claim of a cited (Claude) answer
    sources: tuple[Hit, ...] = ()  # what markers S1, S2, ... name; empty: the retrieval's hits
    supports: tuple[float, ...] = ()  # per quote: how well it alone supports the question
    runner_up: float | None = None  # extractive: the best unit not ranked first, its probability
    # extractive: the share of the evidence units' summed probability that the answer leaves out
    unquoted: float | None = None
    # extractive: the share of the question's terms, weighted by rarity, that the quotes contain
    coverage: float | None = None
    # extractive: the book's own question (rag.book.quiz) that brought the leading unit closer to
    # the reader's than its own text did, or "" when none did
    asked: str | None = None
    # extractive: the units that scored next and are not quoted, best first, as (text, index of
    # the source in `sources`, probability): shown under the answer as more from the book
    more: tuple[tuple[str, int, float], ...] = ()
    # extractive refusal: the quantities the question asks a value of that the units it would
    # have quoted do not state, by name ("mass (kg, g, lb)"; rag.answer.quantity)
    unstated: tuple[str, ...] = ()
    # extractive: the rule that chose other quotes than the likeliest units would be, in words
    # ("the book's definition of "Isaac ROS""), or "" when none did
    led_by: str = ""
    # extractive: per quote, whether it is a short section read whole (rag.answer.passages)
    # rather than one unit; its probability is that of the chosen unit it stands for
    whole: tuple[bool, ...] = ()
    # extractive: per quote, whether it is read around the quotes (a unit next to them in the
    # lead's section, filling the word budget: rag.answer.window) rather than chosen; the
    # confidence counts the others
    around: tuple[bool, ...] = ()
    # generation_confidence is already the probability that the answer is right (extractive,
    # rag.answer.correctness): the confidence score is that, not a blend with retrieval
    calibrated: bool = False
    # a "Which chapter covers X?" answer (rag.answer.navigate): the sections it names, by index
    # into `sources`; its sentences are Folio's own, each naming sections with their markers
    places: tuple[int, ...] = ()


@dataclass(frozen=True)
class Citation:
    marker: str
    text: str  # display form: [Source: Title (Page X) - "excerpt"]
    url: str
    chunk_id: str
    module_id: str
    chapter_id: str
    section_id: str
    section_title: str
    page: int | None
    excerpt: str
    confidence: float  # the cited chunk's blended score
    stable: bool
    page_end: int | None = None  # the last page of a PDF excerpt (page is its first)
    chapter_title: str = ""  # "" in an audit row written before citations kept it


@dataclass(frozen=True)
class Verdict:
    guardrail: str  # capability | content | confidence | citation
    reason_code: str
    action: str  # override | warn | flag
    message: str


@dataclass(frozen=True)
class Confidence:
    retrieval: float
    generation: float
    score: float
    level: str  # high | medium | low


@dataclass(frozen=True)
class Response:
    answer: str
    citations: tuple[Citation, ...]
    metadata: dict[str, Any]
    validation: dict[str, Any]
    confidence: Confidence
    status: str  # success | partial | refused | error
    error_message: str = ""
    error_stage: str = ""
    retrieval: Retrieval | None = None
    draft: Draft | None = None
    verdicts: tuple[Verdict, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def reason_codes(self) -> tuple[str, ...]:
        return tuple(v.reason_code for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        """The output contract of DESIGN.md, JSON-ready."""
        return {
            "answer": self.answer,
            "citations": [asdict(c) for c in self.citations],
            "metadata": self.metadata,
            "validation": self.validation,
            "confidence": asdict(self.confidence),
            "status": self.status,
            "error_message": self.error_message,
            "error_stage": self.error_stage,
            "hits": [h.to_dict(with_text=False) for h in self.retrieval.hits]
            if self.retrieval else [],
        }
