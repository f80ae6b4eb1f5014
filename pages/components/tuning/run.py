"""Running a sweep from the tuning page: the objective, the candidate pass with a progress bar, and
the sweep, cached in session state so that only new questions are ever embedded again and a new
objective or operating point only redoes the arithmetic."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from pages.components.common.shared import AppContext, index_key
from pages.components.tuning.view import OBJECTIVE_LABELS, objective_args
from rag.tuning.questions import Question
from rag.tuning.recommend import Recommendation
from rag.tuning.sweep import SweepResult, build_arrays, candidate_pass, run_sweep

POOLS_KEY = "tuning_pools"  # {(index identity, pool size): {question text: CandidatePool}}
SWEEP_KEY = "tuning_sweep"  # (set hash, index identity, pool size, top_k), SweepResult


def index_identity(ctx: AppContext) -> tuple:
    return (*index_key(ctx.settings), str(ctx.status.get("built_at", "")))


def objective_controls() -> tuple[str, float | None]:
    left, right = st.columns([3, 2], gap="large", vertical_alignment="bottom")
    with left:
        objective = st.radio("Objective", list(OBJECTIVE_LABELS), key="tuning_objective",
                             format_func=OBJECTIVE_LABELS.get, horizontal=True,
                             help="F1 balances answering in-scope questions correctly against "
                                  "answering out-of-scope ones; the second maximises Recall@k "
                                  "among settings that keep false answers under the limit.")
    with right:
        far = st.slider("False-answer limit (%)", 0, 50, 5, key="tuning_far",
                        disabled=objective != "max_recall_at_far",
                        help="Share of out-of-scope questions the book may answer.")
    return objective_args(objective, far)


def cached_pools(ctx: AppContext) -> dict:
    """This index's cached pools; pools of an older index are dropped."""
    ident = (index_identity(ctx), ctx.settings.candidate_pool)
    store = st.session_state.get(POOLS_KEY, {})
    st.session_state[POOLS_KEY] = store = {ident: store.get(ident, {})}
    return store[ident]


def sweep_for(ctx: AppContext, questions: Sequence[Question], set_hash: str
              ) -> SweepResult | None:
    """The sweep of this set on this index; None until the user starts the candidate pass."""
    s = ctx.settings
    key = (set_hash, index_identity(ctx), s.candidate_pool, s.top_k)
    cached = st.session_state.get(SWEEP_KEY)
    if cached and cached[0] == key:
        return cached[1]
    pools = cached_pools(ctx)
    missing = list({q.question: q for q in questions if q.question not in pools}.values())
    if missing:
        done = len(questions) - len(missing)
        label = (f"Run the sweep ({len(missing)} questions to retrieve)" if done == 0 else
                 f"Run the sweep ({len(missing)} new questions to retrieve, {done} cached)")
        slot = st.empty()
        if not slot.button(label, type="primary", icon=":material/play_arrow:", key="tuning_run"):
            st.caption("Each question is embedded and searched once (top-N dense ∪ top-N BM25, "
                       f"N = {s.candidate_pool}); every weight × threshold after that is "
                       "arithmetic on the stored scores.")
            return None
        bar = slot.progress(0.0, text="Retrieving candidates…")
        found = candidate_pass(ctx.index, missing, s.candidate_pool,
                               lambda text, fraction: bar.progress(min(fraction, 1.0), text=text))
        bar.empty()
        pools.update(zip([q.question for q in missing], found, strict=True))
    sections = sorted({c.section_ref for c in ctx.index.chunks})
    arrays = build_arrays(questions, [pools[q.question] for q in questions], s.top_k, sections)
    result = run_sweep(arrays)
    st.session_state[SWEEP_KEY] = (key, result)
    return result


def chosen_point(rec: Recommendation) -> tuple[float, float]:
    """The operating point the charts, tables, replay and Apply use; starts at the
    recommendation and follows it when the objective changes."""
    suffix = f"{rec.objective}_{rec.max_far}_{rec.w_dense}_{rec.threshold}"
    left, right, reset = st.columns([3, 3, 1], gap="medium", vertical_alignment="bottom")
    with left:
        w = st.slider("Dense weight (BM25 = 1 − dense)", 0.0, 1.0, rec.w_dense, 0.05,
                      key=f"tuning_w_{suffix}")
    with right:
        t = st.slider("Threshold", 0.0, 1.0, rec.threshold, 0.01, key=f"tuning_t_{suffix}")
    with reset:
        if st.button("Recommended", icon=":material/my_location:", type="tertiary",
                     help="Move both sliders back to the recommended point."):
            st.session_state.pop(f"tuning_w_{suffix}", None)
            st.session_state.pop(f"tuning_t_{suffix}", None)
            st.rerun()
    return round(w, 2), round(t, 2)
