"""Throughput and peak memory of the book-format converters (rag.book.formats) against a floor
measured in the same run: parsing the same HTML with BeautifulSoup alone (site, EPUB), or
mammoth alone (DOCX), which every conversion must pay before it writes any Markdown.

    .venv/bin/python bench/formats.py                       # generated book, ~90k words
    .venv/bin/python bench/formats.py --chapters 60 --rounds 5
    .venv/bin/python bench/formats.py --site path/to/built/site   # also a real site

Each format runs in its own process so its peak RSS is its own. Prints words/s, p50/p95 seconds
over the rounds, the ratio to the floor, and the load average (2 shared cores: figures without it
mean little). Needs the dev requirements (python-docx and ebooklib write the inputs).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = ("the chain runs over the sprocket and the derailleur moves it across the cassette "
         "while the rider keeps a steady cadence on a long climb").split()


def paragraph(n: int) -> str:
    return " ".join(WORDS[(n + i) % len(WORDS)] for i in range(60)) + "."


def book(chapters: int) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    return [(f"Chapter {c}", [(f"Section {c}.{s}", [paragraph(c * 100 + s * 10 + p)
                                                    for p in range(5)]) for s in range(10)])
            for c in range(chapters)]


def chapter_html(title: str, sections) -> str:
    body = [f"<h1>{title}</h1>"]
    for section, paragraphs in sections:
        body.append(f'<h2 id="{section.replace(" ", "-").lower()}">{section}</h2>')
        body.extend(f"<p>{p}</p>" for p in paragraphs)
        body.append('<pre><code class="language-python">ratio = front / rear</code></pre>')
    return "\n".join(body)


def make_input(kind: str, chapters: int, site_dir: str) -> object:
    content = book(chapters)
    if kind == "site" and site_dir:
        root = Path(site_dir)
        return [(p.relative_to(root).as_posix(), p.read_bytes()) for p in root.rglob("*.html")]
    if kind == "site":
        nav = "".join(f'<li><a href="c{n}.html">{t}</a></li>' for n, (t, _) in enumerate(content))
        return [(f"c{n}.html", (f'<html><head><meta charset="utf-8"><title>{t} - B</title></head>'
                                f'<body><nav class="sidebar"><ol>{nav}</ol></nav><main>'
                                f"{chapter_html(t, s)}</main></body></html>").encode())
                for n, (t, s) in enumerate(content)]
    if kind == "epub":
        from ebooklib import epub

        out, doc = io.BytesIO(), epub.EpubBook()
        doc.set_identifier("bench")
        doc.set_title("Bench")
        items = []
        for n, (title, sections) in enumerate(content):
            item = epub.EpubHtml(title=title, file_name=f"c{n}.xhtml")
            item.content = chapter_html(title, sections)
            doc.add_item(item)
            items.append(item)
        doc.toc, doc.spine = items, items
        doc.add_item(epub.EpubNcx())
        doc.add_item(epub.EpubNav())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            epub.write_epub(out, doc)
        return out.getvalue()
    import docx

    document = docx.Document()
    for title, sections in content:
        document.add_heading(title, level=1)
        for section, paragraphs in sections:
            document.add_heading(section, level=2)
            for p in paragraphs:
                document.add_paragraph(p)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def floor(kind: str, data: object) -> None:
    """What the conversion cannot avoid: parsing its input."""
    from bs4 import BeautifulSoup

    if kind == "site":
        for _, raw in data:
            BeautifulSoup(raw.decode("utf-8", "replace"), "html.parser")
    elif kind == "epub":
        import zipfile

        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for name in z.namelist():
                if name.endswith(".xhtml"):
                    BeautifulSoup(z.read(name).decode(), "html.parser")
    else:
        import mammoth

        mammoth.convert_to_html(io.BytesIO(data))


def convert(kind: str, data: object):
    from rag.book.formats import read_docx, read_epub, read_html_site

    if kind == "site":
        return read_html_site(data)
    return (read_epub if kind == "epub" else read_docx)(data, f"bench.{kind}")


def run_one(kind: str, chapters: int, rounds: int, site_dir: str) -> dict:
    data = make_input(kind, chapters, site_dir)
    times, floors, result = [], [], None
    for _ in range(rounds):
        started = time.perf_counter()
        floor(kind, data)
        floors.append(time.perf_counter() - started)
        started = time.perf_counter()
        result = convert(kind, data)
        times.append(time.perf_counter() - started)
    words = sum(len(c.markdown.split()) for c in result.chapters)
    times.sort()
    floors.sort()
    p50, p95 = times[len(times) // 2], times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return {"kind": kind, "chapters": len(result.chapters), "words": words, "p50_s": p50,
            "p95_s": p95, "words_per_s": words / p50, "floor_p50_s": floors[len(floors) // 2],
            "ratio_to_floor": p50 / floors[len(floors) // 2],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapters", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--site", default="", help="a built site's folder, read instead")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.chapters, args.rounds, args.site)))
        return
    print(f"load average {os.getloadavg()[0]:.1f} (2 cores shared)")
    print(f"{'format':6} {'chapters':>8} {'words':>8} {'p50 s':>7} {'p95 s':>7} {'words/s':>8} "
          f"{'floor s':>8} {'x floor':>7} {'peak MB':>8}")
    for kind in ("site", "epub", "docx"):
        out = subprocess.run([sys.executable, __file__, "--one", kind, "--chapters",
                              str(args.chapters), "--rounds", str(args.rounds), "--site",
                              args.site], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)
        print(f"{kind:6} {r['chapters']:>8} {r['words']:>8} {r['p50_s']:>7.2f} {r['p95_s']:>7.2f} "
              f"{r['words_per_s']:>8.0f} {r['floor_p50_s']:>8.2f} {r['ratio_to_floor']:>7.2f} "
              f"{r['peak_rss_mb']:>8.0f}")


if __name__ == "__main__":
    main()
