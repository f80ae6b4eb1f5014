"""Audit explorer: every question, answer, score and guardrail decision, filtered and charted."""

import streamlit as st

from pages.components.audit import charts as audit_charts
from pages.components.audit import view
from pages.components.audit.detail import show_record
from pages.components.common.book_scope import elsewhere_note
from pages.components.common.shared import app_context
from rag.errors import AuditError, RagError

ctx = app_context()
st.header("Audit explorer", anchor=False)
if ctx.audit is None:
    st.error(f"The audit log cannot be opened: {ctx.audit_error}", icon=":material/error:")
    st.stop()

reader = ctx.audit
try:
    reader.flush()  # so the questions just asked are here
except AuditError as e:
    from rag.audit.store import SpoolSnapshot

    st.warning(f"{e}\n\nShowing only the entries waiting in this machine's spool.",
               icon=":material/lock_clock:")
    reader = SpoolSnapshot(ctx.settings.audit_db)

view.state_notice(ctx.audit)
filters = view.filters(reader, ctx.settings)
try:
    total = view.kpis(reader, filters)
    overview, log, console = st.tabs(["Overview", "Questions", "SQL console"])
    with overview:
        if total:
            audit_charts.charts(reader, filters, ctx.index.chunks if ctx.index else [],
                                ctx.settings)
        else:
            st.info("No questions match these filters yet." + elsewhere_note(reader, filters.books),
                    icon=":material/filter_alt_off:")
    with log:
        log_id = view.log_table(reader, filters, total)
        if log_id and (record := reader.get_log(log_id)):
            with st.container(border=True):
                show_record(record)
    with console:
        view.console(ctx.audit, ctx.settings.book_id)
except RagError as e:
    st.error(str(e), icon=":material/error:")
