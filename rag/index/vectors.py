"""Qdrant behind one small interface: embedded local store by default, a server with QDRANT_URL."""

from __future__ import annotations

import atexit
import logging
import threading
from pathlib import Path

import numpy as np

from rag.errors import BookIndexError
from rag.index.lexical import lexical_backend
from rag.index.local_store import IN_USE, open_local

UPSERT_BATCH = 256
SPARSE = "bm25"  # the named sparse vector that holds BM25 (sparse.py) beside the unnamed dense one
SCROLL_BATCH = 2048
TEXT_HASH = "text_hash"  # payload field: the hash of the text a point's vector was embedded from
_OPEN: dict[str, VectorStore] = {}
_OPEN_LOCK = threading.Lock()
LOG = logging.getLogger(__name__)


class LocalMatrix:
    """A local collection's vectors in one array, for exact search without Qdrant's overhead.

    Qdrant's local mode re-normalises every stored vector and sorts every score on each query:
    about 17 ms of CPU at 10,000 chunks, against under 1 ms for one matrix product here.
    """

    def __init__(self, ids: list[str], vectors: np.ndarray) -> None:
        self.ids = ids
        self.vectors = vectors
        self.rows = {cid: row for row, cid in enumerate(ids)}

    def search(self, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        if not self.ids or limit <= 0:
            return []
        norm = float(np.linalg.norm(vector))
        scores = self.vectors @ (np.asarray(vector, dtype=np.float32) / (norm or 1.0))
        k = min(limit, len(self.ids))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]
        return [(self.ids[i], float(scores[i])) for i in top]


