"""Book: read a chapter in the app; citation links land here when the book has no published site.

Query parameters ?module=&chapter=&section= preselect the chapter and mark the section."""

import streamlit as st

from pages.components.book import reader
from pages.components.book.mismatch import stop_on_link_problem
from pages.components.common.shared import app_context
from rag.errors import RagError

ctx = app_context()
st.header("Book", anchor=False)
book_dir = str(ctx.settings.book_dir)
try:
    chapters = reader.chapters(book_dir, reader.book_key(ctx.settings.book_dir))
except (RagError, OSError) as e:  # a missing or unreadable book folder
    st.error(f"The book cannot be read: {e}", icon=":material/error:")
    st.stop()
if not chapters:
    st.info("The book has no chapters yet.", icon=":material/info:")
    st.stop()

stop_on_link_problem(ctx, chapters)  # another book's citation, or a chapter not in this book
params = st.query_params
wanted = f"{params.get('module', '')}/{params.get('chapter', '')}"
if wanted in chapters and st.session_state.get("_reader_link") != dict(params):
    st.session_state["_reader_link"] = dict(params)  # a new link: follow it once
    st.session_state["reader_chapter"] = wanted
keys = list(chapters)
choice = st.selectbox("Chapter", keys, key="reader_chapter",
                      format_func=lambda k: reader.label(chapters[k]))
entry = chapters[choice]
if choice != wanted:  # picked by hand: the URL follows, without a section
    st.query_params.from_dict({"module": entry["module_id"], "chapter": entry["chapter_id"]})
    st.session_state["_reader_link"] = dict(st.query_params)
    target = ""
else:
    target = params.get("section", "")

st.markdown(reader.TARGET_STYLE, unsafe_allow_html=True)
st.subheader(entry["title"].replace("$", "\\$"), divider="gray", anchor=False)
if target and not any(s.section_id == target for s in entry["sections"]):
    st.warning(f"No section `{target}` in this chapter; showing the whole chapter.",
               icon=":material/search_off:")
targets = reader.targets_of(chapters)  # a chapter's links to others open them here
for section in entry["sections"]:
    reader.show_section(section, target=bool(target) and section.section_id == target,
                        targets=targets)
