"""HTML to Markdown (rag.book.formats.html_markdown, html_prep): exact Markdown for small pages of
the markup real generators write, nothing of the markup left in it, and what was dropped counted."""

from __future__ import annotations

import time

import pytest

from rag.book.formats import base, html_to_markdown
from rag.book.formats.html_markdown import decode_html

IMAGES = "images dropped (Folio reads text; alt text and captions are kept)"
EMBEDS = "embedded media dropped (video, audio, iframe, object, canvas, drawing)"


def md(html: str) -> str:
    return html_to_markdown(html)[0]


def test_headings_keep_their_levels_and_the_ids_pages_give_them():
    html = """<h1 id="intro">Intro</h1>
    <section id="loops"><h2>For loops</h2><p>Text.</p></section>
    <h3><a id="while" name="while"></a>While loops</h3>
    <a id="old-style"></a><h4>Old style</h4>
    <h5>No id</h5><h6 id="bad id">Spaced id</h6>"""
    assert md(html) == ("# Intro {#intro}\n\n## For loops {#loops}\n\nText.\n\n"
                        "### While loops {#while}\n\n#### Old style {#old-style}\n\n"
                        "##### No id\n\n###### Spaced id\n")


def test_permalinks_and_hash_links_beside_headings_are_dropped():
    html = """<h2 id="a">Alpha<a class="headerlink" href="#a" title="Link">¶</a></h2>
    <h2 id="b">Beta<a href="#b" class="hash-link" aria-label="Direct link">\u200b</a></h2>
    <h2 id="c"><a class="header" href="#c">Gamma</a></h2>"""
    assert md(html) == "## Alpha {#a}\n\n## Beta {#b}\n\n## Gamma {#c}\n"


def test_paragraphs_lists_quotes_and_inline_markup():
    html = """<p>Some <em>soft</em> and <strong>strong</strong> words,
    <code>inline code</code>, and a line<br>break.</p>
    <ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>
    <ol start="3"><li>three</li><li>four</li></ol>
    <blockquote><p>Quoted.</p></blockquote>
    <dl><dt>Term</dt><dd>Meaning.</dd></dl><p>Gone <del>struck</del> text.</p>"""
    assert md(html) == ("Some *soft* and **strong** words, `inline code`, and a line  \nbreak.\n\n"
                        "- one\n- two\n  - nested\n\n3. three\n4. four\n\n> Quoted.\n\n"
                        "Term\n:   Meaning.\n\nGone struck text.\n")


@pytest.mark.parametrize("html, fence", [
    ('<pre><code class="language-rust">fn main() {}</code></pre>', "```rust"),  # mdBook
    ('<div class="language-python highlight"><pre><span></span><code>x = 1</code></pre></div>',
     "```python"),  # MkDocs
    ('<div class="highlight-python notranslate"><div class="highlight"><pre>x = 1</pre></div>'
     '</div>', "```python"),  # Sphinx
    ('<pre class="prism-code language-js"><code><span class="token-line">x = 1</span></code>'
     '</pre>', "```js"),  # Docusaurus
    ('<pre class="sourceCode python"><code class="sourceCode python">x = 1</code></pre>',
     "```python"),  # Pandoc
    ('<pre><code class="language-text">plain</code></pre>', "```"),
])
def test_code_blocks_are_fenced_with_the_language_the_highlighter_marked(html, fence):
    assert md(html).split("\n")[0] == fence


def test_code_keeps_its_text_whitespace_and_markup_characters():
    html = """<pre><code class="language-python">if a &lt; b:
    print("```", "*not emphasis*", "&amp;")
</code></pre>"""
    assert md(html) == ('````python\nif a < b:\n    print("```", "*not emphasis*", "&")\n'
                        '````\n')


def test_line_numbered_code_tables_and_hidden_lines_become_plain_code():
    html = """<table class="highlighttable"><tr><td class="linenos"><pre>1
2</pre></td><td class="code"><div class="highlight-c"><pre>int a;
int b;</pre></div></td></tr></table>
<pre><code class="language-rust"><span class="boring">fn main() {
</span>let x = 1;
<span class="boring">}</span></code></pre>"""
    assert md(html) == "```c\nint a;\nint b;\n```\n\n```rust\nlet x = 1;\n```\n"


def test_tables_become_pipe_tables_with_escaped_pipes():
    html = """<table><thead><tr><th>Flag</th><th>Meaning</th></tr></thead><tbody>
    <tr><td><code>a|b</code></td><td>either</td></tr><tr><td>x</td><td>one<br>line</td></tr>
    </tbody></table>
    <table><tr><td>first row</td><td>as header</td></tr><tr><td>1</td><td>2</td></tr></table>
    <table><tr><td><p>A layout table</p></td></tr><tr><td><p>of one column</p></td></tr></table>"""
    assert md(html) == ("| Flag | Meaning |\n| --- | --- |\n| `a\\|b` | either |\n"
                        "| x | one line |\n\n"
                        "| first row | as header |\n| --- | --- |\n| 1 | 2 |\n\n"
                        "A layout table\n\nof one column\n")


