"""The hand-over between the pipeline's thread and a streamed response: bounded, never blocking
the pipeline, and marking the audit row when the client has gone."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import anyio
import pytest

from rag.access.keys import ApiKeys
from rag.audit.store import AuditStore
from rag.notices import CLIENT_DISCONNECTED
from rag.serve.app import create_app
from rag.serve.auth import Access
from rag.serve.errors import ApiError
from rag.serve.models import AskRequest
from rag.serve.runner import ThreadRunner
from rag.serve.service import Service
from rag.serve.stream import Delivery, Event, RequestAudit
from tests.builders import make_response


async def collect(delivery: Delivery) -> list[Event]:
    return [event async for event in delivery.events()]


def test_a_lagging_reader_gets_fewer_longer_deltas_and_nothing_is_lost():
    async def main() -> tuple[list[Event], float, int]:
        delivery = Delivery(asyncio.get_running_loop(), max_queued=4)
        pieces = [f"word{i} " for i in range(500)]

        def produce() -> float:  # the pipeline's side: nobody reads meanwhile
            started = time.perf_counter()
            for piece in pieces:
                delivery.put_delta(piece)
            delivery.put_end(Event("final", {"answer_text": "".join(pieces)}))
            return time.perf_counter() - started

        seconds = await anyio.to_thread.run_sync(produce)
        queued = delivery.queued()
        return await collect(delivery), seconds, queued

    events, seconds, queued = asyncio.run(main())
    assert queued <= 5  # 4 deltas and the final event, however many pieces were written
    assert seconds < 0.5  # the producer never waited for the reader
    deltas = [e.data["text"] for e in events if e.name == "delta"]
    assert "".join(deltas) == events[-1].data["answer_text"] and events[-1].name == "final"


def test_events_arrive_in_order_while_the_producer_runs():
    async def main() -> list[Event]:
        delivery = Delivery(asyncio.get_running_loop())

        def produce() -> None:
            for i in range(20):
                delivery.put_delta(f"{i},")
                time.sleep(0.002)
            delivery.put_end(Event("error", {"error": "internal_error", "message": "x"}))

        reading = asyncio.create_task(collect(delivery))
        await anyio.to_thread.run_sync(produce)
        return await reading

    events = asyncio.run(main())
    assert "".join(e.data["text"] for e in events[:-1]) == "".join(f"{i}," for i in range(20))
    assert events[-1].name == "error"


def test_sse_encoding_is_one_event_per_blank_line():
    raw = Event("delta", {"text": "two\nlines é"}).encode().decode()
    assert raw.startswith("event: delta\ndata: ") and raw.endswith("\n\n")
    assert json.loads(raw.split("data: ", 1)[1])["text"] == "two\nlines é"


def test_a_row_written_after_the_client_left_is_marked(tmp_path):
    delivery = Delivery(asyncio.new_event_loop())
    with AuditStore(tmp_path / "audit.duckdb") as store:
        audit = RequestAudit(store, delivery)
        kept = audit.record(make_response("asked while connected"), client_id="w")
        delivery.disconnected.set()
        gone = audit.record(make_response("asked, then the client left"), client_id="w")
        store.flush()
        codes = {log_id: [n["code"] for n in store.get_log(log_id)["notices"]]
                 for log_id in (kept, gone)}
    assert CLIENT_DISCONNECTED not in codes[kept] and CLIENT_DISCONNECTED in codes[gone]


class HeldService:
    """Answers only once released: the runner's queue is what is under test."""

    info, audit = None, None

    def __init__(self) -> None:
        self.release = threading.Event()

    def answer(self, request, client, sink=None) -> dict:
        self.release.wait(5)
        return {"answer_text": request.question}


def test_runner_refuses_with_503_when_too_many_wait():
    async def main() -> ApiError | None:
        held = HeldService()
        runner = ThreadRunner(held, concurrency=1, max_waiting=1)
        await runner.start()
        release = held.release
        first = asyncio.create_task(runner.answer(AskRequest(question="a?"), "c"))
        second = asyncio.create_task(runner.answer(AskRequest(question="b?"), "c"))
        await asyncio.sleep(0.2)  # one thread busy, one question waiting
        try:
            runner.check_room()
            return None
        except ApiError as e:
            return e
        finally:
            release.set()
            await asyncio.gather(first, second)

    error = asyncio.run(main())
    assert error is not None and error.status == 503 and error.headers["Retry-After"] == "1"


@pytest.fixture(scope="module")
def service(sample_index, sample_settings, tmp_path_factory):
    audit = AuditStore(tmp_path_factory.mktemp("slow-client") / "audit.duckdb")
    yield Service.build(sample_settings, sample_index, None, audit)
    audit.close()


def test_a_slow_client_does_not_hold_the_pipeline(service):
    """The ASGI app driven directly by a client that takes 2 s to accept each write: the answer
    is finished and logged while the first write is still waiting."""
    app = create_app(service, Access(ApiKeys({})))
    body = json.dumps({"question": "What is the zero moment point?", "stream": True,
                       "session_id": "slow-reader"}).encode()
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
             "http_version": "1.1", "method": "POST", "scheme": "http", "path": "/v1/ask",
             "raw_path": b"/v1/ask", "query_string": b"", "root_path": "",
             "headers": [(b"content-type", b"application/json"),
                         (b"content-length", str(len(body)).encode())],
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}
    written: list[bytes] = []
    logged: list[float] = []
    stop = threading.Event()

    def watch_audit(started: float) -> None:
        while not stop.is_set():
            service.audit.flush()
            if (service.audit.query_logs(limit=500)["session_id"] == "slow-reader").any():
                logged.append(time.perf_counter() - started)
                return
            time.sleep(0.05)

    async def main() -> None:
        finished = asyncio.Event()
        requests = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict:
            if requests:
                return requests.pop()
            await finished.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                await asyncio.sleep(2.0)  # a reader on a slow link
                written.append(message["body"])

        async with app.router.lifespan_context(app):
            await app(scope, receive, send)
            finished.set()

    watcher = threading.Thread(target=watch_audit, args=(time.perf_counter(),))
    watcher.start()
    try:
        asyncio.run(main())
    finally:
        stop.set()
        watcher.join()
    assert logged and logged[0] < 1.8  # before the first write (2 s) had been accepted
    assert b"event: final" in b"".join(written) and b"event: delta" in written[0]
