"""Qdrant behind one small interface: embedded local store by default, a server with QDRANT_URL."""

from __future__ import annotations

import atexit
import threading
from pathlib import Path

import numpy as np

from rag.errors import IndexError_

UPSERT_BATCH = 256
_OPEN: dict[str, VectorStore] = {}
_OPEN_LOCK = threading.Lock()


class VectorStore:
    def __init__(self, client, where: str) -> None:
        self._client = client
        self.where = where
        self._lock = threading.Lock()  # local mode is plain Python: keep calls one at a time

    @property
    def is_server(self) -> bool:
        return self.where.startswith("http")

    def _call(self, what: str, fn, *args, **kwargs):
        try:
            with self._lock:
                return fn(*args, **kwargs)
        except IndexError_:
            raise
        except Exception as e:  # qdrant raises transport, HTTP and value errors alike
            raise IndexError_(f"Qdrant at {self.where} failed to {what}: {e}") from e

    def has_collection(self, name: str) -> bool:
        return bool(self._call("list collections", self._client.collection_exists, name))

    def create(self, name: str, dim: int) -> None:
        from qdrant_client import models

        self._call("create a collection", self._client.create_collection, name,
                   vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE))

    def drop(self, name: str) -> None:
        if self.has_collection(name):
            self._call("delete a collection", self._client.delete_collection, name)

    def count(self, name: str) -> int:
        if not self.has_collection(name):
            return 0
        return int(self._call("count points", self._client.count, name).count)

    def upsert(self, name: str, ids: list[str], vectors: np.ndarray, payloads: list[dict]) -> None:
        from qdrant_client import models

        for start in range(0, len(ids), UPSERT_BATCH):
            end = start + UPSERT_BATCH
            batch = models.Batch(ids=ids[start:end], vectors=vectors[start:end].tolist(),
                                 payloads=payloads[start:end])
            self._call("store vectors", self._client.upsert, name, points=batch, wait=True)

    def delete(self, name: str, ids: list[str]) -> None:
        from qdrant_client import models

        if ids:
            self._call("delete vectors", self._client.delete, name,
                       points_selector=models.PointIdsList(points=ids), wait=True)

    def search(self, name: str, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        response = self._call("search", self._client.query_points, name, query=vector.tolist(),
                              limit=limit, with_payload=False, with_vectors=False)
        return [(str(p.id), float(p.score)) for p in response.points]

    def fetch_vectors(self, name: str, ids: list[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        records = self._call("fetch vectors", self._client.retrieve, name, ids=ids,
                             with_payload=False, with_vectors=True)
        return {str(r.id): np.asarray(r.vector, dtype=np.float32) for r in records}

    def close(self) -> None:
        with _OPEN_LOCK:
            _OPEN.pop(self.where, None)
        try:
            self._client.close()
        except Exception:  # closing a broken client must not hide the original problem
            pass


def open_store(index_dir: Path, url: str = "", api_key: str = "", timeout: int = 5
               ) -> VectorStore:
    """One client per location per process: Qdrant's local mode refuses a second one."""
    where = url or str((Path(index_dir) / "qdrant").resolve())
    with _OPEN_LOCK:
        if where in _OPEN:
            return _OPEN[where]
        from qdrant_client import QdrantClient

        try:
            if url:
                client = QdrantClient(url=url, api_key=api_key or None, timeout=timeout)
            else:
                Path(where).mkdir(parents=True, exist_ok=True)
                client = QdrantClient(path=where)
        except RuntimeError as e:
            if "already accessed" in str(e):
                raise IndexError_(
                    f"The index at {where} is in use by another Folio process (the app or a "
                    "CLI command). Qdrant's embedded store allows one process at a time: stop "
                    "the other process, use another --index DIR, or run a Qdrant server and set "
                    "QDRANT_URL.") from e
            raise IndexError_(f"Could not open the index at {where}: {e}") from e
        except Exception as e:
            raise IndexError_(f"Could not connect to Qdrant at {where}: {e}") from e
        _OPEN[where] = VectorStore(client, where)
        return _OPEN[where]


@atexit.register
def close_all() -> None:
    """Close clients before interpreter teardown, where Qdrant's own __del__ fails noisily."""
    for store in list(_OPEN.values()):
        store.close()
