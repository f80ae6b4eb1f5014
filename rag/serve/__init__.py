"""The HTTP API (`python -m rag serve`): the same pipeline, settings and audit as the app, for a
documentation site's widget. JSON or Server-Sent Events, bearer-token clients, per-client rate
limits, and error bodies that are always JSON ({"error": code, "message": ...})."""
