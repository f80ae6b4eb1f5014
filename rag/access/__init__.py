"""Who may ask and how often: API keys for the HTTP server (bearer tokens kept only as digests),
role sign-in for the app (passwords kept only as PBKDF2 hashes), and per-client rate limits that
hold across threads and processes. No streamlit and no web framework here; the server and the
pages call these."""
