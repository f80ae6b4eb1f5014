"""Question sets, expected-section matching and the per-list metrics, plus `eval questions`."""

from __future__ import annotations

import json
import math
import shutil
import tomllib

import pytest

from rag.__main__ import main
from rag.errors import InputError
from rag.tuning.metrics import count_relevant, entry_matches, match_mask, score_ranking
from rag.tuning.questions import (
    load_questions,
    parse_csv_questions,
    parse_yaml_questions,
    unknown_entries,
)
from tests.builders import SAMPLE_BOOK, SAMPLE_QUESTIONS, run_measured

GOOD_YAML = """\
questions:
  - question: "How does a complementary filter work?"
    expected_sections: ["sensor-fusion#complementary-filter"]
    in_scope: true
    category: factual
  - question: "What is a good sourdough recipe?"
    expected_sections: []
    in_scope: false
    category: off_topic
"""


def test_sample_question_set_loads():
    questions = load_questions(SAMPLE_QUESTIONS)
    assert len(questions) >= 100
    assert sum(q.in_scope for q in questions) >= 80
    assert all(q.expected_sections for q in questions if q.in_scope)
    assert questions[0].line == 6  # the first item's `question:` line in the file


def test_yaml_and_csv_give_the_same_questions():
    csv_text = ("question,expected_sections,in_scope,category\n"
                "How does a complementary filter work?,sensor-fusion#complementary-filter,true,"
                "factual\n"
                "What is a good sourdough recipe?,,false,off_topic\n")
    from_yaml = parse_yaml_questions(GOOD_YAML)
    from_csv = parse_csv_questions(csv_text)
    strip = [(q.question, q.expected_sections, q.in_scope, q.category) for q in from_yaml]
    assert strip == [(q.question, q.expected_sections, q.in_scope, q.category) for q in from_csv]
    assert [q.line for q in from_yaml] == [2, 6]
    assert [q.line for q in from_csv] == [2, 3]


def test_csv_expected_sections_split_on_separators():
    text = 'question,expected_sections\n"Q one?","a#x; b | c#y"\n'
    assert parse_csv_questions(text)[0].expected_sections == ("a#x", "b", "c#y")
    assert parse_csv_questions(text)[0].in_scope is True  # defaults to having expectations


@pytest.mark.parametrize("body, line, words", [
    ('  - question: ""\n    in_scope: false\n', 4, "non-empty"),
    ('  - question: "Q?"\n    expected_section: ["a#b"]\n', 4, "unknown field"),
    ('  - question: "Q?"\n    expected_sections: ["a b"]\n', 4, "is not `chapter_id"),
    ('  - question: "Q?"\n    expected_sections: ["a#b"]\n    in_scope: maybe\n', 4,
     "true or false"),
    ('  - question: "Q?"\n    in_scope: true\n', 4, "needs `expected_sections`"),
    ('  - question: "Q?"\n    expected_sections: ["a#b"]\n    in_scope: false\n', 4,
     "out-of-scope"),
    ('  - question: "How does a complementary filter work?"\n    expected_sections: [x]\n', 4,
     "repeats the question on line 2"),
    ('  - question: "Q?"\n    expected_sections: [a#b\n', 5, "not valid YAML"),
    ('  - question: "Q?"\n    expected_sections: [a#b]\n    key_facts: ["DDS | "]\n', 4,
     "has an empty wording"),
    ('  - question: "Q?"\n    expected_sections: [a#b]\n    key_facts: ["a|b|c|d|e"]\n', 4,
     "more than 4 wordings"),
    (f'  - question: "Q?"\n    expected_sections: [a#b]\n    key_facts: ["a | {"x" * 121}"]\n',
     4, "longer than 120 characters"),
])
def test_yaml_errors_name_the_line(body, line, words):
    text = "questions:\n  - question: \"How does a complementary filter work?\"\n" \
           "    expected_sections: [\"a#b\"]\n" + body
    with pytest.raises(InputError) as info:
        parse_yaml_questions(text, "set.yaml")
    message = str(info.value)
    assert f"set.yaml, line {line}" in message and words in message


@pytest.mark.parametrize("text, line, words", [
    ("question,expected_sections,in_scope\nQ1?,a#b,true\nQ2?,a#c,perhaps\n", 3, "true or false"),
    ("question,expected_sections,in_scope\nQ1?,a#b,true\nQ2?,,true\n", 3, "needs"),
    ("question,expected_sections\nQ1?,a#b,extra\n", 2, "more values"),
    ("prompt,expected\nQ1?,a#b\n", 1, "header"),
    ("question,expected_sections,flavour\nQ1?,a#b,salty\n", 2, "unknown field"),
])
def test_csv_errors_name_the_line(text, line, words):
    with pytest.raises(InputError) as info:
        parse_csv_questions(text, "set.csv")
    assert f"set.csv, line {line}" in str(info.value) and words in str(info.value)


