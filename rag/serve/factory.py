"""The server's application built from settings: once in-process (`rag serve`), or in each
worker process of `rag serve --workers N` from the parameters the parent left in RAG_SERVE_APP."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fastapi import FastAPI

from rag.config import Settings, load_settings

ENV = "RAG_SERVE_APP"


def build_app(settings: Settings, concurrency: int | None = None) -> tuple[FastAPI, str]:
    """The app over this process's index, audit store and limits; and a line describing it."""
    from rag.access.keys import ApiKeys
    from rag.access.ratelimit import RateLimiter, default_state_path, rate_limit_per_minute
    from rag.audit.store import AuditStore
    from rag.commands.common import terminal_progress
    from rag.index.load import load_index
    from rag.providers.registry import get_llm
    from rag.serve.app import create_app
    from rag.serve.auth import Access
    from rag.serve.runner import DEFAULT_CONCURRENCY, REMOTE_CONCURRENCY
    from rag.serve.service import Service

    keys = ApiKeys.load()
    per_minute = rate_limit_per_minute(settings_file=settings.settings_file)
    llm = get_llm(settings)
    index, _ = load_index(settings, progress=terminal_progress)
    limiter = RateLimiter(default_state_path(settings.audit_db), per_minute) \
        if per_minute > 0 else None
    audit = AuditStore(settings.audit_db)
    workers = concurrency or (DEFAULT_CONCURRENCY if llm is None else REMOTE_CONCURRENCY)
    service = Service.build(settings, index, llm, audit)
    app = create_app(service, Access(keys, limiter), concurrency=workers,
                     on_shutdown=audit.close)
    describe = (f"{settings.resolved_title}: {len(index.chunks)} chunks, {len(keys)} API keys, "
                f"{per_minute or 'no'} questions per minute per client (pid {os.getpid()})")
    return app, describe


def app_from_environment() -> FastAPI:
    """uvicorn's factory in each worker process."""
    spec = json.loads(os.environ[ENV])
    settings = load_settings(book_dir=Path(spec["book"]), index_dir=Path(spec["index"]),
                             embedder=spec["embedder"])
    app, describe = build_app(settings, spec.get("concurrency"))
    print(describe, flush=True)
    return app
