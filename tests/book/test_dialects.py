"""Each dialect real books are written in, read as its author meant it: a small book written in
the dialect, its sections' canonical text (no markup left), its ids as the dialect's renderer
computes them, its title and its order (rag.book.markdown, rag.book.structure)."""

from __future__ import annotations

from pathlib import Path

from rag.book.parse import parse_book
from rag.book.sentences import COMMAND, split_section

RAW_MARKUP = ("<!--", "{{#", "{%", ":::", "///", "!!!", "--8<--", "{*", ":label:", ":numref:",
              "<Tabs", "<TabItem", "import ", "{/*")


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def sections(root: Path, renderer: str = "") -> dict[str, object]:
    return {s.key: s for s in parse_book(root, renderer).sections}


def assert_clean(book_sections) -> None:
    """No markup of any dialect in a section's prose or in any quotable unit."""
    for s in book_sections:
        prose = "\n".join(line for line in s.text.split("```")[::2])  # outside code fences
        assert not any(mark in prose for mark in RAW_MARKUP), (s.key, prose)
        for unit in split_section(s.text, s.title):
            if unit.kind == COMMAND:  # a program's own words ("from api import App")
                continue
            assert not any(mark in unit.text for mark in RAW_MARKUP), (s.key, unit.text)


def test_docusaurus_mdx_imports_jsx_admonitions_tabs_and_comments(tmp_path: Path) -> None:
    root = write(tmp_path / "site", {
        "docusaurus.config.js": "module.exports = {\n  title: 'Robot Handbook',\n};\n",
        "docs/setup.mdx": (
            "---\nsidebar_position: 2\n---\n"
            "import Tabs from '@theme/Tabs';\nimport TabItem from '@theme/TabItem';\n"
            "export const meta = {\n  level: 2,\n};\n\n"
            "# Setting up\n\n{/* a note the author keeps to themselves */}\n\n"
            "## Install the SDK\n\n<Tabs>\n<TabItem value=\"py\" label=\"Python\">\n\n"
            "Run the installer from the project folder.\n\n</TabItem>\n</Tabs>\n\n"
            ":::tip[Keep it current]\n\nUpdate the SDK every month.\n\n:::\n\n"
            "## Snake_case names\n\nNames use underscores.\n"),
        "docs/intro.md": "---\nsidebar_position: 1\n---\n# Welcome\n\nThe handbook starts here.\n",
    })
    found = sections(root)
    assert list(found) == ["/intro#", "/setup#install-the-sdk", "/setup#snake_case-names"]
    # sidebar order; github-slugger keeps '_'; the H1 is the chapter's title
    assert found["/setup#install-the-sdk"].text == (
        "Python:\n\nRun the installer from the project folder.\n\n"
        "Keep it current: Update the SDK every month.")
    assert not any("author keeps" in s.text for s in found.values())
    assert parse_book(root).title == "Robot Handbook"
    assert_clean(found.values())


def test_mkdocs_material_blocks_tabs_snippets_and_includes(tmp_path: Path) -> None:
    root = write(tmp_path / "proj", {
        "mkdocs.yml": "site_name: Web API Guide\nnav:\n  - Home: index.md\n"
                      "  - Tutorial:\n    - First steps: tutorial/first.md\n",
        "docs_src/app.py": "from api import App\napp = App()\n",
        "docs/index.md": "# Web API Guide { #home }\n\nStart with the tutorial.\n",
        "docs/tutorial/first.md": (
            "# First Steps { #first-steps }\n\n## Create an app\n\n"
            "{* ../docs_src/app.py hl[2] *}\n\n{* ../../nowhere/missing.py *}\n\n"
            "!!! note \"Why one object\"\n    One object holds every route.\n\n"
            "/// tip | Reload\n\nUse the reload flag while developing.\n\n///\n\n"
            "=== \"Linux\"\n\n    Run it with the system Python.\n\n"
            "=== \"Windows\"\n\n    Run it with the launcher.\n\n"
            "--8<-- \"snippets/missing.md\"\n\n## Create an app\n\nA second heading.\n"),
    })
    book = parse_book(root)
    found = {s.key: s for s in book.sections}
    assert book.title == "Web API Guide" and book.renderer == "mkdocs"
    assert list(found) == ["/index#home", "tutorial/first#first-steps",
                           "tutorial/first#create-an-app", "tutorial/first#create-an-app_1"]
    # nav order; MkDocs' _1 for a repeat; an H1 with its own id is a section of its own
    text = found["tutorial/first#create-an-app"].text
    assert "```python\nfrom api import App\napp = App()\n```" in text  # the include, resolved
    assert "Why one object: One object holds every route." in text
    assert "Reload: Use the reload flag while developing." in text
    assert "Linux:\n\nRun it with the system Python." in text and "Windows:" in text
    assert book.report.missed["tutorial/first.md"]["include not found"] == 2
    assert found["/index#home"].chapter_title == "Web API Guide"  # {#id} out of the title
    assert_clean(found.values())


