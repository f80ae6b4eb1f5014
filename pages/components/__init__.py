"""Streamlit building blocks shared by the pages (the pages themselves stay thin)."""
