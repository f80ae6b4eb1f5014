"""Everything the audit log recorded for one question."""

from __future__ import annotations

import streamlit as st

from pages.components.audit.label import label_panel
from pages.components.common.citing import answer_markdown, more_markdown
from pages.components.common.evidence import quoted_units
from pages.components.common.format import badges_markdown, notice_lines
from pages.components.common.shared import link_base_url
from pages.components.common.tables import (
    record_citations_frame,
    record_hits_frame,
    record_verdicts_frame,
    stage_latency_frame,
)


def show_record(record: dict) -> None:
    st.markdown(f"#### {record.get('user_query_text', '')}".replace("$", "\\$"))
    st.markdown(badges_markdown(record))
    provider, model = record.get("llm_provider") or "", record.get("llm_model") or ""
    answerer = provider if model in ("", provider) else f"{provider} {model}"
    stamp = str(record.get("timestamp", ""))[:19]
    book = record.get("book_title") or record.get("book_id") or "unknown book"
    st.caption(f"{stamp} UTC · {book} · answerer {answerer} · session "
               f"`{(record.get('session_id') or '–')[:12]}` · log `{record.get('log_id')}`")
    tabs = st.tabs(["Answer", "Hits", "Citations", "Guardrails", "Prompt", "Raw response",
                    "Settings"])
    with tabs[0]:
        if record.get("status") == "error":
            st.error(f"{record.get('error_stage')}: {record.get('error_message')}")
        citations = record.get("citations") or []
        st.markdown(answer_markdown(record.get("answer_text") or "", citations,
                                    link_base_url()) or "*(empty)*")
        if record.get("retrieval_query") and \
                record["retrieval_query"] != record.get("user_query_text"):
            st.caption(f"Searched for: {record['retrieval_query']}")
        for _, message in notice_lines(record):
            st.caption(f":material/info: {message}")
        evidence = record.get("answer_evidence") or {}
        quoted_units({**record, **evidence})  # the offline answerer's, kept since m006
        if more := evidence.get("answer_more"):
            shown = "**Closest in the book**, shown under the refusal (not an answer)" if \
                record.get("status") == "refused" else \
                "**More from the book**, shown under the answer (not part of it)"
            st.markdown(shown + "\n\n" + more_markdown(more, link_base_url()))
        latency = stage_latency_frame(record)
        if not latency.empty:
            st.dataframe(latency.set_index("stage").T, width="stretch",
                         column_config={c: st.column_config.NumberColumn(c, format="%.1f ms")
                                        for c in latency["stage"]})
    with tabs[1]:
        hits = record_hits_frame(record)
        hits = hits.drop(columns=[c for c in ("terms", "rerank") if hits[c].isna().all()])
        st.dataframe(hits, hide_index=True, width="stretch", column_config={
            "rank": "Rank", "section": "Section", "where": "Section ID", "source": "Source",
            "dense": st.column_config.NumberColumn("Dense", format="%.3f"),
            "bm25_raw": st.column_config.NumberColumn("BM25 raw", format="%.2f"),
            "bm25": st.column_config.NumberColumn("BM25", format="%.3f"),
            "terms": st.column_config.NumberColumn("Term match", format="%.3f"),
            "blended": st.column_config.NumberColumn("Blended", format="%.3f"),
            "rerank": st.column_config.NumberColumn("Re-rank", format="%.3f"),
            "passed": st.column_config.CheckboxColumn("Passed")})
        pool = (record.get("candidate_pool") or {}).get("candidates") or []
        st.caption(f"{record.get('chunks_retrieved_count') or 0} candidates scored, "
                   f"{len(pool)} kept in the log for replay.")
    with tabs[2]:
        st.dataframe(record_citations_frame(record, link_base_url()), hide_index=True,
                     width="stretch",
                     column_config={"marker": "Source", "section": "Section",
                                    "url": st.column_config.LinkColumn("Link"), "page": "Page",
                                    "stable": st.column_config.CheckboxColumn("Stable ID"),
                                    "score": st.column_config.NumberColumn("Score",
                                                                           format="%.3f"),
                                    "excerpt": "Excerpt"})
    with tabs[3]:
        verdicts = record_verdicts_frame(record)
        if verdicts.empty:
            st.caption("No guardrail acted on this answer.")
        else:
            st.dataframe(verdicts, hide_index=True, width="stretch", column_config={
                "guardrail": "Guardrail", "reason": "Reason", "reason_code": "Code",
                "action": "Action", "message": "Message"})
        st.json(record.get("validation") or {}, expanded=False)
    with tabs[4]:
        st.code(record.get("llm_prompt") or "(the extractive answerer uses no prompt)",
                language=None, wrap_lines=True)
    with tabs[5]:
        st.code(record.get("llm_response") or "(empty)", language=None, wrap_lines=True)
    with tabs[6]:
        st.json(record.get("settings") or {})
    label_panel(record)
