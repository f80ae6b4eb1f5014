"""A section's quotable units: prose sentences, list items, commands and table rows, cleaned."""

from __future__ import annotations

from rag.book.inline import clean_inline
from rag.book.sentences import COMMAND, HEADING, ITEM, PROSE, ROW, split_section

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
    numbered = split_section("Spins a laser.", "1. LIDAR (Light Detection and Ranging)")
    assert numbered[0].text == "LIDAR (Light Detection and Ranging)"  # the book's count dropped
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


LISTS = """Two fusion schemes are common:

1. **Wheel-Inertial Odometry (WIO)**:
   - Combines wheel encoders and a gyroscope
   - Cheap to run
   - Drifts on sand

2. **Lidar + Map Matching**:
   - Needs a prior map
   - Fails in long corridors

**Strengths**:
- Runs at the full encoder rate, which is usually 500 Hz or more on a small rover
- Works in the dark because it never looks at the scene around it
- Error: grows with distance travelled, roughly one percent of the path

Teams often start with this scheme because it needs nothing beyond the drive train and
  a cheap gyroscope.

- Wheel slip is detected by comparing the two sides
  against the gyroscope's turn rate over a short window.

- Check the calibration:
  ```bash
  ros2 run rover calibrate
  ```
"""


def test_nested_items_carry_their_label_and_short_siblings_make_one_unit():
    texts = [u.text for u in split_section(LISTS, "Odometry")]
    assert "Wheel-Inertial Odometry (WIO): Combines wheel encoders and a gyroscope; Cheap to " \
        "run; Drifts on sand" in texts
    assert "Lidar + Map Matching: Needs a prior map; Fails in long corridors" in texts
    assert not any(t.startswith("Wheel-Inertial Odometry (WIO):;") for t in texts)
    # the lead-in of labelled lists names them all: it answers "which schemes are common?"
    assert "Two fusion schemes are common: Wheel-Inertial Odometry (WIO); Lidar + Map " \
        "Matching" in texts and "Two fusion schemes are common:" not in texts
    assert not any(t in ("Cheap to run", "Drifts on sand") for t in texts)  # only merged


def test_longer_items_are_led_by_a_short_label_unless_they_have_their_own():
    texts = [u.text for u in split_section(LISTS, "Odometry")]
    assert "Strengths: Runs at the full encoder rate, which is usually 500 Hz or more on a " \
        "small rover" in texts
    assert "Strengths: Works in the dark because it never looks at the scene around it" in texts
    assert "Error: grows with distance travelled, roughly one percent of the path" in texts


def test_continuation_lines_join_their_item_and_commands_lose_the_numbering():
    units = split_section(LISTS, "Odometry")
    texts = [u.text for u in units]
    assert "Wheel slip is detected by comparing the two sides against the gyroscope's turn rate " \
        "over a short window." in texts
    assert "Teams often start with this scheme because it needs nothing beyond the drive train " \
        "and a cheap gyroscope." in texts
    assert {u.text: u.kind for u in units}["Check the calibration: ros2 run rover calibrate"] \
        == COMMAND
    numbered = split_section("1. Check the calibration:\n   ```bash\n   calibrate now\n   ```\n")
    assert [u.text for u in numbered] == ["Check the calibration: calibrate now"]


def test_a_bold_labels_own_numbering_is_not_quoted():
    """Troubleshooting entries number their causes in bold ("**2. Missing robot_state_publisher**:")
    above a command or a list: a quote read "2. Missing robot_state_publisher: ros2 run ...", list
    numbering the answer must not carry. A heading's numbering goes from its list's label too;
    a sentence that opens with a figure keeps it."""
    text = ("**1. Topic name mismatch**:\n```bash\n# Check what topics exist\nros2 topic list\n"
            "```\n\n"
            "**2. Timing issue**:\n- Start the subscriber before the publisher\n"
            "- Or start both from one launch file\n\n"
            "12 nodes run on the rover.\n")
    texts = [u.text for u in split_section(text, "Nodes not communicating")]
    assert texts[0].startswith("Topic name mismatch: ") and "ros2 topic list" in texts[0]
    assert not any(t.startswith(("1.", "2.")) for t in texts)
    assert "12 nodes run on the rover." in texts
    heading = "## 3. Sensor Kit\n\n- Stereo camera\n- Lidar puck\n"
    kit = ["Sensor Kit: Stereo camera; Lidar puck"]
    assert [u.text for u in split_section(heading, "Rover")] == kit
    under_numbered_heading = split_section("- Stereo camera\n- Lidar puck\n", "2. Sensor Kit")
    assert [u.text for u in under_numbered_heading] == kit


