"""The tuning page's starter-set panel: generate questions from the book (rag.tuning.starter,
offline or phrased by Claude), review and edit them in a table, and save them as a question set
that records how it was made. Nothing is written before Save, and an existing file only after
the user ticks Overwrite."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from pages.components.common.shared import AppContext
from pages.components.tuning.set_table import questions_frame, questions_from_frame
from pages.components.tuning.sets import EDITOR_CONFIG, PENDING_KEY, SAVED_KEY, display_path
from rag.book.parse import book_id_for
from rag.config import get_secret
from rag.errors import InputError, RagError
from rag.tuning.question_sets import eval_dir, save_question_set, target_path
from rag.tuning.starter import (
    CLAUDE,
    DEFAULT_QUESTIONS,
    MAX_STARTER_QUESTIONS,
    OFFLINE,
    StarterSet,
    generate_starter,
)

STARTER_KEY = "tuning_starter"  # (book folder, StarterSet, generation number) awaiting review
SERIAL_KEY = "tuning_starter_serial"  # each generation gets a table of its own (no old edits)
REFUSED_KEY = "tuning_refused"  # the last evaluation recommended nothing: open this panel
PHRASINGS = {OFFLINE: "Offline templates", CLAUDE: "Claude"}
MADE_BY = {OFFLINE: "made by the offline templates", CLAUDE: "phrased by Claude"}
SOURCE_CONFIG = st.column_config.TextColumn("From the sentence", width="large", disabled=True,
                                            help="What the question was made from.")


def starter_panel(ctx: AppContext, expanded: bool = False) -> None:
    s = ctx.settings
    pending = st.session_state.get(STARTER_KEY)
    if pending is not None and pending[0] != str(s.book_dir):
        st.session_state.pop(STARTER_KEY)  # generated for another book
        pending = None
    with st.expander("Starter question set", icon=":material/auto_awesome:",
                     expanded=expanded or pending is not None):
        st.caption("No labelled questions for this book yet? Generate some from the book "
                   "itself: acronyms it spells out, definitions and numbers with their units, "
                   "each with the section it came from and the key fact its answer must hold, "
                   "plus out-of-scope probes. Review and edit them before saving; questions made "
                   "offline reuse the book's wording, which makes them easy for BM25, so rephrase "
                   "some in your readers' words before trusting the blend weight they pick.")
        _generate_row(ctx)
        if pending := st.session_state.get(STARTER_KEY):
            _review(ctx, pending[1], pending[2])


def _generate_row(ctx: AppContext) -> None:
    s = ctx.settings
    has_key = bool(get_secret("ANTHROPIC_API_KEY"))
    count, phrase, button = st.columns([1, 2, 1], vertical_alignment="bottom")
    with count:
        n = st.number_input("Questions", 10, MAX_STARTER_QUESTIONS, DEFAULT_QUESTIONS, step=10,
                            key="tuning_starter_n", help="Out-of-scope probes included.")
    with phrase:
        how = st.radio("Phrased by", list(PHRASINGS) if has_key else [OFFLINE],
                       format_func=PHRASINGS.get, horizontal=True, key="tuning_starter_how",
                       help=None if has_key else "Claude needs ANTHROPIC_API_KEY.")
    with button:
        clicked = st.button("Generate", icon=":material/auto_awesome:", width="stretch",
                            key="tuning_starter_generate")
    if not clicked:
        return
    try:
        phraser = None
        if how == CLAUDE:
            from rag.providers.anthropic_llm import AnthropicLLM
            from rag.tuning.starter_claude import claude_phraser

            phraser = claude_phraser(AnthropicLLM(model=s.llm_model), limit=int(n) * 2)
        with st.spinner("Reading the book…" if phraser is None else "Asking Claude…"):
            starter = generate_starter(s.book_dir, int(n), phraser,
                                       book_label=display_path(s.book_dir))
    except RagError as e:
        st.error(f"No starter set: {e}", icon=":material/error:")
        return
    serial = st.session_state[SERIAL_KEY] = st.session_state.get(SERIAL_KEY, 0) + 1
    st.session_state[STARTER_KEY] = (str(s.book_dir), starter, serial)


def _review(ctx: AppContext, starter: StarterSet, serial: int) -> None:
    for notice in starter.notices:
        st.warning(notice, icon=":material/info:")
    n_in = sum(q.in_scope for q in starter.questions)
    st.markdown(f"**{len(starter.questions)} questions** ({n_in} from the book, "
                f"{len(starter.questions) - n_in} out-of-scope probes), "
                f"{MADE_BY[starter.generated]} on {starter.date}. Delete rows, fix wording, "
                "sections and key facts, then save.")
    frame = questions_frame(starter.questions)
    frame["source"] = starter.sources
    table = st.data_editor(frame, key=f"tuning_starter_editor_{serial}", num_rows="dynamic",
                           column_config=EDITOR_CONFIG | {"source": SOURCE_CONFIG},
                           height=min(420, 40 + 35 * (len(frame) + 1)))
    folder = eval_dir()
    default = f"{book_id_for(ctx.settings.book_dir)}-starter.yaml"
    where, overwrite, save, drop = st.columns([3, 1, 1, 1], vertical_alignment="bottom")
    with where:
        name = st.text_input(f"Save as (in {display_path(folder)}/)", default, max_chars=80,
                             key="tuning_starter_name")
    try:
        out = target_path(folder, name)
    except InputError as e:
        st.error(str(e), icon=":material/error:")
        return
    with overwrite:
        replace = st.checkbox("Overwrite", key="tuning_starter_overwrite",
                              disabled=not out.exists(),
                              help=f"{out.name} exists; tick to replace it." if out.exists()
                              else f"{out.name} does not exist yet.")
    if drop.button("Discard", icon=":material/delete:", key="tuning_starter_discard",
                   width="stretch"):
        st.session_state.pop(STARTER_KEY, None)
        st.rerun()
    if save.button("Save", icon=":material/save:", type="primary", key="tuning_starter_save",
                   width="stretch"):
        _save(starter, table, out, replace)


def _save(starter: StarterSet, table: pd.DataFrame, out: Path, replace: bool) -> None:
    if out.suffix.lower() not in (".yaml", ".yml"):
        st.error(f"{out.name}: save a starter set as .yaml, which keeps its provenance.",
                 icon=":material/error:")
        return
    if out.exists() and not replace:
        st.error(f"{out.name} already exists: tick Overwrite to replace it, or save under "
                 "another name.", icon=":material/error:")
        return
    try:
        questions = questions_from_frame(table)
        save_question_set(questions, out, starter.header())
    except (InputError, OSError) as e:
        st.error(f"Not saved: {e}", icon=":material/error:")
        return
    st.session_state.pop(STARTER_KEY, None)
    st.session_state[PENDING_KEY] = out.name
    st.session_state[SAVED_KEY] = (f"Saved the starter set ({len(questions)} questions, "
                                   f"generated {starter.generated}) to {display_path(out)}.")
    st.rerun()
