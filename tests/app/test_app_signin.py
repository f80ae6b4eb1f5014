"""Sign-in per role through AppTest: open mode, the gate, wrong and right passwords, the pages
each role sees, the client each audit row records, and the per-client rate limit."""

from __future__ import annotations

import pytest

from rag.access.roles import hash_password
from tests.builders import ask, markdown_text, open_app

pytestmark = pytest.mark.slow
PASSWORDS = {"author": "write-the-book", "researcher": "tune-the-blend",
             "reviewer": "read-every-row", "admin": "root-of-all-pages"}
ROLE_ENV = ",".join(f"{role}:{password}" for role, password in PASSWORDS.items())
ALL_PAGES = ("pages/chat.py", "pages/inspector.py", "pages/book.py", "pages/tuning.py",
             "pages/audit.py")


@pytest.fixture()
def open_mode(monkeypatch):
    monkeypatch.delenv("RAG_ROLE_PASSWORDS", raising=False)
    monkeypatch.delenv("RAG_RATE_LIMIT", raising=False)


def start(monkeypatch, settings, tmp_path, **env: str):
    """The app on the sample index with its own audit file (and so its own rate-limit file)."""
    at = open_app(monkeypatch, settings.index_dir, tmp_path / "audit.duckdb", **env)
    assert not at.exception, at.exception
    return at


def sign_in(at, role: str, password: str):
    at.selectbox(key="sign_in_role").set_value(role)
    at.text_input(key="sign_in_password").input(password)
    next(b for b in at.button if b.label == "Sign in").click().run()
    assert not at.exception, at.exception
    return at


def audit_clients(at) -> list[str]:
    """The client of every audit row this app wrote, oldest first."""
    store = at.session_state["_folio_context"].audit
    store.flush()
    rows = store.query_logs(limit=100)
    return [store.get_log(log_id)["client_id"] for log_id in reversed(list(rows["log_id"]))]


def visible_pages(at) -> list[str]:
    out = []
    for page in ALL_PAGES:
        try:
            at.switch_page(page)
        except ValueError:
            continue
        out.append(page)
    return out


def test_open_mode_says_so_and_records_local(open_mode, sample_settings, sample_index,
                                             tmp_path, monkeypatch):
    at = start(monkeypatch, sample_settings, tmp_path)
    notes = [c.value for c in at.sidebar.caption]
    assert any("Open access: no sign-in configured — see README" in n for n in notes)
    assert not [b for b in at.sidebar.button if b.label == "Sign out"]
    assert visible_pages(at) == list(ALL_PAGES)
    ask(at.switch_page("pages/chat.py").run(), "What does an incremental encoder output?")
    assert audit_clients(at) == ["local"]


def test_nothing_but_the_sign_in_form_runs_before_sign_in(open_mode, sample_settings,
                                                          sample_index, tmp_path, monkeypatch):
    at = start(monkeypatch, sample_settings, tmp_path, RAG_ROLE_PASSWORDS=ROLE_ENV)
    assert [t.value for t in at.title] == ["Folio"]
    assert list(at.selectbox(key="sign_in_role").options) == list(PASSWORDS)
    assert not at.chat_input and not at.sidebar.caption  # no page, no book, no settings
    assert visible_pages(at) == []
    assert "_folio_context" not in at.session_state  # no index or models opened either


def test_a_wrong_password_gets_no_hint(open_mode, sample_settings, sample_index, tmp_path,
                                       monkeypatch):
    at = start(monkeypatch, sample_settings, tmp_path, RAG_ROLE_PASSWORDS=ROLE_ENV)
    for role, password in (("admin", "write-the-book"), ("author", ""), ("author", "nope")):
        sign_in(at, role, password)
        assert [e.value for e in at.error] == ["Wrong role or password."]
        assert not at.chat_input and visible_pages(at) == []