def test_a_list_right_under_a_heading_or_a_bold_line_takes_it_as_its_label():
    text = "## Typical Payloads\n\n- Stereo camera\n- Lidar puck\n- Spare battery pack\n"
    assert [u.text for u in split_section(text, "Rover")] == \
        ["Typical Payloads: Stereo camera; Lidar puck; Spare battery pack"]
    later = "Rovers carry things.\n\n- Stereo camera\n- Lidar puck\n"  # a paragraph between
    assert [u.text for u in split_section(later, "Rover")][-1] == "Stereo camera; Lidar puck"
    bold = "**Tested on the Mk II rover**\n\n- Release: March 2024\n- Support until: March 2029\n"
    assert [u.text for u in split_section(bold, "Rover")][-1] == \
        "Tested on the Mk II rover: Release: March 2024; Support until: March 2029"


def test_unlabelled_items_are_the_items_as_written():
    texts = [u.text for u in split_section(LISTS, "Odometry", labelled=False)]
    assert "Combines wheel encoders and a gyroscope" in texts
    assert "Runs at the full encoder rate, which is usually 500 Hz or more on a small rover" in \
        texts
    assert not any(";" in t for t in texts)


def test_items_that_ask_or_only_introduce_are_not_units():
    text = ("- Check ROS 2 environment:\n  ```bash\n  echo $ROS_DISTRO\n  ```\n"
            "- Set up ROS_DOMAIN_ID\n- Is ROS 2 installed?\n- Reboot the board\n")
    texts = [u.text for u in split_section(text)]
    assert texts == ["Check ROS 2 environment: echo $ROS_DISTRO",
                     "Set up ROS_DOMAIN_ID; Reboot the board"]


def test_bold_field_lines_are_a_unit_each():
    text = "**Duration:** Weeks 2-4 (3 weeks)\n**Weight:** 25% of the final mark\n" \
           "**Team Size**: 1-2 students working together\n"
    assert [u.text for u in split_section(text)] == [
        "Duration: Weeks 2-4 (3 weeks)", "Weight: 25% of the final mark",
        "Team Size: 1-2 students working together"]


def test_labelled_items_also_make_an_overview_of_their_labels():
    text = ("The planner checks three things:\n\n"
            "- **Reach**: the foothold must lie within the leg's workspace at touchdown.\n"
            "- **Flatness**: the patch under the sole must tilt less than ten degrees.\n"
            "- **Clearance**: the swing foot must pass every obstacle by two centimetres.\n")
    texts = [u.text for u in split_section(text, "Footholds")]
    assert texts[0] == "The planner checks three things: Reach; Flatness; Clearance"
    assert "Flatness: the patch under the sole must tilt less than ten degrees." in texts
    two = "- **Reach**: within the leg's workspace at touchdown.\n" \
          "- **Flatness**: tilting less than ten degrees.\n"
    assert not any(";" in u.text for u in split_section(two))  # two labels are no overview