class VectorStore:
    def __init__(self, client, where: str, copy_of: str = "", refusal: str = "") -> None:
        self._client = client
        self.where = where
        self.copy_of = copy_of  # a read-only copy of this embedded store (rag.index.snapshot)
        self.refusal = refusal  # why the copy cannot be written (default: IN_USE)
        self._lock = threading.Lock()  # local mode is plain Python: keep calls one at a time
        self._matrices: dict[str, LocalMatrix] = {}
        self._matrix_lock = threading.RLock()  # taken before _lock, never after

    @property
    def is_server(self) -> bool:
        return self.where.startswith("http")

    @property
    def lexical(self) -> str:
        """Where BM25 lives for this store: "qdrant" (sparse vectors) or "bm25s" (files)."""
        return lexical_backend(self.where if self.is_server else "")

    def call(self, what: str, method: str, *args, **kwargs):
        """Any client method under this store's lock and error wrapping (sparse.py's queries)."""
        return self._call(what, getattr(self._client, method), *args, **kwargs)

    def _call(self, what: str, fn, *args, **kwargs):
        try:
            with self._lock:
                return fn(*args, **kwargs)
        except BookIndexError:
            raise
        except Exception as e:  # qdrant raises transport, HTTP and value errors alike
            raise BookIndexError(f"Qdrant at {self.where} failed to {what}: {e}") from e

    def _writing(self, name: str) -> None:
        if self.copy_of:
            raise BookIndexError(self.refusal or IN_USE.format(where=self.copy_of))
        self._forget(name)

    def has_collection(self, name: str) -> bool:
        return bool(self._call("list collections", self._client.collection_exists, name))

    def _forget(self, name: str) -> None:
        with self._matrix_lock:
            self._matrices.pop(name, None)

    def _local_matrix(self, name: str) -> LocalMatrix:
        """Read once per process (a local store has one writer: this process), dropped on writes."""
        with self._matrix_lock:
            if name not in self._matrices:
                ids: list[str] = []
                rows: list[list[float]] = []
                offset = None
                while True:
                    records, offset = self._call(
                        "read vectors", self._client.scroll, name, limit=SCROLL_BATCH,
                        offset=offset, with_payload=False, with_vectors=True)
                    ids.extend(str(r.id) for r in records)
                    rows.extend(_dense(r.vector) for r in records)
                    if offset is None:
                        break
                matrix = np.asarray(rows, dtype=np.float32).reshape(len(ids), -1) if rows \
                    else np.zeros((0, 0), dtype=np.float32)
                self._matrices[name] = LocalMatrix(ids, np.ascontiguousarray(matrix))
            return self._matrices[name]

    def preload(self, name: str) -> None:
        """Read a local collection's vectors now rather than on the first query; best effort."""
        if not self.is_server:
            try:
                self._local_matrix(name)
            except BookIndexError:
                pass  # the first search reports it, and retrieval falls back to BM25

    def create(self, name: str, dim: int, sparse: bool = False) -> None:
        """A collection of cosine vectors; with `sparse`, also BM25 with Qdrant's IDF modifier."""
        from qdrant_client import models

        self._writing(name)
        sparse_config = {SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)}
        self._call("create a collection", self._client.create_collection, name,
                   vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
                   sparse_vectors_config=sparse_config if sparse else None)

    def has_sparse(self, name: str) -> bool:
        """Whether the collection exists and was created with the BM25 sparse vector."""
        if not self.has_collection(name):
            return False
        info = self._call("read a collection", self._client.get_collection, name)
        return SPARSE in (info.config.params.sparse_vectors or {})

    def drop(self, name: str) -> None:
        self._writing(name)
        if self.has_collection(name):
            self._call("delete a collection", self._client.delete_collection, name)

    def count(self, name: str) -> int:
        if not self.has_collection(name):
            return 0
        return int(self._call("count points", self._client.count, name).count)

    def stored_hashes(self, name: str) -> dict[str, str]:
        """Each point's id and the `text_hash` in its payload: the hash of the text its vector
        was embedded from ("" for a point written without one). What the store holds, whatever
        a manifest says: an ingest killed mid-write resumes from it."""
        hashes: dict[str, str] = {}
        offset = None
        while self.has_collection(name):
            records, offset = self._call(
                "read stored hashes", self._client.scroll, name, limit=SCROLL_BATCH,
                offset=offset, with_payload=[TEXT_HASH], with_vectors=False)
            hashes.update({str(r.id): str((r.payload or {}).get(TEXT_HASH, "")) for r in records})
            if offset is None:
                break
        return hashes

    def upsert(self, name: str, ids: list[str], vectors: np.ndarray, payloads: list[dict]) -> None:
        from qdrant_client import models

        self._writing(name)
        for start in range(0, len(ids), UPSERT_BATCH):
            end = start + UPSERT_BATCH
            batch = models.Batch(ids=ids[start:end], vectors=vectors[start:end].tolist(),
                                 payloads=payloads[start:end])
            self._call("store vectors", self._client.upsert, name, points=batch, wait=True)
        self._forget(name)

    def delete(self, name: str, ids: list[str]) -> None:
        from qdrant_client import models

        if ids:
            self._writing(name)
            self._call("delete vectors", self._client.delete, name,
                       points_selector=models.PointIdsList(points=ids), wait=True)
            self._forget(name)

    def search(self, name: str, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """(chunk_id, cosine) best first; exact in both modes."""
        if not self.is_server:
            return self._local_matrix(name).search(vector, limit)
        response = self._call("search", self._client.query_points, name, query=vector.tolist(),
                              limit=limit, with_payload=False, with_vectors=False)
        return [(str(p.id), float(p.score)) for p in response.points]

    def fetch_vectors(self, name: str, ids: list[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        if not self.is_server:
            matrix = self._local_matrix(name)
            return {cid: matrix.vectors[matrix.rows[cid]].copy() for cid in ids
                    if cid in matrix.rows}
        records = self._call("fetch vectors", self._client.retrieve, name, ids=ids,
                             with_payload=False, with_vectors=True)
        return {str(r.id): np.asarray(_dense(r.vector), dtype=np.float32) for r in records}

    def close(self) -> None:
        with _OPEN_LOCK:
            if _OPEN.get(self.where) is self:
                _OPEN.pop(self.where, None)
        with self._matrix_lock:
            self._matrices.clear()
        try:
            self._client.close()
        except Exception:  # closing a broken client must not hide the original problem
            pass


def _dense(vector):
    """The unnamed dense vector of a record (a dict of vectors when a sparse one sits beside it)."""
    return vector[""] if isinstance(vector, dict) else vector


def open_store(index_dir: Path, url: str = "", api_key: str = "", timeout: int = 5,
               read_only: bool = False) -> VectorStore:
    """One client per location per process: Qdrant's local mode refuses a second one. With
    `read_only`, an embedded store held by another process, or in a folder this process cannot
    write, is searched through a copy."""
    where = url or str((Path(index_dir) / "qdrant").resolve())
    with _OPEN_LOCK:
        if where in _OPEN:
            return _OPEN[where]
        copy_of = ""
        if url:
            from qdrant_client import QdrantClient

            try:
                client = QdrantClient(url=url, api_key=api_key or None, timeout=timeout)
            except Exception as e:  # the client raises transport and value errors alike
                raise BookIndexError(f"Could not connect to Qdrant at {where}: {e}") from e
        else:
            client, copy_of, refusal = open_local(Path(where), read_only)
        _OPEN[where] = VectorStore(client, where, copy_of, refusal)
        return _OPEN[where]


@atexit.register
def close_all() -> None:
    """Close clients before interpreter teardown, where Qdrant's own __del__ fails noisily."""
    for store in list(_OPEN.values()):
        store.close()
