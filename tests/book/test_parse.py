"""Book parsing against golden files: stable IDs, duplicates, MDX clean-up, malformed files.

Regenerate the expected JSON after an intended change with
    UPDATE_GOLDEN=1 .venv/bin/pytest tests/book/test_parse.py
and review the diff before committing it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from rag.book.markdown.reader import read_text
from rag.book.parse import parse_book
from rag.book.slugs import slugify
from rag.errors import InputError
from tests.builders import GOLDEN, SAMPLE_BOOK, shared_path

BOOKS = GOLDEN / "books"
EXPECTED = GOLDEN / "expected"
CASES = sorted(p.name for p in BOOKS.iterdir() if p.is_dir())
SECTION_FIELDS = ("module_id", "chapter_id", "section_id", "stable", "title", "heading_path",
                  "has_code", "page", "source_path", "text")


def book_as_json(root: Path) -> dict:
    book = parse_book(root)
    return {
        "book_id": book.book_id,
        "sections": [{f: getattr(s, f) for f in SECTION_FIELDS} for s in book.sections],
        "report": dataclasses.asdict(book.report),
    }


def parsed(case: str) -> dict:
    return json.loads(json.dumps(book_as_json(BOOKS / case)))  # tuples -> lists, as stored


def sections_by_key(case: str) -> dict[str, dict]:
    return {f"{s['module_id']}/{s['chapter_id']}#{s['section_id']}": s
            for s in parsed(case)["sections"]}


@pytest.mark.parametrize("case", CASES)
def test_matches_golden(case: str) -> None:
    actual = parsed(case)
    path = EXPECTED / f"{case}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(actual, indent=1, ensure_ascii=False) + "\n")
    assert path.is_file(), f"no golden for {case}; run with UPDATE_GOLDEN=1 and review it"
    assert actual == json.loads(path.read_text())


def test_every_golden_has_a_book() -> None:
    assert sorted(p.stem for p in EXPECTED.glob("*.json")) == CASES


# The checks below restate what the goldens must say, so a regenerated golden cannot quietly
# accept a regression.

def test_ids_from_frontmatter_and_fallbacks() -> None:
    sections = sections_by_key("ids")
    assert sections["basics/first-steps#getting-started"]["page"] == 12  # frontmatter id + page
    assert "basics/intro#why" in sections  # no id: the file stem
    assert "appendix/moved#placed" in sections  # frontmatter module_id beats the folder
    assert "extras/loose#notes" in sections  # module_id on a top-level file
    assert "/top-level#" in sections  # top-level file without frontmatter: no module


def test_intro_in_two_modules_is_two_chapters() -> None:
    data = parsed("ids")
    keys = {(s["module_id"], s["chapter_id"]) for s in data["sections"]}
    assert {("basics", "intro"), ("advanced", "intro")} <= keys
    # A subfolder inside a module is part of the chapter id, as in Docusaurus' folder-relative
    # ids: basics/exercises/intro.md is not a clash with basics/intro.md.
    assert ("basics", "exercises/intro") in keys
    assert data["report"]["duplicates"] == [] and data["report"]["skipped_files"] == []


def test_heading_path_and_leading_h1() -> None:
    sections = sections_by_key("ids")
    assert sections["basics/first-steps#nested"]["heading_path"] == [
        "First Steps", "Getting started", "A nested detail"]
    assert sections["/top-level#"]["title"] == "Top Level Page"  # the H1 titles the chapter
    assert sections["basics/intro#"]["text"].startswith("Opening words")


def test_unanchored_heading_is_unstable_and_reported() -> None:
    data = parsed("ids")
    unstable = [s["section_id"] for s in data["sections"] if not s["stable"]]
    assert unstable == ["without-an-anchor"]
    assert data["report"]["unstable_ids"] == 1
    assert data["report"]["unstable_files"] == ["basics/chapter-one.md"]


def test_same_chapter_id_in_one_module_names_both_files_and_skips_the_later() -> None:
    data = parsed("duplicates")
    report = data["report"]
    clash = [d for d in report["duplicates"] if "chapter id 'shared'" in d]
    assert len(clash) == 1 and "mod/b.md" in clash[0] and "mod/a.md" in clash[0]
    assert [f["path"] for f in report["skipped_files"]] == ["mod/b.md"]
    titles = {s["title"] for s in data["sections"]}
    assert "Kept" in titles and "Dropped" not in titles
    assert "/shared#fine" in sections_by_key("duplicates")  # same id in another module is fine


def test_same_anchor_twice_names_both_lines_and_skips_the_later() -> None:
    report = parsed("duplicates")["report"]
    clash = [d for d in report["duplicates"] if "{#same}" in d]
    # Line numbers are the file's own (frontmatter included), so an author can jump to them.
    assert clash == ["mod/anchors.md: anchor {#same} on line 10 repeats line 6; "
                     "the later section was skipped"]
    titles = [s["title"] for s in parsed("duplicates")["sections"]]
    assert "First use" in titles and "Second use" not in titles


def test_repeated_headings_get_docusaurus_suffixes_and_ids_stay_unique() -> None:
    anchors = [(s["title"], s["section_id"]) for s in parsed("duplicates")["sections"]
               if s["chapter_id"] == "anchors"]
    assert anchors == [("First use", "same"), ("Setup", "setup"), ("Setup", "setup-1"),
                       ("Setup", "setup-2"), ("Setup 1", "setup-1-1"),
                       ("Explicit", "install"), ("Install", "install-1")]


def test_inline_code_keeps_its_placeholders_while_prose_loses_its_tags() -> None:
    line = "Run `ros2 launch <yourname>_sim sim.launch.py`, then <b>check</b> `<depend>` tags."
    assert read_text(line, mdx=True).parts[0].text == \
        "Run `ros2 launch <yourname>_sim sim.launch.py`, then check `<depend>` tags."


def test_mdx_is_cleaned_and_code_kept() -> None:
    sections = sections_by_key("mdx")
    tabs, code = sections["guide/components#tabs"], sections["guide/components#code"]
    assert "import" not in tabs["text"] and "export" not in tabs["text"]
    assert "<" not in tabs["text"]  # JSX tags go ...
    assert "Python users install the package first." in tabs["text"]  # ... their text stays
    assert "Remember this:" in tabs["text"] and "Admonition text is kept." in tabs["text"]
    assert not tabs["has_code"] and code["has_code"]
    assert '```bash\n# not a heading, a shell comment\nimport os' in code["text"]
    assert 'echo "<Tabs> stays in code"' in code["text"]
    assert code["text"].endswith("After the code block.")
    note = sections["guide/plain#note"]["text"]
    assert note.startswith("Note: A note body.") and "highlighted words" in note \
        and "<" not in note


def test_malformed_files_are_skipped_with_reasons_and_the_rest_ingested() -> None:
    data = parsed("malformed")
    reasons = {f["path"]: f["reason"] for f in data["report"]["skipped_files"]}
    assert set(reasons) == {"part/broken-frontmatter.md", "part/latin1.md",
                            "part/list-frontmatter.md"}
    assert reasons["part/broken-frontmatter.md"].startswith("malformed frontmatter")
    assert "line 3" in reasons["part/broken-frontmatter.md"]
    assert reasons["part/latin1.md"] == "not valid UTF-8 (byte 0xe9 at offset 30)"
    assert "not a list" in reasons["part/list-frontmatter.md"]
    assert [s["section_id"] for s in data["sections"]] == ["here"]
    assert data["report"]["files"] == 1


def test_nul_bytes_skip_the_file(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("## Fine {#fine}\n\nText.\n")
    (tmp_path / "nul.md").write_bytes(b"## Bad {#bad}\n\nA\x00B\n")
    book = parse_book(tmp_path)
    assert book.report.skipped_files == [{"path": "nul.md", "reason": "contains NUL bytes"}]
    assert [s.section_id for s in book.sections] == ["fine"]


def test_missing_book_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"does not exist; pass --book DIR or set RAG_BOOK"):
        parse_book(tmp_path / "nowhere")


def test_empty_book_folder_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a chapter")
    with pytest.raises(InputError, match=r"has no Markdown \(\.md, \.mdx\), PDF"):
        parse_book(tmp_path)


def test_hidden_and_underscore_folders_are_ignored(tmp_path: Path) -> None:
    shutil.copytree(BOOKS / "ids", tmp_path / "book")
    for hidden in ("_partials", ".drafts", "node_modules"):
        (tmp_path / "book" / hidden).mkdir()
        (tmp_path / "book" / hidden / "x.md").write_text("## X {#x}\n\nHidden.\n")
    assert parse_book(tmp_path / "book").report.files == 7


def test_docs_subfolder_is_the_book_root(tmp_path: Path) -> None:
    shutil.copytree(BOOKS / "ids", tmp_path / "my-book" / "docs")
    book = parse_book(tmp_path / "my-book")
    assert book.book_id == "my-book" and book.report.files == 7
    assert book.root == tmp_path / "my-book" / "docs"


def test_content_hash_follows_the_bytes(tmp_path: Path) -> None:
    shutil.copytree(BOOKS / "ids", tmp_path / "book")
    before = parse_book(tmp_path / "book").content_hash
    assert parse_book(tmp_path / "book").content_hash == before
    path = tmp_path / "book" / "loose.md"
    path.write_text(path.read_text() + "\nOne more line.\n")
    assert parse_book(tmp_path / "book").content_hash != before


@pytest.mark.parametrize(("heading", "slug"), [
    ("Getting Started", "getting-started"),
    ("What's `new` in *v2*?", "whats-new-in-v2"),
    ("PID: tuning & anti-windup", "pid-tuning--anti-windup"),
    ("Ünïcode façade", "ünïcode-façade"),
])
def test_slugify_matches_docusaurus(heading: str, slug: str) -> None:
    assert slugify(heading) == slug


def test_sample_book_ids_are_unique_and_mostly_stable() -> None:
    book = parse_book(SAMPLE_BOOK)
    keys = [s.key for s in book.sections]
    assert len(keys) == len(set(keys))
    assert book.report.skipped_files == [] and book.report.duplicates == []
    assert 1 <= book.report.unstable_ids <= 4
    assert book.report.files >= 12 and len({s.module_id for s in book.sections}) >= 3


def test_real_docusaurus_book_every_file_accounted_for() -> None:
    root = shared_path("physical-ai-book")
    on_disk = sorted(p.relative_to(root / "docs").as_posix()
                     for p in (root / "docs").rglob("*") if p.suffix in (".md", ".mdx"))
    book = parse_book(root)
    report = book.report
    assert len(on_disk) == 44
    assert report.files + len(report.skipped_files) == len(on_disk)
    assert report.files == 44 and report.skipped_files == [] and report.duplicates == []
    read = sorted({s.source_path for s in book.sections})
    assert read == on_disk
    # No `id` fields: every module is its top folder, every chapter id the file's path inside
    # it (the stem, or e.g. assessments/ros2-package-project), so URLs match the real site.
    for s in book.sections:
        module, _, rest = s.source_path.partition("/")
        assert (s.module_id, s.chapter_id) == (module, rest.rsplit(".", 1)[0])
    assert "module-1-ros2/assessments/ros2-package-project" in book.chapters
    # Unstable IDs are counted per file, and the count adds up.
    per_file: dict[str, int] = {}
    for s in book.sections:
        per_file[s.source_path] = per_file.get(s.source_path, 0) + (not s.stable)
    assert report.unstable_ids == sum(per_file.values()) > 0
    assert sorted(report.unstable_files) == sorted(p for p, n in per_file.items() if n)
    keys = [s.key for s in book.sections]
    assert len(keys) == len(set(keys))
