"""Folio: ask a book questions and see why each answer came out the way it did.

The router: page config, the shared context (settings re-read every run; index, pipeline and
audit store cached per process), the sidebar, and st.navigation over the pages."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import rag  # noqa: F401  (pins BLAS/torch threads before numpy loads)
from pages.components.common.shared import CONTEXT_KEY, build_context
from pages.components.common.sidebar import render_sidebar

HERE = Path(__file__).resolve().parent
PAGES = (  # file, title, icon, default
    ("pages/chat.py", "Chat", ":material/forum:", True),
    ("pages/inspector.py", "Retrieval inspector", ":material/manage_search:", False),
    ("pages/book.py", "Book", ":material/auto_stories:", False),  # where citation links land
    ("pages/tuning.py", "Tuning", ":material/tune:", False),
    ("pages/audit.py", "Audit explorer", ":material/fact_check:", False),
)

# An emoji favicon is drawn in the browser; a ":material/…:" one is fetched from Google's servers,
# the one request that would leave the machine (the page icons use the bundled font).
st.set_page_config(page_title="Folio", page_icon="📖", layout="wide")

navigation = st.navigation([
    st.Page(path, title=title, icon=icon, default=default)
    for path, title, icon, default in PAGES
])
context = build_context()
st.session_state[CONTEXT_KEY] = context
render_sidebar(context)
navigation.run()
