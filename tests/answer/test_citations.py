"""Stage 4a: citations built from stable IDs at answer time, SPEC §3's display format, marker
validation, and URLs that survive moving the book's files around."""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections.abc import Iterator

import pytest

from rag.answer.citations import (
    build_url,
    cite,
    count_uncited,
    display_text,
    pick_excerpt,
    render_inline,
    section_names,
    url_template_for,
)
from rag.answer.pipeline import Pipeline
from rag.book.parse import parse_book
from rag.config import load_settings
from rag.index.load import load_index
from rag.providers.anthropic_llm import AnthropicLLM
from rag.types import Chunk, Hit
from tests.builders import SAMPLE_BOOK
from tests.fakes.anthropic_server import AnthropicServer

TEMPLATE = "{base_url}/docs/{module_id}/{chapter_id}#{section_id}"
BASE = "https://book.example.org"
DISPLAY_RE = re.compile(r'^\[Source: (?P<title>[^(\]]+?)(?: \(Page (?P<page>\d+)\))? - '
                        r'"(?P<excerpt>[^"]+)"\]$')
WORDS = ("Integral action sums the error over time so that a constant load such as gravity on "
         "a raised leg is eventually matched by a constant torque, after which the error is "
         "zero and stays there unless the load changes again or the actuator saturates, which "
         "is when integral windup begins and the loop overshoots badly once it recovers.")
QUESTIONS = [
    "What does the integral term of a PID controller correct that the proportional term cannot?",
    "What is the zero moment point and where must it stay for the feet not to tip?",
    "How does a Kalman filter decide whether to believe its prediction or a new sensor reading?",
    "Why is a rolling-shutter camera a poor choice for a robot's head?",
    "What mistakes commonly cause bad PID behaviour on robots?",
    "What are the four ways a robot and a person can safely share a workspace?",
    "How does a student policy learn to act without the privileged information its teacher had?",
    "What is the support polygon of a standing robot?",
]


def make_chunk(section_id: str = "pid-basics", stable: bool = True, page: int | None = None,
               text: str = WORDS, source: str = "book") -> Chunk:
    return Chunk(chunk_id=f"id-{section_id or 'root'}", text=text, module_id="control",
                 chapter_id="pid-control", section_id=section_id, section_title="PID Basics",
                 chapter_title="PID Control and Tuning", heading_path=("PID Basics",),
                 stable=stable, page=page, ordinal=0, token_count=60, source=source)


def make_hit(chunk: Chunk, blended: float = 0.5) -> Hit:
    return Hit(chunk, dense=blended, bm25_raw=1.0, bm25=1.0, blended=blended, rank=1,
               passed=True, selected=True)


@pytest.fixture(scope="module")
def pipeline(sample_index, sample_settings) -> Pipeline:
    return Pipeline(sample_index, dataclasses.replace(sample_settings, base_url=BASE))


@pytest.fixture
def claude() -> Iterator[AnthropicServer]:
    with AnthropicServer() as fake:
        yield fake


# -- URLs --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("template", "base", "chunk", "url"), [
    (TEMPLATE, BASE, make_chunk(), f"{BASE}/docs/control/pid-control#pid-basics"),
    (TEMPLATE, BASE + "/", make_chunk(), f"{BASE}/docs/control/pid-control#pid-basics"),
    (TEMPLATE, "", make_chunk(), "/docs/control/pid-control#pid-basics"),
    (TEMPLATE, "https://x.org/book", make_chunk(),
     "https://x.org/book/docs/control/pid-control#pid-basics"),
    ("{base_url}/{chapter_id}.html#{section_id}", BASE, make_chunk(),
     f"{BASE}/pid-control.html#pid-basics"),
    # a derived ID links to its section as the renderer publishes it; a missing one to the
    # chapter root
    (TEMPLATE, BASE, make_chunk("common-tuning-mistakes", stable=False),
     f"{BASE}/docs/control/pid-control#common-tuning-mistakes"),
    (TEMPLATE, BASE, make_chunk(""), f"{BASE}/docs/control/pid-control"),
    (TEMPLATE, BASE, dataclasses.replace(make_chunk(), module_id=""),
     f"{BASE}/docs/pid-control#pid-basics"),
    # a pasted selection has no URL
    (TEMPLATE, BASE, make_chunk(source="selection"), ""),
])
def test_build_url(template: str, base: str, chunk: Chunk, url: str) -> None:
    assert build_url(template, base, chunk) == url


