"""Who asked: every row records its client, and the explorer and CLI filter on it."""

from __future__ import annotations

import json

from rag.__main__ import main
from rag.audit.store import AuditFilters, AuditStore
from tests.builders import make_response


def test_rows_record_their_client_and_filter_by_it(tmp_path, capsys):
    db = tmp_path / "audit.duckdb"
    store = AuditStore(db)
    asked = {"docs-widget": 3, "role:researcher": 2, "local": 1}
    for client, n in asked.items():
        for i in range(n):
            store.record(make_response(f"{client} question {i}", seed=i), client_id=client)
    store.flush()
    assert store.clients() == ["docs-widget", "role:researcher", "local"]  # most asked first
    frame = store.query_logs(AuditFilters(clients=("role:researcher",)))
    assert list(frame["client_id"]) == ["role:researcher"] * 2
    assert store.count_logs(AuditFilters(clients=("docs-widget", "local"))) == 4
    store.close()
    code = main(["audit", "list", "--json", "--book", "all", "--client", "docs-widget",
                 "--db", str(db)])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and len(rows) == 3 and {r["client_id"] for r in rows} == {"docs-widget"}
