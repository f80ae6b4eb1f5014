"""Retrieval inspector: every candidate for a question, its score components and why it was kept
or left out; move a slider and the ranking follows at once (no re-embedding)."""

import streamlit as st

from pages.components.common.format import words
from pages.components.common.shared import app_context, require_pipeline
from pages.components.inspector import view
from pages.components.inspector.stages import type_caption
from rag.errors import RagError
from rag.retrieval.hybrid import rank_candidates
from rag.retrieval.rerank import rerank

ctx = app_context()
require_pipeline(ctx)

st.header("Retrieval inspector", anchor=False)
question = st.text_input("Question", key="inspector_question", max_chars=1000,
                         persist_state="session",
                         placeholder="Type a question to see how every candidate scores")
head, toggle, reset = st.columns([4, 1.4, 1.8], vertical_alignment="center")
with toggle:
    compare = st.toggle("Compare A / B", key="insp_compare", persist_state="session",
                        help="Two weight/threshold settings side by side, rank changes marked.")
with reset:
    st.button("Reset to active settings", on_click=view.reset_controls, args=(ctx.settings,),
              type="tertiary", icon=":material/restart_alt:")
with head:
    st.caption(f"Defaults are the active settings (threshold from: "
               f"{words(ctx.settings.threshold_source or 'built-in default')}).")
chosen = view.controls(ctx, compare)

if not question.strip():
    st.info("Enter a question above. The inspector lists every candidate chunk (top-N by dense "
            "∪ top-N by BM25) with its dense, BM25 and blended scores.", icon=":material/info:")
    st.stop()
try:
    pool = view.pool_for(ctx, question, chosen.a.candidate_pool)
    a = rerank(rank_candidates(pool, chosen.a), pool, ctx.index)
    b = rerank(rank_candidates(pool, chosen.b), pool, ctx.index) if chosen.b else None
except RagError as e:
    st.error(str(e))
    st.stop()
for notice in a.notices:
    st.warning(notice.message)
st.caption(type_caption(ctx.settings, question))

limit = st.session_state.get("insp_chart_all") and len(a.candidates) or 25
if b is not None:
    view.compare_view(a, b, min(limit, 15) if limit == 25 else limit)
else:
    moved = sum(h.moved == "in" for h in a.candidates)
    # the point these numbers were ranked at, named: a slider moved ahead by keys (one rerun
    # per key) never leaves numbers that could be read as the slider's
    st.markdown(f"**At dense {a.settings.w_dense:.2f} · threshold {a.settings.threshold:.2f} · "
                f"top-k {a.settings.top_k}: {len(a.candidates)} candidates** · "
                f"{sum(h.passed for h in a.candidates)} "
                f"pass the threshold · {len(a.hits)} in the final top-k · best blended "
                f"{a.best_score:.3f}" + (f" · re-ranking brought {moved} into the top-k"
                                         if a.settings.rerank != "off" else ""))
    row = view.candidate_table(a, ctx, key="inspector_table")
    chart, reader = st.columns([1, 1], gap="large")
    with chart:
        st.plotly_chart(view.contribution_chart(a, limit), key="chart_single")
    with reader:
        view.chunk_reader(a, row, question)
if len(a.candidates) > 25:
    st.checkbox(f"Chart all {len(a.candidates)} candidates (default: the best 25)",
                key="insp_chart_all")
