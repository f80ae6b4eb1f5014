"""Where questions are answered, never on the event loop: in answering processes
(PoolRunner, what `rag serve` uses) or in worker threads of this process (ThreadRunner, for an
app embedded in another process and for tests). Both refuse with 503 and Retry-After when
`max_waiting` questions already wait, and carry a streamed answer on to the end after its client
has gone, so every question asked is answered and logged.

Only the process runner can abandon a question that holds the interpreter lock: a thread cannot
be stopped, and while it runs a backtracking regex no other thread of its process runs either."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import anyio

from rag.config import Settings
from rag.serve.errors import INTERNAL_MESSAGE, ApiError
from rag.serve.models import AskRequest
from rag.serve.pool import Abandoned, ProcessPool, WorkerFailed
from rag.serve.service import BookInfo, Service, abandoned_record
from rag.serve.stream import Delivery, Event

log = logging.getLogger("rag.serve")
# Offline answers are CPU-bound, so one question at a time per core. Remote answers mostly wait
# on the network (Claude takes seconds), so many at once.
DEFAULT_CONCURRENCY = os.cpu_count() or 2
REMOTE_CONCURRENCY = 32
DEFAULT_MAX_WAITING = 512
DRAIN_S = 30.0  # at shutdown, how long unfinished streamed answers may still take


class BaseRunner:
    """What the endpoints call; subclasses say where `_answer` and `search` run."""

    info: BookInfo
    audit: Any = None  # this process's audit store (rows of abandoned questions), if any

    def __init__(self, concurrency: int, max_waiting: int) -> None:
        self.concurrency, self.max_waiting = max(1, concurrency), max(0, max_waiting)
        self.tasks: set[asyncio.Task] = set()

    def waiting(self) -> int:
        raise NotImplementedError

    @property
    def up(self) -> bool:
        return True

    def check_room(self) -> None:
        """Refuse before queueing when too many questions already wait."""
        if self.waiting() >= self.max_waiting:
            raise ApiError(503, "server_busy", f"The server is answering {self.concurrency} "
                           f"questions with {self.max_waiting} more waiting; try again in a "
                           "second.", {"Retry-After": "1"})

    async def answer(self, request: AskRequest, client: str) -> dict[str, Any]:
        return await self._answer(request, client, None)

    def answer_stream(self, request: AskRequest, client: str) -> Delivery:
        """The answer's events: text as it is written, then the record ("final"). The work is
        its own task, so a client that disconnects does not cancel it."""
        delivery = Delivery(asyncio.get_running_loop())

        async def work() -> None:
            try:
                record = await self._answer(request, client, delivery)
            except Exception:
                log.exception("a streamed answer failed")
                delivery.put_end(Event("error", {"error": "internal_error",
                                                 "message": INTERNAL_MESSAGE}))
            else:
                delivery.put_end(Event("final", record))

        task = asyncio.create_task(work())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return delivery

    async def _answer(self, request: AskRequest, client: str,
                      delivery: Delivery | None) -> dict[str, Any]:
        raise NotImplementedError

    async def search(self, question: str, top_k: int | None) -> dict[str, Any]:
        raise NotImplementedError

    async def start(self) -> None:
        """Inside the server's event loop, before the first request."""

    async def close(self, timeout_s: float = DRAIN_S) -> None:
        """Let streamed answers still running finish (and be logged)."""
        if self.tasks:
            await asyncio.wait(set(self.tasks), timeout=timeout_s)


class ThreadRunner(BaseRunner):
    """The service in at most `concurrency` threads of this process."""

    def __init__(self, service: Service, concurrency: int = DEFAULT_CONCURRENCY,
                 max_waiting: int = DEFAULT_MAX_WAITING) -> None:
        super().__init__(concurrency, max_waiting)
        self.service, self.info, self.audit = service, service.info, service.audit
        self.capacity: anyio.CapacityLimiter | None = None

    async def start(self) -> None:
        self.capacity = anyio.CapacityLimiter(self.concurrency)  # belongs to this loop

    def waiting(self) -> int:
        return self.capacity.statistics().tasks_waiting if self.capacity else 0

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.capacity)

    async def _answer(self, request: AskRequest, client: str,
                      delivery: Delivery | None) -> dict[str, Any]:
        return await self._run(self.service.answer, request, client, delivery)

    async def search(self, question: str, top_k: int | None) -> dict[str, Any]:
        return await self._run(self.service.search, question, top_k)


class PoolRunner(BaseRunner):
    """Questions in answering processes (rag.serve.pool); a question over its budget is
    abandoned with the pipeline's own timeout record, and its process replaced."""

    def __init__(self, pool: ProcessPool, info: BookInfo, settings: Settings, audit: Any = None,
                 max_waiting: int = DEFAULT_MAX_WAITING) -> None:
        super().__init__(pool.processes * pool.threads, max_waiting)
        self.pool, self.info, self.settings, self.audit = pool, info, settings, audit

    async def start(self) -> None:
        self.pool.attach(asyncio.get_running_loop())

    def waiting(self) -> int:
        return self.pool.waiting

    @property
    def up(self) -> bool:
        return any(w.alive for w in self.pool.workers)

    async def _answer(self, request: AskRequest, client: str,
                      delivery: Delivery | None) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            return await self._submit(("answer", request, client, delivery is not None),
                                      delivery)
        except Abandoned as e:
            record = await asyncio.to_thread(abandoned_record, self.settings, request, client,
                                             e.over_budget, e.reason, started, self.audit)
            if delivery is not None:
                delivery.put_replace(record["answer_text"])
            return record

    async def search(self, question: str, top_k: int | None) -> dict[str, Any]:
        try:
            return await self._submit(("search", question, top_k))
        except Abandoned as e:
            raise ApiError(503, "search_abandoned", f"The search was stopped ({e.reason}); "
                           "try again.", {"Retry-After": "1"}) from None

    async def _submit(self, message: tuple, delivery: Delivery | None = None) -> Any:
        try:
            return await self.pool.submit(message, delivery)
        except WorkerFailed as e:
            log.error("the answering process failed: %s", e)
            raise RuntimeError(str(e)) from None

    async def close(self, timeout_s: float = DRAIN_S) -> None:
        await super().close(timeout_s)
        await self.pool.close()
