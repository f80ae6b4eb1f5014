"""Embedders and LLMs behind small interfaces; see registry.py for the names that exist."""
