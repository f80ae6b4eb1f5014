"""`serve`: the HTTP API (FastAPI on uvicorn), one Pipeline per process."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from rag.commands.common import add_book_args, settings_from, terminal_progress
from rag.errors import InputError
from rag.serve.server import DEFAULT_HEAD_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS

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
                       help="questions answered at once, in answering processes (default: one "
                            "per CPU core for the offline answerer, 32 with an LLM)")
    serve.add_argument("--workers", type=int, default=1, metavar="N",
                       help="worker processes (default 1); they share the rate limits and "
                            "the audit log")
    serve.add_argument("--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS,
                       metavar="N", help="open connections at once; one more gets 503 "
                       f"(default {DEFAULT_MAX_CONNECTIONS}, lowered to the file-descriptor "
                       "limit)")
    serve.add_argument("--head-timeout", type=float, default=DEFAULT_HEAD_TIMEOUT_S,
                       metavar="S", help="seconds a connection may take to send its request "
                       f"line and headers (default {DEFAULT_HEAD_TIMEOUT_S:g})")
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
    if not 1 <= args.workers <= 16:
        raise InputError(f"--workers {args.workers} must be between 1 and 16.")
    if not 1 <= args.max_connections <= 100_000:
        raise InputError(f"--max-connections {args.max_connections} must be between 1 and "
                         "100000.")
    if not 0.1 <= args.head_timeout <= 600:
        raise InputError(f"--head-timeout {args.head_timeout:g} must be between 0.1 and 600 s.")
    import uvicorn

    from rag.access.keys import ApiKeys
    from rag.index.load import load_index
    from rag.index.vectors import close_all
    from rag.serve.factory import ENV, build_app, environment_spec
    from rag.serve.server import Limits, uvicorn_options

    keys = ApiKeys.load()
    check_host(args.host, len(keys))
    settings = settings_from(args)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s: %(message)s")
    if len(keys) == 0:
        print(LOCAL_ONLY, file=sys.stderr, flush=True)
    limits = Limits(args.max_connections, args.head_timeout)
    run = {"host": args.host, "port": args.port,
           **uvicorn_options(limits, args.log_level, args.log_level in ("info", "debug"))}
    if args.workers == 1:
        app, describe = build_app(settings, args.concurrency)
        print(f"{describe}; http://{args.host}:{args.port}/docs", file=sys.stderr, flush=True)
        uvicorn.run(app, **run)
        return 0
    # Several worker processes: the index is brought up to date once, here, then each worker
    # opens it (the first holds the embedded store, the others search read-only copies); rate
    # limits and the audit are shared through files, so they hold across the workers.
    load_index(settings, progress=terminal_progress)
    close_all()
    os.environ[ENV] = environment_spec(settings, args.concurrency, limits)
    print(f"{args.workers} worker processes: http://{args.host}:{args.port}/docs",
          file=sys.stderr, flush=True)
    uvicorn.run("rag.serve.factory:app_from_environment", factory=True, workers=args.workers,
                **run)
    return 0
