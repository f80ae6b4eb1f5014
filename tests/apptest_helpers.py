"""Shared set-up for the AppTest page tests: the real app on the session's sample index.

Imported by tests/test_app_*.py; not a test module itself."""

from __future__ import annotations

import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from rag.config import PROJECT_ROOT

APP = str(PROJECT_ROOT / "app.py")
TIMEOUT = 90


def keep_navigation_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """AppTest re-detects the legacy pages/ folder before every run, which would run page files
    without app.py on reruns. A real server decides once per process and st.navigation (plus
    pages.components.shared.ensure_router) switches that mode off, so do the same here."""
    original = PagesManager.__init__

    def init(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


def open_app(monkeypatch: pytest.MonkeyPatch, index_dir, audit_db, page: str = "",
             **env: str) -> AppTest:
    """app.py run once (optionally switched to `page`), with RAG_* pointing at temp dirs."""
    keep_navigation_mode(monkeypatch)
    monkeypatch.setenv("RAG_INDEX_DIR", str(index_dir))
    monkeypatch.setenv("RAG_AUDIT_DB", str(audit_db))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    if page:
        at.switch_page(page).run()
    return at


def markdown_text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def ask(at: AppTest, question: str) -> AppTest:
    """Ask in the chat (switching to it first if needed) and fail on any uncaught exception."""
    at.chat_input[0].set_value(question).run()
    assert not at.exception, at.exception
    return at