@pytest.mark.parametrize(("renderer", "source_path", "url"), [
    ("docusaurus", "control/pid-control.md", f"{BASE}/docs/control/pid-control#pid-basics"),
    ("mkdocs", "tutorial/body.md", f"{BASE}/tutorial/body/#pid-basics"),
    ("mkdocs", "tutorial/index.md", f"{BASE}/tutorial/#pid-basics"),
    ("mdbook", "ch03-02-data-types.md", f"{BASE}/ch03-02-data-types.html#pid-basics"),
    ("mdbook", "README.md", f"{BASE}/index.html#pid-basics"),
    ("d2l", "chapter_linear/index.md", f"{BASE}/chapter_linear/index.html#pid-basics"),
    ("jekyll", "our-style/active-voice.md", f"{BASE}/our-style/active-voice/#pid-basics"),
])
def test_each_renderer_publishes_its_own_urls(renderer: str, source_path: str, url: str) -> None:
    """With no url_template in settings, a citation links where the book's renderer publishes
    the section (rag.answer.citations.RENDERER_URLS)."""
    chunk = dataclasses.replace(make_chunk(), source_path=source_path)
    assert build_url(url_template_for("", renderer), BASE, chunk) == url


def test_citation_fields_and_unstable_sections_are_flagged() -> None:
    hits = [make_hit(make_chunk(), 0.71), make_hit(make_chunk("tuning-slug", stable=False), 0.5)]
    answer = cite("Integral action sums the error [S1]. Tuning matters a lot here [S2].", hits,
                  TEMPLATE, BASE)
    first, second = answer.citations
    assert (first.marker, first.url, first.stable, first.confidence) == (
        "S1", f"{BASE}/docs/control/pid-control#pid-basics", True, 0.71)
    assert (first.chunk_id, first.module_id, first.chapter_id, first.section_id) == (
        "id-pid-basics", "control", "pid-control", "pid-basics")
    assert (second.url, second.stable) == (f"{BASE}/docs/control/pid-control#tuning-slug", False)
    assert answer.unresolved == 0 and answer.uncited_sentences == 0


def test_chapter_root_citation_is_not_stable() -> None:
    (citation,) = cite("Text that cites the chapter [S1].", [make_hit(make_chunk(""))],
                       TEMPLATE, BASE).citations
    assert citation.stable is False and citation.url == f"{BASE}/docs/control/pid-control"


def test_sample_book_derived_section_links_to_itself_and_says_so(sample_index) -> None:
    chunk = next(c for c in sample_index.chunks if c.section_id == "common-tuning-mistakes")
    assert chunk.stable is False
    (citation,) = cite("Common mistakes are listed [S1].", [make_hit(chunk)], TEMPLATE,
                       BASE).citations
    assert citation.url == f"{BASE}/docs/control/pid-control#common-tuning-mistakes"
    assert citation.stable is False


# -- display format ----------------------------------------------------------------------------

def test_display_format_with_and_without_a_page() -> None:
    excerpt = pick_excerpt(WORDS)
    assert display_text(make_chunk(page=42), excerpt) == \
        f'[Source: PID Basics (Page 42) - "{excerpt}"]'
    assert display_text(make_chunk(page=None), excerpt) == f'[Source: PID Basics - "{excerpt}"]'
    assert display_text(make_chunk(source="selection"), "abc") == '[Source: Selected text - "abc"]'


