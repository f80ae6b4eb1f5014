"""What a book folder is: which renderer publishes it (so its heading ids can be computed as that
renderer computes them), where its chapters are, its title and its table of contents.

The renderer is read from its configuration beside the chapters (book.toml, mkdocs.yml,
_toc.yml, docusaurus.config.js, conf.py, _config.yml, SUMMARY.md), else recognised from the
constructs its pages use (`:label:` is d2l's, `///` blocks MkDocs', Liquid Jekyll's ...), else
GitHub's, and can be set per book (`[book] renderer` in settings). The title: the settings', else
the renderer's configuration, else the `book_title:` of the root page's frontmatter, else the root
page's first heading, else the folder's name.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rag.book.markdown.reader import split_anchor
from rag.book.slugs import GITHUB, MDBOOK, MKDOCS, SPHINX
from rag.book.toc import Entry, jupyter_toc, mkdocs_nav, read_yaml, sphinx_toc, summary_toc

RENDERERS = {"docusaurus": GITHUB, "mkdocs": MKDOCS, "mdbook": MDBOOK, "jupyterbook": SPHINX,
             "sphinx": SPHINX, "d2l": SPHINX, "jekyll": GITHUB, "github": GITHUB}
DOCUSAURUS_CONFIGS = ("docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs")
# `^[^\S\n]*`, not `^\s*`: from every line start of 10,000 blank lines \s* ran to the end
DOCUSAURUS_TITLE = re.compile(r"^[^\S\n]*title:[^\S\n]*(['\"`])(.{1,200}?)\1[^\S\n]*,?[^\S\n]*$",
                              re.MULTILINE)
SPHINX_PROJECT = re.compile(r"^project\s*=\s*(['\"])(.{1,200}?)\1", re.MULTILINE)
ROOT_PAGES = ("index", "README", "intro", "introduction")
GENERIC_TITLES = frozenset({"introduction", "intro", "overview", "welcome", "preface", "home",
                            "getting started", "readme", "index", "contents", "summary",
                            "table of contents", "about"})
MAX_CONFIG_BYTES = 1024 * 1024
FOLIO_SETTINGS = "folio.toml"  # a book's own settings (rag.config.BOOK_SETTINGS)
SNIFF_FILES, SNIFF_BYTES = 60, 20_000
# constructs that tell a dialect apart when no configuration says which it is
MARKERS = {
    "d2l": re.compile(r"^:label:`|^```toc\b|:numref:`", re.M),
    "mkdocs": re.compile(r"^/{3,}[ \t]*[a-z]|^!!! [a-z]|^--8<--|^\{\* ", re.M),
    "jekyll": re.compile(r"\{%[ -]|\|\s*relative_url\s*\}\}|^permalink:", re.M),
    "docusaurus": re.compile(r"^sidebar_position:|^:::(?:note|tip|info|warning|danger|caution)",
                             re.M),
    "jupyterbook": re.compile(r"^```\{[a-z-]+\}|^\([\w.:-]+\)=$", re.M),
    "mdbook": re.compile(r"\{\{#(?:include|rustdoc_include|playground)\b"),
}


@dataclass(frozen=True)
class Layout:
    project: Path  # the folder the reader gave, or the site around its docs/
    root: Path  # the chapters' folder
    renderer: str
    title: str = ""
    toc: tuple[Entry, ...] = ()
    positions: dict[str, int] = field(default_factory=dict)  # rel path (no suffix) -> order

    @property
    def slug_style(self) -> str:
        return RENDERERS.get(self.renderer, GITHUB)

    @property
    def myst(self) -> bool:
        return self.renderer in ("jupyterbook", "sphinx")

    def position(self, rel: str) -> int | None:
        """Where a chapter (its path relative to root) stands in the book's own contents."""
        return self.positions.get(_no_suffix(rel))

    def toc_title(self, rel: str) -> str:
        want = _no_suffix(rel)
        return next((title for path, title in self.toc if _no_suffix(path) == want and title),
                    "")


def _no_suffix(path: str) -> str:
    stem, dot, suffix = path.rpartition(".")
    return stem if dot and suffix.lower() in ("md", "mdx", "markdown", "ipynb", "rst", "html",
                                                "htm") else path