def test_mdbook_summary_order_includes_with_anchors_and_reference_links(tmp_path: Path) -> None:
    root = write(tmp_path / "rustish", {
        "book.toml": "[book]\ntitle = \"Learning Loops\"\nsrc = \"src\"\n",
        "src/SUMMARY.md": "# Summary\n\n- [Loops](ch02-loops.md)\n- [Basics](ch01-basics.md)\n",
        "listings/loop.rs": "fn main() {\n    // ANCHOR: body\n    for i in 0..3 {}\n"
                            "    // ANCHOR_END: body\n}\n",
        "src/ch01-basics.md": "# Basics\n\nSee [Chapter 2][loops]<!-- ignore -->.\n\n"
                              "[loops]: ch02-loops.html\n",
        "src/ch02-loops.md": (
            "# Loops\n\n## For loops\n\n```rust\n{{#rustdoc_include ../listings/loop.rs:body}}\n"
            "```\n\n{{#include ../listings/absent.rs}}\n\nA for loop runs once per item.\n\n"
            "Nicer, isn’t it?\n\n## Hello, World!\n\nPrinting.\n"),
    })
    book = parse_book(root)
    found = {s.key: s for s in book.sections}
    assert book.title == "Learning Loops" and book.renderer == "mdbook"
    assert [c["path"] for c in book.chapters.values()] == ["ch02-loops.md", "ch01-basics.md"]
    loops = found["/ch02-loops#for-loops"].text
    assert "```rust\n    for i in 0..3 {}\n```" in loops and "ANCHOR" not in loops
    assert "/ch02-loops#hello-world" in found  # mdBook's normalize_id
    assert found["/ch01-basics#"].text == "See [Chapter 2](ch02-loops.html)."
    assert book.report.missed["ch02-loops.md"] == {"include not found": 1}
    assert_clean(found.values())


def test_myst_jupyter_book_targets_roles_directives_and_comments(tmp_path: Path) -> None:
    root = write(tmp_path / "jb", {
        "_config.yml": "title: Data Notes\n",
        "_toc.yml": "format: jb-book\nroot: intro\nchapters:\n- file: cleaning\n",
        "intro.md": "# Data Notes\n\nWelcome.\n",
        "cleaning.md": (
            "# Cleaning data\n\n% a comment only the author sees\n\n(missing-values)=\n"
            "## Missing values\n\nUse {math}`x_i` for a value and see {ref}`the loader <load>`."
            "\n\n```{note}\nAlways keep the raw file.\n```\n\n"
            "```{code-cell} ipython3\nimport pandas\n```\n\n+++\n\n## 3D plots\n\nPlots.\n"),
    })
    book = parse_book(root)
    found = {s.key: s for s in book.sections}
    assert book.renderer == "jupyterbook" and book.title == "Data Notes"
    assert [c["path"] for c in book.chapters.values()] == ["intro.md", "cleaning.md"]
    missing = found["/cleaning#missing-values"]
    assert missing.stable  # the (label)= target is the author's id
    assert missing.text.startswith("Use $x_i$ for a value and see the loader.")
    assert "Note: Always keep the raw file." in missing.text
    assert "```ipython3\nimport pandas\n```" in missing.text
    assert "/cleaning#d-plots" in found  # docutils drops the leading digit
    assert not any("comment only" in s.text for s in found.values())
    assert_clean(found.values())


