"""Markdown as books write it: dialect constructs rewritten (dialects, includes), markdown-it's
tree read into headings and canonical Markdown (reader, render)."""
