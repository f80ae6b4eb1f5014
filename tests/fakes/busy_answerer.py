"""An answering process's service (rag.serve.worker builds it from "module:function") whose
question "spin" holds the interpreter lock for good, as a backtracking regex does (issue 43:
one question froze the API for 21 s), and answers any other question at once. The server's
robustness is what is under test, so the slowness must not depend on a regex that another change
makes linear; the real pipeline's own timing is tested with the real server."""

from __future__ import annotations

import os
import re
import uuid
from typing import Any

SPIN = "spin"
# (a|aa)+$ against "a" * 60 + "b": about 2**42 steps inside one call of the regex engine, which
# never releases the GIL (hours, stopped only by killing the process)
BACKTRACKING = re.compile(r"(a|aa)+$")


class BusyAnswerer:
    def answer(self, request: Any, client: str, sink: Any = None) -> dict[str, Any]:
        if request.question == SPIN:
            BACKTRACKING.match("a" * 60 + "b")
        text = f"answered {request.question!r} in process {os.getpid()}"
        if sink is not None:
            sink.put_delta(text)
        return {"query_id": str(uuid.uuid4()), "answer_text": text, "status": "success",
                "citations": [], "notices": [], "error_message": ""}

    def search(self, question: str, top_k: int | None = None) -> dict[str, Any]:
        return {"query": question, "hits": []}

    def close(self) -> None:
        pass


def busy_answerer(settings: Any) -> BusyAnswerer:
    return BusyAnswerer()