def test_excerpt_is_30_to_50_words_starting_at_the_quote() -> None:
    long_text = " ".join([WORDS] * 3)
    assert len(long_text.split()) > 150
    plain = pick_excerpt(long_text)
    assert len(plain.split()) == 50 and plain.endswith("…") and not plain.startswith("…")
    quote = "after which the error is zero and stays there unless the load changes again"
    near = pick_excerpt(long_text, quote)
    assert near.startswith("…after which the error is zero") and 30 <= len(near.split()) <= 50
    # near the end of the chunk the window slides back so it still holds 30 words
    tail = pick_excerpt(WORDS, "which is when integral windup begins and the loop")
    assert 30 <= len(tail.split()) <= 50 and tail.endswith("recovers.")
    short = "A chunk of only nine words is cited whole here."
    assert pick_excerpt(short) == short


def test_excerpt_drops_markdown_and_double_quotes() -> None:
    excerpt = pick_excerpt('The **integral** term, called `ki` or "reset", ' + WORDS)
    assert "**" not in excerpt and "`" not in excerpt and '"' not in excerpt
    assert excerpt.startswith("The integral term, called ki or 'reset',")


def test_pipeline_citations_follow_the_display_format(pipeline) -> None:
    pages = set()
    for question in QUESTIONS:
        response = pipeline.answer(question)
        assert response.citations, question
        for citation in response.citations:
            match = DISPLAY_RE.match(citation.text)
            assert match, citation.text
            assert match["title"] == citation.section_title
            assert match["excerpt"] == citation.excerpt
            assert (int(match["page"]) if match["page"] else None) == citation.page
            pages.add(citation.page is None)
            chunk = next(h.chunk for h in (*response.retrieval.hits, *response.draft.sources)
                         if h.chunk.chunk_id == citation.chunk_id)
            words = len(citation.excerpt.split())
            assert 30 <= words <= 50 or words == len(chunk.text.split()) < 30
            assert citation.url.startswith(f"{BASE}/docs/{chunk.module_id}/{chunk.chapter_id}")
        rendered = render_inline(response.answer, response.citations)
        assert not re.search(r"\[S\d+\]", rendered)
        assert rendered.count("[Source: ") >= len(response.citations)
        for citation in response.citations:  # each excerpt is shown once, repeats by title
            assert rendered.count(citation.text) == 1
    assert pages == {True, False}  # both forms occur: chapters with and without page numbers


# -- marker validation -------------------------------------------------------------------------

def test_unknown_marker_is_removed_and_counted() -> None:
    hits = [make_hit(make_chunk())]
    answer = cite("Integral action sums the error [S1]. It also cures cancer [S9].", hits,
                  TEMPLATE, BASE)
    assert answer.text == "Integral action sums the error [S1]. It also cures cancer."
    assert answer.unresolved == 1 and [c.marker for c in answer.citations] == ["S1"]
    assert answer.uncited_sentences == 1
    assert cite("Nothing real here [S0] [S2].", hits, TEMPLATE, BASE).unresolved == 2


def test_repeated_markers_give_one_citation_each() -> None:
    hits = [make_hit(make_chunk()), make_hit(make_chunk("windup"))]
    answer = cite("First claim here [S2]. Second claim here [S1]. Third claim [S2].", hits,
                  TEMPLATE, BASE)
    assert [c.marker for c in answer.citations] == ["S2", "S1"]


def test_a_quoted_unit_with_full_stops_inside_is_one_cited_sentence() -> None:
    entry = 'Tobin, J., et al. (2017). "Domain randomization for transfer." IROS.'
    text = f"{entry} [S2] Key technique for bridging the gap [S2]"
    assert count_uncited(text) == 1  # read as sentences, "Tobin, J., et al. (2017)." has none
    assert count_uncited(text, [entry, "Key technique for bridging the gap"]) == 0
    assert count_uncited(f"{text} An unquoted sentence of five words.", [entry]) == 1


