"""BEIR loading, scoring and the benchmark on a tiny synthetic folder; a SciFact smoke run when its
index is already cached (building it embeds 10k chunks)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rag.__main__ import main
from rag.errors import BookIndexError, InputError
from rag.index.build import content_status
from rag.index.vectors import open_store
from rag.tuning.beir import (
    WEIGHTS,
    document_scores,
    load_beir,
    open_beir_index,
    rank_documents,
    run_benchmark,
    score_query,
)
from rag.tuning.metrics import ndcg_at, recall_at
from tests.builders import CountingEmbedder, shared_path

DOCS = {
    "d1": ("Sourdough starters", "A sourdough starter is a culture of wild yeast and lactic "
           "acid bacteria kept alive by regular feeding with flour and water."),
    "d2": ("Tide pools", "Tide pools form in rocky shores when the sea retreats; anemones, "
           "crabs and snails survive there between the tides."),
    "d3": ("Bicycle gears", "A derailleur moves the chain between sprockets so that a rider "
           "can keep a comfortable cadence on hills."),
    "d4": ("Volcanic soils", "Ash from eruptions weathers into fertile soils rich in minerals, "
           "which is why farms crowd the slopes of active volcanoes."),
    "d5": ("Glacier motion", " ".join(f"Observation {i}: the glacier advanced by basal sliding "
                                      f"and internal ice deformation at station {i}."
                                      for i in range(40))),  # several chunks
}
QUERIES = {"q1": "How do you keep a sourdough culture alive?",
           "q2": "Why are soils near volcanoes fertile?",
           "q3": "How do glaciers move?",
           "q4": "A query without judgements is dropped."}
QRELS = [("q1", "d1", 1), ("q2", "d4", 1), ("q3", "d5", 2), ("q3", "d2", 0)]


def write_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w") as f:
        for doc_id, (title, text) in DOCS.items():
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(root / "queries.jsonl", "w") as f:
        for qid, text in QUERIES.items():
            f.write(json.dumps({"_id": qid, "text": text, "metadata": {}}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{s}" for q, d, s in QRELS]
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return root


def test_load_beir(tmp_path):
    data = load_beir(write_beir(tmp_path / "tiny"), "test")
    assert data.name == "tiny" and len(data.corpus) == 5
    assert list(data.queries) == ["q1", "q2", "q3"]  # q4 has no judgement
    assert data.qrels["q3"] == {"d5": 2}  # zero scores are not relevant
    assert load_beir(tmp_path / "tiny", "test").corpus_hash == data.corpus_hash


def test_load_beir_errors_name_the_problem(tmp_path):
    root = write_beir(tmp_path / "tiny")
    with pytest.raises(InputError, match=r"missing .*qrels/train.tsv"):
        load_beir(root, "train")
    with open(root / "corpus.jsonl", "a") as f:
        f.write("{broken\n")
    with pytest.raises(InputError, match=r"corpus.jsonl, line 6: not valid JSON"):
        load_beir(root, "test")
    (root / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\n")
    with pytest.raises(InputError, match=r"test.tsv, line 2"):
        load_beir(root, "test")


def test_ndcg_and_recall_hand_computed():
    relevant = {"a": 2, "b": 1}
    assert ndcg_at(["a", "b", "c"], relevant) == pytest.approx(1.0)
    dcg = 1 / math.log2(3) * 2 + 1 / math.log2(4)
    assert ndcg_at(["c", "a", "b"], relevant) == pytest.approx(dcg / (2 + 1 / math.log2(3)))
    assert ndcg_at(["c"], relevant) == 0.0
    assert recall_at(["x", "b"], relevant) == 0.5
    assert recall_at(["x", "b"], relevant, k=1) == 0.0


def test_document_scores_take_the_best_chunk():
    docs, scores = document_scores(np.array(["d2", "d1", "d2"]),
                                   np.array([0.2, 0.5, 0.9], dtype=np.float32),
                                   np.array([1.0, 0.0, 0.0], dtype=np.float32),
                                   np.array([0.0, 1.0]))
    assert list(docs) == ["d1", "d2"]
    assert scores == pytest.approx(np.array([[0.0, 1.0], [0.5, 0.9]]))
    assert rank_documents(np.array(["b", "a", "c"]), np.array([0.5, 0.5, 0.9]), 2) == ["c", "a"]


def test_vectorised_query_scores_match_the_reference():
    rng = np.random.default_rng(3)
    docs = np.array(sorted(f"d{i:03d}" for i in range(150)))
    scores = rng.integers(0, 20, size=(4, 150)).astype(np.float32)  # many ties
    relevant = {"d007": 2, "d042": 1, "d149": 1, "x-not-in-pool": 1}
    ndcg, recall = score_query(docs, scores, relevant)
    for w in range(4):
        ranked = rank_documents(docs, scores[w], 100)
        assert ndcg[w] == pytest.approx(ndcg_at(ranked, relevant))
        assert recall[w] == pytest.approx(recall_at(ranked, relevant))


def test_benchmark_on_a_tiny_corpus(tmp_path, embedder):
    data = load_beir(write_beir(tmp_path / "tiny"), "test")
    counting = CountingEmbedder(embedder)
    index_dir = tmp_path / "index"
    store = open_store(index_dir)
    index = open_beir_index(data, index_dir, counting, store)
    chunks_of_d5 = sum(c.chapter_id == "d5" for c in index.chunks)
    assert chunks_of_d5 > 1 and counting.embedded == len(index.chunks)
    # indexed through the book code path: a fresh manifest keyed by the corpus hash, texts kept
    status = content_status(f"beir-{data.name}", data.corpus_hash, index_dir, counting, False)
    assert status["fresh"] and status["chunks"] == len(index.chunks)
    assert all(c.text for c in index.chunks)
    again = open_beir_index(data, index_dir, counting, store)  # cached: nothing re-embedded
    assert counting.embedded == len(index.chunks) and len(again.chunks) == len(index.chunks)
    result = run_benchmark(data, again, dense_weight=0.7)
    report = result.to_dict()
    assert report["queries"] == 3 and report["best_w_dense"] in WEIGHTS
    assert set(report["ndcg@10"]) == {"dense", "bm25", "blended", "blended_best"}
    assert report["ndcg@10"]["dense"] == pytest.approx(1.0)  # each query has an obvious answer
    assert report["recall@100"]["blended"] == 1.0
    assert report["ndcg@10"]["blended_best"] >= report["ndcg@10"]["blended"]


def test_cli_eval_beir_json(tmp_path, embedder, capsys):
    root = write_beir(tmp_path / "tiny")
    code = main(["eval", "beir", str(root), "--index", str(tmp_path / "index"),
                 "--dense-weight", "0.6", "--max-queries", "2", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["queries"] == 2 and report["dense_weight"] == 0.6
    assert set(report["recall@100"]) == {"dense", "bm25", "blended", "blended_best"}


def test_scifact_smoke_when_its_index_is_cached(embedder):
    from rag.config import PROJECT_ROOT

    data = load_beir(shared_path("scifact"), "train")
    index_dir = PROJECT_ROOT / "data" / "index" / "beir"
    manifest = index_dir / f"beir-{data.name}__{embedder.name}" / "manifest.json"
    if not manifest.is_file() or json.loads(manifest.read_text()).get("dense", {}).get(
            "corpus_hash") != data.corpus_hash:
        pytest.skip("SciFact is not indexed yet (embedding 10k chunks takes ~15 min): run "
                    "`python -m rag eval beir ../shared/data/scifact --split train` once")
    try:
        store = open_store(index_dir)
    except BookIndexError as e:
        pytest.skip(f"the SciFact index is in use by another process: {e}")
    try:
        report = run_benchmark(data, open_beir_index(data, index_dir, embedder, store), 0.85,
                               max_queries=20).to_dict()
    finally:
        store.close()  # release Qdrant's lock: the CLI may want this index while tests run
    assert report["queries"] == 20
    ndcg = report["ndcg@10"]
    # Figures for the whole split are in the report; 20 queries only show the blend helps.
    assert ndcg["blended"] >= max(ndcg["dense"], ndcg["bm25"]) - 0.02 and ndcg["blended"] > 0.3
    assert report["recall@100"]["blended"] >= 0.85
