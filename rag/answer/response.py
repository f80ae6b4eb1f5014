"""Stage 4b: citations, guardrail verdicts and confidence turned into the Response contract."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rag.answer import guardrails as g
from rag.answer.citations import book_section_names, chunk_location, cite, place_name
from rag.answer.claims import unsupported_verdicts
from rag.answer.confidence import GATE_ANSWER, GATE_REFUSE, gate, score_confidence
from rag.answer.context import ContextDecision
from rag.answer.llm import says_not_covered
from rag.answer.turn import Turn
from rag.types import MODE_LABELS, Confidence, Draft, Hit, Response, Retrieval, Verdict

if TYPE_CHECKING:
    from rag.index.build import BookIndex


def apply_guardrail_mode(verdicts: list[Verdict], mode: str) -> list[Verdict]:
    """strict: every violation overrides; permissive: only capability/content override;
    hybrid: hard ones override, soft ones warn."""
    out = []
    for v in verdicts:
        if mode == "strict" and v.action == "warn":
            v = Verdict(v.guardrail, v.reason_code, "override", v.message)
        elif mode == "permissive" and v.action == "override" and v.guardrail == "citation":
            v = Verdict(v.guardrail, v.reason_code, "warn", v.message)
        out.append(v)
    return out


def draft_verdicts(turn: Turn, draft: Draft, cited, confidence: Confidence,
                   nearest: list[str], user_chosen: bool = False) -> list[Verdict]:
    """Verdicts on a draft. `user_chosen`: every excerpt is the user's own pasted passage, whose
    relevance they vouched for, so low confidence caveats the answer instead of refusing it."""
    s = turn.settings
    verdicts: list[Verdict] = []
    not_covered = says_not_covered(draft.text) and not cited.citations
    if not_covered:
        verdicts.append(g.check_content(0.0, 1.0, turn.question, s.resolved_title, nearest,
                                        unstated=draft.unstated))
    else:
        # a cited (Claude) draft had every sentence checked as a claim: an uncited one already
        # has its own verdict, so the marker count of uncited sentences would report it twice
        # (nor a navigation answer's: a "6. Grasping" heading it names splits no sentence)
        uncited = 0 if draft.claims or draft.places else cited.uncited_sentences
        verdicts.extend(g.check_citations(len(cited.citations), uncited, cited.unresolved,
                                          s.guardrail_mode))
        verdicts.extend(unsupported_verdicts(draft.claims))
    # an extractive answer is the book's own words: its "might be" is the book's, not a guess
    hedge = None if draft.provider == "extractive" else g.check_hedges(cited.text, s.hedge_words)
    if hedge:
        verdicts.append(hedge)
    # a draft that says the excerpts do not cover the question is already refused for it: a
    # confidence caveat or refusal on top would tell the reader the same thing twice
    decision = GATE_ANSWER if not_covered else gate(confidence.score, s.gate_answer, s.gate_caveat)
    if decision == GATE_REFUSE and not user_chosen:
        message = g.NOT_COVERED.format(book=s.resolved_title)
        if nearest:
            message += " The nearest sections are: " + "; ".join(nearest) + "."
        verdicts.append(Verdict("confidence", g.CONFIDENCE_LOW, "override", message))
    elif decision != GATE_ANSWER:
        verdicts.append(Verdict("confidence", g.CONFIDENCE_LOW, "warn", g.LOW_CONFIDENCE))
    return apply_guardrail_mode(verdicts, s.guardrail_mode)


def build_response(turn: Turn, decision: ContextDecision, retrieval_query: str,
                   retrieval: Retrieval, draft: Draft | None, verdict: Verdict | None,
                   meta: dict[str, Any], context: dict[str, Any]) -> Response:
    s = turn.settings
    best = max((h.blended for h in retrieval.hits), default=retrieval.best_score)
    confidence = score_confidence(best, draft.generation_confidence if draft else None,
                                  s.level_high, s.level_medium,
                                  calibrated=bool(draft and draft.calibrated))
    names = book_section_names(turn.index)
    nearest = nearest_places(turn.index, retrieval.candidates)
    verdicts: list[Verdict] = [verdict] if verdict else []
    citations: tuple = ()
    answer = ""
    if draft is not None:
        cited = cite(draft.text, draft.sources or retrieval.hits, s.url_template, s.base_url,
                     draft.quotes, retrieval.candidates, names)
        verdicts = draft_verdicts(turn, draft, cited, confidence, nearest, all(
            h.chunk.source == "selection" for h in retrieval.hits))
        citations, answer = cited.citations, cited.text
    overrides = [v for v in verdicts if v.action == "override"]
    if overrides:
        status, answer, citations = "refused", overrides[0].message, ()
    else:
        warnings = [v.message for v in verdicts if v.action == "warn"]
        if warnings:
            answer = answer + "\n\n" + "\n".join(warnings)
        degraded = any(n.degraded for n in turn.notices)  # a weaker path answered
        status = "partial" if warnings or degraded else "success"
    used = {c.chunk_id for c in citations}
    metadata = _metadata(turn, decision, retrieval_query, retrieval, draft, meta, len(used))
    # under an answer, the units that scored next; under a draft that refused, those that came
    # closest (not under an answer the confidence gate refused: its best units are not shown)
    if draft is not None and draft.more and (status != "refused" or not draft.quotes):
        metadata["more_from_book"] = more_from_book(draft, s.url_template, s.base_url, names)
    return Response(
        answer=answer, citations=citations, metadata=metadata,
        validation={
            "boundary_violations": [v.reason_code for v in verdicts if v.action == "override"],
            "confidence_warnings": [v.message for v in verdicts if v.guardrail == "confidence"],
            "guardrail_actions": [asdict(v) for v in verdicts],
            "notices": [n.to_dict() for n in turn.notices],
        },
        confidence=confidence, status=status, retrieval=retrieval, draft=draft,
        verdicts=tuple(verdicts), settings={**s.snapshot(), **context})


def more_from_book(draft: Draft, template: str, base_url: str,
                   names: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The units that scored next under an extractive answer (Draft.more), each with the section
    it is from and that section's link, as a citation names them (not part of the answer)."""
    return [{"text": text, "probability": round(float(probability), 4),
             **chunk_location(draft.sources[source].chunk, template, base_url, names)}
            for text, source, probability in draft.more]


