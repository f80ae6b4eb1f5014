"""The sidebar's books: pick one of the books Folio knows (every page, the chat history, the
inspector, tuning and the audit follow it), or add one: upload a PDF, DOCX, EPUB, Markdown file or
a .zip of a book folder, or name a folder on this machine. A new book is indexed with a progress
bar the first time it is opened (pages/components/common/shared.build_context)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rag.book.parse import book_id_for
from rag.book.upload import UPLOADS, save_upload
from rag.config import Settings, load_settings
from rag.config.identity import title_of_book
from rag.config.library import add_folder, known_books, resolve_book
from rag.errors import RagError

BOOK_KEY = "folio_book"  # the chosen book's id, for this browser session
PICKER_KEY = "folio_book_picker"
FLASH_KEY = "_folio_flash"
ADDED_KEY = "_folio_books_added"  # books added in this session: a new upload field after each


@st.cache_data(ttl=60, show_spinner=False, max_entries=256)
def _title(path: str, default: str) -> str:
    return default or title_of_book(Path(path))


def book_settings(settings: Settings) -> tuple[Settings, str]:
    """The settings for the book this session chose (the settings' own book when none), and a
    warning when the chosen book is gone."""
    choice = st.session_state.get(BOOK_KEY, "")
    if not choice or choice == settings.book_id:
        return settings, ""
    try:
        folder = resolve_book(choice, settings.book_dir, settings.library_dir)
        return load_settings(book_dir=folder), ""
    except RagError:
        st.session_state.pop(BOOK_KEY, None)
        return settings, f"The book '{choice}' is no longer there; back to {settings.book_id}."


def _switch(book_id: str) -> None:
    st.session_state[BOOK_KEY] = book_id
    st.session_state.pop(PICKER_KEY, None)
    st.session_state.pop("_folio_context", None)


def _picked() -> None:
    _switch(st.session_state[PICKER_KEY])


def render_book_picker(settings: Settings, may_add: bool) -> None:
    """The book select (and, for roles that may, the panel that adds one)."""
    default = load_settings()
    entries = known_books(default.book_dir, default.library_dir)
    titles = {e.book_id: _title(str(e.path), default.resolved_title
                                if e.origin == "settings" else "") for e in entries}
    if settings.book_id not in titles:
        titles[settings.book_id] = settings.resolved_title
    st.session_state[PICKER_KEY] = settings.book_id
    st.selectbox("Book", list(titles), key=PICKER_KEY, on_change=_picked,
                 format_func=lambda book_id: titles[book_id],
                 help="Every page follows the book chosen here; each book keeps its own index, "
                      "chat history and audit rows.")
    if may_add:
        with st.expander("Add a book", icon=":material/library_add:"):
            _add_panel(default)


def _add_panel(default: Settings) -> None:
    added = st.session_state.get(ADDED_KEY, 0)  # a new key per book added: the fields start empty
    upload = st.file_uploader("Upload a book", type=[s.lstrip(".") for s in UPLOADS],
                              key=f"library_upload_{added}",
                              help="A PDF, Word (.docx), EPUB or Markdown file, or a .zip of a "
                                   "book folder (Docusaurus, MkDocs, mdBook, Jupyter Book, "
                                   "plain Markdown or a built HTML site).")
    if upload is not None and st.button("Add and index", icon=":material/upload:",
                                        type="primary"):
        try:
            folder = save_upload(upload.name, upload.getvalue(), default.library_dir)
        except RagError as e:
            st.error(str(e), icon=":material/error:")
        else:
            _added(book_id_for(folder), f"Added {upload.name}.")
    path = st.text_input("…or a book folder on this machine", placeholder="/home/me/my-book",
                         key=f"library_folder_{added}")
    if path.strip() and st.button("Add folder", icon=":material/create_new_folder:"):
        try:
            entry = add_folder(Path(path.strip()), default.library_dir)
        except RagError as e:
            st.error(str(e), icon=":material/error:")
        else:
            _added(entry.book_id, f"Added {entry.path}.")


def _added(book_id: str, message: str) -> None:
    st.session_state[ADDED_KEY] = st.session_state.get(ADDED_KEY, 0) + 1
    _switch(book_id)
    st.session_state[FLASH_KEY] = f"{message} Its index is built the first time it opens."
    st.rerun()
