"""The server's side of its answering processes (rag.serve.worker): start them, hand each free
slot one question, relay streamed text, and stop and replace a process whose question runs over
its budget, so no question can hold the server (its event loop never runs an answer).

Hand-written over multiprocessing connections rather than a library pool: concurrent.futures
and loky cannot stop one task, and pebble's ProcessPool stops a task over its timeout but
cannot stream a task's output or tell it that its client left; those three are what a streamed,
audited answer needs."""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from rag.config import Settings
from rag.errors import RagError
from rag.serve.stream import Delivery
from rag.serve.worker import DEFAULT_BUILDER, serve_jobs

log = logging.getLogger("rag.serve")
START_TIMEOUT_S = 300.0  # loading the index and MiniLM: 6-20 s here, minutes on a cold disk
STOP_TIMEOUT_S = 30.0
RESTART_PAUSE_S = 1.0  # between failed restarts, so a broken index does not spin a core


class WorkerFailed(RagError):
    """An answering process could not start, or stopped with questions on it."""


class Abandoned(Exception):
    """The question's process was stopped: it ran over its budget (`over_budget`), or another
    question on the same process did, or the process died; `reason` says it in words."""

    def __init__(self, over_budget: bool, reason: str) -> None:
        super().__init__(reason)
        self.over_budget, self.reason = over_budget, reason


@dataclass(eq=False)
class Job:
    id: int
    future: asyncio.Future
    delivery: Delivery | None = None
    timer: asyncio.TimerHandle | None = None


@dataclass(eq=False)
class Worker:
    process: multiprocessing.Process
    conn: Any
    pid: int = 0
    alive: bool = True
    jobs: dict[int, Job] = field(default_factory=dict)
    outbox: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)

    def send(self, message: tuple) -> None:
        """Queued for this worker's sender thread: the event loop never waits on a pipe."""
        self.outbox.put(message)


