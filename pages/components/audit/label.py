"""Turn a logged question into a label: the reviewer picks the section(s) of the current book that
answer it (or marks it out of scope), optionally a key fact, and a question set under the
question-set folder (or a new one); rag.tuning.labels validates and appends it, recording the
log_id it came from."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages.components.common.shared import app_context
from rag.answer.citations import section_names as cited_names
from rag.config import PROJECT_ROOT
from rag.errors import InputError
from rag.tuning.labels import append_label, make_label, new_set_header
from rag.tuning.question_sets import eval_dir, list_question_sets, target_path
from rag.types import Chunk

NEW_SET = "New set…"
DEFAULT_NEW = "audit-labels.yaml"


def _shown(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def section_names(chunks: list[Chunk]) -> dict[str, str]:
    """`chapter_id#section_id` -> "Chapter › Section", in book order; a section sharing its
    title with another of its chapter is named with the heading it sits under ("Chapter ›
    Option 2 › Advantages": rag.answer.citations.section_names)."""
    apart = cited_names(chunks)
    names: dict[str, str] = {}
    for c in chunks:
        if c.source == "book" and c.section_ref not in names:
            title = c.section_title if c.section_title != c.chapter_title else "(introduction)"
            names[c.section_ref] = f"{c.chapter_title} › {apart.get(c.section_key, title)}"
    return names


def label_panel(record: dict) -> None:
    question = (record.get("user_query_text") or "").strip()
    log_id = str(record.get("log_id") or "")
    ctx = app_context()
    if not question or not log_id or ctx.index is None:
        return  # an empty (refused-at-input) question or no book to label against
    sections = section_names(list(ctx.index.chunks))
    key = f"audit_label_{log_id}"
    with st.expander("Label this question for tuning", icon=":material/label:"):
        cited = list(dict.fromkeys(f"{c.get('chapter_id')}#{c.get('section_id')}"
                                   for c in record.get("citations") or []))
        st.caption("Mark the section(s) of this book that answer it; the question joins a "
                   "question set the tuning page can sweep."
                   + (f" The answer cited: {', '.join(cited)}." if cited else ""))
        outside = st.checkbox("The book does not cover it (out of scope)", key=f"{key}_outside")
        picked = st.multiselect("Right section(s)", list(sections), key=f"{key}_sections",
                                format_func=lambda ref: f"{sections[ref]} ({ref})",
                                disabled=outside, placeholder="Type to search the sections")
        fact = st.text_input("Key fact (optional)", key=f"{key}_fact", disabled=outside,
                             help="A short phrase from the book a right answer must contain; "
                                  "separate up to three with ';'.")
        folder = eval_dir()
        names = [p.name for p in list_question_sets(folder)]
        left, right = st.columns(2, vertical_alignment="bottom")
        choice = left.selectbox("Question set", [*names, NEW_SET], key=f"{key}_set",
                                help=f"Files in {_shown(folder)}/")
        new_name = right.text_input("New set's file name", DEFAULT_NEW, key=f"{key}_new",
                                    disabled=choice != NEW_SET, max_chars=80)
        if st.button("Add to the question set", icon=":material/playlist_add:", type="primary",
                     key=f"{key}_add"):
            _add(question, log_id, not outside, picked, fact, folder, choice, new_name,
                 sections, str(ctx.settings.book_dir))


def _add(question: str, log_id: str, in_scope: bool, picked: list[str], fact: str,
         folder: Path, choice: str, new_name: str, sections: dict[str, str], book: str) -> None:
    facts = [f.strip() for f in fact.split(";") if f.strip()] if in_scope else []
    try:
        label = make_label(question, picked if in_scope else [], facts, log_id, sections,
                           in_scope, "from_audit" if in_scope else "off_topic")
        if choice == NEW_SET:
            path = target_path(folder, new_name)
            if path.exists():
                raise InputError(f"{path.name} already exists; pick it in the list to add to "
                                 "it.")
        else:
            path = folder / choice
        result = append_label(path, label, new_set_header(_shown(Path(book))))
    except (InputError, OSError) as e:
        st.error(f"Not added: {e}", icon=":material/error:")
        return
    layout = (" It was rewritten in the standard layout (comments are not kept)."
              if result.rewritten else "")
    st.success(f"Added to {_shown(result.path)} "
               f"({'new set, ' if result.created else ''}{result.count} questions now).{layout}",
               icon=":material/check_circle:")
