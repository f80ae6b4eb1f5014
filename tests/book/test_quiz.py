"""The book's own review questions, and the units that answer them (rag.book.quiz)."""

from __future__ import annotations

from rag.book.quiz import MAX_PAIRS, Quiz, heading_ask, quiz_pairs
from rag.book.sentences import split_section

NUMBERED = """Test your knowledge with these questions.

**Question 1**: What is the difference between a wheel and a leg?

**Question 2**: Why must a walking robot keep its centre of pressure inside the foot?

View Answers

**Answer 1**: A **wheel** rolls on prepared ground. A leg can step over obstacles.

**Answer 2**: Outside the foot the robot starts to tip. The controller then has no torque
left to correct it, so the fall cannot be stopped.
"""

# How the parser leaves `<details><summary>1. Why ...?</summary> answer </details>`: tags gone.
SUMMARIES = """1. Why does a humanoid need an IMU in its pelvis?

The IMU measures how the whole body rotates in space. No other sensor does that directly.



2. What does a joint encoder measure?

It measures the angle of one joint, at up to 40 kHz.

---

A closing remark that answers nothing in particular here.
"""


def test_numbered_answers_pair_with_their_questions():
    pairs = dict(quiz_pairs(NUMBERED))
    assert set(pairs) == {"What is the difference between a wheel and a leg?",
                          "Why must a walking robot keep its centre of pressure inside the foot?"}
    units = split_section(NUMBERED)
    asked = {u.text: Quiz(NUMBERED).asked_by(u.text) for u in units}
    # the answer's label is the book's numbering, not quoted ("Answer 1: A wheel rolls ...")
    assert not any(t.startswith("Answer") for t in asked)
    assert asked["A wheel rolls on prepared ground."].startswith("What is the diff")
    assert asked["A leg can step over obstacles."].startswith("What is the difference")
    # the second sentence of an answer that wraps over two lines belongs to it as well
    second = next(t for t in asked if t.startswith("The controller then has no torque"))
    assert asked[second].startswith("Why must a walking robot")
    assert asked["Test your knowledge with these questions."] == ""


def test_summary_questions_pair_with_the_text_below_them_up_to_a_rule():
    pairs = quiz_pairs(SUMMARIES)
    assert [q for q, _ in pairs] == ["Why does a humanoid need an IMU in its pelvis?",
                                     "What does a joint encoder measure?"]
    quiz = Quiz(SUMMARIES)
    assert quiz.asked_by("No other sensor does that directly.").startswith("Why does")
    assert quiz.asked_by("It measures the angle of one joint, at up to 40 kHz.") == \
        "What does a joint encoder measure?"
    assert quiz.asked_by("A closing remark that answers nothing in particular here.") == ""


def test_a_question_in_a_list_or_a_summary_that_asks_nothing_pairs_nothing():
    text = ("- Domain randomization: What parameters would you vary?\n"
            "- Lighting and textures are the usual ones to vary.\n\nView Answers\n\n"
            "Plain prose follows here without any question at all.")
    assert quiz_pairs(text) == []
    assert quiz_pairs("") == [] and Quiz("").asked_by("Any unit of text at all.") == ""


def test_a_section_of_thousands_of_questions_is_read_in_bounded_time():
    """Hostile text: 20,000 question-and-answer pairs keep MAX_PAIRS, and a unit is found by
    one search over their answers (seconds before, for every unit of such a section)."""
    text = "".join(f"{n}. What does joint {n} do on the robot?\n\nJoint {n} turns the arm.\n\n"
                   for n in range(1, 20001))
    quiz = Quiz(text)
    assert len(quiz.pairs) == MAX_PAIRS
    assert quiz.asked_by("Joint 7 turns the arm.") == "What does joint 7 do on the robot?"
    assert quiz.asked_by("Joint 20000 turns the arm.") == ""  # beyond the kept pairs


def test_a_heading_that_asks_or_names_a_problem_is_the_question_of_its_units():
    assert heading_ask("Q9: Service call hangs or times out") == \
        "Q9: Service call hangs or times out"
    assert heading_ask('Mistake 3: "Module not found"') == 'Mistake 3: "Module not found"'
    assert heading_ask("Issue: RealSense not detected") == "Issue: RealSense not detected"
    assert heading_ask("2.1 What is **URDF**?") == "2.1 What is URDF?"
    for plain in ("Kalman Filter Intuition", "Questions and Answers", "Problems", ""):
        assert heading_ask(plain) == ""


TROUBLESHOOTING = """**Issue: Isaac Sim won't launch**
- **Solution**: Verify the GPU has at least 8GB VRAM and current drivers.

**Symptom**:
```
ModuleNotFoundError: No module named 'rclpy'
```

**Cause**: The environment is not sourced in this terminal.

**Solution**:
```bash
# Source ROS 2 in every new terminal
source /opt/ros/humble/setup.bash
```
Add the line to your bashrc to make it permanent for good.

**Symptom**:

A bare label that states nothing on its own line here.
"""


def test_a_stated_problem_is_the_question_of_the_text_under_it():
    """A bold "Issue: ..." line, or "Symptom:" over the error message in a code block (as the
    reader would paste it), is asked by the units below it, up to the next problem; a comment
    in a code block is not a heading that ends the answer."""
    quiz = Quiz(TROUBLESHOOTING)
    assert quiz.asked_by("Solution: Verify the GPU has at least 8GB VRAM and current drivers.") \
        == "Issue: Isaac Sim won't launch"
    symptom = "Symptom: ModuleNotFoundError: No module named 'rclpy'"
    assert quiz.asked_by("Cause: The environment is not sourced in this terminal.") == symptom
    assert quiz.asked_by("Add the line to your bashrc to make it permanent for good.") == symptom
    assert quiz.asked_by("A bare label that states nothing on its own line here.") == ""
