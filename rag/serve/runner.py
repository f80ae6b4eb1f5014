"""Running the synchronous pipeline without blocking the event loop: at most `concurrency`
questions in worker threads at once, at most `max_waiting` more waiting for a thread (beyond
that, 503 and Retry-After), and streamed answers carried on to the end even after their client
has gone, so every question asked is answered and logged."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

import anyio

from rag.serve.errors import INTERNAL_MESSAGE, ApiError
from rag.serve.stream import Delivery, Event, EventStream

log = logging.getLogger("rag.serve")
# Offline answers are CPU-bound, so one thread per core: with bench/load.py (100 clients, 60 s,
# two cores shared with other work) 2 threads answered 29.9/s at p95 3.6 s, 4 threads 26.0/s at
# p95 4.5 s. Remote answers mostly wait on the network.
DEFAULT_CONCURRENCY = os.cpu_count() or 2
REMOTE_CONCURRENCY = 32  # with Claude answering, a thread spends seconds waiting on the network
DEFAULT_MAX_WAITING = 512
DRAIN_S = 30.0  # at shutdown, how long unfinished streamed answers may still take


class Runner:
    """Created at start-up inside the server's event loop (its limiter belongs to that loop)."""

    def __init__(self, concurrency: int = DEFAULT_CONCURRENCY,
                 max_waiting: int = DEFAULT_MAX_WAITING) -> None:
        self.concurrency, self.max_waiting = max(1, concurrency), max(0, max_waiting)
        self.capacity = anyio.CapacityLimiter(self.concurrency)
        self.tasks: set[asyncio.Task] = set()

    def check_room(self) -> None:
        """Refuse before queueing when too many questions already wait for a thread."""
        if self.capacity.statistics().tasks_waiting >= self.max_waiting:
            raise ApiError(503, "server_busy", f"The server is answering {self.concurrency} "
                           f"questions with {self.max_waiting} more waiting; try again in a "
                           "second.", {"Retry-After": "1"})

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """fn(*args) in a worker thread; a cancelled caller still waits for it to finish."""
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.capacity)

    def stream(self, fn: Callable[..., dict[str, Any]], *args: Any) -> EventStream:
        """fn(*args, delivery) in a worker thread, its deltas and result as Server-Sent Events.
        The work is its own task, so a client that disconnects does not cancel it."""
        delivery = Delivery(asyncio.get_running_loop())

        async def work() -> None:
            try:
                record = await self.run(fn, *args, delivery)
            except Exception:
                log.exception("a streamed answer failed")
                delivery.put_end(Event("error", {"error": "internal_error",
                                                 "message": INTERNAL_MESSAGE}))
            else:
                delivery.put_end(Event("final", record))

        task = asyncio.create_task(work())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return EventStream(delivery)

    async def drain(self, timeout_s: float = DRAIN_S) -> None:
        """Let streamed answers still running finish (and be logged) before the audit closes."""
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout_s)
