"""Folio: ask a book questions and see why each answer came out the way it did.

The router: page config, the sign-in gate (only when role passwords are configured), the shared
context (settings re-read every run; index, pipeline and audit store cached per process), the
sidebar, and st.navigation over the pages the signed-in role may open."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import rag  # noqa: F401  (pins BLAS/torch threads before numpy loads)
from pages.components.common.shared import CONTEXT_KEY, build_context
from pages.components.common.sidebar import render_sidebar
from pages.components.common.signin import role_logins, sign_in_page, signed_in_role
from rag.access.roles import PAGES as ALL_PAGES
from rag.access.roles import pages_for

HERE = Path(__file__).resolve().parent
PAGES = (  # file, title, icon; the first a role may open is its start page
    ("pages/chat.py", "Chat", ":material/forum:"),
    ("pages/inspector.py", "Retrieval inspector", ":material/manage_search:"),
    ("pages/book.py", "Book", ":material/auto_stories:"),  # where citation links land
    ("pages/tuning.py", "Tuning", ":material/tune:"),
    ("pages/audit.py", "Audit explorer", ":material/fact_check:"),
)

# An emoji favicon is drawn in the browser; a ":material/…:" one is fetched from Google's servers,
# the one request that would leave the machine (the page icons use the bundled font).
st.set_page_config(page_title="Folio", page_icon="📖", layout="wide")

logins = role_logins()
role = signed_in_role(logins)
if len(logins) and role is None:
    # Nothing else runs before sign-in: no index, no models, no page (any URL lands here).
    st.navigation([st.Page(sign_in_page, title="Sign in", icon=":material/login:")]).run()
    st.stop()

allowed = pages_for(role) if role else ALL_PAGES
shown = [page for page in PAGES if Path(page[0]).stem in allowed]
navigation = st.navigation([
    st.Page(path, title=title, icon=icon, default=path == shown[0][0])
    for path, title, icon in shown
])
context = build_context()
st.session_state[CONTEXT_KEY] = context
render_sidebar(context, logins, role)
navigation.run()