def test_links_into_the_book_keep_their_text_and_outside_links_their_target():
    html = """<p>See <a href="ch2.html#loops">loops</a>, <a href="#top">the top</a>,
    <a href="https://example.org/a b(c)">the spec</a> and <a href="mailto:x@y.z">mail</a>.</p>"""
    assert md(html) == ("See loops, the top, [the spec](https://example.org/a%20b%28c%29) and "
                        "[mail](mailto:x@y.z).\n")


def test_images_and_media_are_dropped_and_counted_keeping_meaningful_alt_text():
    html = """<p>Before <img src="a.png" alt="A chain wear gauge on a chain"> after.</p>
    <p><img src="b.png" alt="image.png"><img src="c.png" alt="Figure 3"></p>
    <figure><img src="d.png" alt="Disc brake seen from above"><figcaption>A disc brake.
    </figcaption></figure><p><img class="emoji" alt="🚲" src="e.png"> emoji</p>
    <video src="v.mp4">Your browser cannot play this.</video><iframe src="x"></iframe>
    <svg role="img"><text>chart</text></svg><a href="https://x.org"><svg><path/></svg> icon</a>"""
    markdown, problems = html_to_markdown(html)
    assert markdown == ("Before A chain wear gauge on a chain after.\n\nA disc brake.\n\n"
                        "🚲 emoji\n\n[icon](https://x.org)\n")
    assert problems == [f"{EMBEDS}: 3", f"{IMAGES}: 4"]


def test_math_keeps_its_tex():
    html = """<p>Inline <span class="katex"><span class="katex-mathml"><math><semantics><mi>x</mi>
    <annotation encoding="application/x-tex">x^2</annotation></semantics></math></span>
    <span class="katex-html" aria-hidden="true">x2</span></span> and
    <span class="math notranslate nohighlight">\\(a_1\\)</span> and
    <script type="math/tex">b*c</script>.</p>
    <div class="math notranslate nohighlight">\\[E = mc^2\\]</div>
    <p><math><mi>y</mi><mo>+</mo><mn>1</mn></math></p>"""
    markdown, problems = html_to_markdown(html)
    assert markdown == "Inline $x^2$ and $a_1$ and $b*c$.\n\n$$\nE = mc^2\n$$\n\ny + 1\n"
    assert problems == [f"{base.MATH_TEXT}: 1"]


def test_text_that_markdown_would_read_as_markup_is_escaped():
    html = """<p>Use &lt;div&gt; and &lt;!-- x --&gt; and &amp;amp; for $5 or {{#include a.rs}},
    {% raw %} 2*3 and _init_ but snake_case stays.</p>
    <p># not a heading<br>1. not a list<br>- not a bullet<br>::: not a container</p>
    <p><b>Step</b> 1. is fine mid-line, as is - here.</p>"""
    assert md(html) == (
        "Use \\<div> and \\<!-- x --> and \\&amp; for \\$5 or \\{\\{#include a.rs}}, \\{% raw %} "
        "2\\*3 and \\_init\\_ but snake_case stays.\n\n"
        "\\# not a heading  \n1\\. not a list  \n\\- not a bullet  \n\\::: not a container\n\n"
        "**Step** 1. is fine mid-line, as is - here.\n")


def test_no_markup_survives_from_scripts_styles_comments_forms_or_hidden_text():
    html = """<?xml version="1.0"?><!DOCTYPE html><html><head><title>T</title>
    <style>p { color: red }</style><script>var secret = 1;</script></head><body>
    <!-- a comment --><p>Kept.</p><noscript>Enable JavaScript</noscript>
    <template><p>template</p></template><form><input value="q"><button>Go</button></form>
    <p hidden>hidden</p><p style="display: none">none</p><span class="sr-only">reader</span>
    <![CDATA[cdata text]]></body></html>"""
    assert md(html) == "Kept.\n\ncdata text\n"


def test_nesting_deeper_than_the_limit_is_flattened_in_bounded_time():
    html = "<div>" * 20_000 + "<p>deep <b>text</b></p>" + "</div>" * 20_000
    started = time.perf_counter()
    markdown, problems = html_to_markdown(html)
    assert markdown == "deep text\n"
    assert problems == [f"{base.DEEP_NESTING}: 1"]
    assert time.perf_counter() - started < 60  # about 4 s here; quadratic would be minutes


def test_decoding_follows_the_bom_and_the_declared_charset():
    assert decode_html("é".encode("utf-8-sig")) == "é"
    assert decode_html('<meta charset="windows-1252"><p>caf\xe9</p>'.encode("cp1252")).endswith(
        "café</p>")
    assert decode_html(b'<?xml version="1.0" encoding="ISO-8859-1"?><p>\xe9</p>').endswith(
        "é</p>")


@pytest.mark.parametrize("raw, kind", [
    ("<p>café</p>".encode("cp1252"), base.PAGE_NOT_UTF8),
    (b'<meta charset="klingon"><p>x</p>', base.PAGE_BAD_CHARSET),
    (b'<meta charset="utf-8"><p>\xff\xfe\xfd</p>', base.PAGE_BAD_CHARSET),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), base.PAGE_NOT_HTML),
])
def test_pages_that_cannot_be_decoded_say_why(raw, kind):
    with pytest.raises(base.Unreadable) as e:
        decode_html(raw)
    assert str(e.value) == kind
