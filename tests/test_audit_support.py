"""Responses built straight from rag.types for the audit tests (no pipeline), and a recorder
script the SIGKILL test runs in a subprocess: `python tests/test_audit_support.py DB COUNT`."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from rag.retrieval.hybrid import CandidatePool, rank_candidates
from rag.types import Chunk, Citation, Confidence, Draft, Response, RetrievalSettings, Verdict

SETTINGS = {"w_dense": 0.85, "w_bm25": 0.15, "threshold": 0.6, "top_k": 5, "candidate_pool": 50,
            "embedder": "local", "llm": "extractive", "llm_model": "", "guardrail_mode": "hybrid",
            "book": "sample", "book_hash": "abc123"}


def make_chunk(i: int, chapter: str = "ch1", section: str | None = None) -> Chunk:
    return Chunk(chunk_id=f"c{i}", text=f"chunk text {i}", module_id="m1", chapter_id=chapter,
                 section_id=section or f"s{i}", section_title=f"Section {i}",
                 chapter_title="Chapter", heading_path=("Chapter", f"Section {i}"), stable=True,
                 page=i, ordinal=0, token_count=10)


def make_retrieval(question: str, n_candidates: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    chunks = tuple(make_chunk(i) for i in range(n_candidates))
    pool = CandidatePool(query=question, chunks=chunks,
                         dense=rng.uniform(0.3, 0.95, n_candidates).astype(np.float32),
                         bm25_raw=rng.uniform(0, 8, n_candidates).astype(np.float32),
                         bm25_max=8.0)
    return rank_candidates(pool, RetrievalSettings())


def make_citation(hit, marker: str = "S1") -> Citation:
    c = hit.chunk
    return Citation(marker=marker, text=f"[Source: {c.section_title}]", url="", chunk_id=c.chunk_id,
                    module_id=c.module_id, chapter_id=c.chapter_id, section_id=c.section_id,
                    section_title=c.section_title, page=c.page, excerpt=c.text,
                    confidence=hit.blended, stable=True)


def make_response(question: str = "What is a blended score?", *, status: str = "success",
                  answer: str = "It mixes dense and BM25 scores [S1].", score: float = 0.82,
                  timestamp: datetime | str | None = None, mode: str = "full-book",
                  reason_codes: tuple[str, ...] = (), provider: str = "extractive",
                  prompt: str = "Answer from the excerpts.", raw: str = "raw model text",
                  latency: tuple[float, float, float] = (40.0, 60.0, 100.0),
                  n_candidates: int = 8, seed: int = 0, cite: int = 1) -> Response:
    retrieval = make_retrieval(question, n_candidates, seed)
    level = "high" if score > 0.85 else "medium" if score >= 0.7 else "low"
    stamp = timestamp.isoformat() if isinstance(timestamp, datetime) else timestamp
    meta = {"query_id": f"q-{seed}", "timestamp": stamp or datetime.now(UTC).isoformat(),
            "question": question, "mode": mode, "mode_used": mode, "fallback_reason": None,
            "retrieval_query": question, "chunks_retrieved": len(retrieval.hits),
            "chunks_used": cite, "retrieval_latency_ms": latency[0],
            "synthesis_latency_ms": latency[1], "total_latency_ms": latency[2],
            "latency_ms": {"retrieval": latency[0], "synthesis": latency[1], "total": latency[2]},
            "llm_provider": provider, "llm_model": f"{provider}-model", "notices": ["a notice"]}
    verdicts = tuple(Verdict("confidence", code, "override", f"because {code}")
                     for code in reason_codes)
    return Response(
        answer=answer, citations=tuple(make_citation(h, f"S{i + 1}")
                                       for i, h in enumerate(retrieval.hits[:cite])),
        metadata=meta, validation={"guardrail_actions": list(reason_codes)},
        confidence=Confidence(retrieval=retrieval.best_score, generation=0.8, score=score,
                              level=level),
        status=status, retrieval=retrieval,
        draft=Draft(text=answer, markers=("S1",), generation_confidence=None, provider=provider,
                    model=f"{provider}-model", prompt=prompt, raw_response=raw),
        verdicts=verdicts, settings=dict(SETTINGS))


def make_error_response(message: str = "The question is empty; type a question.",
                        timestamp: str | None = None) -> Response:
    """What input validation returns: no retrieval, no draft, hardly any metadata."""
    meta = {"question": "", **({"timestamp": timestamp} if timestamp else {})}
    return Response(answer="", citations=(), metadata=meta, validation={},
                    confidence=Confidence(0.0, 0.0, 0.0, "low"), status="error",
                    error_message=message, error_stage="validate")


def record_forever(db: Path, count: int) -> None:
    """Record and print each returned log_id at once; the test SIGKILLs us mid-run."""
    from rag.audit.store import AuditStore

    store = AuditStore(db, flush_interval=0.02, batch_size=7)
    for i in range(count):
        log_id = store.record(make_response(f"question {i}", seed=i))
        print(log_id, flush=True)
    store.close()


if __name__ == "__main__":
    record_forever(Path(sys.argv[1]), int(sys.argv[2]))
