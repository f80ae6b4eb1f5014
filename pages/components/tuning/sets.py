"""The tuning page's question-set panel: pick a set from data/eval or upload one, edit it in place,
save it. Validation is rag.tuning.questions's (through set_table); edits live in the editor's
own widget state, so an error never throws them away."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import streamlit as st

from pages.components.tuning.set_table import editable_frame, questions_frame, questions_from_frame
from rag.config import PROJECT_ROOT
from rag.errors import InputError
from rag.tuning.question_sets import (
    best_set_for,
    decode_upload,
    eval_dir,
    list_question_sets,
    parse_question_text,
    read_header,
    read_set_file,
    save_question_set,
    target_path,
)
from rag.tuning.questions import Question

SET_KEY, PENDING_KEY, SAVED_KEY = "tuning_set", "tuning_set_pending", "tuning_saved"
UPLOAD = "Upload a file…"
EDITOR_CONFIG = {
    "_index": st.column_config.NumberColumn("#", width=44,
                                            help="Row number: the line table errors name."),
    "question": st.column_config.TextColumn("Question", width="large", required=True),
    "expected_sections": st.column_config.TextColumn(
        "Expected sections", width="medium",
        help="Comma-separated `chapter_id#section_id` (one section) or `chapter_id` (any "
             "section of that chapter). Empty for out-of-scope questions."),
    "in_scope": st.column_config.CheckboxColumn("In scope", width=70,
                                                help="Should the book answer it?"),
    "category": st.column_config.TextColumn("Category", width="small"),
    "key_facts": st.column_config.TextColumn(
        "Key facts", width="medium",
        help="What a correct answer must contain, separated by ';' (e.g. 'DDS; 0.6–1.0 s'); "
             "' | ' between the book's wordings of one fact ('DDS | Data Distribution "
             "Service'). Empty: the question counts for retrieval only."),
}


@dataclass(frozen=True)
class ActiveSet:
    name: str  # as provenance records it: a project-relative path or the upload's name
    questions: list[Question] | None  # None while the set (or its edits) do not validate
    edited: bool = False  # the table differs from the file


def display_path(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def _source(folder: Path, section_refs: list[str]) -> tuple[str, str, Path | None] | None:
    """(name, text, path) of the picked or uploaded set; None until a file is uploaded."""
    if pending := st.session_state.pop(PENDING_KEY, None):
        st.session_state[SET_KEY] = pending  # a set just saved becomes the picked one
    paths = list_question_sets(folder)
    names = [p.name for p in paths]
    if SET_KEY not in st.session_state:  # the set written for this book, never another's
        best = best_set_for(paths, section_refs)
        st.session_state[SET_KEY] = best.name if best else UPLOAD
        if best is None and paths:
            st.info("None of the question sets here names this book's sections: upload one, "
                    "or generate a starter set from the book below.", icon=":material/info:")
    pick, upload = st.columns([2, 3], gap="medium")
    with pick:
        choice = st.selectbox("Question set", [*names, UPLOAD], key=SET_KEY,
                              help=f"YAML or CSV files in {display_path(folder)}/")
    if choice != UPLOAD:
        path = folder / choice
        return display_path(path), read_set_file(path), path
    with upload:
        uploaded = st.file_uploader("Upload a question set", type=["yaml", "yml", "csv"],
                                    key="tuning_upload",
                                    help="Fields: question, expected_sections, in_scope, "
                                         "category, key_facts (YAML list or CSV with a header "
                                         "row).")
    if uploaded is None:
        st.info("Upload a YAML or CSV question set, or pick one of the files.",
                icon=":material/upload_file:")
        return None
    return uploaded.name, decode_upload(uploaded.getvalue(), uploaded.name), None


def _differs(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    if a.shape != b.shape or list(a.index) != list(b.index):
        return True
    return not a.astype(object).where(a.notna(), "").astype(str).equals(
        b.astype(object).where(b.notna(), "").astype(str))


def question_set_panel(section_refs: list[str]) -> ActiveSet | None:
    folder = eval_dir()
    source = _source(folder, section_refs)
    if source is None:
        return None
    name, text, path = source
    file_error, origin = "", {}
    try:
        parsed = parse_question_text(text, name)
        base = questions_frame(parsed)
        origin = {row: q.from_audit for row, q in enumerate(parsed, start=1) if q.from_audit}
    except InputError as e:
        file_error = str(e)
        try:
            base = editable_frame(text, name)
        except InputError:
            st.error(file_error, icon=":material/error:")
            return ActiveSet(name, None)
    key = "tuning_editor_" + hashlib.sha1(f"{name}\n{text}".encode()).hexdigest()[:12]
    errors = st.empty()
    with st.expander(f"Edit the questions ({len(base)})", expanded=bool(file_error),
                     icon=":material/edit_note:"):
        table = st.data_editor(base, key=key, num_rows="dynamic", hide_index=False,
                               column_config=EDITOR_CONFIG,
                               height=min(360, 40 + 35 * (len(base) + 1)))
        edited = _differs(table, base)
        try:
            questions, table_error = questions_from_frame(table), ""
            # a row keeps the audit log it was labelled from (the table has no column for it)
            questions = [replace(q, from_audit=origin.get(q.line, "")) for q in questions]
        except InputError as e:
            questions, table_error = None, str(e)
        _save_row(folder, path, name, key, questions, table_error, read_header(text, name))
    if edited and table_error:
        errors.error(f"{table_error}  \n(Lines are the row numbers in the table below; your "
                     "edits are kept.)", icon=":material/error:")
    elif file_error and not edited:
        errors.error(f"{file_error}  \nFix it in the table below and save, or upload a "
                     "corrected file.", icon=":material/error:")
        questions = None
    if saved := st.session_state.pop(SAVED_KEY, None):
        st.success(saved, icon=":material/save:")
    return ActiveSet(f"{name} (edited, unsaved)" if edited else name, questions, edited)


def _save_row(folder: Path, path: Path | None, name: str, key: str,
              questions: list[Question] | None, table_error: str, header: dict) -> None:
    default = path.name if path else Path(name).name
    where, button = st.columns([3, 1], vertical_alignment="bottom")
    with where:
        target = st.text_input(f"Save as (in {display_path(folder)}/)", value=default,
                               key=f"{key}_name", max_chars=80)
    with button:
        clicked = st.button("Save", icon=":material/save:", key=f"{key}_save", width="stretch")
    st.caption("Saving checks the whole set first and rewrites the file in the standard layout "
               "(YAML comments are not kept; a generated set's provenance is).")
    if not clicked:
        return
    try:
        if questions is None:
            raise InputError(f"Not saved: {table_error}")
        out = target_path(folder, target)
        if out.exists() and (path is None or out.resolve() != path.resolve()):
            raise InputError(f"{out.name} already exists; pick it above to edit it, or save "
                             "under another name.")
        save_question_set(questions, out, header)  # a generated set keeps its provenance
    except (InputError, OSError) as e:
        st.error(str(e), icon=":material/error:")
        return
    st.session_state[PENDING_KEY] = out.name
    st.session_state[SAVED_KEY] = f"Saved {len(questions)} questions to {display_path(out)}."
    st.rerun()
