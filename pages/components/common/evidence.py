"""What an offline answer was made from, as the chat's "Why this answer" and the audit explorer's
drill-down both show it: the quoted units with the answerer's probability for each, the inputs of
the confidence in words, which rule chose the quotes when probability alone did not, and what a
refusal found unstated. Reads the record's answer_* keys (rag.answer.record.EVIDENCE_KEYS)."""

from __future__ import annotations

import streamlit as st

from pages.components.common.tables import quote_frame
from rag.answer.passages import SHORT_SECTION_WORDS
from rag.answer.shape import asks_specific


def quoted_units(turn: dict) -> None:
    """The quoted units and their probabilities, and what the confidence was computed from; a
    refusal's unstated quantities. Nothing for an answer without quotes (Claude, or a record
    written before quotes were kept)."""
    quotes, supports = turn.get("answer_quotes") or [], turn.get("answer_supports") or []
    if quotes and len(supports) == len(quotes):
        st.markdown("**Quoted from the book** (the model's probability that each unit holds "
                    "the answer; the first one leads)")
        whole, around = turn.get("answer_whole") or [], turn.get("answer_around") or []
        st.dataframe(quote_frame(quotes, supports, whole, around), hide_index=True,
                     width="stretch",
                     column_config={"#": st.column_config.NumberColumn("#", width=36),
                                    "quoted unit": "Quoted unit",
                                    "probability": st.column_config.NumberColumn(
                                        "Probability", format="%.3f", width="small"),
                                    "whole section": st.column_config.CheckboxColumn(
                                        "Whole section", width="small"),
                                    "around": st.column_config.CheckboxColumn(
                                        "Around", width="small")})
        if any(whole):
            st.caption(f"A whole section is a short list or table ({SHORT_SECTION_WORDS} words or "
                       "fewer) quoted in full in place of the unit of it the answerer chose, "
                       "whose probability it carries: its other lines often answer the rest of "
                       "the question.")
        if any(around):
            st.caption("Around: a unit next to the quotes in the leading unit's section, read "
                       "with them while the answer had words to spare (the sentence after the "
                       "one that names the topic often holds the fact asked for).")
        if led_by := turn.get("answer_led_by"):
            st.caption(f"Chosen by a rule, not by probability alone: {led_by}.")
        runner_up = turn.get("answer_runner_up")
        if runner_up is not None:
            st.caption(confidence_caption(turn, turn.get("user_query_text", ""),
                                          float(supports[0]), float(runner_up)))
    elif led_by := turn.get("answer_led_by"):  # "Which chapter covers X?": places, no quotes
        st.caption(f"Made by a rule: {led_by}.")
    if unstated := turn.get("answer_unstated"):
        st.caption("Refused because the question asks for a value that none of the units the "
                   "answerer would have quoted states: " + ", ".join(unstated) + ".")


def confidence_caption(turn: dict, question: str, lead: float, runner_up: float) -> str:
    """What the offline confidence was computed from (rag.answer.correctness), in words."""
    inputs = [f"the leading unit's probability ({lead:.3f})",
              f"its lead over the runner-up, the best unit not ranked first ({runner_up:.3f})"]
    if (unquoted := turn.get("answer_unquoted")) is not None:
        inputs.append("the share of the evidence's probability the answer leaves unquoted "
                      f"({float(unquoted):.0%})")
    if (covered := turn.get("answer_coverage")) is not None:
        inputs.append("the share of the question's words, rarer ones counting more, that the "
                      f"quotes contain ({float(covered):.0%})")
        if citations := turn.get("citations"):  # in the order the answer cites, the lead first
            inputs.append("whether the leading unit is in the section retrieval ranked first "
                          f"({'yes' if citations[0]['marker'] == 'S1' else 'no'})")
    if (asked := turn.get("answer_asked")) is not None:
        inputs.append("whether the leading unit came closer to the question through one the book "
                      "itself asks " + (f'("{asked}")' if asked else "(no)"))
    if "answer_whole" in turn:  # since 2026-11-28: how many quotes, a whole section counting once
        needed = len(turn.get("answer_quotes") or []) - sum(turn.get("answer_around") or [])
        inputs.append(f"how many quotes the answer needs ({needed})")
    listed = ", ".join(inputs[:-1]) + ", and " + inputs[-1]
    specific = " The question asks for a number or a definition, so the leading unit's " \
        "probability counts for more." if asks_specific(question) else ""
    return (f"Confidence {float(turn.get('confidence_score') or 0):.2f} is the fitted chance "
            f"that this answer is right, from {listed}.{specific}")