def test_load_questions_rejects_missing_and_unknown_files(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_questions(tmp_path / "nope.yaml")
    other = tmp_path / "set.txt"
    other.write_text("question\n")
    with pytest.raises(InputError, match=".yaml, .yml or .csv"):
        load_questions(other)


def test_expected_section_matching():
    assert entry_matches("pid-control#tuning", "pid-control", "tuning")
    assert not entry_matches("pid-control#tuning", "pid-control", "windup")
    assert entry_matches("pid-control", "pid-control", "windup")  # bare chapter: any section
    assert entry_matches("pid-control", "pid-control", "")
    assert not entry_matches("pid", "pid-control", "tuning")  # no prefix matching
    assert entry_matches("pid-control#", "pid-control", "")  # the chapter's preamble only
    assert not entry_matches("pid-control#", "pid-control", "tuning")
    assert match_mask(("a#x", "b", "a"), "a#x") == 0b101
    assert match_mask(("a#x", "b", "a"), "b#y") == 0b010
    assert count_relevant(("a",), ["a#x", "a#y", "b#x", "a#x"]) == 2


def test_score_ranking_hand_computed():
    expected = ("a#2", "b")  # two entries; b has two sections in the book
    refs = ["c#1", "a#2", "b#1", "b#2"]
    scored = score_ranking(refs, expected, k=3, n_relevant=3)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert scored == pytest.approx({"hit": 1.0, "recall": 1.0, "rr": 0.5,
                                    "ndcg": (1 / math.log2(3) + 1 / math.log2(4)) / idcg})
    assert score_ranking(refs, expected, k=1) == {"hit": 0.0, "recall": 0.0, "rr": 0.0,
                                                  "ndcg": 0.0}
    assert score_ranking(["a#2"], expected, k=5)["recall"] == 0.5


def test_unknown_entries_are_reported():
    questions = parse_yaml_questions(GOOD_YAML.replace("complementary-filter", "no-such"))
    assert unknown_entries(questions, ["sensor-fusion#complementary-filter"]) == [
        "line 2: 'sensor-fusion#no-such' matches no section of this book"]


def test_cli_eval_questions_json_and_apply(sample_index, sample_index_dir, tmp_path, monkeypatch,
                                           capsys):
    settings_file = tmp_path / "settings.toml"
    shutil.copy(SAMPLE_BOOK.parent / "settings.toml", settings_file)
    monkeypatch.setenv("RAG_SETTINGS", str(settings_file))
    code = main(["eval", "questions", str(SAMPLE_QUESTIONS), "--book", str(SAMPLE_BOOK),
                 "--index", str(sample_index_dir), "--json", "--apply"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_in_scope"] + report["n_out_of_scope"] == len(load_questions(SAMPLE_QUESTIONS))
    for key in ("current", "recommended"):
        assert {"w_dense", "threshold", "hit_at_k", "recall_at_k", "mrr", "ndcg_at_k",
                "answer_rate", "false_answer_rate", "f1"} <= set(report[key])
    rec = report["recommended"]
    assert rec["f1"] >= report["current"]["f1"] - 1e-9  # the recommendation is never worse
    assert rec["hit_at_k"] > 0.8 and rec["false_answer_rate"] <= 0.2
    assert {"w-0.05", "w+0.05", "t-0.05", "t+0.05", "worst_drop"} <= set(report["margin"])
    assert [row["level"] for row in report["calibration"]] == ["high", "medium", "low"]
    assert report["warnings"] == []
    written = tomllib.loads(settings_file.read_text())
    assert written["retrieval"]["w_dense"] == rec["w_dense"]
    assert written["embedders"]["local"]["threshold"] == rec["threshold"]
    assert "questions.yaml" in written["embedders"]["local"]["source"]
    assert written["history"][-1]["question_set"] == "data/eval/questions.yaml"
    assert written["book"]["title"]  # everything else kept


def yaml_alias_bomb(levels: int = 9, key: str = "in_scope") -> str:
    lines = ["a0: &a0 [" + ",".join(['"lol"'] * 9) + "]"]
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + f"\nquestions:\n  - question: Hi?\n    {key}: *a{levels - 1}\n"


@pytest.mark.parametrize("key", ["in_scope", "category"])
def test_an_alias_bomb_is_refused_with_its_line(key: str) -> None:
    import time

    started = time.perf_counter()
    with pytest.raises(InputError) as error:
        parse_yaml_questions(yaml_alias_bomb(key=key), "bomb.yaml")
    assert time.perf_counter() - started < 1.0
    assert str(error.value) == ("bomb.yaml, line 1: YAML anchors and aliases (&name, *name) are "
                                "not allowed; write each value out in full.")


def test_deep_nesting_and_size_and_count_limits_are_refused() -> None:
    with pytest.raises(InputError, match="line 1: lists or mappings nested deeper than 20"):
        parse_yaml_questions("- question: " + "[" * 5000 + "]" * 5000 + "\n", "deep.yaml")
    with pytest.raises(InputError, match="the limit is 2,000,000. Split the question set"):
        parse_yaml_questions("#" * 2_000_001, "big.yaml")
    rows = "".join(f"- question: q{i}?\n  in_scope: false\n" for i in range(5_001))
    with pytest.raises(InputError, match="5,001 questions; the limit is 5,000"):
        parse_yaml_questions(rows, "many.yaml")
    csv_rows = "question,in_scope\n" + "".join(f"q{i}?,false\n" for i in range(5_001))
    with pytest.raises(InputError, match="5,001 questions; the limit is 5,000"):
        parse_csv_questions(csv_rows, "many.csv")


def test_many_small_values_are_refused_while_parsing_not_after() -> None:
    """Issue 43, item 10: the bytes were capped but not the values, so 5 MB of `- a` parsed
    1.25 million of them (140 s, 892 MB) before the question count refused it."""
    with pytest.raises(InputError, match="big.yaml, line 199998: more than 200,000 values; a "
                                         "question set holds at most 5,000 questions"):
        parse_yaml_questions("- a\n" * 499_999, "big.yaml")  # just under 2,000,000 bytes
    with pytest.raises(InputError, match="the file is 5,000,000 bytes; the limit is 2,000,000"):
        parse_yaml_questions("- a\n" * 1_250_000, "big.yaml")


@pytest.mark.parametrize("field", ["in_scope", "category", "id", "expected_sections"])
def test_a_number_too_long_for_any_field_is_refused_with_its_line(field) -> None:
    """A 5,000-digit number raised an uncaught ValueError (Python refuses to convert one)."""
    text = f"- question: Hi?\n  {field}: {'9' * 5000}\n"
    with pytest.raises(InputError) as caught:
        parse_yaml_questions(text, "set.yaml")
    assert str(caught.value) == ("set.yaml, line 2: a number with 5,000 digits; values are "
                                 "true/false, text or numbers of at most 30 digits.")


def test_numbers_a_field_can_hold_still_read() -> None:
    (question,) = parse_yaml_questions("- question: Hi?\n  in_scope: 0\n  category: 2024\n"
                                       "  id: 123456789012345678901234567890\n", "set.yaml")
    assert question.in_scope is False and question.category == "2024"
    with pytest.raises(InputError, match="`in_scope` must be true or false, not 7"):
        parse_yaml_questions("- question: Hi?\n  in_scope: 7\n", "set.yaml")


MEASURED_LOAD = """
import sys
from rag.errors import InputError
from rag.tuning.questions import load_questions
try:
    load_questions(sys.argv[1])
    code = 0
except InputError as e:
    print(e)
    code = 2
sys.exit(code)
"""


def test_a_file_of_many_values_is_refused_in_bounded_time_and_memory(tmp_path) -> None:
    (tmp_path / "ok.yaml").write_text(GOOD_YAML)
    (tmp_path / "many.yaml").write_text("- a\n" * 499_999)
    (ok, _, ok_kb), (many, seconds, many_kb) = [
        run_measured(str(tmp_path / name), code=MEASURED_LOAD, timeout=120)
        for name in ("ok.yaml", "many.yaml")]
    print(f"normal {ok_kb // 1024} MB; 2 MB of '- a': {seconds:.2f} s {many_kb // 1024} MB")
    assert ok.returncode == 0 and many.returncode == 2 and "Traceback" not in many.stderr
    assert "more than 200,000 values" in many.stdout
    assert seconds < 30 and many_kb - ok_kb < 150 * 1024


def test_an_alias_bomb_file_is_refused_in_bounded_time_and_memory(tmp_path) -> None:
    (tmp_path / "ok.yaml").write_text(GOOD_YAML)
    (tmp_path / "bomb.yaml").write_text(yaml_alias_bomb())
    runs = {name: run_measured(str(tmp_path / name), code=MEASURED_LOAD, timeout=60)
            for name in ("ok.yaml", "bomb.yaml")}
    (ok, _, ok_kb), (bomb, seconds, bomb_kb) = runs["ok.yaml"], runs["bomb.yaml"]
    print(f"normal {runs['ok.yaml'][1]:.2f} s {ok_kb // 1024} MB; bomb {seconds:.2f} s "
          f"{bomb_kb // 1024} MB")
    assert ok.returncode == 0 and bomb.returncode == 2 and "Traceback" not in bomb.stderr
    assert f"{tmp_path / 'bomb.yaml'}, line 1: YAML anchors and aliases" in bomb.stdout
    assert seconds < 10 and bomb_kb - ok_kb < 300 * 1024