def test_count_uncited_ignores_short_fragments_and_the_not_covered_sentence() -> None:
    text = ("A cited sentence about gains [S1]. An uncited sentence about the plant. Yes. "
            "The provided excerpts do not cover this question.")
    assert count_uncited(text) == 1


def test_unresolved_marker_from_claude_is_removed_and_flagged(sample_index, settings_for,
                                                              claude) -> None:
    claude.plan(text="The integral term removes steady-state error [S1]. It also predicts the "
                     "weather [S9].\nConfidence: 0.9")
    llm = AnthropicLLM(api_key="test-key", base_url=claude.url)
    pipeline = Pipeline(sample_index, settings_for(llm="anthropic"), llm)
    response = pipeline.answer(QUESTIONS[0])
    assert "[S9]" not in response.answer
    assert response.answer.startswith("The integral term removes steady-state error [S1]. It "
                                      "also predicts the weather.")
    assert "citation_unresolved" in response.reason_codes
    assert [c.marker for c in response.citations] == ["S1"]


# -- a restructured book keeps its URLs --------------------------------------------------------

def restructure(source, target, keep_module_ids: bool) -> None:
    """Every chapter moved to another folder (and renamed); frontmatter IDs unchanged."""
    files = sorted(p for p in source.rglob("*") if p.suffix in (".md", ".mdx"))
    for n, path in enumerate(files):
        text = path.read_text(encoding="utf-8")
        assert text.startswith("---\n")
        if keep_module_ids:
            text = f"---\nmodule_id: {path.relative_to(source).parts[0]}\n" + text[4:]
        dest = target / f"part-{n % 3}" / "chapters" / f"{n:02d}-{path.name}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")


def test_restructured_book_gives_identical_urls(tmp_path, sample_index, sample_index_dir,
                                                pipeline, settings_for) -> None:
    book = tmp_path / "moved" / "book"  # same folder name, so the same book ID
    restructure(SAMPLE_BOOK, book, keep_module_ids=True)
    index_dir = tmp_path / "index"
    shutil.copytree(sample_index_dir, index_dir, ignore=shutil.ignore_patterns(".lock"))
    moved_settings = settings_for(book_dir=book, index_dir=index_dir, base_url=BASE)
    moved_index, summary = load_index(moved_settings)
    assert summary is not None and summary.embedded == 0  # same IDs: every vector reused
    moved = Pipeline(moved_index, moved_settings)
    for question in QUESTIONS:
        before, after = pipeline.answer(question), moved.answer(question)
        assert before.citations, question
        assert [c.url for c in after.citations] == [c.url for c in before.citations]
        assert [c.chunk_id for c in after.citations] == [c.chunk_id for c in before.citations]
        paths = {h.chunk.source_path for h in after.retrieval.hits}
        assert all(p.startswith("part-") for p in paths)


def test_without_module_ids_the_new_folders_would_change_the_urls(tmp_path) -> None:
    """The control for the test above: moving files does change what the folders imply."""
    book = tmp_path / "book"
    restructure(SAMPLE_BOOK, book, keep_module_ids=False)
    modules = {s.module_id for s in parse_book(book).sections}
    assert modules == {"part-0", "part-1", "part-2"}
    assert {s.module_id for s in parse_book(SAMPLE_BOOK).sections} == {
        "control", "learning", "locomotion", "safety", "sensing"}


def test_a_chunk_over_a_page_turn_cites_both_pages() -> None:
    one, two = (dataclasses.replace(make_chunk(page=42), page_end=end) for end in (42, 43))
    assert display_text(one, "abc") == '[Source: PID Basics (Page 42) - "abc"]'
    assert display_text(two, "abc") == '[Source: PID Basics (Pages 42–43) - "abc"]'
    assert display_text(dataclasses.replace(two, page=None), "abc") == \
        '[Source: PID Basics - "abc"]'