class ProcessPool:
    """`processes` answering processes of `threads` questions each."""

    def __init__(self, settings: Settings, processes: int, threads: int = 1,
                 builder: str = DEFAULT_BUILDER, deadline_s: float | None = None) -> None:
        self.settings, self.builder = settings, builder
        self.processes, self.threads = max(1, processes), max(1, threads)
        self.deadline_s = deadline_s or settings.budget_total_s + 1.0
        self.workers: list[Worker] = []
        self._ids = itertools.count(1)
        self._context = multiprocessing.get_context("spawn")  # fork after ONNX threads is unsafe
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: asyncio.Queue[Worker] | None = None
        self.waiting = 0
        self.restarts = 0
        self._closing = False

    # -- start and stop ----------------------------------------------------------------------

    def start(self) -> None:
        """Start every process and wait until each has its index open (before serving)."""
        started = [self._spawn() for _ in range(self.processes)]
        try:
            self.workers = [self._wait_ready(w) for w in started]
        except WorkerFailed:
            for worker in started:
                worker.process.kill()
            raise

    def _spawn(self) -> Worker:
        mine, theirs = self._context.Pipe()
        process = self._context.Process(
            target=serve_jobs, args=(theirs, self.builder, self.settings, self.threads),
            name="folio-answerer", daemon=True)
        process.start()
        theirs.close()
        return Worker(process, mine)

    def _wait_ready(self, worker: Worker) -> Worker:
        if not worker.conn.poll(START_TIMEOUT_S):
            worker.process.kill()
            raise WorkerFailed(f"An answering process did not start within "
                               f"{START_TIMEOUT_S:.0f} s.")
        try:
            kind, _, detail = worker.conn.recv()
        except (EOFError, OSError):
            kind, detail = "failed", f"it exited with code {worker.process.exitcode}"
        if kind != "ready":
            raise WorkerFailed(f"An answering process could not start: {detail}")
        worker.pid = detail
        return worker

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Inside the server's event loop: start relaying, open every slot."""
        self._loop, self._slots = loop, asyncio.Queue()
        for worker in self.workers:
            self._relay(worker)

    def _relay(self, worker: Worker) -> None:
        threading.Thread(target=self._read, args=(worker,), daemon=True,
                         name=f"folio-read-{worker.pid}").start()
        threading.Thread(target=self._write, args=(worker,), daemon=True,
                         name=f"folio-write-{worker.pid}").start()
        for _ in range(self.threads):
            self._slots.put_nowait(worker)

    async def close(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Let the questions running finish (their rows reach the audit), then stop."""
        self._closing = True
        for worker in self.workers:
            worker.send(("stop",))
        deadline = time.monotonic() + timeout_s
        for worker in self.workers:
            await asyncio.to_thread(worker.process.join, max(0.1, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()

    # -- the relay threads -------------------------------------------------------------------

    def _write(self, worker: Worker) -> None:
        while True:
            message = worker.outbox.get()
            try:
                worker.conn.send(message)
            except (OSError, ValueError):
                return  # the process has gone; its reader reports it
            if message[0] == "stop":
                return

    def _read(self, worker: Worker) -> None:
        while True:
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):
                self._call(self._lost, worker, f"exited with code {worker.process.exitcode}")
                return
            self._call(self._receive, worker, message)

    def _call(self, fn, *args: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            pass  # the loop is closed: the server has stopped

    # -- on the event loop -------------------------------------------------------------------

    def check_room(self, max_waiting: int) -> bool:
        return self.waiting < max_waiting

    async def submit(self, message: tuple, delivery: Delivery | None = None) -> Any:
        """("answer" | "search", *arguments) on the first free slot; its result, or Abandoned
        when it ran over the deadline, or WorkerFailed when its process died."""
        self.waiting += 1
        try:
            while not (worker := await self._slots.get()).alive:
                pass  # a slot of a process stopped since: its replacement brings its own
        finally:
            self.waiting -= 1
        job = Job(next(self._ids), self._loop.create_future(), delivery)
        worker.jobs[job.id] = job
        job.timer = self._loop.call_later(self.deadline_s, self._overrun, worker, job)
        if delivery is not None:
            delivery.on_disconnect = lambda: worker.send(("gone", job.id))
        worker.send((message[0], job.id, *message[1:]))
        return await asyncio.shield(job.future)  # a caller that leaves does not stop the job

    def _receive(self, worker: Worker, message: tuple) -> None:
        kind, job_id, payload = message
        job = worker.jobs.get(job_id)
        if job is None:
            return  # abandoned already
        if kind in ("delta", "replace"):
            if job.delivery is not None:
                (job.delivery.put_delta if kind == "delta" else job.delivery.put_replace)(payload)
            return
        del worker.jobs[job_id]
        job.timer.cancel()
        if kind == "done":
            job.future.set_result(payload)
        else:
            job.future.set_exception(WorkerFailed(payload))
        if worker.alive:
            self._slots.put_nowait(worker)

    def _overrun(self, worker: Worker, job: Job) -> None:
        log.warning("A question ran over %.1f s: its answering process (pid %s) is stopped and "
                    "replaced.", self.deadline_s, worker.pid)
        self._retire(worker, job, "over its time budget")

    def _lost(self, worker: Worker, why: str) -> None:
        if worker.alive and not self._closing:
            log.warning("An answering process (pid %s) %s; starting another.", worker.pid, why)
            self._retire(worker, None, why)

    def _retire(self, worker: Worker, overran: Job | None, why: str) -> None:
        """Stop the process, end its questions (the one over budget as Abandoned), replace it."""
        worker.alive = False
        worker.process.kill()
        worker.send(("stop",))  # ends its sender thread
        for job in worker.jobs.values():
            job.timer.cancel()
            reason = why if job is overran else f"its answering process was stopped ({why})"
            job.future.set_exception(Abandoned(job is overran, reason))
        worker.jobs.clear()
        self._loop.create_task(self._replace(worker))

    async def _replace(self, old: Worker) -> None:
        while not self._closing:
            try:
                new = await asyncio.to_thread(lambda: self._wait_ready(self._spawn()))
                break
            except WorkerFailed as e:
                log.error("%s; trying again.", e)
                await asyncio.sleep(RESTART_PAUSE_S)
        else:
            return
        await asyncio.to_thread(old.process.join, 5)
        self.workers[self.workers.index(old)] = new
        self.restarts += 1
        self._relay(new)
