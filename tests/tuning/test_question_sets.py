"""Question sets between text, editor tables and files: errors name the row, saves round-trip."""

from __future__ import annotations

import pandas as pd
import pytest

from pages.components.tuning.set_table import editable_frame, questions_frame, questions_from_frame
from rag.errors import InputError
from rag.tuning.question_sets import (
    best_set_for,
    content_hash,
    decode_upload,
    eval_dir,
    list_question_sets,
    parse_question_text,
    read_header,
    read_set_file,
    save_question_set,
    serialize_questions,
    target_path,
)
from rag.tuning.questions import Question, load_questions
from tests.builders import SAMPLE_QUESTIONS

SET = [Question("How does an IMU drift?", ("proprioceptive-sensing#imu-errors",), True,
                "conceptual"),
       Question("Which sensors, and where?", ("sensing-intro", "a#b"), True),
       Question("Who won the 1998 World Cup?", (), False, "off_topic")]


def test_the_table_round_trips_the_sample_set():
    questions = load_questions(SAMPLE_QUESTIONS)
    frame = questions_frame(questions)
    assert list(frame.columns) == ["question", "expected_sections", "in_scope", "category",
                                   "key_facts"]
    assert frame.loc[1, "key_facts"] == "; ".join(questions[0].key_facts)
    assert frame.index[0] == 1  # row numbers, as errors name them
    again = questions_from_frame(frame)
    assert content_hash(again) == content_hash(questions)
    assert [q.line for q in again[:3]] == [1, 2, 3]


def test_table_errors_name_the_row_label_even_after_deletions_and_additions():
    frame = questions_frame(SET).drop(index=1)  # rows 2 and 3 remain
    frame.loc[4] = {"question": "A new one?", "expected_sections": "", "in_scope": True,
                    "category": ""}
    with pytest.raises(InputError, match=r"^Edited table, line 4: an in-scope question needs"):
        questions_from_frame(frame)
    frame.loc[4, "expected_sections"] = "bad entry, with#two#hashes"
    with pytest.raises(InputError, match=r"line 4: 'with#two#hashes' is not"):
        questions_from_frame(frame)
    frame.loc[4] = {"question": SET[1].question.upper(), "expected_sections": "a",
                    "in_scope": None, "category": None}
    with pytest.raises(InputError, match="line 4: repeats the question on line 2"):
        questions_from_frame(frame)


def test_blank_rows_are_skipped_and_new_rows_default_in_scope_from_their_sections():
    frame = questions_frame(SET[:1])
    frame.loc[2] = {"question": None, "expected_sections": None, "in_scope": None,
                    "category": None}
    frame.loc[3] = {"question": "What is ZMP?", "expected_sections": "balance#zmp",
                    "in_scope": None, "category": float("nan")}
    out = questions_from_frame(frame)
    assert [(q.question, q.in_scope, q.line) for q in out] == [
        (SET[0].question, True, 1), ("What is ZMP?", True, 3)]
    with pytest.raises(InputError, match="empty"):
        questions_from_frame(frame.iloc[1:2])


@pytest.mark.parametrize("suffix", [".yaml", ".csv"])
def test_serialised_sets_parse_back_unchanged(suffix, tmp_path):
    text = serialize_questions(SET, suffix)
    assert content_hash(parse_question_text(text, f"set{suffix}")) == content_hash(SET)
    path = save_question_set(SET, tmp_path / f"out{suffix}")
    assert content_hash(load_questions(path)) == content_hash(SET)
    assert list_question_sets(tmp_path) == [path]


def test_file_errors_keep_their_line_and_broken_sets_can_still_be_edited():
    text = 'questions:\n  - question: "Q1?"\n    expected_sections: ["a#b"]\n  - question: ""\n'
    with pytest.raises(InputError, match=r"^mine\.yaml, line 4: `question` must be non-empty"):
        parse_question_text(text, "mine.yaml")
    frame = editable_frame(text, "mine.yaml")
    assert list(frame["question"]) == ["Q1?", ""] and frame.loc[1, "expected_sections"] == "a#b"
    assert editable_frame("question,in_scope\nQ?,maybe\n", "x.csv").loc[1, "in_scope"] is None
    with pytest.raises(InputError):
        editable_frame("just: a mapping\n", "x.yaml")
    with pytest.raises(InputError, match="UTF-8"):
        decode_upload(b"\xff\xfe\x00q", "x.csv")
    with pytest.raises(InputError, match=r"\.yaml, \.yml or \.csv"):
        parse_question_text("", "x.txt")


def test_save_names_stay_in_the_folder(tmp_path):
    assert target_path(tmp_path, " mine.yaml ") == tmp_path / "mine.yaml"
    for bad in ("../up.yaml", "a/b.yaml", "x.txt", "", ".hidden.yaml"):
        with pytest.raises(InputError, match="not a usable file name"):
            target_path(tmp_path, bad)


def test_eval_dir_follows_the_environment(tmp_path):
    assert eval_dir({"RAG_EVAL_DIR": str(tmp_path)}) == tmp_path
    assert eval_dir({}).parts[-2:] == ("data", "eval")
    assert isinstance(questions_frame([]), pd.DataFrame)


def test_the_default_set_is_the_one_written_for_this_book(tmp_path):
    other = tmp_path / "a-other-book.yaml"
    other.write_text('questions:\n  - question: "Where is the lab?"\n'
                     '    expected_sections: ["lab-setup#rooms"]\n')
    mine = tmp_path / "b-this-book.yaml"
    mine.write_text('questions:\n  - question: "What does the integral term do?"\n'
                    '    expected_sections: ["pid-control#integral"]\n')
    broken = tmp_path / "c-broken.yaml"
    broken.write_text("questions: [")
    paths = [other, mine, broken]
    assert best_set_for(paths, ["pid-control#integral", "pid-control#tuning"]) == mine
    assert best_set_for(paths, ["unrelated#x"]) is None  # nothing matches: no other book's set
    assert best_set_for([], ["pid-control#integral"]) is None


HUGE_NUMBER_SET = "questions:\n  - question: Hi?\n    in_scope: " + "9" * 5000 + "\n"


def test_a_number_too_long_gets_a_message_on_every_path_the_tuning_page_takes():
    """Issue 43, item 10: the page parses a picked or uploaded set, then on failure opens it
    best-effort in the editor and reads its header; each raised ValueError on this set."""
    message = "x.yaml, line 3: a number with 5,000 digits"
    with pytest.raises(InputError, match=message):
        parse_question_text(HUGE_NUMBER_SET, "x.yaml")
    with pytest.raises(InputError, match=message):
        editable_frame(HUGE_NUMBER_SET, "x.yaml")
    assert read_header(HUGE_NUMBER_SET, "x.yaml") == {}
    assert read_header('generated: offline\ndate: "2026-01-02"\nquestions: []\n', "x.yaml") == {
        "generated": "offline", "date": "2026-01-02"}


def test_set_files_and_uploads_are_refused_by_size_before_they_are_read(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 2_000_001)
    with pytest.raises(InputError, match="big.yaml: the file is 2,000,001 bytes; the limit is "
                                         "2,000,000. Split the question set"):
        read_set_file(big)
    with pytest.raises(InputError, match="up.yaml: the file is 2,000,001 bytes"):
        decode_upload(b"#" * 2_000_001, "up.yaml")
    small = save_question_set(SET, tmp_path / "small.yaml")
    assert read_set_file(small) == small.read_text(encoding="utf-8")
    assert best_set_for([big, small], ["proprioceptive-sensing#imu-errors"]) == small
