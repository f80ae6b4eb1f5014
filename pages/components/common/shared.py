"""What every page shares: settings re-read on each run, and the index, pipeline and audit store
created once per process with st.cache_resource."""

from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from pages.components.common.books import book_settings
from rag.access.ratelimit import ProcessLimiter, RateLimiter
from rag.answer.pipeline import Pipeline
from rag.book.parse import EXTENSIONS as BOOK_FILES
from rag.config import Settings, load_settings
from rag.errors import RagError
from rag.index.build import BookIndex
from rag.index.load import book_status, build_index, load_index
from rag.providers.registry import get_llm

CONTEXT_KEY = "_folio_context"
FLASH_KEY = "_folio_flash"  # a message to show once, after a rerun


@dataclass
class AppContext:
    settings: Settings
    status: dict = field(default_factory=dict)
    index: BookIndex | None = None
    pipeline: Pipeline | None = None
    audit: object | None = None  # rag.audit.AuditStore
    audit_error: str = ""
    error: str = ""  # why the index or pipeline could not be opened


def index_key(s: Settings) -> tuple:
    return (str(s.book_dir), str(s.index_dir), s.embedder, s.cohere_model, s.qdrant_url)


def _mtimes(paths) -> list[int]:
    out = []
    for path in paths:
        try:
            out.append(path.stat().st_mtime_ns)
        except OSError:
            continue
    return out


def change_signature(settings: Settings) -> tuple[int, int, int]:
    """Book files, newest book edit, newest index build: a stat per file, cheap every run."""
    book = _mtimes(p for p in Path(settings.book_dir).rglob("*") if p.suffix in BOOK_FILES)
    manifests = _mtimes(Path(settings.index_dir).glob("*/manifest.json"))
    return (len(book), max(book, default=0), max(manifests, default=0))


@st.cache_data(ttl=300, show_spinner=False, max_entries=16)
def cached_status(key: tuple, signature: tuple[int, int, int], _settings: Settings) -> dict:
    """Index freshness (parses the whole book); recomputed when a book file changes."""
    return book_status(_settings)


def index_status(settings: Settings) -> dict:
    return cached_status(index_key(settings), change_signature(settings), settings)


@st.cache_resource(show_spinner="Opening the book index…", max_entries=4)
def cached_index(key: tuple, built_at: str, _settings: Settings) -> BookIndex:
    index, _ = load_index(_settings, build=False)
    return index


@st.cache_resource(show_spinner="Loading the models…", max_entries=4)
def cached_pipeline(key: tuple, built_at: str, llm: tuple, audit_key: str, _index: BookIndex,
                    _settings: Settings, _audit: object | None) -> Pipeline:
    return Pipeline(_index, _settings, get_llm(_settings), _audit)


@st.cache_resource(show_spinner=False)
def cached_audit(path: str) -> object:
    from rag.audit.store import AuditStore

    store = AuditStore(Path(path))
    atexit.register(store.close)  # import what is still spooled before the process ends
    return store


@st.cache_resource
def rate_limiter() -> ProcessLimiter:
    """One limiter per process, keyed by the browser's session ID (survives a reload)."""
    return ProcessLimiter()


@st.cache_resource
def client_limiter(state_path: str, per_minute: int) -> RateLimiter:
    """The per-client limit shared with the API server and other app processes (one file)."""
    return RateLimiter(Path(state_path), per_minute)


@st.cache_resource
def build_lock() -> threading.Lock:
    return threading.Lock()


def open_audit(settings: Settings) -> tuple[object | None, str]:
    try:
        return cached_audit(str(settings.audit_db)), ""
    except (RagError, OSError) as e:
        return None, str(e)


def run_build(settings: Settings, rebuild: bool, where=None) -> None:
    """Build or update the index with a progress bar, then drop what was cached from the old one."""
    where = where or st
    bar = where.progress(0.0, text="Starting…")

    def progress(message: str, fraction: float) -> None:
        bar.progress(min(max(fraction, 0.0), 1.0), text=message)

    with build_lock():
        summary = build_index(settings, rebuild=rebuild, progress=progress)
    bar.empty()
    cached_status.clear()
    cached_index.clear()
    cached_pipeline.clear()
    st.session_state.pop(CONTEXT_KEY, None)
    st.session_state[FLASH_KEY] = (f"Index ready: {summary.chunks} chunks ({summary.embedded} "
                                   f"embedded, {summary.reused} reused) in "
                                   f"{summary.seconds:.1f} s.")


def build_context() -> AppContext:
    """Settings from data/settings.toml (cheap, every run) and the cached heavy objects."""
    try:
        settings, gone = book_settings(load_settings())
    except RagError as e:
        st.error(str(e))
        st.stop()
    if gone:
        st.warning(gone, icon=":material/library_books:")
    ctx = AppContext(settings)
    try:
        ctx.status = index_status(settings)
        if not ctx.status.get("exists"):
            holder = st.empty()  # cleared when the index is built
            with holder.container():
                st.info(f"Building the index of {settings.resolved_title} for first use; this "
                        "happens once.", icon=":material/construction:")
                run_build(settings, rebuild=False)
            holder.empty()
            ctx.status = index_status(settings)
        built = str(ctx.status.get("built_at", ""))
        ctx.index = cached_index(index_key(settings), built, settings)
        ctx.audit, ctx.audit_error = open_audit(settings)
        ctx.pipeline = cached_pipeline(
            index_key(settings), built,
            (settings.llm, settings.answer_model, settings.openai_base_url),
            str(settings.audit_db) if ctx.audit else "", ctx.index, settings, ctx.audit)
    except RagError as e:
        ctx.error = str(e)
    return ctx


def ensure_router() -> None:
    """Run pages through app.py's st.navigation, never as Streamlit's legacy pages/ folder.

    A folder named pages/ next to app.py makes Streamlit start a process (and every AppTest run)
    in its pre-st.navigation mode, which runs a page file directly: no shared sidebar and the
    file names as the menu. st.navigation turns that mode off, but only once app.py has run, so
    a first visit straight to /audit would land in it. Turning it off and rerunning at once
    sends the request through app.py."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def app_context() -> AppContext:
    """The context app.py built for this run; built here when a page runs on its own."""
    ensure_router()
    ctx = st.session_state.get(CONTEXT_KEY)
    if not isinstance(ctx, AppContext):
        ctx = build_context()
        st.session_state[CONTEXT_KEY] = ctx
    return ctx


def require_pipeline(ctx: AppContext) -> Pipeline:
    """The pipeline, or a readable error and the page stops."""
    if ctx.pipeline is None:
        st.error(ctx.error or "The book index is not available.")
        st.stop()
    return ctx.pipeline


def link_base_url() -> str:
    """The base_url citation links are rendered with (empty: links open the in-app reader)."""
    return app_context().settings.base_url or ""
