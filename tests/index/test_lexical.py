"""The lexical index against an oracle: bm25s (Robertson) versus rank-bm25's BM25Okapi.

The two differ in two documented ways, both handled explicitly rather than by loosening checks:
- bm25s' Robertson term-frequency part lacks BM25Okapi's constant (k1 + 1) factor, so raw
  scores differ by exactly that factor and rankings are unaffected;
- for a term in more than half of the chunks Robertson's IDF is negative: bm25s floors it at 0,
  BM25Okapi replaces it by epsilon * mean IDF (epsilon = 0.25). BM25Okapi(epsilon=0) floors at 0
  too, so it must agree with us on every query; the default BM25Okapi must agree on every query
  that has no such term.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from rank_bm25 import BM25Okapi

from rag.book.chunk import ChunkerSettings, chunk_book, embed_text_for
from rag.book.parse import parse_book
from rag.errors import BookIndexError
from rag.index.lexical import K1, B, LexicalIndex, tokenize, top_positive
from tests.builders import SAMPLE_BOOK, SAMPLE_QUESTIONS, shared_path

TOP = 10
TIE = 1e-4  # relative: float32 (bm25s) against float64 (rank-bm25)
REAL_BOOK_QUERIES = [
    "How do ROS 2 nodes communicate with topics and services?",
    "What is the difference between URDF and SDF?",
    "How do I install ROS 2 Humble on Ubuntu?",
    "Isaac Sim synthetic data for perception",
    "bipedal locomotion zero moment point",
    "What hardware does the student kit need, Jetson or RTX workstation?",
    "launch files with parameters",
    "sim-to-real transfer domain randomization",
    "grasp planning for a humanoid hand",
    "voice commands with a large language model",
    "colcon build fails with missing dependencies",
    "Gazebo physics engine friction settings",
]


def sample_questions(n: int = 20) -> list[str]:
    data = yaml.safe_load(SAMPLE_QUESTIONS.read_text())
    questions = [q["question"] for q in data["questions"]]
    return questions[:: max(1, len(questions) // n)][:n]


def book_texts(root: Path, embedder) -> list[str]:
    book = parse_book(root)
    chunks = chunk_book(book.sections, book.book_id, ChunkerSettings(embedder.max_tokens),
                        embedder.count_tokens_batch)
    return [embed_text_for(c.heading_path, c.text) for c in chunks]


def top(scores: np.ndarray, k: int = TOP) -> list[int]:
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k] if scores[i] > 0]


def assert_same_top(ours: np.ndarray, oracle: np.ndarray, query: str) -> None:
    """Same ranked scores position by position, and the same documents except inside ties."""
    scale = max(float(oracle.max()), 1e-9)
    mine, theirs = top(ours), top(oracle)
    assert len(mine) == len(theirs), query
    assert np.allclose(oracle[mine], oracle[theirs], rtol=0, atol=TIE * scale), query
    if not mine:
        return
    cut = oracle[theirs[-1]]  # documents tied with the last place may swap in or out
    firm = {i for i in theirs if oracle[i] > cut + TIE * scale}
    assert firm <= set(mine), query
    for a, b in zip(mine, theirs, strict=True):
        assert a == b or math.isclose(oracle[a], oracle[b], abs_tol=TIE * scale), query


def negative_idf_terms(oracle: BM25Okapi, tokens: list[str]) -> set[str]:
    n = oracle.corpus_size
    return {t for t in tokens if t in oracle.idf
            and math.log(n - oracle.nd[t] + 0.5) - math.log(oracle.nd[t] + 0.5) < 0}


def compare_with_oracle(texts: list[str], queries: list[str]) -> dict[str, int]:
    ours = LexicalIndex.build(texts)
    corpus = [tokenize(t) for t in texts]
    floored = BM25Okapi(corpus, k1=K1, b=B, epsilon=0.0)
    default = BM25Okapi(corpus, k1=K1, b=B)
    floored.nd = default.nd = _doc_freqs(corpus)
    counts = {"queries": 0, "with_negative_idf": 0}
    for query in queries:
        tokens = tokenize(query)
        mine = ours.scores(query).astype(np.float64) * (K1 + 1)
        exact = floored.get_scores(tokens)
        assert np.allclose(mine, exact, rtol=1e-5, atol=1e-6), query
        assert_same_top(mine, exact, query)
        counts["queries"] += 1
        if negative_idf_terms(floored, tokens):
            counts["with_negative_idf"] += 1
        else:
            assert_same_top(mine, default.get_scores(tokens), query)
    return counts


def _doc_freqs(corpus: list[list[str]]) -> dict[str, int]:
    freqs: dict[str, int] = {}
    for doc in corpus:
        for token in set(doc):
            freqs[token] = freqs.get(token, 0) + 1
    return freqs


def test_top10_matches_rank_bm25_on_the_sample_book(embedder) -> None:
    counts = compare_with_oracle(book_texts(SAMPLE_BOOK, embedder), sample_questions(20))
    assert counts["queries"] == 20
    # "robot" and "humanoid" are in over half the chunks of a humanoid-robotics book, so many
    # questions carry a zero-IDF term; enough must not, or the default-oracle check is hollow.
    assert counts["queries"] - counts["with_negative_idf"] >= 5


def test_top10_matches_rank_bm25_on_the_real_book(embedder) -> None:
    texts = book_texts(shared_path("physical-ai-book"), embedder)
    counts = compare_with_oracle(texts, REAL_BOOK_QUERIES + sample_questions(10))
    assert counts["queries"] == len(REAL_BOOK_QUERIES) + 10


def test_a_term_in_most_chunks_scores_zero_not_epsilon() -> None:
    texts = ["robot arm torque", "robot leg gait", "robot hand grasp", "vision camera"]
    ours = LexicalIndex.build(texts)
    assert ours.scores("robot").tolist() == [0.0, 0.0, 0.0, 0.0]
    oracle = BM25Okapi([tokenize(t) for t in texts], k1=K1, b=B)
    assert oracle.get_scores(["robot"])[:3].min() > 0  # rank-bm25's epsilon floor, by contrast
    # With a rarer term in the query the common one adds nothing, in both.
    floored = BM25Okapi([tokenize(t) for t in texts], k1=K1, b=B, epsilon=0.0)
    assert np.allclose(ours.scores("robot gait") * (K1 + 1),
                       floored.get_scores(tokenize("robot gait")))


def test_hand_computed_score() -> None:
    # Three chunks; "gait" is in one (df=1, N=3): idf = ln((3 - 1 + 0.5) / (1 + 0.5)) = ln(5/3).
    # Chunk 0 has 2 tokens, the average is 2: tf part = 1 / (1 + 1.5 * 1) = 0.4.
    ours = LexicalIndex.build(["gait cycle", "arm torque", "camera lens"])
    expected = math.log(2.5 / 1.5) * 0.4
    assert ours.scores("gait").tolist() == pytest.approx([expected, 0.0, 0.0], rel=1e-6)


def test_unknown_words_score_zero_everywhere() -> None:
    ours = LexicalIndex.build(["balance controller", "camera lens"])
    scores = ours.scores("zeppelin quasar")
    assert scores.dtype == np.float32 and scores.tolist() == [0.0, 0.0]
    assert ours.scores("the and of").tolist() == [0.0, 0.0]  # stop words only


def test_save_and_load_give_identical_scores(tmp_path: Path) -> None:
    texts = ["balance controller keeps the robot upright", "camera lens distortion",
             "the controller saturates the actuator"]
    built = LexicalIndex.build(texts)
    built.save(tmp_path / "bm25")
    loaded = LexicalIndex.load(tmp_path / "bm25", len(texts))
    for query in ("controller", "camera distortion", "upright robot"):
        assert loaded.scores(query).tolist() == built.scores(query).tolist()


def test_unreadable_index_says_how_to_rebuild(tmp_path: Path) -> None:
    with pytest.raises(BookIndexError, match="rebuild it with `python -m rag ingest --rebuild`"):
        LexicalIndex.load(tmp_path / "missing", 3)


@pytest.mark.parametrize(("text", "tokens"), [
    ("Controllers controlling controlled", ["control", "control", "control"]),
    ("The robot is walking and balancing", ["robot", "walk", "balanc"]),
    ("The robot's joints", ["robot", "joint"]),
    ("the robot’s joints", ["robot", "joint"]),  # typographic apostrophe
    ("IMU at 500 Hz", ["imu", "500", "hz"]),
    ("Zero-Moment Point (ZMP)", ["zero", "moment", "point", "zmp"]),
    ("", []),
])
def test_tokenizer_stems_and_drops_stop_words(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_tokenizer_switches() -> None:
    assert tokenize("The walking robots", stem=False, stop_words=False) == [
        "the", "walking", "robots"]
    assert tokenize("The walking robots", stem=True, stop_words=False) == ["the", "walk", "robot"]
    assert tokenize("The walking robots", stem=False) == ["walking", "robots"]


def test_query_and_document_share_one_tokenizer() -> None:
    """A query word matches its inflected forms in the text, case-insensitively."""
    ours = LexicalIndex.build(["Balancing robots fall less.", "Cameras see colours.",
                               "Grippers hold parts.", "Motors need current."])
    assert ours.scores("balance ROBOT").argmax() == 0
    assert ours.scores("balance ROBOT")[0] > 0


def test_texts_without_words_make_an_empty_index_that_scores_zeros(tmp_path: Path) -> None:
    # bm25s raised "max() arg is an empty sequence" for a book of headings only (issue 12, 8).
    for texts in ([], ["", "the and of"]):
        index = LexicalIndex.build(texts)
        index.save(tmp_path / "bm25")
        loaded = LexicalIndex.load(tmp_path / "bm25", len(texts))
        assert loaded.scores("robots").tolist() == [0.0] * len(texts)


def test_saving_replaces_the_folder_whole(tmp_path: Path) -> None:
    LexicalIndex.build(["robots walk", "sensors drift"]).save(tmp_path / "bm25")
    LexicalIndex.build([""]).save(tmp_path / "bm25")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25"]
    assert sorted(p.name for p in (tmp_path / "bm25").iterdir()) == ["empty.json"]


def test_the_top_positive_scores_are_a_stable_argsort_without_the_sort() -> None:
    """Ties (many, from rounding) come out in book order, zeros never, exactly as before."""
    rng = np.random.default_rng(7)
    for _ in range(2000):
        n, limit = int(rng.integers(0, 300)), int(rng.integers(0, 60))
        scores = (np.round(rng.random(n) * rng.integers(1, 5), 1) * (rng.random(n) > 0.3)
                  ).astype(np.float32)
        expected = [int(i) for i in np.argsort(-scores, kind="stable")[:limit] if scores[i] > 0]
        assert top_positive(scores, limit) == expected
