"""Question shapes and whether a sentence has the content a shape wants."""

from __future__ import annotations

import pytest

from rag.answer.shape import (
    DEFINITION,
    FIX,
    NAMED,
    NUMBER,
    OTHER,
    PROCEDURE,
    REASON,
    asks_specific,
    compared_subjects,
    defines,
    detour,
    expands,
    question_shape,
    question_subject,
    shape_match,
)


@pytest.mark.parametrize(("question", "shape"), [
    ("How many degrees of freedom does a humanoid have?", NUMBER),
    ("How quickly does a humanoid reach the floor?", NUMBER),
    ("Until when will ROS 2 Humble be supported?", NUMBER),
    ("Why do encoders drift?", REASON),
    ("I get ModuleNotFoundError: No module named 'rclpy'", FIX),
    ("What does URDF stand for?", DEFINITION),
    ("Which Jetson board should students use?", NAMED),
    ("How do you tune a PID controller for a joint?", PROCEDURE),
    ("How do I visualize TF frames?", PROCEDURE),
    ("How do I fix 'permission denied' when I run docker?", FIX),  # a fix before a procedure
    ("How do I know how long the battery lasts?", NUMBER),
    # "Is there a tool for ...?" wants the tool's name ("rosbag2 - Data recording and playback")
    ("Is there a tool for recording what my robot publishes?", NAMED),
    ("Are there any simulators that run on a Mac?", NAMED),
    ("Is Ziegler-Nichols sensible, or is there a gentler procedure?", OTHER),
    # "What are those ... called?" asks for names, not for what they are
    ("Can a launch file run other programs? What are those launch actions called?", NAMED),
    ("Is there a package that fuses sensors, and what is it called?", NAMED),
])
def test_question_shapes(question, shape):
    assert question_shape(question) == shape


def test_a_number_or_a_definition_is_a_specific_ask():
    """Those answers sit in one sentence; a reason, a fix or a name may not (the confidence
    weighs the best unit more for the first)."""
    assert asks_specific("How many degrees of freedom does a humanoid have?")
    assert asks_specific("What does URDF stand for?")
    assert not asks_specific("Why do encoders drift?")
    assert not asks_specific("Which Jetson board should students use?")
    assert not asks_specific("I get ModuleNotFoundError: No module named 'rclpy'")


def test_numbers_need_a_unit_or_a_range():
    assert shape_match(NUMBER, "It hits the ground in 0.6 to 1.0 s.") == 1.0
    assert shape_match(NUMBER, "A full-size humanoid has 20-40+ DOF.") == 1.0
    assert shape_match(NUMBER, "It falls quickly.") == -1.0
    # a unit that is not a letter ends the number too: "40% of", "30° of" (a word boundary
    # after "%" needs a letter next, so a share of the grade was no number)
    assert shape_match(NUMBER, "Weight: 40% of final grade") == 1.0
    assert shape_match(NUMBER, "Tilt beyond 30° means the robot is falling.") == 1.0
    assert shape_match(NUMBER, "It takes 5 min to boot.") == 1.0
    assert shape_match(NUMBER, "Week 5 is about launch files.") == 0.0
    assert shape_match(REASON, "It drifts because the bias is integrated.") == 1.0
    assert shape_match(FIX, "Solution: source the setup file") == 1.5


