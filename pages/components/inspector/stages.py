"""The inspector's controls for the stages beyond dense + BM25: composite signals (term match,
authority, recency) and the re-ranking stage, each defaulting to the active settings."""

from __future__ import annotations

import streamlit as st

from rag.answer.query_types import TYPE_LABELS, classify
from rag.config import Settings, get_secret
from rag.retrieval.rerank import RERANKERS
from rag.retrieval.signals import book_signals

RERANK_LABELS = {"off": "Off", "offline": "Offline (best unit of the section)",
                 "cohere": "Cohere rerank"}


def stage_defaults(s: Settings) -> dict[str, float | int | str]:
    return {"insp_terms": s.w_terms, "insp_authority": s.w_authority,
            "insp_recency": s.w_recency, "insp_rerank": s.rerank,
            "insp_rerank_w": s.rerank_weight, "insp_rerank_depth": s.rerank_depth}


def stage_controls(s: Settings, index) -> dict[str, float | int | str]:
    """Sliders and a re-ranker choice in an expander; returns RetrievalSettings fields."""
    authority, recency = book_signals(index)
    has = {"authority": bool(authority.any()), "recency": bool(recency.any())}
    with st.expander("Composite signals and re-ranking", icon=":material/tune:"):
        cols = st.columns(3, gap="medium")
        with cols[0]:
            terms = st.slider("Term match weight", 0.0, 0.9, step=0.05, key="insp_terms",
                              persist_state="session",
                              help="Share of the question's terms (IDF-weighted) in the chunk. "
                                   "Blended = (1 − signal weights) × hybrid + Σ weight × signal.")
        with cols[1]:
            authority_w = st.slider("Authority weight", 0.0, 0.9, step=0.05,
                                    key="insp_authority", persist_state="session",
                                    disabled=not has["authority"],
                                    help="Frontmatter `authority` (0–1)." + (
                                        "" if has["authority"] else
                                        " No chapter of this book sets it."))
        with cols[2]:
            recency_w = st.slider("Recency weight", 0.0, 0.9, step=0.05, key="insp_recency",
                                  persist_state="session", disabled=not has["recency"],
                                  help="Frontmatter `last_updated`, newest = 1." + (
                                      "" if has["recency"] else
                                      " No chapter of this book sets it."))
        total = terms + authority_w + recency_w
        if total > 0.9:
            st.warning(f"Signal weights add up to {total:.2f}; at most 0.90 is allowed, so they "
                       "are scaled down to 0.90 for this ranking.")
            scale = 0.9 / total
            terms, authority_w, recency_w = terms * scale, authority_w * scale, recency_w * scale
        cols = st.columns(3, gap="medium")
        options = [r for r in RERANKERS if r != "cohere" or get_secret("COHERE_API_KEY")]
        if st.session_state.get("insp_rerank") not in options:
            st.session_state["insp_rerank"] = "off"
        with cols[0]:
            reranker = st.selectbox("Re-ranker", options, key="insp_rerank",
                                    format_func=RERANK_LABELS.get, persist_state="session",
                                    help="Re-orders the best passing candidates by "
                                         "(1 − weight) × blended + weight × re-rank score. "
                                         "Cohere needs COHERE_API_KEY.")
        with cols[1]:
            weight = st.slider("Re-rank weight", 0.0, 1.0, step=0.05, key="insp_rerank_w",
                               persist_state="session", disabled=reranker == "off")
        with cols[2]:
            depth = st.slider("Re-rank depth", 1, 50, key="insp_rerank_depth",
                              persist_state="session", disabled=reranker == "off",
                              help="How many of the best passing candidates are re-scored.")
    return {"w_terms": round(terms, 4), "w_authority": round(authority_w, 4),
            "w_recency": round(recency_w, 4), "rerank": reranker, "rerank_weight": weight,
            "rerank_depth": depth, "rerank_model": s.rerank_model}


def type_caption(s: Settings, question: str) -> str:
    """What type the rules give the question, and whether it has a point of its own."""
    kind = classify(question)
    own = s.type_settings.get(kind)
    where = (f"its own point (dense {own.get('w_dense', s.w_dense):.2f}, threshold "
             f"{own.get('threshold', s.threshold):.2f}) is the default" if own
             else "it uses the single point")
    return f"Question type: **{TYPE_LABELS[kind]}** (rules) — {where}."
