"""The sidebar every page shows: who is signed in (or that the app is open), the book, the
index, the providers and the active settings."""

from __future__ import annotations

import streamlit as st

from pages.components.common.books import render_book_picker
from pages.components.common.format import words
from pages.components.common.provenance import OTHER_BOOK, threshold_provenance
from pages.components.common.shared import FLASH_KEY, AppContext, run_build
from pages.components.common.signin import render_access
from rag.access.roles import RoleLogins, pages_for
from rag.config.answer import shown_url
from rag.errors import RagError


def _providers(ctx: AppContext) -> list[str]:
    s = ctx.settings
    embedder = ("local MiniLM (offline)" if s.embedder == "local"
                else f"Cohere {s.cohere_model}")
    answers = {"extractive": "extractive, the book's own sentences (offline)",
               "anthropic": f"Claude {s.llm_model}",
               "openai": f"{s.openai_model} at {shown_url(s.openai_base_url)} (OpenAI-compatible)",
               }.get(s.llm, f"{s.llm} {s.answer_model}")
    vectors = f"Qdrant server {s.qdrant_url}" if s.qdrant_url else "embedded Qdrant (local)"
    audit = f"DuckDB {s.audit_db.name}" if ctx.audit is not None else "unavailable"
    if ctx.audit is not None and ctx.audit.unavailable:  # spooling, damaged or failing: which
        audit += f" ({ctx.audit.state().message})"  # (state() lists the spool: only then)
    return [f"Embeddings: {embedder}", f"Answers: {answers}", f"Vectors: {vectors}",
            f"Audit log: {audit}"]


def _index_line(status: dict) -> str:
    if not status.get("exists"):
        return ":red[:material/error:] No index yet"
    built = str(status.get("built_at", "")).replace("T", " ").replace("Z", " UTC")
    if status.get("fresh"):
        return f":green[:material/check_circle:] Index up to date · built {built}"
    return f":orange[:material/warning:] Index stale: {status.get('reason', '')} · built {built}"


def render_sidebar(ctx: AppContext, logins: RoleLogins | None = None,
                   role: str | None = None) -> None:
    s, status = ctx.settings, ctx.status
    with st.sidebar:
        render_book_picker(s, may_add=role is None or "chat" in pages_for(role))
        if logins is not None:
            render_access(logins, role)
        if status:
            chunks = ctx.index.manifest.get("chunks", len(ctx.index.chunks)) if ctx.index \
                else status.get("chunks", 0)
            st.caption(f"{status.get('files', 0)} files · {status.get('sections', 0)} sections · "
                       f"{chunks} chunks")
            unstable = int(status.get("unstable_ids", 0))
            if unstable:
                noun = "section" if unstable == 1 else "sections"
                st.caption(f":orange[:material/link:] {unstable} {noun} with a derived ID: "
                           "links land on them as the book's site makes them, and change when "
                           "a heading is reworded (`rag ingest --report` lists the files).")
            else:
                st.caption(":green[:material/link:] Every section has a stable ID.")
            st.caption(_index_line(status))
        st.markdown("**Retrieval**")
        stages = "".join(f" · {label} {weight:.2f}" for label, weight in (
            ("term match", s.w_terms), ("authority", s.w_authority),
            ("recency", s.w_recency)) if weight > 0)
        stages += f" · re-ranking: {s.rerank}" if s.rerank != "off" else ""
        stages += f" · {len(s.type_settings)} per-type point(s)" if s.type_settings else ""
        st.caption(f"Dense {s.w_dense:.2f} · BM25 {1 - s.w_dense:.2f} · threshold "
                   f"{s.threshold:.2f} · top-k {s.top_k} · pool {s.candidate_pool}{stages}")
        st.caption(f"Threshold from: {words(threshold_provenance(s))}")
        if gate_book := s.tuned_elsewhere("gate"):
            st.caption(f"Confidence gate {OTHER_BOOK.format(book=gate_book)}")
        st.markdown("**Providers**")
        st.caption("  \n".join(_providers(ctx)))
        if flash := st.session_state.pop(FLASH_KEY, None):
            st.success(flash, icon=":material/check:")
        if ctx.audit_error:
            st.warning(f"Audit log unavailable: {ctx.audit_error}", icon=":material/history:")
        _index_actions(ctx)


def _index_actions(ctx: AppContext) -> None:
    stale = bool(ctx.status) and not ctx.status.get("fresh", False)
    if stale and st.button("Update index", type="primary", icon=":material/sync:",
                           help="Re-embed only the sections that changed."):
        _build(ctx, rebuild=False)
    if st.button("Rebuild index", icon=":material/refresh:",
                 help="Re-read the book and re-embed every chunk."):
        _build(ctx, rebuild=True)


def _build(ctx: AppContext, rebuild: bool) -> None:
    try:
        run_build(ctx.settings, rebuild=rebuild, where=st.sidebar)
    except RagError as e:
        st.sidebar.error(str(e))
        return
    st.rerun()
