"""The retrieval stages switched on and off at one point, on a labelled set: what term match
and re-ranking each change (hit@k, MRR, nDCG@k, F1, false-answer rate), ranked exactly as the app
ranks (rank_candidates, then the re-ranking stage) from the set's candidate pools."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from rag.answer.guardrails import check_capability
from rag.retrieval.hybrid import CandidatePool, rank_candidates
from rag.retrieval.rerank import rerank
from rag.tuning.metrics import count_relevant, score_ranking
from rag.tuning.questions import Question
from rag.types import RetrievalSettings

TERMS_ON = 0.1  # the term-match weight compared when the point has none


def variants(settings: RetrievalSettings) -> dict[str, RetrievalSettings]:
    """The point as set, then each stage flipped: term match on/off, offline re-ranking on/off."""
    out = {"as set": settings}
    if settings.w_terms > 0:
        out["without term match"] = dataclasses.replace(settings, w_terms=0.0)
    else:
        out[f"with term match {TERMS_ON}"] = dataclasses.replace(settings, w_terms=TERMS_ON)
    if settings.rerank != "off":
        out["without re-ranking"] = dataclasses.replace(settings, rerank="off")
    else:
        out["with offline re-ranking"] = dataclasses.replace(settings, rerank="offline")
    return out


def stage_comparison(index, questions: Sequence[Question], pools: Mapping[str, CandidatePool],
                     settings: RetrievalSettings, sections: Sequence[str]) -> list[dict]:
    """One row per variant, figures over the set (in-scope questions for the ranking ones)."""
    refused = {q.question: check_capability(q.question, "", "") is not None for q in questions}
    rows = []
    for name, s in variants(settings).items():
        scored, answered_in, answered_out, correct = [], 0, 0, 0
        for q in questions:
            pool = pools[q.question]
            hits = rerank(rank_candidates(pool, s), pool, index).hits
            refs = [h.chunk.section_ref for h in hits]
            answered = bool(hits) and not refused[q.question]
            if q.in_scope:
                score = score_ranking(refs, q.expected_sections, s.top_k,
                                      count_relevant(q.expected_sections, sections))
                scored.append(score)
                answered_in += answered
                correct += answered and score["hit"] > 0
            else:
                answered_out += answered
        n_in = max(len(scored), 1)
        n_out = sum(not q.in_scope for q in questions)
        precision = correct / max(answered_in + answered_out, 1)
        recall = correct / n_in
        rows.append({
            "variant": name, "w_terms": s.w_terms, "rerank": s.rerank,
            "hit_at_k": round(float(np.mean([x["hit"] for x in scored] or [0])), 4),
            "mrr": round(float(np.mean([x["rr"] for x in scored] or [0])), 4),
            "ndcg_at_k": round(float(np.mean([x["ndcg"] for x in scored] or [0])), 4),
            "f1": round(2 * precision * recall / (precision + recall), 4)
            if precision + recall else 0.0,
            "false_answer_rate": round(answered_out / n_out, 4) if n_out else None})
    return rows