@pytest.mark.parametrize("role, pages", [
    ("author", ["pages/chat.py", "pages/inspector.py", "pages/book.py"]),
    ("researcher", ["pages/chat.py", "pages/inspector.py", "pages/book.py", "pages/tuning.py"]),
    ("reviewer", ["pages/audit.py"]),
    ("admin", list(ALL_PAGES)),
])
def test_each_role_sees_only_its_pages(role, pages, open_mode, sample_settings, sample_index,
                                       tmp_path, monkeypatch):
    at = start(monkeypatch, sample_settings, tmp_path, RAG_ROLE_PASSWORDS=ROLE_ENV)
    sign_in(at, role, PASSWORDS[role])
    assert not at.error
    assert any(f"Signed in as **{role}**" in c.value for c in at.sidebar.caption)
    assert visible_pages(at) == pages
    assert bool(at.chat_input) == (pages[0] == "pages/chat.py")  # its first page opened


def test_a_signed_in_role_is_the_audit_client_until_sign_out(open_mode, sample_settings,
                                                            sample_index, tmp_path, monkeypatch):
    stored = hash_password(PASSWORDS["researcher"]).encode()  # a stored hash signs in the same
    at = start(monkeypatch, sample_settings, tmp_path,
               RAG_ROLE_PASSWORDS=f"researcher:{stored},author:{PASSWORDS['author']}")
    sign_in(at, "researcher", PASSWORDS["researcher"])
    assert "sign_in_password" not in at.session_state
    ask(at, "What does an incremental encoder output?")
    assert "**Sources**" in markdown_text(at)
    assert audit_clients(at) == ["role:researcher"]
    next(b for b in at.sidebar.button if b.label == "Sign out").click().run()
    assert at.selectbox(key="sign_in_role") and not at.chat_input
    sign_in(at, "author", PASSWORDS["author"])
    ask(at, "What does an absolute encoder output?")
    assert audit_clients(at) == ["role:researcher", "role:author"]


def test_over_the_client_limit_is_a_message_not_an_answer(open_mode, sample_settings,
                                                         sample_index, tmp_path, monkeypatch):
    at = start(monkeypatch, sample_settings, tmp_path, RAG_RATE_LIMIT="1")
    ask(at, "What does an incremental encoder output?")
    assert not at.warning
    ask(at, "What does an absolute encoder output?")
    warnings = [w.value for w in at.warning]
    assert len(warnings) == 1 and warnings[0].startswith(
        "Rate limit reached: 1 question per minute. Try again in ")
    assert len(at.session_state["_folio_history"].turns) == 1  # not answered, not saved
    assert audit_clients(at) == ["local"]  # and not audited as answered


def test_a_bad_rate_limit_is_a_readable_error(open_mode, sample_settings, sample_index, tmp_path,
                                              monkeypatch):
    at = start(monkeypatch, sample_settings, tmp_path, RAG_RATE_LIMIT="lots")
    ask(at, "What does an incremental encoder output?")
    assert any("RAG_RATE_LIMIT='lots' must be a whole number" in e.value for e in at.error)
    assert not at.session_state["_folio_history"].turns


def test_a_misconfigured_sign_in_keeps_the_app_closed(open_mode, sample_settings, sample_index,
                                                      tmp_path, monkeypatch):
    at = start(monkeypatch, sample_settings, tmp_path, RAG_ROLE_PASSWORDS="boss:long-password")
    assert any("Sign-in is misconfigured, so the app stays closed: Unknown role 'boss'" in e.value
               for e in at.error)
    assert not at.chat_input and visible_pages(at) == []


def test_guessing_a_role_password_is_stopped_after_ten_wrong_tries(
        open_mode, sample_settings, sample_index, tmp_path, monkeypatch):
    at = start(monkeypatch, sample_settings, tmp_path, RAG_ROLE_PASSWORDS=ROLE_ENV)
    for guess in range(10):
        sign_in(at, "admin", f"guess-{guess}")
        assert [e.value for e in at.error] == ["Wrong role or password."]
    sign_in(at, "admin", PASSWORDS["admin"])  # even the right password waits out the minute
    assert at.error[0].value.startswith("Too many wrong passwords for this role in the last "
                                        "minute; try again in ")
    assert visible_pages(at) == []
    sign_in(at, "author", PASSWORDS["author"])  # other roles are not locked
    assert not at.error and at.chat_input
