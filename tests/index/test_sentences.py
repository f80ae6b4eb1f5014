"""Sentence vectors kept with the index: built at ingest, incremental, stale when missing."""

from __future__ import annotations

import numpy as np

from rag.index.build import content_status, sync_sections
from rag.index.sentences import load_sentences, sync_sentences
from rag.index.vectors import open_store
from rag.types import Section
from tests.builders import CountingEmbedder


def section(key: str, text: str) -> Section:
    return Section("m", "ch", key, key.title(), "Chapter", ("Chapter", key.title()), True, text,
                   None, "ch.md")


def test_sentences_are_embedded_once_and_reused(tmp_path, embedder):
    counting = CountingEmbedder(embedder)
    sections = [section("a", "The first sentence is here. The second one follows it."),
                section("b", "Another section has its own sentence to say.")]
    assert sync_sentences(tmp_path, sections, counting) == 3 and counting.embedded == 3
    table = load_sentences(tmp_path, embedder.dim)
    assert table.texts == ["The first sentence is here.", "The second one follows it.",
                           "Another section has its own sentence to say."]
    assert table.rows_for("m/ch#a") == [0, 1] and table.rows_for("m/ch#b") == [2]
    # stored as float16: the same direction as embedding the sentence on its own
    alone = embedder.embed_documents(["The second one follows it."])[0]
    assert float(np.dot(table.vectors[1], alone)) > 0.999
    sections[1] = section("b", "Another section has its own sentence to say. And a new one.")
    assert sync_sentences(tmp_path, sections, counting) == 1  # only the new sentence
    assert load_sentences(tmp_path, embedder.dim).texts[-1] == "And a new one."


def test_a_missing_or_mismatched_table_reads_as_none(tmp_path, embedder):
    assert load_sentences(tmp_path, embedder.dim) is None
    sync_sentences(tmp_path, [section("a", "Just one sentence lives here.")], embedder)
    assert load_sentences(tmp_path, embedder.dim + 1) is None  # another embedder's vectors


def test_an_index_without_sentence_vectors_is_stale(tmp_path, embedder):
    index_dir = tmp_path / "index"
    store = open_store(index_dir)
    try:
        sections = [section("a", "Balance needs fast sensing of the body's own state.")]
        sync_sections(sections, "bk", "hash1", index_dir, embedder, store, sentences=False)
        status = content_status("bk", "hash1", index_dir, embedder)
        assert not status["fresh"] and "sentence vectors" in status["reason"]
        assert content_status("bk", "hash1", index_dir, embedder, sentences=False)["fresh"]
        sync_sections(sections, "bk", "hash1", index_dir, embedder, store)
        assert content_status("bk", "hash1", index_dir, embedder)["fresh"]
    finally:
        store.close()


def test_units_keep_the_review_question_they_answer_and_its_vector(tmp_path, embedder):
    quiz = ("**Question 1**: Why does a biped need ankle torque to stand still?\n\n"
            "**Answer 1**: Ankle torque moves the centre of pressure under the foot. "
            "Without it the body sways until it falls.\n")
    counting = CountingEmbedder(embedder)
    problem = Section("m", "ch", "q9", "Q9: Service call hangs", "Chapter",
                      ("Chapter", "Q9: Service call hangs"), True,
                      "Cause: the server is not running at all.", None, "ch.md")
    sections = [section("quiz", quiz), problem,
                section("plain", "A plain sentence that answers nothing asked.")]
    # 4 units and 2 questions: the review question and the heading that names a problem
    assert sync_sentences(tmp_path, sections, counting) == 6
    table = load_sentences(tmp_path, embedder.dim)
    question = "Why does a biped need ankle torque to stand still?"
    assert table.asks == [question, question, "Q9: Service call hangs", ""]
    alone = embedder.embed_documents([question])[0]
    assert float(np.dot(table.ask_vectors[question], alone)) > 0.999
    assert sync_sentences(tmp_path, sections, counting) == 0  # questions are reused too


def test_a_table_whose_rows_or_questions_do_not_hold_reads_as_none(tmp_path, embedder):
    """Hand-edited or torn files: a row that is no object, an ask that is no text, a missing
    matrix of question vectors. The index then answers as one built before sentence vectors."""
    quiz = "**Question 1**: Why does a biped sway?\n\n**Answer 1**: Its ankles lack torque here.\n"
    sync_sentences(tmp_path, [section("quiz", quiz)], embedder)
    assert load_sentences(tmp_path, embedder.dim).asks == ["Why does a biped sway?"]
    rows = (tmp_path / "sentences.jsonl").read_text().splitlines()
    for bad in ('[1, 2]', rows[0].replace('"Why does a biped sway?"', "5")):
        (tmp_path / "sentences.jsonl").write_text(bad + "\n")
        assert load_sentences(tmp_path, embedder.dim) is None
    (tmp_path / "sentences.jsonl").write_text("\n".join(rows) + "\n")
    (tmp_path / "ask_vectors.npy").unlink()
    assert load_sentences(tmp_path, embedder.dim) is None
