"""The retrieval inspector: candidates, score components and side-by-side comparison."""
