"""A section's quotable units: prose sentences, list items, commands and table rows, cleaned."""

from __future__ import annotations

from rag.book.sentences import COMMAND, HEADING, ITEM, PROSE, ROW, clean_inline, split_section

SECTION = """Sensor fusion combines readings from several sensors. It hides each one's weakness.

**Symptom**: the node cannot be found.

**Solution**:
```bash
source /opt/ros/humble/setup.bash
```

1. Install the package with its dependencies first.
2. Then build the workspace with colcon build.

- [Official tutorial](https://example.org/tutorial)
- [ ] Check the topic list for your node

| Robot | DOF | Notes |
|---|---|---|
| Humanoid | 20-40+ | Arms and legs |

Quiz: Which sensor drifts over time?

The gyroscope has a bias of 0.01 degrees per second, e.g. in cheap units.
See the [wiring guide](../wiring) for details.
"""


def test_units_in_book_order_with_their_kinds():
    units = split_section(SECTION, "Sensor Fusion (SF)")
    texts = [u.text for u in units]
    assert texts[0] == "Sensor Fusion (SF)" and units[0].kind == HEADING
    assert "Sensor fusion combines readings from several sensors." in texts
    assert "It hides each one's weakness." in texts  # sentences split
    assert "Solution: source /opt/ros/humble/setup.bash" in texts  # lead-in + short command
    assert "Install the package with its dependencies first." in texts  # "1." stripped
    assert "Then build the workspace with colcon build." in texts  # no "2." glued on
    assert "Humanoid: DOF 20-40+; Notes Arms and legs" in texts  # a table row, header names values
    assert "Check the topic list for your node" in texts  # checkbox stripped
    kinds = {u.text: u.kind for u in units}
    assert kinds["Solution: source /opt/ros/humble/setup.bash"] == COMMAND
    assert kinds["Humanoid: DOF 20-40+; Notes Arms and legs"] == ROW
    assert kinds["Install the package with its dependencies first."] == ITEM
    assert kinds["It hides each one's weakness."] == PROSE


def test_no_quiz_lead_in_reading_list_code_or_markdown():
    texts = [u.text for u in split_section(SECTION)]
    assert not any(t.endswith("?") or t.endswith(":") for t in texts)
    assert not any("Official tutorial" in t for t in texts)  # a reading-list entry
    assert not any("](" in t or "**" in t or "`" in t or t.startswith("|") for t in texts)
    assert "See the wiring guide for details." in texts  # link text kept, target dropped
    assert "The gyroscope has a bias of 0.01 degrees per second, e.g. in cheap units." in texts


def test_items_of_one_list_share_a_block():
    units = {u.text: u for u in split_section(SECTION)}
    first = units["Install the package with its dependencies first."]
    second = units["Then build the workspace with colcon build."]
    assert first.block == second.block
    assert units["Sensor fusion combines readings from several sensors."].block != first.block


def test_long_commands_are_programs_not_answers():
    text = "**Solution**:\n```python\nimport rclpy\nrclpy.init()\nnode = make()\nspin(node)\n```\n"
    assert split_section(text) == []


def test_clean_inline():
    assert clean_inline("**Bold** and `code` with [a link](http://x) ![img](y.png)") == \
        "Bold and code with a link"
