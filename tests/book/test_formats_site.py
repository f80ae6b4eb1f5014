"""Built sites as books (rag.book.formats.site, site_layout): pages shaped like mdBook, MkDocs
Material, Sphinx and Docusaurus output, read for their main text only, in the order of the site's
own table of contents, titled from their headings; unreadable pages reported, never a traceback."""

from __future__ import annotations

import pytest

from rag.book.formats import base, read_html_site, site
from rag.errors import InputError
from tests.builders import HANDBOOK, HANDBOOK_TITLE, handbook_site

MACHINERY = "pages skipped as site machinery (search, index of terms, print view, 404)"


def page(html: str) -> bytes:
    return f'<!DOCTYPE html><html><head><meta charset="utf-8">{html}</html>'.encode()


def test_an_mdbook_site_reads_in_sidebar_order_with_titles_ids_and_no_chrome():
    book = read_html_site(handbook_site())
    assert book.title == HANDBOOK_TITLE
    assert [(c.path, c.title) for c in book.chapters] == [
        ("index", "Introduction"), ("chapters/tyres", "Tyres and Tubes"),
        ("chapters/brakes", "Brakes"), ("chapters/gears", "Gears")]
    assert book.problems == [f"{MACHINERY}: 2 (in 404.html, search.html)"]
    assert book.chapters[0].markdown == ("# Introduction {#introduction}\n\n"
                                         "How to keep a bicycle running, one job at a time.\n")
    brakes = book.chapters[2].markdown
    assert brakes.startswith("# Brakes {#brakes}\n\n## Rim Brakes {#rim-brakes}\n\nRim brakes "
                             "squeeze the wheel rim between two rubber pads.\n\n")
    assert brakes.endswith("## Adjusting the Cable {#adjusting-the-cable}\n\n"
                           "Turn the barrel adjuster anticlockwise to tighten a slack cable.\n\n"
                           "The lever should stop a finger's width before the handlebar.\n\n"
                           "1. Loosen the anchor bolt.\n2. Pull the cable taut.\n"
                           "3. Tighten the bolt again.\n")
    for chapter, (_, _, sections) in zip(book.chapters[1:], HANDBOOK, strict=True):
        headings = [line for line in chapter.markdown.split("\n") if line.startswith("## ")]
        assert headings == [f"## {title} {{#{sid}}}" for title, sid, _ in sections]
        for leak in ("<", "¶", "›", "Print", "Livereload", "path_to_root", "max-width"):
            assert leak not in chapter.markdown


def test_mdbook_toc_html_gives_the_order_and_the_index_copy_of_the_first_chapter_is_dropped():
    intro = "<main><h1>Welcome</h1><p>Read me first.</p></main>"
    pages = [("index.html", page(intro)), ("introduction.html", page(intro)),
             ("a-zoo.html", page("<main><h1>Zoo</h1><p>Animals.</p></main>")),
             ("b-apes.html", page("<main><h1>Apes</h1><p>Primates.</p></main>")),
             ("toc.html", page('<body class="sidebar-iframe-inner"><ol class="chapter">'
                               '<li><a href="introduction.html">Welcome</a></li>'
                               '<li><a href="b-apes.html"><strong aria-hidden="true">1.</strong>'
                               ' Apes</a></li><li><a href="a-zoo.html">Zoo</a></li></ol>'))]
    book = read_html_site(pages)
    assert [c.path for c in book.chapters] == ["introduction", "b-apes", "a-zoo"]
    assert book.problems == [f"{MACHINERY}: 1 (in toc.html)",
                             f"{site.SKIPPED_DUPLICATE}: 1 (in index.html)"]


MKDOCS = """<title>Install - Bike Docs</title><meta property="og:site_name" content="Bike Docs">
</head><body><header class="md-header"><nav class="md-header__inner">Bike Docs
<form class="md-search"><input placeholder="Search"></form></nav></header>
<div class="md-container"><main class="md-main"><div class="md-main__inner md-grid">
<div class="md-sidebar md-sidebar--primary"><nav class="md-nav md-nav--primary"><ul>
<li><a href="../">Home</a></li><li><a href="./">Install</a></li><li><a href="../usage/">Usage</a>
</li></ul></nav></div><div class="md-sidebar md-sidebar--secondary"><nav class="md-nav">
Table of contents <a href="#steps">Steps</a></nav></div>
<div class="md-content"><article class="md-content__inner md-typeset">
<a href="https://github.com/x/y/edit/main/docs/install.md" title="Edit this page"
 class="md-content__button md-icon"><svg viewBox="0 0 24 24"><path d="M1"/></svg></a>
<h1 id="install">Install</h1><p>Pump the tyres first.</p>
<h2 id="steps">Steps<a class="headerlink" href="#steps" title="Permanent link">&para;</a></h2>
<div class="admonition note"><p class="admonition-title">Note</p><p>Check the valve.</p></div>
<aside class="md-source-file"><span class="md-source-file__fact">Last update: 2024-01-01</span>
</aside></article></div></div></main><footer class="md-footer"><nav>Previous Home</nav>
</footer></div></body>"""


