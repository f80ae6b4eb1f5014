"""Running an evaluation from the tuning page: the objective, the candidate pass and the answer
passes with a progress bar, all through rag.tuning.evaluate and cached in session state, so that
only new questions are ever embedded or answered again and a new objective or operating point
only redoes the arithmetic (plus answers at a recommended point not seen before)."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from pages.components.common.shared import AppContext, index_key
from pages.components.tuning.view import OBJECTIVE_LABELS, objective_args
from rag.tuning.answers import AnswerOutcome
from rag.tuning.evaluate import (
    Evaluation,
    answer_key,
    answers_at,
    evaluate_set,
    evaluation_pipeline,
)
from rag.tuning.questions import Question
from rag.tuning.recommend import Recommendation

POOLS_KEY = "tuning_pools"  # {(index identity, pool size): {question text: CandidatePool}}
ANSWERS_KEY = "tuning_answers"  # {index identity: {(question, answer_key): AnswerOutcome}}
EVALUATION_KEY = "tuning_evaluation"  # (what it depends on, Evaluation)
ANSWERS_ON_KEY = "tuning_answers_on"  # the user asked for the answer passes


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
    return _scoped(POOLS_KEY, (index_identity(ctx), ctx.settings.candidate_pool))


def cached_answers(ctx: AppContext) -> dict:
    """This index's cached answer outcomes; those of an older index are dropped."""
    return _scoped(ANSWERS_KEY, index_identity(ctx))


def _scoped(key: str, ident: tuple) -> dict:
    """The session cache under `key` for `ident` alone: other identities are dropped, and the
    same dict is kept from run to run."""
    store = st.session_state.get(key, {})
    if set(store) != {ident}:
        st.session_state[key] = store = {ident: store.get(ident, {})}
    return store[ident]


def _progress_into(slot):
    """A progress callback that draws its bar in `slot` on first use."""
    bar = None

    def report(text: str, fraction: float) -> None:
        nonlocal bar
        bar = bar or slot.progress(0.0, text=text)
        bar.progress(min(fraction, 1.0), text=text)

    return report


def evaluation_for(ctx: AppContext, questions: Sequence[Question], set_hash: str,
                   objective: str, max_far: float | None) -> Evaluation | None:
    """rag's evaluation of this set on this index; None until the user starts the candidate
    pass. Answers are included once the user has asked for them (answers_button)."""
    s = ctx.settings
    with_answers = st.session_state.get(ANSWERS_ON_KEY) == set_hash
    key = (set_hash, index_identity(ctx), answer_key(s, (s.w_dense, s.threshold)), objective,
           max_far, with_answers)
    cached = st.session_state.get(EVALUATION_KEY)
    if cached and cached[0] == key:
        return cached[1]
    pools, answers = cached_pools(ctx), cached_answers(ctx)
    missing = len({q.question for q in questions if q.question not in pools})
    slot = st.empty()
    if missing:
        done = len(questions) - missing
        label = (f"Run the sweep ({missing} questions to retrieve)" if done == 0 else
                 f"Run the sweep ({missing} new questions to retrieve, {done} cached)")
        if not slot.button(label, type="primary", icon=":material/play_arrow:", key="tuning_run"):
            st.caption("Each question is embedded and searched once (top-N dense ∪ top-N BM25, "
                       f"N = {s.candidate_pool}); every weight × threshold after that is "
                       "arithmetic on the stored scores.")
            return None
    evaluation = evaluate_set(ctx.index, s, questions, objective=objective, max_far=max_far,
                              pools=pools, answers=with_answers, known_answers=answers,
                              progress=_progress_into(slot))
    slot.empty()
    pools.update(evaluation.pools)
    answers.update(evaluation.answer_cache())
    st.session_state[EVALUATION_KEY] = (key, evaluation)
    return evaluation


def answers_button(ev: Evaluation, set_hash: str) -> None:
    """Turns the answer passes on for this set (they then follow the recommended point)."""
    n = len(ev.questions) * (1 if ev.points["current"] == ev.points["recommended"] else 2)
    st.caption(f"Ask the offline answerer every question at the active settings and at the "
               f"recommended point ({n} answers, about 20–150 ms each) and check each answer "
               "for its key facts.")
    if st.button("Check the answers", icon=":material/fact_check:", key="tuning_check_answers",
                 type="primary"):
        st.session_state[ANSWERS_ON_KEY] = set_hash
        st.rerun()


def outcomes_at(ctx: AppContext, ev: Evaluation, point: tuple[float, float]
                ) -> list[AnswerOutcome] | None:
    """Answer outcomes at a point: the evaluation's own, the cache's, or (after a click) a new
    pass; None while the user has not asked."""
    for name, where in ev.points.items():
        if name in ev.answers and where == point:
            return ev.answers[name]
    s, cache = ctx.settings, cached_answers(ctx)
    key = answer_key(s, point)
    if all((q.question, key) in cache for q in ev.questions):
        return [cache[(q.question, key)] for q in ev.questions]
    slot = st.empty()
    if not slot.button(f"Check the answers at dense {point[0]:.2f} · threshold {point[1]:.2f}",
                       icon=":material/fact_check:", key="tuning_check_point"):
        return None
    outcomes = answers_at(lambda: evaluation_pipeline(ctx.index, s), ev.questions, s, point,
                          cache, _progress_into(slot))
    slot.empty()
    cache.update({(o.question, key): o for o in outcomes})
    return outcomes


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