def test_an_excerpt_keeps_link_text_not_the_book_relative_link() -> None:
    text = ("Check the [hardware requirements](./hardware-requirements) and the "
            "[simulator setup](../module-2/intro.md#setup) first. ![Wiring](./img/wiring.png) "
            + WORDS)
    excerpt = pick_excerpt(text)
    assert excerpt.startswith("Check the hardware requirements and the simulator setup first. "
                              "Integral action")
    assert "](" not in excerpt and "./" not in excerpt and "Wiring" not in excerpt


LAB_BOOK = """---
id: labs
title: Lab Options
---
# Lab Options

## Option 1: On-Premise Lab

Workstations with RTX GPUs sit in the room, one per student.

### Advantages

No monthly bill: the workstations are bought once and simulate without any network delay.

## Option 2: Cloud Lab

Students rent GPU instances by the hour from a cloud provider.

### Advantages

No upfront purchase: the cloud instances cost nothing to set up and scale up for a term.
"""


def test_sections_sharing_a_title_in_a_chapter_are_named_with_their_heading() -> None:
    """"Lab Infrastructure Options › Advantages" named three sections of the Physical AI book
    (one per option) and "Sample Lab Configuration (20 Students)" two: the reader could not
    tell which option's advantages or costs an answer quoted."""
    first = dataclasses.replace(make_chunk("adv-1"), section_title="Advantages",
                                heading_path=("Lab Options", "Option 1: On-Premise", "Advantages"))
    second = dataclasses.replace(first, section_id="adv-2", chunk_id="id-adv-2",
                                 heading_path=("Lab Options", "Option 2: Cloud", "Advantages"))
    alone = make_chunk()
    names = section_names([first, second, alone])
    assert names == {first.section_key: "Option 1: On-Premise › Advantages",
                     second.section_key: "Option 2: Cloud › Advantages"}
    answer = cite("Bought once [S1]. Nothing to set up [S2]. Tuning [S3].",
                  [make_hit(first), make_hit(second), make_hit(alone)], TEMPLATE, BASE,
                  names=names)
    assert [c.section_title for c in answer.citations] == [
        "Option 1: On-Premise › Advantages", "Option 2: Cloud › Advantages", "PID Basics"]
    assert answer.citations[1].text.startswith("[Source: Option 2: Cloud › Advantages - ")
    other_chapter = dataclasses.replace(second, chapter_id="elsewhere")
    assert section_names([first, other_chapter]) == {}
    from pages.components.audit.label import section_names as label_names

    assert label_names([first, second, alone]) == {  # the audit's expected-section picker
        "pid-control#adv-1": "PID Control and Tuning › Option 1: On-Premise › Advantages",
        "pid-control#adv-2": "PID Control and Tuning › Option 2: Cloud › Advantages",
        "pid-control#pid-basics": "PID Control and Tuning › PID Basics"}


def test_an_answer_names_a_same_titled_section_with_its_heading(tmp_path) -> None:
    book = tmp_path / "book"
    (book / "labs").mkdir(parents=True)
    (book / "labs" / "options.md").write_text(LAB_BOOK, encoding="utf-8")
    settings = load_settings(env={}, book_dir=book, index_dir=tmp_path / "index")
    index, _ = load_index(settings)
    response = Pipeline(index, settings).answer("What are the advantages of the cloud lab?")
    assert response.status != "refused" and response.citations
    assert response.citations[0].section_title == "Option 2: Cloud Lab › Advantages"
    shown = [p["section_title"] for p in response.metadata.get("more_from_book", [])]
    assert set(shown) <= {"Option 1: On-Premise Lab › Advantages", "Option 2: Cloud Lab › "
                          "Advantages", "Option 1: On-Premise Lab", "Option 2: Cloud Lab"}


def test_a_table_row_of_one_cell_reads_plainly_in_an_excerpt():
    """A row table_row cannot read (one cell) is still read as prose: its link keeps its text."""
    excerpt = pick_excerpt("| See [the gearbox notes](/docs/gears) |\n| **Ratio** |")
    assert excerpt == "See the gearbox notes; Ratio."
