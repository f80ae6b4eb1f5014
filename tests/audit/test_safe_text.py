"""Questions from API clients reach reviewers harmless (issue 43, item 13): no control or
reordering character reaches the terminal of whoever runs `rag audit`, and no CSV cell of an
export starts a spreadsheet formula. The audit itself keeps every question exactly as asked."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest

from rag.__main__ import main
from rag.audit.safe_text import for_terminal, json_for_terminal
from rag.audit.store import AuditStore
from tests.builders import make_response

# An ESC sequence (red, clear the screen, retitle the window), BEL, a carriage return that
# overwrites the line, C1's one-byte CSI, and a right-to-left override.
HOSTILE = ("What is ZMP?\x1b[31m\x1b[2J\x1b]0;owned\x07\rfake line\x9b6n \u202etxt.exe")
FORMULAS = ['=HYPERLINK("http://evil.example","Click")', "+1+1", "-2+3", "@SUM(A1)",
            "\tleading tab", "\rleading return", "\uff1dfull-width equals"]
UNSAFE = [chr(c) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))] + ["\u202e", "\u200b"]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("safe-text") / "audit.duckdb"
    with AuditStore(path) as store:
        store.record(make_response(HOSTILE, seed=1))
        for i, question in enumerate(FORMULAS):
            store.record(make_response(question, seed=i + 2))
    return path


def printed_raw(text: str) -> list[str]:
    return [c for c in text if c in UNSAFE and c != "\n"]


def test_audit_list_shows_control_characters_as_escapes(db, capsys):
    assert main(["audit", "list", "--book", "all", "--limit", "20", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert not printed_raw(out)  # the ESC sequences reached the terminal raw before
    assert r"What is ZMP?\x1b[31m\x1b[2J\x1b]0;owned\x07\rfake line\x9b6n \u202etxt" in out


@pytest.mark.parametrize("argv", [
    ["audit", "list", "--book", "all", "--json"],
    ["audit", "sql", "SELECT user_query_text FROM audit_logs"],
    ["audit", "sql", "SELECT user_query_text FROM audit_logs", "--json"],
    ["audit", "sql", "SELECT 1 AS \"\x1b[31mred\""],
])
def test_every_audit_output_is_terminal_safe(db, capsys, argv):
    assert main([*argv, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert not printed_raw(out), sorted(set(printed_raw(out)))
    if "--json" in argv:
        questions = {r["user_query_text"] for r in json.loads(out)}
        assert HOSTILE in questions  # the JSON still reads back as what was asked


def test_show_prints_json_that_reads_back_exactly(db, capsys):
    with AuditStore(db) as store:
        log_id = store.query_logs(limit=20).set_index("user_query_text").loc[HOSTILE, "log_id"]
    assert main(["audit", "show", log_id, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert not printed_raw(out) and json.loads(out)["user_query_text"] == HOSTILE


def test_csv_cells_that_would_be_formulas_are_prefixed_and_parquet_keeps_them(db, tmp_path):
    with AuditStore(db) as store:
        store.export(None, tmp_path / "all.csv", "csv")
        store.export(None, tmp_path / "all.parquet", "parquet")
    with open(tmp_path / "all.csv", newline="", encoding="utf-8") as f:
        cells = {row["user_query_text"] for row in csv.DictReader(f)}
    assert cells == {HOSTILE} | {"'" + q for q in FORMULAS}
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r", "\uff1d"))]
    raw = set(pq.read_table(tmp_path / "all.parquet").column("user_query_text").to_pylist())
    assert raw == {HOSTILE, *FORMULAS}


def test_the_escapes_are_one_per_character_and_plain_text_is_untouched():
    assert for_terminal("a\x1bb\tc\nd\u202ee") == r"a\x1bb\tc\nd\u202ee"
    assert for_terminal("café – naïve ✓") == "café – naïve ✓"
    assert json.loads(json_for_terminal(json.dumps("x\x9by\u202ez", ensure_ascii=False))) == \
        "x\x9by\u202ez"