def test_definitions_and_acronyms():
    assert question_subject("What is colcon, and which tool did it replace?") == "colcon"
    assert question_subject("What does SDF stand for?") == "SDF"
    assert defines("colcon is the ROS 2 build tool.", "colcon")
    assert not defines("We build everything with colcon later.", "colcon")
    # a label that names it in brackets: the book's only definition of rclpy
    assert defines("Python Client Library (rclpy): Standard node creation, publishers", "rclpy")
    assert not defines("Nodes talk through topics (see rclpy): publishers", "rclpy")
    # only an article, "this" or a label may stand before the subject: not a word that
    # qualifies it, nor a clause it sits in
    assert not defines("Configure and run VSLAM: Generate odometry estimates", "SLAM")
    assert defines("SLAM (Simultaneous Localization and Mapping): Build maps", "SLAM")
    assert not defines("The delivery service provides you continuous updates", "service")
    assert not defines("Path planner node: Subscribes to sensor data", "node")
    assert not defines("Always check if a service is available before calling it", "service")
    assert defines("The ZMP is a property of the robot's motion", "ZMP")
    # what a thing is like is no definition of it: "What is MPC used for?" was led by "MPC is
    # only as good as its model" as the book's definition of MPC
    assert not defines("MPC is only as good as its model, but it must also be fast", "MPC")
    assert not defines("MPC is expensive to solve on a small computer.", "MPC")
    assert not defines("PID is not enough for walking.", "PID")
    assert question_subject("What is MPC good for?") == "MPC"
    assert question_subject("What is colcon used for?") == "colcon"
    assert defines("In ROS 2 terms: URDF is an XML format", "URDF")
    assert defines("This actuator network is trained on real data", "actuator network")
    assert expands("Work with SDF (Simulation Description Format)", "What does SDF stand for?")
    assert expands("Unified Robot Description Format (URDF) is XML.", "What is URDF?")
    assert not expands("URDF files describe robots.", "What is URDF?")


def test_a_procedure_wants_a_step_that_says_what_to_do():
    """"How do you tune a PID controller for a joint?" quoted the chapter's introduction, which
    names tuning, over "Raise Kp until the joint tracks ...": an instruction matches the shape,
    after "Step 2:" or "First," too, but not a list's label ("Reusability: Use the same ...")."""
    assert shape_match(PROCEDURE, "Raise Kp until the joint tracks a small step briskly.") == 1.0
    assert shape_match(PROCEDURE, "Step 2: Verify the ROS 2 environment is sourced") == 1.0
    assert shape_match(PROCEDURE, "Finally, repeat the test under realistic load.") == 1.0
    assert shape_match(PROCEDURE, "Reusability: Use the same package in many robots") == 0.0
    assert shape_match(PROCEDURE, "Understanding how to tune it is a basic skill.") == 0.0


def test_detours_point_elsewhere():
    assert detour("See the Student Kit Guide for Jetson setup")
    assert detour("Symptom: the node is not found")
    assert not detour("The Jetson Orin Nano runs the trained policy.")
    # a link's label, after an emoji, is a pointer too: it answered "What's the capstone about?"
    assert detour("🎓 View Full Capstone Details: Capstone Project Requirements")
    assert detour("Learn more about ROS 2 launch files")
    assert not detour("Viewing angles of the camera overlap by 20 degrees.")
    assert not detour("Open the terminal and run colcon build.")
    # a roadmap of the book says where an answer is, not what it is
    assert detour("In the next lesson, we'll explore sim-to-real transfer techniques.")
    assert detour("This chapter develops the linear inverted pendulum and its time constant.")
    assert not detour("This chapter's robot weighs 45 kg.")


def test_the_two_things_a_question_compares():
    """Each as the book would name it: a word the two share goes to both, a qualifier the book
    does not use ("ordinary") and the context after them ("in URDF") are dropped."""
    cases = {
        "What's the difference between forward and inverse kinematics?":
            ("forward kinematics", "inverse kinematics"),
        "When budgeting a lab, what's the difference between CapEx and OpEx?": ("CapEx", "OpEx"),
        "How is visual SLAM different from ordinary SLAM?": ("visual SLAM", "SLAM"),
        "How is a revolute joint different from a continuous joint in URDF?":
            ("revolute joint", "continuous joint"),
        "How do strict task hierarchies differ from weighted task priorities?":
            ("strict task hierarchies", "weighted task priorities"),
        "I keep seeing both MoveIt and Nav2 mentioned. What's the difference between them?":
            ("MoveIt", "Nav2"),
        "ROS 1 vs ROS 2?": ("ROS 1", "ROS 2"),
        # two questions in one, each thing named whole (the book's definition of each answers)
        "What is URDF? And what is SDF?": ("URDF", "SDF"),
        "What is Gazebo? What is Isaac Sim?": ("Gazebo", "Isaac Sim"),
        "What is the ZMP? And what about the centre of pressure?": ("ZMP", "centre of pressure"),
    }
    for question, subjects in cases.items():
        assert compared_subjects(question) == subjects, question
    for question in ("What is the difference between stop category 0, 1 and 2?",
                     "What is a launch file?", "Why do humanoids fall?",
                     "How many demonstrations does a narrow task need versus a general one?"):
        assert compared_subjects(question) == (), question


