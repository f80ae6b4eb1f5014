"""Everything only the pages use, grouped by page: chat, inspector, book, tuning, audit, and
what several pages share (common). Streamlit lives here, never in rag/."""
