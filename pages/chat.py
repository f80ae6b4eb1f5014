"""Chat: ask the book, or a passage pasted from it, and see where each answer came from."""

import streamlit as st

from pages.components.chat import view
from pages.components.chat.asking import ask
from pages.components.chat.history import history, history_caption, sync_history
from pages.components.chat.start import picked_question, starting_point
from pages.components.chat.support import selection_caption
from pages.components.common.shared import app_context, require_pipeline

ctx = app_context()
require_pipeline(ctx)
h = history()

top, clear_slot = st.columns([4, 1], vertical_alignment="bottom")
with top:
    mode = view.mode_switch()
status_slot = st.empty()  # filled last, so it counts the answer given in this run
if ctx.audit is None:
    st.caption(f":orange[:material/history_toggle_off:] Answers are not being audited right "
               f"now: {ctx.audit_error}")

selection, pasted_at = view.current_selection()
if mode == "full-book":
    conversation, side = st.container(), None
else:
    conversation, side = st.columns([3, 2], gap="large")

placeholder = ("Ask about the selected text…" if mode != "full-book"
               else f"Ask a question about {ctx.settings.resolved_title}…")
question = st.chat_input(placeholder, max_chars=1000) or picked_question()

with conversation:
    if not h.turns and not question:
        st.caption("Ask anything the book covers. Every answer cites the sections it comes "
                   "from; open **Why this answer** under it to see the scores behind it.")
        if mode == "full-book":
            starting_point(ctx)
    for i, turn in enumerate(h.turns, start=1):
        view.render_turn(turn, latest=i == len(h.turns) and not question)
    if question:
        turn = ask(ctx, h, question, mode, selection if mode != "full-book" else "", pasted_at)
        if turn and turn.get("clear_selection"):
            view.clear_selection()  # SPEC §2: a stale selection is forgotten, and the user told
            st.rerun()

if side is not None:  # after the answer, so the sentences it used are highlighted
    with side:
        view.selection_panel(selection_caption(selection, pasted_at))
sync_history()
with clear_slot:
    st.button("Clear history", icon=":material/delete_sweep:", disabled=not h.turns,
              on_click=h.clear, width="stretch", help="Forget this browser's saved conversation.")
if caption := history_caption(h):
    status_slot.caption(caption)
