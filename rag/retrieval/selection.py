"""A pasted passage scored against the question like a book chunk, so it can stand in for one."""

from __future__ import annotations

import uuid

import numpy as np

from rag.book.chunk import ChunkerSettings, chunk_section
from rag.errors import RagError
from rag.index.build import BookIndex
from rag.index.lexical import tokenize
from rag.retrieval.hybrid import blend_scores
from rag.types import Chunk, Hit, Section

# The user chose this passage: it also counts as relevant when it holds this share of the
# question's terms, since the blend's weights were tuned for ranking a whole book.
SELECTION_TERM_SHARE = 0.5


def score_selection(index: BookIndex, selection: str, query: str, w_dense: float,
                    threshold: float) -> Hit:
    """The pasted passage as one synthetic chunk, scored against the query like a book chunk:
    dense = best cosine over the passage's embedder-sized pieces; the lexical part is the share of
    query terms the passage contains (BM25 needs a corpus, a single passage has none)."""
    section = Section("", "selection", "", "Selected text", "Selected text", ("Selected text",),
                      False, selection, None, "")
    embedder = index.embedder
    pieces = chunk_section(section, "selection", ChunkerSettings(embedder.max_tokens, 0.0),
                           embedder.count_tokens_batch)
    try:
        vectors = embedder.embed_documents([p.text for p in pieces])
        dense = float(np.clip((vectors @ embedder.embed_query(query)).max(), 0.0, 1.0))
    except RagError:
        dense = 0.0
    terms = set(tokenize(query))
    matched = len(terms & set(tokenize(selection)))
    lexical = matched / len(terms) if terms else 0.0
    blended = float(blend_scores(np.array([dense]), np.array([lexical]), w_dense)[0])
    chunk = Chunk(chunk_id=str(uuid.uuid5(uuid.NAMESPACE_OID, selection)), text=selection,
                  module_id="", chapter_id="selection", section_id="",
                  section_title="Selected text",
                  chapter_title="Selected text", heading_path=("Selected text",), stable=False,
                  page=None, ordinal=0, token_count=sum(p.token_count for p in pieces),
                  source="selection")
    # The user chose this passage: it also counts as relevant when it holds most of the
    # question's terms, since the blend's weights were tuned for ranking a whole book.
    passed = blended >= threshold or lexical >= SELECTION_TERM_SHARE
    return Hit(chunk=chunk, dense=round(dense, 6), bm25_raw=float(matched),
               bm25=round(lexical, 6), blended=round(blended, 6), rank=1, passed=passed,
               selected=True, reason="")