@pytest.mark.parametrize(("sentence", "subject", "defining"), [
    ("The capture point lies at the centre of mass plus its velocity divided by omega.",
     "capture point", True),
    ("The capture point answers a very practical question: where must the robot step?",
     "capture point", True),
    ("An IMU measures angular rate and linear acceleration.", "IMU", True),
    ("URDF describes a robot's links and joints in XML.", "URDF", True),
    # where it is, or what it is in a worked example: no definition
    ("The capture point is therefore at the very tip of the toes.", "capture point", False),
    ("The capture point is 0.15 m ahead of the centre of mass.", "capture point", False),
    ("The ZMP is ahead of the ankle when the robot leans forward.", "ZMP", False),
    ("The ZMP is a point on the ground.", "ZMP", True),
    # the subject in the other grammatical number: "What's a launch file?" is answered by
    # "Launch files are ..." and "What are IMUs?" by "An IMU measures ..."
    ("In ROS 2 terms: Launch files are Python (or XML/YAML) scripts that coordinate the "
     "startup of multiple nodes.", "launch file", True),
    ("A launch file is a Python script that starts nodes.", "launch files", True),
    ("An IMU measures angular rate and linear acceleration.", "IMUs", True),
    ("IMUs are small and cheap.", "IMU", True),
    ("Launch filesystems are mounted at boot.", "launch file", False),
    ("Physical AI is AI in the physical world.", "physics", False),
    # a glossary's entry names the qualifier after the noun; a legend names the subject after
    # its own label, which is what it describes
    ("Node (ROS 2): Independent process that performs computation.", "ROS 2 node", True),
    ("Blue rectangles: ROS 2 nodes (our publisher and subscriber)", "ROS 2 node", False),
    ("In ROS 2 terms: URDF is an XML format for robots.", "URDF", True),
])
def test_what_defines_a_subject(sentence: str, subject: str, defining: bool) -> None:
    assert defines(sentence, subject) is defining


def test_whats_asks_what_is() -> None:
    assert question_subject("What's a capture point?") == "capture point"
    assert question_subject("What’s URDF used for?") == "URDF"
    assert question_subject("What is a capture point?") == "capture point"
    assert question_subject("What's the role of tf2?") == "tf2"
    assert question_subject("What is the purpose of a launch file?") == "launch file"


def test_which_wants_a_name_the_question_does_not_hold() -> None:
    """"Which ROS 2 version ...?" is answered by a name the reader does not know yet
    ("Humble"), not by a sentence that names only what was asked about ("ROS 2")."""
    question = "Which ROS 2 version does the course use?"
    assert shape_match(NAMED, "Check the ROS 2 release notes for breaking changes",
                       question) == 0.0
    assert shape_match(NAMED, "Module 1 is tested with ROS 2 Humble Hawksbill (LTS)",
                       question) == 1.0
    assert shape_match(NAMED, "Publish on /cmd_vel for velocity commands",
                       "Which topic carries velocity commands?") == 0.0
    assert shape_match(NAMED, "Gazebo ROS 2 plugins such as DiffDrive drive the wheels",
                       "Which Gazebo plugin drives a two-wheeled robot?") == 1.0
    # without the question, any name counts (as before)
    assert shape_match(NAMED, "Check the ROS 2 release notes") == 1.0
