"""HTML made ready for Markdown: what is not text is taken out (and counted), math keeps its TeX,
code blocks learn their language, headings get the id the page gives them.

This is the part markdownify does not do: it converts what it is given, so chrome, images,
hidden text and rendered-math duplicates must be gone before it runs. It runs on a tree the
converter owns (never a caller's).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bs4 import BeautifulSoup, CData, Comment, Declaration, Doctype, NavigableString, Tag
from bs4.element import ProcessingInstruction

from rag.book.formats import base
from rag.book.formats.base import Problems

SILENT = ("script", "style", "noscript", "template", "head", "link", "meta", "button", "input",
          "select", "textarea", "option", "datalist", "dialog", "base", "param", "track")
EMBEDS = ("video", "audio", "iframe", "object", "embed", "canvas", "map", "frame", "frameset")
HIDDEN_CLASSES = {"sr-only", "visually-hidden", "screen-reader-text", "linenos", "lineno",
                  "linenodiv", "line-numbers-rows", "codelinenumber", "headerlink", "hash-link",
                  "boring"}  # mdBook: the playground's hidden `fn main() {` wrapper lines
PERMALINK_TEXT = re.compile(r"[\s\u200b\u00b6#§🔗]*")  # ¶ (Sphinx), # and zero-width (Docusaurus)
LANG_RE = re.compile(r"^(?:language|lang|highlight|sourcecode|brush:?)-?([\w+#.-]+)$")
NO_LANG = {"", "none", "text", "plaintext", "plain", "default", "nohighlight", "notranslate",
           "highlight", "sourcecode", "source", "code", "console-output"}
GENERIC_ALT = re.compile(r"^(image|img|figure|fig|picture|photo|screenshot|icon|logo|"
                         r"diagram|untitled)?\s*[\d.]*$|\.\w{2,4}$|[/\\]", re.IGNORECASE)
TEX_DELIMS = re.compile(r"^\s*(?:\\\(|\\\[|\$\$|\$)(.*?)(?:\\\)|\\\]|\$\$|\$)\s*$", re.DOTALL)
HEADING = re.compile(r"^h[1-6]$")
NOT_TEX = re.compile(r"<[A-Za-z/!?]|\$")
SECTIONING = ("section", "article", "div", "header", "hgroup")


def prepare(root: Tag, soup: BeautifulSoup, problems: Problems, where: str) -> None:
    """Strip `root` to its text content, in place."""
    for node in list(root.descendants):
        if isinstance(node, (Comment, Doctype, Declaration, ProcessingInstruction)):
            node.extract()
        elif isinstance(node, CData):
            node.replace_with(NavigableString(str(node)))
    _keep_math(root, soup, problems, where)
    _remove(root, lambda tag: _is_chrome(tag, problems, where))
    for img in root.find_all("img"):
        _image_to_alt(img, problems, where)
    for pre in root.find_all("pre"):  # before tables move code blocks out of their holders
        pre["data-lang"] = _code_language(pre)
        if [c.name for c in pre.children if isinstance(c, Tag)] == ["code"]:
            for text in [c for c in pre.children if isinstance(c, NavigableString)]:
                if not text.strip():
                    text.extract()  # markup indentation around <code> (pretty-printed XHTML)
    _tidy_tables(root, problems, where)
    for heading in root.find_all(HEADING):
        _give_heading_its_id(heading)
    _flatten_deep(root, problems, where)
    root.smooth()  # texts left side by side by removals: one string, so whitespace collapses


def _is_figure(svg: Tag) -> bool:
    """A drawing, not an icon: icons sit in links, buttons and headings, and carry no text."""
    return (svg.find_parent(["a", "button", "h1", "h2", "h3", "h4", "h5", "h6", "span"]) is None
            and (svg.get("role") == "img" or svg.find("text") is not None
                 or svg.find_parent("figure") is not None))


def _image_to_alt(img: Tag, problems: Problems, where: str) -> None:
    alt = " ".join(str(img.get("alt") or "").split())
    classes = {c.lower() for c in img.get("class") or []}
    if classes & {"emoji", "twemoji", "wp-smiley"} and alt:
        img.replace_with(NavigableString(alt))  # an emoji drawn as a picture is a character
        return
    problems.add(base.IMAGE, where)
    figure = img.find_parent("figure")
    captioned = figure is not None and figure.find("figcaption") is not None
    if alt and len(alt.split()) >= 2 and not GENERIC_ALT.search(alt) and not captioned:
        img.replace_with(NavigableString(f" {alt} "))
    else:
        img.extract()


def _remove(root: Tag, doomed: Callable[[Tag], bool]) -> None:
    """Take out every element `doomed` picks, without looking inside one already taken (one
    pass: bs4's `decomposed` check per element made a 3,000-deep page take 90 s)."""
    marked, stack = [], [root]
    while stack:
        for child in stack.pop().children:
            if isinstance(child, Tag):
                (marked if doomed(child) else stack).append(child)
    for tag in marked:
        tag.extract()


def _is_chrome(tag: Tag, problems: Problems, where: str) -> bool:
    """Not text: scripts, forms, media (counted), hidden text, line numbers, permalinks."""
    if tag.name in EMBEDS or (tag.name == "svg" and _is_figure(tag)):
        problems.add(base.EMBED, where)
        return True
    if tag.name in SILENT or tag.name in ("svg", "picture", "source"):
        return True
    style = str(tag.get("style") or "").replace(" ", "").lower()
    classes = {c.lower() for c in tag.get("class") or []}
    if (tag.has_attr("hidden") or str(tag.get("aria-hidden")).lower() == "true"
            or "display:none" in style or classes & HIDDEN_CLASSES):
        return True
    # a heading's permalink: its text is a symbol, not words
    return tag.name == "a" and str(tag.get("href") or "").startswith("#") \
        and not tag.find(True) and PERMALINK_TEXT.fullmatch(tag.get_text()) is not None


def _tidy_tables(root: Tag, problems: Problems, where: str) -> None:
    for table in reversed(root.find_all("table")):  # innermost first
        if table.parent is None:
            continue
        if table.find("pre") is not None:  # a highlighted code block laid out with line numbers
            for pre in table.find_all("pre"):
                table.insert_before(pre.extract())
            table.extract()
        elif all(len(tr.find_all(["td", "th"], recursive=False)) <= 1
                 for tr in table.find_all("tr")):
            for tag in table.find_all(["tbody", "thead", "tfoot", "tr", "td", "th"]):
                tag.name = "div"  # a layout table: one cell per row is a column of blocks
            table.name = "div"
        else:
            if table.find_parent(["td", "th"]) is not None:
                problems.add(base.NESTED_TABLE, where)
            if any(str(c.get("rowspan", "1")).strip() not in ("", "1")
                   for c in table.find_all(["td", "th"])):
                problems.add(base.MERGED_CELLS, where)


def _code_language(pre: Tag) -> str:
    """The language a highlighter marked on the block: `language-x` (mdBook, MkDocs, Docusaurus,
    Prism), `highlight-x` (Sphinx), `sourceCode x` (Pandoc); "" when none is given."""
    code = pre.find("code")
    holders = [pre, *([code] if code else []), *list(pre.parents)[:3]]
    for holder in holders:
        classes = [c.lower() for c in holder.get("class") or []]
        for cls in classes:
            m = LANG_RE.match(cls)
            if m and m.group(1) not in NO_LANG:
                return m.group(1)
        if "sourcecode" in classes:  # Pandoc: class="sourceCode python"
            rest = [c for c in classes if c != "sourcecode" and c not in NO_LANG]
            if rest:
                return rest[0]
    return ""


def _give_heading_its_id(heading: Tag) -> None:
    """The id a link to this heading uses: its own, an anchor inside it, that of the section it
    opens (Sphinx, Pandoc, Standard Ebooks' <article>), or an empty anchor just before it."""
    if heading.get("id"):
        return
    inner = heading.find(lambda t: t.name in ("a", "span") and not t.get("href")
                         and (t.get("id") or t.get("name")))
    before = heading.find_previous_sibling(True)
    if inner is not None:
        heading["id"] = inner.get("id") or inner.get("name")
    elif before is not None and before.name == "a" and not before.get_text(strip=True) \
            and (before.get("id") or before.get("name")):
        heading["id"] = before.get("id") or before.get("name")
    else:
        node = heading
        for _ in range(3):  # a heading wrapped in <header> or <hgroup> still opens the section
            parent = node.parent
            if parent is None or parent.name not in SECTIONING \
                    or parent.find(True, recursive=False) is not node:
                return
            if parent.get("id"):
                heading["id"] = parent["id"]
                return
            node = parent


def _keep_math(root: Tag, soup: BeautifulSoup, problems: Problems, where: str) -> None:
    """Math as `folio-math` tags holding TeX: KaTeX/MathML annotations, MathJax 2 scripts,
    Sphinx/Pandoc `\\(...\\)` spans. KaTeX's rendered copy is aria-hidden and goes later."""
    for script in root.find_all("script", type=re.compile(r"^math/tex")):
        display = "mode=display" in script["type"].replace(" ", "")
        script.replace_with(_math(soup, script.get_text(), display))
    for math in root.find_all("math"):
        if math.parent is None:
            continue
        note = math.find("annotation", encoding="application/x-tex")
        display = math.get("display") == "block" or math.find_parent(class_="katex-display")
        holder = math.find_parent(class_="katex") or math
        if note is not None:
            holder.replace_with(_math(soup, note.get_text(), bool(display)))
        else:
            problems.add(base.MATH_TEXT, where)
            holder.replace_with(NavigableString(" ".join(math.get_text(" ").split())))
    for tag in root.find_all(["span", "div"], class_="math"):
        m = TEX_DELIMS.match(tag.get_text())
        if m and not tag.find(True):
            tag.replace_with(_math(soup, m.group(1), tag.name == "div"
                                   or "display" in (tag.get("class") or [])))


def _math(soup: BeautifulSoup, tex: str, display: bool) -> Tag | NavigableString:
    """A formula as TeX; text that cannot be TeX (markup, dollars) stays text, escaped later."""
    if NOT_TEX.search(tex):
        return NavigableString(tex)
    return soup.new_tag("folio-math", attrs={"tex": tex.strip(), "display": "1" if display else ""})


def _flatten_deep(root: Tag, problems: Problems, where: str) -> None:
    """Whatever sits deeper than MAX_DEPTH becomes its plain text: markdownify recurses once per
    level and Python's stack ends near 400 (measured), while real pages stay under 40.
    (Unwrapping instead is quadratic in bs4: 3,000 levels took 4 s, 20,000 took 170 s.)"""
    stack = [(root, 0)]
    flattened = False
    while stack:
        tag, depth = stack.pop()
        children = [c for c in tag.children if isinstance(c, Tag)]
        if depth >= base.MAX_DEPTH and children:
            text = " ".join(tag.get_text(" ").split())
            tag.clear()
            tag.append(NavigableString(text))
            flattened = True
        else:
            stack.extend((c, depth + 1) for c in children)
    if flattened:
        problems.add(base.DEEP_NESTING, where)
