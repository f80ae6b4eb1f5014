"""Optional sign-in per role: the gate app.py puts before every page, and who is asking.

With no role passwords configured (RAG_ROLE_PASSWORDS or [roles] in .streamlit/secrets.toml) the
app stays open and every question is the "local" client. With passwords, nothing but the sign-in
form runs until a role signs in; the role then sees only its pages, and the audit records its
questions as "role:<name>". The role is kept in this browser session only (a reload signs out)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import streamlit as st

from rag.access.ratelimit import RateLimiter, default_state_path
from rag.access.roles import ENV_NAME, RoleLogins, client_for
from rag.access.secrets import SECRETS_FILE
from rag.errors import RagError
from rag.types import LOCAL_CLIENT

ROLE_KEY = "_folio_role"
# Wrong passwords per role per minute, counted across every app process. A role's password is
# shared by everyone in the role, so this caps guessing (PBKDF2 alone allows ~6 tries a second a
# core) while a locked-out colleague waits at most a minute.
WRONG_PER_MINUTE = 10
WRONG = "Wrong role or password."
OPEN_NOTE = "Open access: no sign-in configured — see README."


def _fingerprint() -> tuple:
    """What the logins are loaded from, so an edited secrets file or variable is re-read; the
    variable enters only as a digest, never as text in a cache key."""
    value = os.environ.get(ENV_NAME, "")
    try:
        stat = SECRETS_FILE.stat()
        file = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        file = None
    return hashlib.sha256(value.encode("utf-8")).hexdigest(), file


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_logins(fingerprint: tuple) -> RoleLogins:
    return RoleLogins.load()  # plain passwords are hashed here: 0.16 s a role, once


def role_logins() -> RoleLogins:
    """The configured logins; a broken configuration stops the app rather than opening it."""
    try:
        return cached_logins(_fingerprint())
    except RagError as e:
        message = f"Sign-in is misconfigured, so the app stays closed: {e}"

        def closed() -> None:
            st.error(message, icon=":material/lock:")

        # the only page registered, so no URL (not even a legacy pages/ one) opens another
        st.navigation([st.Page(closed, title="Folio", url_path="closed")]).run()
        st.stop()
        raise  # st.stop() raises; this keeps type checkers and readers sure


def signed_in_role(logins: RoleLogins) -> str | None:
    """The role this session signed in as, if that role can still sign in."""
    role = st.session_state.get(ROLE_KEY)
    if role is not None and role not in logins.roles:
        st.session_state.pop(ROLE_KEY, None)  # its password was removed: sign in again
        return None
    return role


def current_client() -> str:
    """The client this session's questions are recorded as: "role:<name>" or "local"."""
    role = st.session_state.get(ROLE_KEY)
    return client_for(role) if role else LOCAL_CLIENT


def sign_in_page() -> None:
    """The only page before sign-in: a role, a password, and no hint which of them was wrong."""
    logins = role_logins()
    st.title("Folio")
    st.caption("Sign in to ask the book, inspect retrieval or review the audit.")
    with st.form("sign_in", enter_to_submit=True):
        role = st.selectbox("Role", logins.roles, key="sign_in_role")
        password = st.text_input("Password", type="password", key="sign_in_password")
        submitted = st.form_submit_button("Sign in", type="primary",
                                          icon=":material/login:")
    if not submitted:
        return
    attempts, key = wrong_passwords(), f"sign-in:{role}"
    waiting = attempts.peek(key)
    if not waiting.allowed:
        st.error(f"Too many wrong passwords for this role in the last minute; try again in "
                 f"{waiting.retry_after_s} s.", icon=":material/timer:")
        return
    if role and password and logins.verify(role, password):
        st.session_state[ROLE_KEY] = role
        st.session_state.pop("sign_in_password", None)  # no password kept in the session
        st.rerun()
    attempts.check(key)
    st.error(WRONG, icon=":material/lock:")


@st.cache_resource(show_spinner=False)
def _wrong_passwords(state_path: str) -> RateLimiter:
    return RateLimiter(Path(state_path), WRONG_PER_MINUTE)


def wrong_passwords() -> RateLimiter:
    """Failed sign-ins, in the same shared file as the question limits (keys "sign-in:<role>",
    which no client name can take)."""
    return _wrong_passwords(str(default_state_path()))


def sign_out() -> None:
    st.session_state.pop(ROLE_KEY, None)


def render_access(logins: RoleLogins, role: str | None) -> None:
    """The sidebar's line about who is signed in, or that the app is open to everyone."""
    if not len(logins):
        st.caption(f":material/lock_open: {OPEN_NOTE}")
        return
    if role:
        st.caption(f":material/badge: Signed in as **{role}**")
        st.button("Sign out", icon=":material/logout:", on_click=sign_out, key="sign_out")
