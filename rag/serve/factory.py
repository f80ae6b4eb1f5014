"""The server's application built from settings: once in-process (`rag serve`), or in each
worker process of `rag serve --workers N` from the parameters the parent left in RAG_SERVE_APP.

The process serving HTTP brings the index up to date, notes what /v1/health and /v1/models say
about it, and closes it; its answering processes (rag.serve.pool) then open it read-only."""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict
from pathlib import Path

from fastapi import FastAPI

from rag.config import Settings, load_settings
from rag.serve.server import GuardedH11, Limits

ENV = "RAG_SERVE_APP"


def pool_shape(concurrency: int, cores: int) -> tuple[int, int]:
    """(processes, threads each) for `concurrency` questions at once: a process per core at
    most (each holds the index and MiniLM, ~300 MB), the rest as threads in them."""
    processes = max(1, min(concurrency, cores))
    return processes, math.ceil(concurrency / processes)


def build_app(settings: Settings, concurrency: int | None = None
              ) -> tuple[FastAPI, str]:
    """The app over this process's answering processes, audit store and limits; and a line
    describing it."""
    from rag.access.cors import cors_origins
    from rag.access.keys import LiveKeys
    from rag.access.ratelimit import RateLimiter, default_state_path, rate_limit_per_minute
    from rag.audit.store import AuditStore
    from rag.commands.common import terminal_progress
    from rag.index.load import load_index
    from rag.serve.app import create_app
    from rag.serve.auth import Access
    from rag.serve.pool import ProcessPool
    from rag.serve.runner import DEFAULT_CONCURRENCY, REMOTE_CONCURRENCY, PoolRunner
    from rag.serve.service import BookInfo

    keys = LiveKeys()
    per_minute = rate_limit_per_minute(settings_file=settings.settings_file)
    origins = cors_origins(settings_file=settings.settings_file)
    index, _ = load_index(settings, progress=terminal_progress)
    info = BookInfo.of(settings, index)
    index.store.close()  # the answering processes open the store; one of them holds it
    del index
    limiter = RateLimiter(default_state_path(settings.audit_db), per_minute) \
        if per_minute > 0 else None
    remote = settings.llm != "extractive"
    wanted = concurrency or (REMOTE_CONCURRENCY if remote else DEFAULT_CONCURRENCY)
    processes, threads = pool_shape(wanted, os.cpu_count() or 2)
    pool = ProcessPool(settings, processes, threads)
    pool.start()
    audit = AuditStore(settings.audit_db)  # rows of questions abandoned over their budget

    def shut_down() -> None:
        audit.close()

    runner = PoolRunner(pool, info, settings, audit)
    app = create_app(runner, Access(keys, limiter), on_shutdown=shut_down, cors_origins=origins)
    describe = (f"{info.title}: {info.chunks} chunks, {len(keys)} API keys, "
                f"{per_minute or 'no'} questions per minute per client, {processes} answering "
                f"processes x {threads} (pid {os.getpid()})")
    return app, describe


def app_from_environment() -> FastAPI:
    """uvicorn's factory in each worker process."""
    spec = json.loads(os.environ[ENV])
    settings = load_settings(book_dir=Path(spec["book"]), index_dir=Path(spec["index"]),
                             embedder=spec["embedder"])
    GuardedH11.limits = Limits(**spec["limits"])
    app, describe = build_app(settings, spec.get("concurrency"))
    print(describe, flush=True)
    return app


def environment_spec(settings: Settings, concurrency: int | None, limits: Limits) -> str:
    return json.dumps({"book": str(settings.book_dir), "index": str(settings.index_dir),
                       "embedder": settings.embedder, "concurrency": concurrency,
                       "limits": asdict(limits)})
