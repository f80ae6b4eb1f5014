"""`serve`: the HTTP API (FastAPI on uvicorn), one Pipeline per process."""

from __future__ import annotations

import argparse
import logging
import sys

from rag.commands.common import add_book_args, settings_from, terminal_progress
from rag.errors import InputError

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8000
LOCAL_ONLY = "no API keys configured: listening on localhost only"
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="answer questions over HTTP (JSON and Server-Sent "
                                         "Events); docs at /docs")
    serve.add_argument("--host", default=DEFAULT_HOST,
                       help=f"address to listen on (default {DEFAULT_HOST}; another address "
                            "needs API keys in RAG_API_KEYS)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT,
                       help=f"port (default {DEFAULT_PORT})")
    add_book_args(serve)
    serve.add_argument("--concurrency", type=int, metavar="N",
                       help="questions answered at once, in worker threads (default: one per "
                            "CPU core for the offline answerer, 32 with Claude)")
    serve.add_argument("--log-level", default="info", choices=LOG_LEVELS)
    serve.set_defaults(func=run_serve)


def check_host(host: str, keys: int) -> None:
    """Without keys anyone who can reach the port could ask, so only loopback is allowed."""
    from rag.serve.auth import is_loopback

    if keys == 0 and not is_loopback(host):
        raise InputError(f"{LOCAL_ONLY}; refusing to listen on {host}. Set RAG_API_KEYS "
                         "(\"name:token,name2:token2\") or use --host 127.0.0.1.")


def run_serve(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise InputError(f"--port {args.port} must be between 1 and 65535.")
    if args.concurrency is not None and not 1 <= args.concurrency <= 64:
        raise InputError(f"--concurrency {args.concurrency} must be between 1 and 64.")
    import uvicorn

    from rag.access.keys import ApiKeys
    from rag.access.ratelimit import RateLimiter, default_state_path, rate_limit_per_minute
    from rag.audit.store import AuditStore
    from rag.index.load import load_index
    from rag.providers.registry import get_llm
    from rag.serve.app import create_app
    from rag.serve.auth import Access
    from rag.serve.runner import DEFAULT_CONCURRENCY, REMOTE_CONCURRENCY
    from rag.serve.service import Service

    keys = ApiKeys.load()
    check_host(args.host, len(keys))
    settings = settings_from(args)
    per_minute = rate_limit_per_minute(settings_file=settings.settings_file)
    llm = get_llm(settings)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s: %(message)s")
    if len(keys) == 0:
        print(LOCAL_ONLY, file=sys.stderr, flush=True)
    index, _ = load_index(settings, progress=terminal_progress)
    limiter = RateLimiter(default_state_path(settings.audit_db), per_minute) \
        if per_minute > 0 else None
    audit = AuditStore(settings.audit_db)
    concurrency = args.concurrency or (DEFAULT_CONCURRENCY if llm is None else REMOTE_CONCURRENCY)
    try:
        service = Service.build(settings, index, llm, audit)
        app = create_app(service, Access(keys, limiter), concurrency=concurrency,
                         on_shutdown=audit.close)
        print(f"{settings.resolved_title}: {len(index.chunks)} chunks, {len(keys)} API keys, "
              f"{per_minute or 'no'} questions per minute per client; "
              f"http://{args.host}:{args.port}/docs", file=sys.stderr, flush=True)
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                    access_log=args.log_level in ("info", "debug"), server_header=False)
    finally:
        audit.close()  # a no-op after the app's shutdown closed it
    return 0