def test_a_lead_in_no_unit_carries_is_quoted_as_it_stands():
    """A lead-in often holds the answer itself; it is a unit of its own unless the items it
    labels or the command after it carry it."""
    ends = "The rover course runs over 6 modules spanning 10 weeks:\n"  # its table is a subsection
    assert [u.text for u in split_section(ends)] == [
        "The rover course runs over 6 modules spanning 10 weeks:"]
    listed = ends + "\n- Module one covers the drive train and its encoders\n"  # too long a lead
    assert [u.text for u in split_section(listed)] == [  # to lead the item: both are quoted
        "The rover course runs over 6 modules spanning 10 weeks:",
        "Module one covers the drive train and its encoders"]
    short = "Every rover kit ships with:\n- Two drive motors\n- One lidar puck\n"
    assert [u.text for u in split_section(short)] == [  # carried by its short items
        "Every rover kit ships with: Two drive motors; One lidar puck"]
    steps = ("Create a state machine or behavior tree:\n- Coordinate perception, planning and "
             "action\n- Handle failures gracefully with retry and replan\n")
    assert split_section(steps)[0].text == "Create a state machine or behavior tree:"
    program = ("Group related nodes under a namespace:\n```python\nNode(\n    package='pkg',\n"
               "    executable='node',\n    namespace='robot1'\n)\n```\n")
    assert [u.text for u in split_section(program)] == ["Group related nodes under a namespace:"]
    parts = ("Provide a 2-3 page analysis covering:\n\n**Domain Randomization:**\n"
             "- Which parameters would you vary across the training runs\n")
    assert "Provide a 2-3 page analysis covering:" in [u.text for u in split_section(parts)]
    nested = ("3. **Technical Report:** 3-4 page PDF including:\n"
              "   - System architecture diagram with every node\n"
              "   - Screenshots of Gazebo, RViz2 and Unity where used\n")
    assert [u.text for u in split_section(nested)] == [
        "Technical Report: 3-4 page PDF including:",  # a label too long to lead its items
        "System architecture diagram with every node",
        "Screenshots of Gazebo, RViz2 and Unity where used"]


def test_a_lead_in_that_only_points_at_what_follows_is_not_quoted():
    program = "The integral term works like this:\n```python\nx = 1\ny = 2\nz = x + y\n```\n"
    assert split_section(program) == []
    goals = ("After this lesson, you will be able to:\n- Explain how a PID loop rejects a "
             "disturbance\n- Tune the derivative gain without amplifying noise\n")
    assert [u.text for u in split_section(goals)] == [
        "Explain how a PID loop rejects a disturbance",
        "Tune the derivative gain without amplifying noise"]
    assert split_section("Here is an example of a launch file for two robots:\n```python\n"
                         "a = 1\nb = 2\nc = 3\n```\n") == []


def test_a_blank_line_between_a_lead_in_and_its_command_keeps_them_together():
    text = "Verify installation:\n\n```bash\nnvidia-smi\n```\n\nYou should see your GPU listed.\n"
    assert [(u.text, u.kind) for u in split_section(text)] == [
        ("Verify installation: nvidia-smi", COMMAND), ("You should see your GPU listed.", PROSE)]
    solution = ("**Solution**:\nAdd dependencies to `package.xml`:\n```xml\n"
                "<exec_depend>launch</exec_depend>\n```\n")
    assert [u.text for u in split_section(solution)] == [  # the command carries the lead-in
        "Add dependencies to package.xml: <exec_depend>launch</exec_depend>"]


def test_a_label_nested_two_deep_is_not_quoted_after_an_overview():
    text = ("- **Reach**: the foothold must lie within the leg's workspace at touchdown.\n"
            "- **Flatness**: the patch under the sole must tilt less than ten degrees.\n"
            "- **Clearance**: the swing foot must pass every obstacle by two centimetres.\n"
            "- Kit:\n  - Sensors:\n    - Stereo camera\n    - Lidar puck\n"
            "  - Spare battery pack for the rover\n")
    texts = [u.text for u in split_section(text)]
    assert "Sensors: Stereo camera; Lidar puck" in texts
    assert "Kit: Spare battery pack for the rover" in texts
    assert not any("Sensors:;" in t for t in texts)


SHELL = """Build the workspace:

```bash
# Build with symbolic links (faster iteration during development)
colcon build --symlink-install

# Increase swap space (the board has little RAM)
sudo fallocate -l 8G /swapfile
sudo chmod 600 /swapfile
sudo mkswap /swapfile
sudo swapon /swapfile

# If not found, try a different USB port
# source /opt/ros/humble/setup.bash
```

```python
# Create the node and spin it until shutdown
rclpy.spin(node)
```
"""


