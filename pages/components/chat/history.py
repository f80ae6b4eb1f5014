"""Conversation history in the browser's localStorage (SPEC §8): nothing of it on the server.

An inline custom component (components v2): on page load it reads localStorage and sends the
raw text back once as a trigger; afterwards Python sends each new revision down for it to write.
When the component never reports (no JavaScript, or a test harness) the chat works unsaved."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import streamlit as st

from pages.components.chat.support import (
    merge_history,
    parse_history,
    prune_history,
    serialize_history,
)

STORAGE_KEY = "folio.chat.history.v1"
COMPONENT_KEY = "folio_history_store"
STATE_KEY = "_folio_history"
JS = """
const STORAGE_KEY = "__KEY__";
function probe() {
  try {
    const k = "__folio_probe__";
    window.localStorage.setItem(k, k);
    window.localStorage.removeItem(k);
    return true;
  } catch (e) { return false; }
}
export default function (component) {
  const { data, setTriggerValue } = component;
  const mine = (window.__folioHistory = window.__folioHistory || { rev: null });
  const available = probe();
  if (!data) return;
  if (data.need_load) {
    let raw = null;
    if (available) {
      try { raw = window.localStorage.getItem(STORAGE_KEY); } catch (e) { raw = null; }
    }
    setTriggerValue("loaded", { available: available, raw: raw });
    return;
  }
  if (!available || data.rev === mine.rev) return;
  try {
    if (data.payload === null) window.localStorage.removeItem(STORAGE_KEY);
    else window.localStorage.setItem(STORAGE_KEY, data.payload);
    mine.rev = data.rev;
  } catch (e) {
    setTriggerValue("failed", String(e));
  }
}
""".replace("__KEY__", STORAGE_KEY)

_store = st.components.v2.component("folio_history_store", js=JS)


@dataclass
class History:
    """This browser tab's conversation as Python sees it."""

    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    turns: list[dict] = field(default_factory=list)
    loaded: bool = False  # the browser has sent what it stored
    available: bool | None = None  # None: unknown yet
    rev: int = 0
    cleared: bool = False
    error: str = ""

    def add(self, turn: dict) -> None:
        self.turns = prune_history([*self.turns, turn], datetime.now(UTC))
        self.rev += 1

    def clear(self) -> None:
        self.turns, self.cleared = [], True
        self.rev += 1


def history() -> History:
    if not isinstance(st.session_state.get(STATE_KEY), History):
        st.session_state[STATE_KEY] = History()
    return st.session_state[STATE_KEY]


def _on_loaded() -> None:
    """Runs before the script when the browser reports what it stored."""
    payload = (st.session_state.get(COMPONENT_KEY) or {}).get("loaded")
    h = history()
    if not isinstance(payload, dict) or h.loaded:
        return
    h.loaded, h.available = True, bool(payload.get("available"))
    stored = parse_history(payload.get("raw"))
    if stored.session_id:
        h.session_id = stored.session_id
    h.turns = merge_history(stored.turns, h.turns)
    h.rev += 1  # write the pruned list back


def _on_failed() -> None:
    failure = (st.session_state.get(COMPONENT_KEY) or {}).get("failed")
    if failure:
        history().error = str(failure)


def sync_history() -> None:
    """Mount the storage component; call it after this run's turns are final."""
    h = history()
    data: dict = {"need_load": not h.loaded, "rev": h.rev, "payload": None}
    if h.loaded and (h.turns or not h.cleared):
        data["payload"] = serialize_history(h.session_id, h.turns)
    _store(key=COMPONENT_KEY, data=data, height=0, on_loaded_change=_on_loaded,
           on_failed_change=_on_failed)


def history_caption(h: History) -> str:
    if h.available is False:
        return (":orange[:material/cloud_off:] This browser does not allow local storage, so "
                "the conversation will not persist after a reload.")
    if h.error:
        return f":orange[:material/cloud_off:] History could not be saved: {h.error}"
    if h.loaded:
        return (f":material/history: {len(h.turns)} of the last 20 questions are kept in this "
                "browser for 7 days; nothing is stored on the server except the audit log.")
    return ""
