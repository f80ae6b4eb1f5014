"""What an audit store is doing right now, as a code with its message defined once: for
`/v1/health`, the app's sidebar and `rag audit` notes.

The codes say where answers are going: `ok` (imported into the audit file), `spooling`
(another process holds the file: they wait in the spool, safe), `damaged` (the file is damaged
and could not be moved aside: they wait in the spool until someone moves it), `failing` (every
import fails for another reason: they wait in the spool, and the log says why once).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rag.audit.damage import AuditDatabaseDamaged
from rag.audit.db import AuditDatabaseBusy
from rag.audit.quarantine import QUARANTINE_DIR
from rag.audit.spool import spool_files

log = logging.getLogger(__name__)
OK, SPOOLING, DAMAGED, FAILING = "ok", "spooling", "damaged", "failing"
STATES = {
    OK: "Answers are imported into the audit file.",
    SPOOLING: "Another Folio process holds the audit file; answers wait in the spool.",
    DAMAGED: "The audit file is damaged and could not be moved aside; answers wait in the spool.",
    FAILING: "Imports into the audit file fail; answers wait in the spool.",
}


@dataclass(frozen=True)
class AuditState:
    code: str  # one of STATES
    detail: str = ""  # the error behind a code other than ok
    spooled_bytes: int = 0  # answers waiting in the spool (every process's segments)
    quarantined: int = 0  # spool files kept aside because they could not be imported
    moved_aside: str = ""  # the last damaged audit file this process moved aside

    @property
    def message(self) -> str:
        return STATES[self.code] + (f" {self.detail}" if self.detail else "")

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.message}


def read_state(code: str, detail: str, spool_dir: Path, moved_aside: Path | None) -> AuditState:
    """The state with what the spool holds now (a few stat calls, no file read)."""
    spooled = 0
    for name in spool_files(spool_dir):
        try:
            spooled += Path(name).stat().st_size
        except FileNotFoundError:
            continue  # imported meanwhile
    folder = spool_dir / QUARANTINE_DIR
    quarantined = sum(1 for _ in folder.iterdir()) if folder.is_dir() else 0
    return AuditState(code, detail if code != OK else "", spooled, quarantined,
                      str(moved_aside or ""))


class Status:
    """Where a store's answers go now, as its writer last found; each damage or failure is
    said once in the log (stderr on the CLI), not once per retry."""

    def __init__(self, spool_dir: Path) -> None:
        self.spool_dir = spool_dir
        self.code, self.detail, self._said = OK, "", ""

    def note(self, error: BaseException | None) -> None:
        """Record an outcome: None when answers reached the file."""
        self.code = (OK if error is None else SPOOLING if isinstance(error, AuditDatabaseBusy)
                     else DAMAGED if isinstance(error, AuditDatabaseDamaged) else FAILING)
        self.detail = "" if error is None else str(error).splitlines()[0]
        if self.code in (DAMAGED, FAILING) and self.detail != self._said:
            self._said = self.detail
            log.warning("%s", self.detail if self.code == DAMAGED else
                        f"audit: imports fail ({self.detail}); entries stay in {self.spool_dir} "
                        "and are retried")

    @property
    def unavailable(self) -> str:
        return "" if self.code == OK else self.detail

    def state(self, moved_aside: Path | None) -> AuditState:
        return read_state(self.code, self.detail, self.spool_dir, moved_aside)