def test_an_mkdocs_material_page_keeps_its_article_only():
    home = page('<title>Bike Docs</title></head><body><main class="md-main"><article>'
                '<h1 id="home">Home</h1><p>Start here.</p></article></main></body>')
    usage = page(MKDOCS.replace("Install", "Usage").replace("install", "usage"))
    book = read_html_site([("usage/index.html", usage), ("index.html", home),
                           ("install/index.html", page(MKDOCS)),
                           ("search/search_index.html", page("<p>x</p>"))])
    assert book.title == "Bike Docs"
    assert [(c.path, c.title) for c in book.chapters] == [
        ("index", "Home"), ("install", "Install"), ("usage", "Usage")]
    assert book.chapters[1].markdown == ("# Install {#install}\n\nPump the tyres first.\n\n"
                                         "## Steps {#steps}\n\nNote\n\nCheck the valve.\n")


SPHINX = """<title>{title} &#8212; Bike Book 1.0 documentation</title></head><body>
<div class="related" role="navigation" aria-label="Related"><ul><li><a href="genindex.html">
index</a></li></ul></div><div class="document"><div class="documentwrapper">
<div class="bodywrapper"><div class="body" role="main">{body}</div></div></div>
<div class="sphinxsidebar" role="navigation" aria-label="Main"><div class="sphinxsidebarwrapper">
<h3>Navigation</h3><ul><li class="toctree-l1"><a href="brakes.html">Brakes</a></li></ul></div>
</div></div><div class="footer">&#169;2024, Someone.</div></body>"""


def test_a_sphinx_site_takes_ids_from_sections_and_order_from_the_toctree():
    index = SPHINX.format(title="Welcome", body=(
        '<section id="welcome"><h1>Welcome<a class="headerlink" href="#welcome">¶</a></h1>'
        '<div class="toctree-wrapper compound"><ul><li class="toctree-l1"><a class="reference '
        'internal" href="tyres.html">Tyres</a></li><li class="toctree-l1"><a class="reference '
        'internal" href="brakes.html">Brakes</a></li></ul></div><p>About bicycles.</p>'
        '</section>'))
    tyres = SPHINX.format(title="Tyres", body=(
        '<section id="tyres"><h1>Tyres<a class="headerlink" href="#tyres">¶</a></h1>'
        '<p>Round.</p><section id="tubes"><h2>Tubes<a class="headerlink" href="#tubes">¶</a>'
        '</h2><div class="highlight-python notranslate"><div class="highlight"><pre><span></span>'
        '<span class="n">psi</span> <span class="o">=</span> <span class="mi">80</span>\n'
        '</pre></div></div></section></section>'))
    brakes = SPHINX.format(title="Brakes", body='<section id="brakes"><h1>Brakes</h1>'
                                                 '<p>Stop.</p></section>')
    book = read_html_site([("brakes.html", page(brakes)), ("genindex.html", page(index)),
                           ("index.html", page(index)), ("tyres.html", page(tyres)),
                           ("_sources/tyres.rst.html", page(tyres))])
    assert book.title == "Bike Book 1.0 documentation"
    assert [c.path for c in book.chapters] == ["index", "tyres", "brakes"]
    assert book.chapters[0].markdown == "# Welcome {#welcome}\n\nAbout bicycles.\n"
    assert book.chapters[1].markdown == ("# Tyres {#tyres}\n\nRound.\n\n## Tubes {#tubes}\n\n"
                                         "```python\npsi = 80\n```\n")


DOCUSAURUS = """<title data-rh="true">{title} | Bike Book</title></head><body>
<div id="__docusaurus"><nav class="navbar navbar--fixed-top"><a class="navbar__brand" href="/">
Bike Book</a></nav><div class="main-wrapper docsWrapper"><div class="docRoot">
<aside class="theme-doc-sidebar-container"><nav class="menu thin-scrollbar"><ul class="menu__list">
<li><a class="menu__link" href="/book/docs/intro">Intro</a></li>
<li><a class="menu__link" href="/book/docs/gears">Gears</a></li>
<li><a class="menu__link" href="/book/docs/brakes">Brakes</a></li></ul></nav></aside>
<main class="docMainContainer"><div class="container"><div class="row"><div class="col">
<article><nav class="theme-doc-breadcrumbs" aria-label="Breadcrumbs"><ul><li>Home</li>
<li>{title}</li></ul></nav><div class="tocCollapsible theme-doc-toc-mobile"><button>On this page
</button></div><div class="theme-doc-markdown markdown"><header><h1>{title}</h1></header>
{body}</div><footer class="theme-doc-footer"><a href="https://github.com/x/edit/main/docs/a.md"
class="theme-edit-this-page">Edit this page</a></footer></article>
<nav class="pagination-nav" aria-label="Docs pages"><a href="/book/docs/intro">Previous</a></nav>
</div><div class="col col--3"><div class="tableOfContents_bqdL theme-doc-toc-desktop">
<ul class="table-of-contents"><li><a href="#shifting">Shifting</a></li></ul></div></div></div>
</div></main></div></div><footer class="footer">Copyright 2024</footer></div></body>"""