def test_d2l_labels_numref_cite_code_cells_and_tabs(tmp_path: Path) -> None:
    root = write(tmp_path / "d2l", {
        "index.md": "Deep Notes\n==========\n\n```toc\n:maxdepth: 2\n\nchapter_b/index\n"
                    "chapter_a/index\n```\n",
        "chapter_a/index.md": "# Linear Models\n:label:`chap_linear`\n\nLines.\n",
        "chapter_b/index.md": (
            "# Softmax Regression\n:label:`sec_softmax`\n\nAs in :numref:`chap_linear`, "
            "we fit weights :cite:`Smith.2020`.\n\n$$\\hat{y} = Wx$$\n:eqlabel:`eq_y`\n\n"
            "```{.python .input}\n#@tab pytorch\nimport torch\n```\n\n"
            ":begin_tab:`pytorch`\nTensors live on a device.\n:end_tab:\n\n"
            "## The Loss\n\nCross-entropy.\n"),
    })
    book = parse_book(root)
    found = {s.key: s for s in book.sections}
    assert book.renderer == "d2l" and book.title == "Deep Notes"
    assert [c["path"] for c in book.chapters.values()] == [
        "chapter_b/index.md", "chapter_a/index.md"]  # the toc blocks' order
    opening = found["chapter_b/index#sec-softmax"]  # labelled: Sphinx's id for sec_softmax
    assert opening.text.startswith("As in Linear Models, we fit weights.")
    assert "$$\n\\hat{y} = Wx\n$$" in opening.text and "```python\n#@tab pytorch" in opening.text
    assert "Tensors live on a device." in opening.text
    assert found["chapter_b/index#the-loss"].section_id == "the-loss"
    assert book.chapters["chapter_b/index"]["title"] == "Softmax Regression"
    assert_clean(found.values())
    assert not any(u.text.startswith("$$") for s in found.values()
                   for u in split_section(s.text, s.title))  # equations are not quoted


def test_jekyll_liquid_kramdown_and_html(tmp_path: Path) -> None:
    root = write(tmp_path / "guide", {
        "_config.yml": "title: Plain Writing\n",
        "style/voice.md": (
            "---\ntitle: Voice and tone\npermalink: /style/voice/\n---\n\n"
            "{% include breadcrumbs.html %}\n\nRead [the basics]({{ \"/basics/\" | relative_url }})"
            " first.\n{: .lead}\n\n{% comment %}\nDraft text nobody should read.\n"
            "{% endcomment %}\n\n## Be direct\n\n<div class=\"callout\">\n\nSay what you mean."
            "\n\n</div>\n\n<!-- TODO: examples -->\n\n{% raw %}{{ kept }}{% endraw %} braces.\n"),
    })
    book = parse_book(root)
    found = {s.key: s for s in book.sections}
    assert book.title == "Plain Writing" and book.renderer == "jekyll"
    assert found["style/voice#"].text == "Read [the basics](/basics/) first."
    assert found["style/voice#be-direct"].text == "Say what you mean.\n\n{{ kept }} braces."
    assert book.report.missed["style/voice.md"]["Liquid tag"] >= 1  # the include
    assert not any("Draft text" in s.text or "TODO" in s.text for s in found.values())
    assert_clean(found.values())


def test_commonmark_fences_setext_escapes_and_reference_links(tmp_path: Path) -> None:
    root = write(tmp_path / "plain", {"notes.md": (
        "Notes\n=====\n\nIntro with \\*stars\\* and [a ref][r] and [dangling][nowhere].\n\n"
        "[r]: https://example.org/\n\n"
        "Second Part\n-----------\n\n````md\n```python\nprint(1)\n```\n````\n\n"
        "It costs $90k, or $5k a year.\n")})
    found = sections(root)
    assert list(found) == ["/notes#", "/notes#second-part"]
    assert found["/notes#"].text == \
        "Intro with \\*stars\\* and [a ref](https://example.org/) and dangling."
    units = [u.text for u in split_section(found["/notes#"].text)]
    assert units == ["Intro with *stars* and a ref and dangling."]
    second = found["/notes#second-part"].text
    assert second.startswith("````md\n```python\nprint(1)\n```\n````")  # code stays code
    assert [u.text for u in split_section(second)] == ["It costs $90k, or $5k a year."]
