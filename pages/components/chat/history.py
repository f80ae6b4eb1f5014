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
    LEGACY_STORAGE_KEY,
    legacy_turns_of_book,
    merge_history,
    parse_history,
    prune_history,
    serialize_history,
    storage_key,
)
from pages.components.common.shared import app_context

COMPONENT_KEY = "folio_history_store"
STATE_KEY = "_folio_history"
# data: {need_load, key, legacy_key, drop_legacy, rev, payload}. Each book has its own key; the
# unkeyed key of older Folios is read once, and removed only once Python has taken its turns.
JS = """
function probe() {
  try {
    const k = "__folio_probe__";
    window.localStorage.setItem(k, k);
    window.localStorage.removeItem(k);
    return true;
  } catch (e) { return false; }
}
function read(key) {
  try { return window.localStorage.getItem(key); } catch (e) { return null; }
}
export default function (component) {
  const { data, setTriggerValue } = component;
  const written = (window.__folioHistory = window.__folioHistory || {});
  const available = probe();
  if (!data) return;
  if (data.need_load) {
    setTriggerValue("loaded", { available: available, raw: available ? read(data.key) : null,
                               legacy: available ? read(data.legacy_key) : null });
    return;
  }
  if (!available || data.rev === written[data.key]) return;
  try {
    if (data.payload === null) window.localStorage.removeItem(data.key);
    else window.localStorage.setItem(data.key, data.payload);
    if (data.drop_legacy) window.localStorage.removeItem(data.legacy_key);
    written[data.key] = data.rev;
  } catch (e) {
    setTriggerValue("failed", String(e));
  }
}
"""

_store = st.components.v2.component("folio_history_store", js=JS)


@dataclass
class History:
    """This browser tab's conversation with one book, as Python sees it."""

    book_id: str = ""
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    turns: list[dict] = field(default_factory=list)
    loaded: bool = False  # the browser has sent what it stored
    available: bool | None = None  # None: unknown yet
    rev: int = 0
    cleared: bool = False
    error: str = ""
    drop_legacy: bool = False  # the unkeyed history was this book's and is merged: remove it

    def add(self, turn: dict) -> None:
        self.turns = prune_history([*self.turns, turn], datetime.now(UTC))
        self.rev += 1

    def clear(self) -> None:
        self.turns, self.cleared = [], True
        self.rev += 1


def history(book_id: str | None = None) -> History:
    """The conversation with this book (the app's current one unless named); another book's
    conversation is never carried over."""
    book_id = app_context().settings.book_id if book_id is None else book_id
    h = st.session_state.get(STATE_KEY)
    if not isinstance(h, History) or h.book_id != book_id:
        st.session_state[STATE_KEY] = h = History(book_id=book_id)
    return h


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
    turns = stored.turns
    legacy = legacy_turns_of_book(payload.get("legacy"), h.book_id)
    if legacy is not None:  # provably this book's: every turn records its id; move it here
        h.drop_legacy = True
        turns = merge_history(legacy.turns, turns)
        if not stored.session_id and legacy.session_id:
            h.session_id = legacy.session_id
    h.turns = merge_history(turns, h.turns)
    h.rev += 1  # write the pruned list back


def _on_failed() -> None:
    failure = (st.session_state.get(COMPONENT_KEY) or {}).get("failed")
    if failure:
        history().error = str(failure)


def sync_history() -> None:
    """Mount the storage component; call it after this run's turns are final."""
    h = history()
    data: dict = {"need_load": not h.loaded, "rev": h.rev, "payload": None,
                  "key": storage_key(h.book_id), "legacy_key": LEGACY_STORAGE_KEY,
                  "drop_legacy": h.drop_legacy}
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