def nearest_places(index: BookIndex | None, candidates: Sequence[Hit], limit: int = 3
                   ) -> list[str]:
    """The book's sections retrieval ranked first, as a refusal names them (place_name)."""
    names = book_section_names(index)
    return list(dict.fromkeys(place_name(h.chunk, names) for h in candidates
                              if h.chunk.source == "book"))[:limit]


def _metadata(turn: Turn, decision: ContextDecision, retrieval_query: str, retrieval: Retrieval,
              draft: Draft | None, meta: dict[str, Any], chunks_used: int) -> dict[str, Any]:
    timings = dict(turn.timings)
    timings["total"] = round(turn.elapsed() * 1000, 2)
    return {
        **meta, "mode_used": decision.mode_used, "fallback_reason": decision.fallback_reason,
        "clear_selection": decision.clear_selection,
        "mode_label": MODE_LABELS[decision.mode_used],
        "retrieval_query": retrieval_query, "chunks_retrieved": len(retrieval.candidates),
        "chunks_used": chunks_used,
        "retrieval_latency_ms": timings.get("retrieval", 0.0),
        "synthesis_latency_ms": timings.get("synthesis", 0.0),
        "total_latency_ms": timings["total"], "latency_ms": timings,
        "retrieval_breakdown_ms": {k: round(v, 2) for k, v in retrieval.latency_ms.items()},
        "llm_provider": draft.provider if draft else turn.settings.llm,
        "llm_model": draft.model if draft else turn.settings.answer_model,
        "notices": [n.to_dict() for n in turn.notices],
    }


def error_response(turn: Turn, meta: dict[str, Any], stage: str, message: str) -> Response:
    timings = dict(turn.timings, total=round(turn.elapsed() * 1000, 2))
    return Response(
        answer="", citations=(),
        metadata={**meta, "mode_used": None, "fallback_reason": None, "retrieval_query": "",
                  "chunks_retrieved": 0, "chunks_used": 0,
                  "retrieval_latency_ms": timings.get("retrieval", 0.0),
                  "synthesis_latency_ms": timings.get("synthesis", 0.0),
                  "total_latency_ms": timings["total"], "latency_ms": timings,
                  "llm_provider": turn.settings.llm, "llm_model": "",
                  "notices": [n.to_dict() for n in turn.notices]},
        validation={"boundary_violations": [], "confidence_warnings": [],
                    "guardrail_actions": [], "notices": [n.to_dict() for n in turn.notices]},
        confidence=Confidence(0.0, 0.0, 0.0, "low"), status="error", error_message=message,
        error_stage=stage, settings=turn.settings.snapshot())