def _text(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def project_of(given: Path) -> Path:
    """The folder holding the book's configuration: `given`, or its parent when `given` is the
    docs/ folder of a site configured one level up."""
    given = Path(given)
    if given.name in ("docs", "src") and any((given.parent / name).is_file() for name in (
            "mkdocs.yml", "mkdocs.yaml", "book.toml", "_toc.yml", "_config.yml",
            *DOCUSAURUS_CONFIGS)):
        return given.parent
    return given


def chapters_root(project: Path) -> Path:
    """Where the chapters are: book.toml's src (mdBook), mkdocs.yml's docs_dir, else docs/ when
    there is one, else the folder itself."""
    if (project / "book.toml").is_file():
        src = _toml(project / "book.toml").get("book", {}).get("src", "src")
        if isinstance(src, str) and (project / src).is_dir():
            return project / src
    for name in ("mkdocs.yml", "mkdocs.yaml"):
        if (project / name).is_file():
            data = read_yaml(_text(project / name))
            docs = data.get("docs_dir", "docs") if isinstance(data, dict) else "docs"
            if isinstance(docs, str) and (project / docs).is_dir():
                return project / docs
    return project / "docs" if (project / "docs").is_dir() else project


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(_text(path))
    except tomllib.TOMLDecodeError:
        return {}


def read_layout(given: Path, files: list[Path], renderer: str = "") -> Layout:
    """The book at `given` (its chapter files `files`, under chapters_root)."""
    project = project_of(Path(given))
    root = chapters_root(project)
    kind, title, toc = _configured(project, root)
    own = folio_book(project)
    renderer = renderer or str(own.get("renderer") or "")
    if renderer in RENDERERS:
        kind = renderer
    elif not kind:
        kind = sniff(files)
    if not toc and kind in ("d2l", "sphinx", "jupyterbook"):
        start = next((p for p in ("index", "README") if (root / f"{p}.md").is_file()), "")
        toc = sphinx_toc(root, start) if start else []
    positions: dict[str, int] = {}
    for path, _ in toc:
        positions.setdefault(_no_suffix(path), len(positions))
    return Layout(project=project, root=root, renderer=kind,
                  title=str(own.get("title") or "") or root_title(root) or title
                  or index_heading(root),
                  toc=tuple(toc), positions=positions)


def _configured(project: Path, root: Path) -> tuple[str, str, list[Entry]]:
    """(renderer, title, table of contents) from the book's configuration, ("", "", []) if none."""
    if (project / "book.toml").is_file():
        title = _toml(project / "book.toml").get("book", {}).get("title", "")
        toc = summary_toc(root / "SUMMARY.md") if (root / "SUMMARY.md").is_file() else []
        return "mdbook", title if isinstance(title, str) else "", toc
    for name in ("mkdocs.yml", "mkdocs.yaml"):
        if (project / name).is_file():
            data = read_yaml(_text(project / name))
            data = data if isinstance(data, dict) else {}
            return "mkdocs", str(data.get("site_name") or ""), mkdocs_nav(data.get("nav"))
    if (project / "_toc.yml").is_file():
        config = read_yaml(_text(project / "_config.yml"))
        title = config.get("title", "") if isinstance(config, dict) else ""
        return "jupyterbook", str(title or ""), jupyter_toc(project / "_toc.yml")
    for name in DOCUSAURUS_CONFIGS:
        for folder in (project, project.parent):
            if found := DOCUSAURUS_TITLE.search(_text(folder / name)):
                return "docusaurus", found.group(2).strip(), []
    if (project / "conf.py").is_file() or (root / "conf.py").is_file():
        found = SPHINX_PROJECT.search(_text(project / "conf.py") or _text(root / "conf.py"))
        return "sphinx", found.group(2) if found else "", []
    if (project / "_config.yml").is_file():
        config = read_yaml(_text(project / "_config.yml"))
        return "jekyll", str(config.get("title", "") if isinstance(config, dict) else ""), []
    if (root / "SUMMARY.md").is_file():
        return "mdbook", "", summary_toc(root / "SUMMARY.md")
    return "", "", []


def sniff(files: list[Path]) -> str:
    """The dialect most of the book's constructs belong to (github when none shows)."""
    if any(f.suffix == ".mdx" for f in files):
        return "docusaurus"
    votes: Counter = Counter()
    for path in [f for f in files if f.suffix in (".md", ".markdown")][:SNIFF_FILES]:
        try:
            with open(path, "rb") as f:
                head = f.read(SNIFF_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        votes.update({kind: 1 for kind, marker in MARKERS.items() if marker.search(head)})
    return votes.most_common(1)[0][0] if votes else "github"


def book_title(given: Path) -> str:
    """The book's own title ("" when it has none): `book_title:` in its root page's frontmatter,
    else its renderer's configuration, else its index page's first heading."""
    project = project_of(Path(given))
    root = chapters_root(project)
    own = str(folio_book(project).get("title") or "")
    return own or root_title(root) or _configured(project, root)[1] or index_heading(root)


def folio_book(project: Path) -> dict:
    """The [book] table of the book's own folio.toml ({} when none or unreadable: the settings
    loader reports a broken one)."""
    found = _toml(project / FOLIO_SETTINGS).get("book", {})
    return found if isinstance(found, dict) else {}


def _root_page(root: Path, stem: str) -> str:
    """A root page's text ("" when absent, or a link to a file outside the book)."""
    for suffix in (".md", ".mdx"):
        path = root / f"{stem}{suffix}"
        try:
            if path.is_file() and path.resolve().is_relative_to(root.resolve()):
                return _text(path)[:200_000]
        except (OSError, RuntimeError):
            continue
    return ""


def root_title(root: Path) -> str:
    """`book_title:` in the frontmatter of the root page (index, README or intro); a chapter's
    own `title` names the chapter, never the book."""
    from rag.book.frontmatter import load_frontmatter
    from rag.errors import InputError

    for stem in ROOT_PAGES:
        text = _root_page(root, stem)
        if text.startswith("---") and (end := text.find("\n---", 3)) > 0:
            try:
                value = load_frontmatter(text[3:end], 1).get("book_title")
            except InputError:
                continue
            if isinstance(value, str) and value.strip():
                return " ".join(value.split())[:200]
    return ""


def index_heading(root: Path) -> str:
    """The first heading of the index page (index.md or README.md), unless it names a chapter
    ("Introduction", "Welcome")."""
    for stem in ("index", "README"):
        text = _root_page(root, stem)
        if text.startswith("---") and (end := text.find("\n---", 3)) > 0:
            text = text[end + 4:]
        heading = first_heading(text)
        if heading and heading.lower() not in GENERIC_TITLES:
            return heading
    return ""


def first_heading(text: str) -> str:
    """The first level-1 heading of a Markdown text, ATX or setext ("" if none)."""
    lines = text.splitlines()
    fence = False
    for n, line in enumerate(lines[:400]):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        elif not fence and line.startswith("# "):
            return split_anchor(" ".join(line[2:].strip(" #").split()))[0][:200]
        elif not fence and line.strip() and n + 1 < len(lines) and \
                set(lines[n + 1].strip()) == {"="}:
            return " ".join(line.split())[:200]
    return ""
