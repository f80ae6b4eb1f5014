"""The server's log filters: access lines without query strings or unknown paths (tokens), and a
repeated message held back and counted instead of filling the disk."""

from __future__ import annotations

import io
import logging

from rag.access.keys import ApiKeys
from rag.serve.app import create_app
from rag.serve.auth import Access
from rag.serve.logs import API_PATHS, OTHER_PATH, RedactPaths, RepeatLimit, shown_path
from rag.serve.service import Service


def test_paths_are_shown_without_their_query_and_only_when_they_are_the_api():
    assert shown_path("/v1/ask?token=abc") == "/v1/ask"
    assert shown_path("/docs-assets/swagger-ui.css") == "/docs-assets/swagger-ui.css"
    assert shown_path("/sk-secret-token") == OTHER_PATH
    assert shown_path("/v1/sk-secret-token/ask") == OTHER_PATH


def test_every_route_of_the_app_is_shown(sample_index, sample_settings):
    app = create_app(Service.build(sample_settings, sample_index), Access(ApiKeys({})))
    paths = set(app.openapi()["paths"]) | {"/docs", "/redoc", "/openapi.json"}
    routes = {p for p in paths if not p.startswith("/docs-assets")}
    assert routes <= API_PATHS, routes - API_PATHS


def test_an_access_record_loses_its_query_string():
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1,
                               '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5", "GET", "/v1/health?token=abc", "1.1", 200), None)
    RedactPaths().filter(record)
    assert "abc" not in record.getMessage() and "/v1/health" in record.getMessage()


def test_a_storm_of_one_message_is_held_back_and_counted():
    clock = [0.0]
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RepeatLimit(limit=5, window_s=60, clock=lambda: clock[0]))
    logger = logging.getLogger("test.storm")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        for _ in range(10_000):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                logger.exception("socket.accept() out of system resource")
        clock[0] += 61
        logger.error("socket.accept() out of system resource")
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    assert text.count("socket.accept()") == 6 and text.count("Traceback") == 5
    assert "9995 more like this in the last minute were not logged" in text
    assert len(text) < 5_000
