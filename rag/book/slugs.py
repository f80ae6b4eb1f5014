"""Heading slugs as Docusaurus makes them: the section IDs of headings without an {#anchor}
(Markdown) and of PDF outline entries."""

from __future__ import annotations

import re


def slugify(text: str) -> str:
    """Docusaurus/GitHub-style heading slug."""
    text = re.sub(r"[`*_~]|<[^>]+>", "", text.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return re.sub(r" ", "-", text)


def unique_slug(title: str, taken: set[str], counts: dict[str, int]) -> str:
    """github-slugger's rule, as Docusaurus uses it: base, base-1, base-2, skipping taken IDs."""
    base = slugify(title) or "section"
    slug = base
    while slug in taken:
        counts[base] = counts.get(base, 0) + 1
        slug = f"{base}-{counts[base]}"
    taken.add(slug)
    return slug