def test_a_commented_shell_step_is_one_unit_with_its_commands():
    units = split_section(SHELL)
    texts = [u.text for u in units]
    assert texts == [
        "Build with symbolic links (faster iteration during development): "
        "colcon build --symlink-install",
        "Increase swap space (the board has little RAM): sudo fallocate -l 8G /swapfile && "
        "sudo chmod 600 /swapfile && sudo mkswap /swapfile && sudo swapon /swapfile",
        "If not found, try a different USB port",  # commented-out code: no
        "Create the node and spin it until shutdown: rclpy.spin(node)"]  # a program explained
    assert {u.kind for u in units} == {COMMAND}


def test_a_short_configuration_snippet_after_a_lead_in_is_one_unit():
    text = ("Add dependencies to `package.xml`:\n```xml\n<exec_depend>ros2launch</exec_depend>\n"
            "<exec_depend>launch</exec_depend>\n<exec_depend>launch_ros</exec_depend>\n```\n")
    assert [(u.text, u.kind) for u in split_section(text)] == [(
        "Add dependencies to package.xml: <exec_depend>ros2launch</exec_depend>; "
        "<exec_depend>launch</exec_depend>; <exec_depend>launch_ros</exec_depend>", COMMAND)]


def test_a_command_with_a_comment_beside_it_is_a_step():
    text = ("You can see the live graph using command-line tools:\n```bash\n"
            "ros2 node list        # List all running nodes\n"
            "ros2 topic echo /temp # Show messages on a topic\n"
            "rqt_graph             # Visual graph (GUI tool)\n"
            "echo 'a # b'          # quoted marks are not a comment\n```\n")
    assert [(u.text, u.kind) for u in split_section(text)[1:]] == [
        ("List all running nodes: ros2 node list", COMMAND),
        ("Show messages on a topic: ros2 topic echo /temp", COMMAND),
        ("Visual graph (GUI tool): rqt_graph", COMMAND)]


def test_a_comment_beside_a_joined_command_goes_after_it():
    text = ("Always run from workspace root:\n```bash\ncd ~/ros2_ws  # Not ~/ros2_ws/src!\n"
            "colcon build\n```\n")
    assert [u.text for u in split_section(text)] == [
        "Always run from workspace root: cd ~/ros2_ws && colcon build (Not ~/ros2_ws/src!)"]


def test_a_programs_explaining_comment_is_quoted_with_the_line_it_explains():
    text = ("```python\n# The '10' is the queue size - how many messages to buffer\n"
            "self.pub = self.create_publisher(Float32, 'temperature', 10)\n"
            "# Spin\nrclpy.spin(node)\n"  # too short to explain anything
            "# This MUST be called before creating any nodes at all\n\n"
            "# x = compute(y)  # commented-out code is no explanation\n```\n")
    assert [(u.text, u.kind) for u in split_section(text)] == [
        ("The '10' is the queue size - how many messages to buffer: "
         "self.pub = self.create_publisher(Float32, 'temperature', 10)", COMMAND),
        ("This MUST be called before creating any nodes at all", COMMAND)]


def test_a_short_comment_is_quoted_with_the_whole_line_it_names():
    """"# Apply Gaussian blur" above "blurred = cv2.GaussianBlur(...)" is the book's answer to
    which steps its perception example runs: a one-line comment of two words or more names the
    line under it when that line is a whole statement. Not an import, not the opening of a
    call or a block, not the last line of a longer comment."""
    text = ("```python\nimport cv2\n\n# Example of edge detection\nimport numpy as np\n\n"
            "def process(image):\n    # Apply Gaussian blur\n"
            "    blurred = cv2.GaussianBlur(image, (5, 5), 0)\n"
            "    # Use in node\n    node = Node(\n        package='demo')\n"
            "    # Every second iteration\n    if i % 2 == 0:  # feedback\n        pass\n"
            "    # Keep the node running\n    # for incoming requests\n"
            "    rclpy.spin(node)\n```\n")
    assert [u.text for u in split_section(text)] == [
        "Apply Gaussian blur: blurred = cv2.GaussianBlur(image, (5, 5), 0)"]


