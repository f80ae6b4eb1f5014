"""A loopback stand-in for Cohere's POST /v2/embed and POST /v2/rerank, speaking the v2 wire
format.

Vectors are a hashed bag of words, so texts sharing words score higher, and are deliberately not
unit length so tests can see that the embedder normalises them. A rerank relevance score is the
share of the query's distinct words a document holds, results sorted best first as Cohere does.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.loopback import LoopbackServer, Plan, Received, send_json

MAX_TEXTS = 96
MAX_DOCUMENTS = 1000
INPUT_TYPES = ("search_document", "search_query", "classification", "clustering", "image")
TRUNCATE = ("NONE", "START", "END")
ERROR_MESSAGES = {
    400: "invalid request",
    401: "invalid api token",
    403: "forbidden",
    429: "You are using a Trial key, which is limited to 100 API calls / minute.",
    500: "internal server error, this has been reported to our developers",
    503: "service unavailable",
}


def bag_of_words(text: str, dim: int) -> list[float]:
    """Each lower-cased word adds +-1 to a dimension picked by its hash."""
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        index = int.from_bytes(digest[:4], "big") % dim
        vector[index] += 1.0 if digest[4] % 2 else -1.0
    return vector


class CohereServer(LoopbackServer):
    def __init__(self, dim: int = 1024) -> None:
        super().__init__()
        self.dim = dim

    @property
    def embed_requests(self) -> list[Received]:
        return [r for r in self.requests if r.path == "/v2/embed"]

    @property
    def rerank_requests(self) -> list[Received]:
        return [r for r in self.requests if r.path == "/v2/rerank"]

    def respond(self, handler: BaseHTTPRequestHandler, request: Received, plan: Plan) -> None:
        if plan.status != 200:
            body = plan.body or {"id": str(uuid.uuid4()),
                                 "message": ERROR_MESSAGES.get(plan.status, "error")}
            send_json(handler, plan.status, body, plan.headers)
        elif request.path not in ("/v2/embed", "/v2/rerank"):
            send_json(handler, 404, {"message": f"route {request.path} not found"})
        elif not request.headers.get("authorization", "").startswith("Bearer "):
            send_json(handler, 401, {"message": "no api key supplied"})
        elif request.path == "/v2/rerank":
            problem = self._invalid_rerank(request.body)
            if problem:
                send_json(handler, 400, {"id": str(uuid.uuid4()), "message": problem})
            else:
                send_json(handler, 200, plan.body or self._rerank(request.body), plan.headers)
        elif problem := self._invalid(request.body):
            send_json(handler, 400, {"id": str(uuid.uuid4()), "message": problem})
        else:
            send_json(handler, 200, plan.body or self._embed(request.body), plan.headers)

    def _invalid(self, body: Any) -> str | None:
        if not isinstance(body, dict) or not body.get("model"):
            return "invalid request: model is required"
        texts = body.get("texts")
        if not isinstance(texts, list) or not texts:
            return "invalid request: texts must be a non-empty list"
        if len(texts) > MAX_TEXTS:
            return (f"invalid request: total number of texts must be at most {MAX_TEXTS} "
                    f"- received {len(texts)}")
        if body.get("input_type") not in INPUT_TYPES:
            return f"invalid request: input_type must be one of {', '.join(INPUT_TYPES)}"
        if body.get("embedding_types", ["float"]) != ["float"]:
            return "this fake only serves float embeddings"
        if body.get("truncate", "END") not in TRUNCATE:
            return "invalid request: truncate must be NONE, START or END"
        return None

    def _embed(self, body: dict[str, Any]) -> dict[str, Any]:
        texts: list[str] = body["texts"]
        words = sum(len(t.split()) for t in texts)
        return {
            "id": str(uuid.uuid4()),
            "embeddings": {"float": [bag_of_words(t, self.dim) for t in texts]},
            "texts": texts,
            "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": words}},
            "response_type": "embeddings_by_type",
        }

    def _invalid_rerank(self, body: Any) -> str | None:
        if not isinstance(body, dict) or not body.get("model"):
            return "invalid request: model is required"
        if not isinstance(body.get("query"), str) or not body["query"].strip():
            return "invalid request: query must be a non-empty string"
        documents = body.get("documents")
        if not isinstance(documents, list) or not documents or \
                not all(isinstance(d, str) for d in documents):
            return "invalid request: documents must be a non-empty list of strings"
        if len(documents) > MAX_DOCUMENTS:
            return f"invalid request: at most {MAX_DOCUMENTS} documents"
        top_n = body.get("top_n")
        if top_n is not None and (not isinstance(top_n, int) or top_n < 1):
            return "invalid request: top_n must be a positive integer"
        return None

    def _rerank(self, body: dict[str, Any]) -> dict[str, Any]:
        query = set(re.findall(r"\w+", body["query"].lower()))
        scores = [len(query & set(re.findall(r"\w+", d.lower()))) / max(len(query), 1)
                  for d in body["documents"]]
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        order = order[: body.get("top_n") or len(order)]
        return {"id": str(uuid.uuid4()),
                "results": [{"index": i, "relevance_score": scores[i]} for i in order],
                "meta": {"api_version": {"version": "2"},
                         "billed_units": {"search_units": 1}}}
