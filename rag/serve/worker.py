"""One answering process of `rag serve`: its own Pipeline over a read-only view of the index,
its own audit segment, and `threads` questions at once; jobs arrive and results leave over one
multiprocessing connection (rag.serve.pool is the other end).

Answers run here rather than in the server's process because a question can hold the
interpreter lock for seconds (a backtracking regex in C never releases it): in a thread of the
server's process that froze every connection, /v1/health included (issue 43: 20.8 s). Here it
costs one process, which the server stops once the question is over its budget.

Messages in:  ("answer", job, AskRequest, client, stream) | ("search", job, question, top_k)
              | ("gone", job) the client left | ("stop",) finish the jobs running, then exit.
Messages out: ("ready", 0, pid) | ("failed", 0, message) start-up failed | ("delta", job, text)
              | ("replace", job, text) | ("done", job, result) | ("error", job, message)."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from rag.config import Settings
from rag.errors import RagError

# Jobs carry an AskRequest: imported before "ready", not by the first question's unpickling
# (1-3 s on a busy machine, which once put that question over its deadline).
from rag.serve.models import AskRequest  # noqa: F401

log = logging.getLogger("rag.serve")
DEFAULT_BUILDER = "rag.serve.service:service_for_worker"


class Outbox:
    """conn.send for several threads (a message is never interleaved with another)."""

    def __init__(self, conn: Connection) -> None:
        self.conn, self._lock = conn, threading.Lock()

    def send(self, message: tuple) -> None:
        with self._lock:
            try:
                self.conn.send(message)
            except (OSError, ValueError):
                pass  # the server has gone; the job's audit row is already spooled


class PipeDelivery:
    """What Service.answer streams into, here: each delta sent to the server as it is written,
    and whether the client has left (the audit row then says so)."""

    def __init__(self, outbox: Outbox, job: int, gone: threading.Event) -> None:
        self.outbox, self.job, self.disconnected = outbox, job, gone

    def put_delta(self, text: str) -> None:
        if text:
            self.outbox.send(("delta", self.job, text))

    def put_replace(self, text: str) -> None:
        self.outbox.send(("replace", self.job, text))


def load_builder(path: str) -> Callable[[Settings], Any]:
    """"module:function", the function building the worker's service from settings."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def run_job(service: Any, outbox: Outbox, message: tuple, gone: threading.Event) -> None:
    kind, job = message[0], message[1]
    try:
        if kind == "answer":
            request, client, stream = message[2:]
            delivery = PipeDelivery(outbox, job, gone) if stream else None
            result = service.answer(request, client, delivery)
        else:
            result = service.search(*message[2:])
    except Exception as e:  # noqa: BLE001 - reported to the server, which answers 500
        log.exception("question %s failed in the answering process", job)
        outbox.send(("error", job, f"{type(e).__name__}: {e}"))
    else:
        outbox.send(("done", job, result))


def serve_jobs(conn: Connection, builder: str, settings: Settings, threads: int) -> None:
    """The worker process's main function (started by rag.serve.pool with the spawn method)."""
    # The server stops its workers itself ("stop", or a kill when over budget): a Ctrl-C or a
    # SIGTERM to the process group must not end a question half-logged.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    outbox = Outbox(conn)
    try:
        service = load_builder(builder)(settings)
    except RagError as e:
        outbox.send(("failed", 0, str(e)))
        return
    except Exception as e:  # noqa: BLE001 - the server reports it and does not start
        log.exception("the answering process could not start")
        outbox.send(("failed", 0, f"{type(e).__name__}: {e}"))
        return
    outbox.send(("ready", 0, os.getpid()))
    gone: dict[int, threading.Event] = {}
    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="folio-answer") as pool:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break  # the server has gone: finish what runs, then exit
            if message[0] == "stop":
                break
            if message[0] == "gone":
                gone.get(message[1], threading.Event()).set()
                continue
            event = gone[message[1]] = threading.Event()
            future = pool.submit(run_job, service, outbox, message, event)
            future.add_done_callback(lambda _, job=message[1]: gone.pop(job, None))
    close = getattr(service, "close", None)
    if callable(close):
        close()
