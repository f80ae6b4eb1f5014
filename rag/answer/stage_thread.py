"""Stages run on daemon threads, so work abandoned over its budget never delays exit."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


def run_in_daemon(fn: Callable[[], Any]) -> Future:
    """Run fn on a daemon thread. A stage over budget is abandoned, and concurrent.futures joins
    its workers at exit: an abandoned call to a silent server held `rag ask` for 105 s."""
    future: Future = Future()

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the waiting caller as-is
            future.set_exception(e)

    threading.Thread(target=work, name="folio-stage", daemon=True).start()
    return future