def test_a_docusaurus_site_keeps_the_article_and_orders_by_the_docs_sidebar():
    gears = DOCUSAURUS.format(title="Gears", body=(
        '<p>Gears <em>multiply</em> effort.</p><h2 class="anchor" id="shifting">Shifting<a '
        'href="#shifting" class="hash-link" aria-label="Direct link to Shifting">\u200b</a></h2>'
        '<div class="theme-admonition alert alert--success"><div class="admonitionHeading">'
        '<span class="admonitionIcon"><svg><path/></svg></span>tip</div><div class='
        '"admonitionContent"><p>Shift early.</p></div></div><div class="language-js '
        'codeBlockContainer"><div class="codeBlockContent"><pre tabindex="0" class="prism-code '
        'language-js"><code class="codeBlockLines"><span class="token-line"><span class="token '
        'keyword">let</span> ratio = 2;<br></span><span class="token-line">ratio++;<br></span>'
        '</code></pre><div class="buttonGroup"><button aria-label="Copy code">Copy</button></div>'
        '</div></div>'))
    landing = page('<title>Bike Book</title></head><body><nav class="navbar"><a href="/book/'
                   'docs/intro">Docs</a></nav><main><h1>Bike Book</h1><p>Ride more.</p></main>')
    pages = [("index.html", landing), ("docs/gears/index.html", page(gears)),
             ("docs/intro/index.html", page(DOCUSAURUS.format(title="Intro", body="<p>Hi.</p>"))),
             ("docs/brakes/index.html", page(DOCUSAURUS.format(title="Brakes", body="<p>B.</p>")))]
    book = read_html_site(pages)
    assert book.title == "Bike Book"
    assert [c.path for c in book.chapters] == ["index", "docs/intro", "docs/gears", "docs/brakes"]
    assert book.chapters[2].markdown == ("# Gears\n\nGears *multiply* effort.\n\n"
                                         "## Shifting {#shifting}\n\ntip\n\nShift early.\n\n"
                                         "```js\nlet ratio = 2;\nratio++;\n```\n")


def test_without_navigation_the_index_comes_first_then_paths_in_natural_order():
    pages = [(name, page(f"<body><h1>{name}</h1><p>Text.</p></body>"))
             for name in ("ch10.html", "ch2.html", "index.html", "appendix/ch1.html")]
    book = read_html_site(pages)
    assert [c.path for c in book.chapters] == ["index", "appendix/ch1", "ch2", "ch10"]
    assert book.title == "index.html"  # no og:site_name, no shared <title>: the index's heading


def test_a_page_without_main_element_keeps_its_body_without_header_aside_and_footer():
    html = page('<title>Notes</title></head><body><header><a href="/">Site</a></header>'
                '<aside>Related posts</aside><h1 id="n">Notes</h1><p>Body text.</p>'
                '<footer>© me</footer></body>')
    book = read_html_site([("notes.html", html)])
    assert (book.title, book.chapters[0].markdown) == ("Notes", "# Notes {#n}\n\nBody text.\n")


def test_unreadable_pages_are_reported_and_the_rest_still_converts(monkeypatch):
    monkeypatch.setattr(site, "MAX_HTML_BYTES", 2_000)
    good = page("<body><h1>Good</h1><p>Readable.</p></body>")
    pages = [("good.html", good), ("latin1.html", "<p>café</p>".encode("cp1252")),
             ("binary.html", b"\x00\x01\x02" * 50), ("empty.html", page("<body></body>")),
             ("moved.html", page('<meta http-equiv="refresh" content="0; url=good.html">')),
             ("huge.html", page("<p>" + "word " * 1_000 + "</p>"))]
    book = read_html_site(pages)
    assert [c.path for c in book.chapters] == ["good"]
    assert sorted(book.problems) == sorted([
        f"{base.PAGE_NOT_UTF8}: 1 (in latin1.html)", f"{base.PAGE_NOT_HTML}: 1 (in binary.html)",
        f"{base.PAGE_NO_TEXT}: 1 (in empty.html)", f"{site.SKIPPED_REDIRECT}: 1 (in moved.html)",
        f"{base.PAGE_TOO_LARGE}: 1 (in huge.html)"])


def test_a_site_with_no_readable_page_says_why():
    with pytest.raises(InputError) as e:
        read_html_site([("a.html", "<p>café</p>".encode("cp1252")), ("404.html", page("x"))])
    assert str(e.value) == (f"No page of the site has text Folio can read: {MACHINERY}: 1 (in "
                            f"404.html); {base.PAGE_NOT_UTF8}: 1 (in a.html)")


def test_an_empty_or_oversized_site_is_refused_with_what_to_do(monkeypatch):
    with pytest.raises(InputError, match=r"^The folder holds no \.html pages: point Folio at the "
                                         r"site's build output"):
        read_html_site([])
    monkeypatch.setattr(site, "MAX_PAGES", 2)
    with pytest.raises(InputError, match=r"^The site has 3 pages, over the 2 Folio reads as one "
                                         r"book: point it at one part of the site\.$"):
        read_html_site([(f"{n}.html", page("<p>x</p>")) for n in range(3)])