def test_uncommented_commands_under_a_heading_are_its_steps():
    """A shell block with no comments, under "### Install NVIDIA Container Toolkit": each group
    of up to four commands (blank lines part them) is a step named by the heading, more are a
    script; printed output under a lead-in is what it shows, not commands joined by "&&". A
    short snippet right under a heading is named by it, as by a lead-in."""
    text = ("### Install NVIDIA Container Toolkit\n\n```bash\nsudo apt-get update\n"
            "sudo apt-get install -y nvidia-container-toolkit\nsudo systemctl restart docker\n"
            "\n" + "".join(f"step{i} --go\n" for i in range(5)) + "```\n\n"
            "Terminal 1 (Publisher):\n\n```\n[INFO] [talker]: Publishing: 20.0\n"
            "[INFO] [talker]: Publishing: 20.5\n[INFO] [talker]: Publishing: 21.0\n```\n")
    assert [u.text for u in split_section(text, "Software Setup")] == [
        "Install NVIDIA Container Toolkit: sudo apt-get update && sudo apt-get install -y "
        "nvidia-container-toolkit && sudo systemctl restart docker",
        "Terminal 1 (Publisher): [INFO] [talker]: Publishing: 20.0; [INFO] [talker]: "
        "Publishing: 20.5; [INFO] [talker]: Publishing: 21.0"]
    snippet = ("### Parameter File Format\n\n```yaml\nmy_node:\n  ros__parameters:\n"
               "    speed: 1.0\n```\n")
    assert [u.text for u in split_section(snippet, "Parameters")] == [
        "Parameter File Format: my_node:; ros__parameters:; speed: 1.0"]


def test_a_longer_script_under_one_comment_is_not_quoted():
    script = "```sh\n# Set everything up at once\n" + "".join(f"step{i} --go\n" for i in range(5)) \
        + "```\n"
    assert split_section(script) == []


def test_abbreviations_do_not_end_a_sentence_and_a_definition_list_joins_its_term():
    texts = [u.text for u in split_section(
        "Costs differ, e.g. Workstations cost more. Cloud vs. On-premise is the choice.\n\n"
        "**CapEx (Capital Expenditure)**\n"
        ": Upfront costs for equipment vs. OpEx (running costs).\n")]
    assert texts == ["Costs differ, e.g. Workstations cost more.",
                     "Cloud vs. On-premise is the choice.",
                     "CapEx (Capital Expenditure): Upfront costs for equipment vs. OpEx "
                     "(running costs)."]


def test_entities_read_as_the_characters_they_stand_for():
    assert clean_inline("Inference latency: &lt;50ms; accuracy &gt;80% &amp; rising") == \
        "Inference latency: <50ms; accuracy >80% & rising"
    assert clean_inline("Escape it as `&lt;` in MDX") == "Escape it as &lt; in MDX"  # code: as is


def test_a_code_span_keeps_what_it_holds():
    assert clean_inline("Use the `ros__parameters` key, not __bold__ text") == \
        "Use the ros__parameters key, not bold text"
    assert clean_inline("Add from git URL: `https://example.org/x.git?path=/y` or https://a.b/c") \
        == "Add from git URL: https://example.org/x.git?path=/y or"
    assert clean_inline("Add `<exec_depend>launch_ros</exec_depend>` to <b>package.xml</b>") == \
        "Add <exec_depend>launch_ros</exec_depend> to package.xml"


def test_a_reference_entry_is_one_unit_with_its_note_under_it():
    text = ('7. Tobin, J., et al. (2017). "Domain randomization for transferring deep neural '
            'networks from simulation to the real world." *IROS*.\n'
            '   - Key technique for bridging sim-to-real gap\n\n'
            '8. Peng, X. B., & Lee, K. (2020). "Learning agile robot skills." *RSS*.\n')
    assert [u.text for u in split_section(text)] == [
        'Tobin, J., et al. (2017). "Domain randomization for transferring deep neural networks '
        'from simulation to the real world." IROS.',
        "Key technique for bridging sim-to-real gap",
        'Peng, X. B., & Lee, K. (2020). "Learning agile robot skills." RSS.']
    # prose that names an author is still split at its sentences
    assert [u.text for u in split_section("Smith, J. wrote the first survey. It came out in "
                                          "2019 and is still cited.")] == [
        "Smith, J. wrote the first survey.", "It came out in 2019 and is still cited."]

