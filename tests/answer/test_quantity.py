"""A question that asks for a measured quantity is answered only by quotes that state one of
that kind: a sentence naming the robot without its payload is the topic, not the answer."""

from __future__ import annotations

import numpy as np
import pytest

from rag.answer import guardrails as g
from rag.answer.extractive import extractive_draft
from rag.answer.llm import NOT_COVERED_SENTENCE
from rag.answer.quantity import (
    RARE_IDF,
    asked_quantities,
    named_sections,
    named_span,
    rare_names,
    unstated,
)
from tests.builders import make_hit

BOOK = "Foundations of Physical AI"


@pytest.mark.parametrize(("question", "kinds"), [
    ("What payload can the Boston Dynamics Spot arm lift?", ["mass (kg, g, lb)"]),
    ("What's the maximum payload the Go2 can carry on its back?", ["mass (kg, g, lb)"]),
    ("How much does a Velodyne VLP-16 weigh?", ["mass (kg, g, lb)"]),
    ("What is the peak torque of the knee motors on the H1?", ["torque (N·m)"]),
    ("What is the top walking speed of the G1, and how long does its battery last on one "
     "charge?", ["speed (m/s, km/h)", "runtime (h, min)"]),
    ("Who founded Figure AI, and in what year was the company started?", ["year"]),
    ("Who came up with the Kalman filter, and in which decade was it published?", ["year"]),
    ("How many parameters does the RT-2 model have?", ["parameter count"]),
    ("How much is a Unitree Go2 Edu selling for?", ["price"]),
    ("What would the hybrid lab option cost in total?", ["price"]),
    ("What is the gyroscope bias instability of the BNO055, in degrees per hour?",
     ["value in degrees per hour"]),
    ("How much does the RealSense D455 camera weigh, in grams?", ["mass (kg, g, lb)"]),
    ("What peak torque does the knee need, in newton meters?", ["torque (N·m)"]),
])
def test_questions_that_ask_for_a_quantity(question, kinds) -> None:
    assert [q.name for q in asked_quantities(question)] == kinds


@pytest.mark.parametrize("question", [
    "Where are six-axis force/torque sensors placed on a humanoid?",  # a torque sensor
    "Which Gazebo plugin drives my robot from velocity commands?",
    "Why does preview control look at footsteps before the weight shift happens?",
    "My Gazebo simulation is lagging badly. How can I speed it up?",
    "Why does a reward based only on forward speed produce useless walking?",
    "How stiff should an arm be when it carries a payload?",
    "What is gained by putting a torque sensor in every joint?",
    "What range of motion does the elbow need?",  # not a distance
    "What temperature range does the sensor log?",
    "How far into the course is the capstone project?",
])
def test_questions_that_mention_a_quantity_without_asking_for_it(question) -> None:
    assert asked_quantities(question) == ()


@pytest.mark.parametrize(("question", "quote", "missing"), [
    ("What payload can the arm lift?", "The arm lifts up to 11 kg at full reach.", ()),
    ("What payload can the arm lift?", "The arm carries 2.5-3 lbs.", ()),
    ("What payload can the arm lift?", "Boston Dynamics - Atlas and Spot demonstrations",
     ("mass (kg, g, lb)",)),
    ("What payload can the Go2 carry?", "Robot: Unitree Go2 Edu (~$1,800 - $3,000).",
     ("mass (kg, g, lb)",)),  # a price is no mass
    ("What walking speed does ISO 13855 assume?", "It uses a walking speed of 1.6 m/s.", ()),
    ("What is the peak torque of the knee?", "Knee actuators peak at 360 N·m.", ()),
    ("What is the peak torque of the knee?", "Provides 6-axis force/torque measurements",
     ("torque (N·m)",)),
    ("How many parameters does RT-2 have?", "RT-2 has 55B parameters.", ()),
    ("How many parameters does RT-2 have?", '"RT-2: Vision-language-action models." arXiv '
     "preprint arXiv:2212.06817.", ("parameter count",)),
    ("When was the company founded?", "Figure AI (Figure 01); Tesla (Optimus)", ("year",)),
    ("In what year was the company started?", "Founded in 2022 in Sunnyvale.", ()),
    ("What is the top speed, and how long does its battery last on one charge?",
     "Walking speed: up to 2 m/s.", ("runtime (h, min)",)),
])
def test_a_quote_states_the_quantity_or_it_is_unstated(question, quote, missing) -> None:
    assert unstated(question, [quote]) == missing


def test_a_quantity_no_quote_states_is_refused_and_named(monkeypatch) -> None:
    """However likely the unit, a question that asks for a mass is not answered by one that
    names the robot and no mass; the refusal says what was missing. With the mass in the
    evidence it is answered."""
    import rag.answer.extractive as extractive

    monkeypatch.setattr(extractive, "unit_probabilities", lambda features: features[:, 0] + 0.5)
    question = "What payload can the Spot arm lift?"
    hits = [make_hit("Boston Dynamics demonstrations show Spot and its arm.", "a", 0.7)]
    refused = extractive_draft(question, hits)
    assert refused.text == NOT_COVERED_SENTENCE and refused.quotes == ()
    assert refused.unstated == ("mass (kg, g, lb)",) and not refused.calibrated
    answered = extractive_draft(question, [make_hit("The Spot arm lifts up to 11 kg.", "b", 0.7)])
    assert answered.quotes == ("The Spot arm lifts up to 11 kg.",) and answered.unstated == ()


def test_the_refusal_names_what_the_passages_do_not_give() -> None:
    verdict = g.check_content(0.0, 1.0, "q", BOOK, ["Sensing › Force"],
                              unstated=("speed (m/s, km/h)", "runtime (h, min)"))
    assert (verdict.reason_code, verdict.action) == (g.CONTENT_NOT_COVERED, "override")
    assert verdict.message == (
        f"I can only answer questions based on {BOOK}. The passages closest to this question "
        "give no speed (m/s, km/h) and no runtime (h, min). The nearest sections are: "
        "Sensing › Force.")


@pytest.mark.parametrize(("question", "refused"), [
    ("What walking speed does ISO 13855 assume for an approaching person?", False),
    ("What payload can a full-size humanoid carry in its hands?", True),
    ("What is the top running speed of a full-size humanoid?", True),
])
def test_quantities_through_the_pipeline(pipeline, question, refused) -> None:
    """On the sample book: the speed it states is answered with it; a payload it never gives is
    refused, naming what is missing, instead of quoting a sentence about humanoids."""
    response = pipeline.answer(question)
    if refused:
        assert (response.status, response.reason_codes) == ("refused",
                                                            (g.CONTENT_NOT_COVERED,))
        assert " give no mass (kg, g, lb)." in response.answer or \
            " give no speed (m/s, km/h)." in response.answer
        assert response.citations == ()
        closest = response.metadata["more_from_book"]  # shown as what came closest, no answer
        assert closest and all(m["url"] and m["section_id"] for m in closest)
    else:
        assert response.status != "refused" and "1.6 m/s" in response.answer, response.answer


def test_a_likely_unit_that_states_the_quantity_leads_instead_of_a_likelier_one(
        monkeypatch) -> None:
    """The model's best unit names the arm and no mass; one that states the mass and is likely
    enough on its own (SUPPORT_FLOOR) answers instead, ahead of it. Under the floor, refused."""
    import rag.answer.extractive as extractive

    question = "What payload can the Spot arm lift?"
    hits = [make_hit("Boston Dynamics demonstrations show Spot and its arm. The arm lifts up to "
                     "11 kg at full reach.", "a", 0.7)]
    for mass_probability, refused in ((0.3, False), (0.05, True)):
        monkeypatch.setattr(extractive, "unit_probabilities", lambda features, p=mass_probability:
                            np.array([0.9, p][:len(features)]))
        draft = extractive_draft(question, hits, max_sentences=1)
        assert (draft.text == NOT_COVERED_SENTENCE) is refused
        if not refused:
            assert draft.quotes == ("The arm lifts up to 11 kg at full reach.",)
            assert draft.runner_up == 0.9  # the model's own best, which states no mass
            assert draft.led_by == "a unit that states the value the question asks for: " \
                "mass (kg, g, lb)"


@pytest.mark.parametrize(("question", "kinds"), [
    ("What frame rate should my Gazebo simulation hold?", ["rate (Hz, FPS)"]),
    ("How many frames per second should the segmentation model output?", ["rate (Hz, FPS)"]),
    ("At what frequency does the IMU report?", ["rate (Hz, FPS)"]),
    ("What success rate is expected for known objects?", []),  # a share, not a frequency
    ("What hourly rate is the cloud cost based on?", []),  # a price per hour
    ("How much delay can teleoperators tolerate?", ["latency (ms)"]),
    ("How much RAM should the simulation workstation have?", ["memory (GB)"]),
    ("What is the clock speed of the Orin's CPU?", ["clock speed (GHz)"]),
    ("How many CPU cores does the Orin NX have, and at what clock speed do they run?",
     ["clock speed (GHz)"]),
    ("How much power does the Jetson draw?", ["power (W)"]),
])
def test_rates_latencies_memory_clock_and_power(question, kinds) -> None:
    assert [q.name for q in asked_quantities(question)] == kinds


@pytest.mark.parametrize(("question", "quote", "missing"), [
    ("What frame rate should the simulation hold?", "Maintain at least 30 FPS.", ()),
    ("What frame rate should the simulation hold?", "The camera publishes at 15 Hz.", ()),
    ("What frame rate should the simulation hold?", "Keep the world simple.",
     ("rate (Hz, FPS)",)),
    ("How much delay can operators tolerate?", "Latency above 100 ms makes control hard.", ()),
    ("How much RAM does the workstation need?", "Use 64 GB of DDR5.", ()),
    ("How much RAM does the workstation need?", "Use an RTX 4070 Ti.", ("memory (GB)",)),
    ("What is the clock speed of the CPU?", "Its cores run at 1.7 GHz.", ()),
    ("How much power does the Jetson draw?", "It runs in a 25W mode.", ()),
])
def test_a_rate_latency_memory_clock_or_power_is_stated(question, quote, missing) -> None:
    assert unstated(question, [quote]) == missing


TIME = "time (week, month, date)"


@pytest.mark.parametrize(("question", "kinds"), [
    ("When in the course do we get to simulate sensors in Gazebo?", [TIME]),
    ("How much is the project worth, and when do I have to hand it in?", [TIME]),
    ("Is there a robot learning conference, and when in the year does it take place?", [TIME]),
    ("When is the capstone due?", [TIME]),
    ("By when do we need to tell the instructor about team problems?", [TIME]),
    ("What week covers URDF?", [TIME]),
    ("When should I use an action rather than a service?", []),  # a condition, not a time
    ("What's the late penalty if I hand in the project after the deadline?", []),
    ("What happens when a foot slides on a wet floor?", []),
])
def test_questions_that_ask_when_in_a_calendar_or_a_course(question, kinds) -> None:
    """"When in the year does CoRL take place?" wants a month, "when do I hand it in?" a week:
    a sentence that names the conference or the project without one is not the answer."""
    assert [q.name for q in asked_quantities(question)] == kinds


@pytest.mark.parametrize(("question", "quote", "missing"), [
    ("When in the year does it take place?", "CoRL - Conference on Robot Learning (November)",
     ()),
    ("When in the year does it take place?", "RSS - Robotics Science and Systems (May)", ()),
    ("When in the year does it take place?", "You may submit a paper to CoRL.", (TIME,)),
    ("When is the project due?", "Due: End of Week 10", ()),
    ("When in the course do we simulate sensors?", "Module 2 (Weeks 6-7): Simulating sensors",
     ()),
    ("When is the project due?", "Submit via the course portal.", (TIME,)),
])
def test_a_week_a_month_or_a_date_is_stated(question, quote, missing) -> None:
    assert unstated(question, [quote]) == missing


SHARE = "share (%)"


@pytest.mark.parametrize(("question", "kinds"), [
    ("How much of the final grade is the capstone project worth?", [SHARE]),
    ("How much does the Module 1 project count toward my final grade, and what's the penalty "
     "for submitting it late?", [SHARE]),
    ("How much of my grade is the Isaac perception project, and when do I have to hand it in?",
     [SHARE, TIME]),
    ("What percentage of test runs may end in a collision?", [SHARE]),
    ("How much is the project worth, and when do I have to hand it in?", [TIME]),
    ("What part of the robot senses force?", []),
    ("How much of the budget goes to robots?", []),
])
def test_questions_that_ask_for_a_share(question, kinds) -> None:
    """"How much of the final grade is the capstone worth?" wants a percentage: the grade
    bands of its rubric ("90-100: Exceptional") name the grade without it."""
    assert [q.name for q in asked_quantities(question)] == kinds


@pytest.mark.parametrize(("quote", "missing"), [
    ("Weight: 40% of final grade", ()),
    ("Late Policy: 10% deduction per day, maximum 3 days late", ()),
    ("90-100: Exceptional - All requirements met", (SHARE,)),
])
def test_a_share_is_stated_as_a_percentage(quote, missing) -> None:
    assert unstated("How much of the final grade is the capstone worth?", [quote]) == missing


def test_rare_names_and_the_sections_that_mention_them() -> None:
    """Only names rare in the book count: "Gazebo" is what the book is about, "Optimus" a thing
    apart. A section mentions a name when it holds every term of it (headings included)."""
    idf = {"tesla": RARE_IDF + 2, "optimus": RARE_IDF + 2, "gen": RARE_IDF + 2, "gazebo": 3.9,
           "top": 5.7, "walk": 2.0, "speed": 2.0}
    question = "What is the top walking speed of Tesla's Optimus Gen 2 humanoid in Gazebo?"
    assert rare_names(question, idf) == ["Tesla", "Optimus", "Gen"]  # not "What", not "Gazebo"
    assert rare_names("How fast can a humanoid walk in Gazebo?", idf) == []
    sections = {0: {"walk", "speed", "m/s"}, 1: {"optimus", "humanoid"}, 2: {"gazebo"}}
    assert named_sections(["Tesla", "Optimus"], sections) == {1}
    assert named_sections([], sections) is None  # no name: any section may state the value
    assert named_span(question, ["Tesla", "Optimus", "Gen"]) == "Tesla's Optimus Gen 2"
    assert named_span("How fast is the Optimus robot?", ["Optimus"]) == "Optimus"
    # written without capitals (the pipeline capitalises the first letter), a name is a word
    # that is not English or a model number, rare like any other
    lower = "What is the top walking speed of tesla's optimus gen 2 humanoid in gazebo?"
    assert rare_names(lower, idf) == ["optimus"]  # "tesla" is English, "gen" too short to tell
    assert named_span(lower, ["optimus"]) == "optimus"


def test_a_value_stated_about_something_else_is_not_the_answer(monkeypatch) -> None:
    """A speed stated in a section that never mentions the rare name asked about (a course's
    requirement, asked about Optimus) is another thing's speed: refused, saying for what; the
    same speed in a section about Optimus answers."""
    import rag.answer.extractive as extractive

    monkeypatch.setattr(extractive, "unit_probabilities", lambda features: features[:, 0] + 0.5)
    monkeypatch.setattr(extractive, "idf_weights", lambda table, terms: {
        t: RARE_IDF + 1 if t == "optimus" else 1.0 for t in terms})
    question = "What is the top walking speed of the Optimus humanoid?"
    elsewhere = make_hit("Locomotion requirement: walking speed of at least 0.3 m/s.", "a", 0.7)
    refused = extractive_draft(question, [elsewhere])
    assert refused.text == NOT_COVERED_SENTENCE and refused.quotes == ()
    assert refused.unstated == ("speed (m/s, km/h) for Optimus",)
    about = make_hit("Optimus walks at up to 0.6 m/s in the latest demonstrations.", "b", 0.6)
    answered = extractive_draft(question, [elsewhere, about])
    assert answered.quotes[0] == "Optimus walks at up to 0.6 m/s in the latest demonstrations."


@pytest.mark.parametrize(("question", "kinds"), [
    ("What is the field of view of the D435i's depth camera?", ["field of view (°)"]),
    ("How wide is the RGB camera's field of view?", ["field of view (°)"]),
    ("How far can a LIDAR measure?", ["distance (m, cm, mm)"]),
    ("How tall is the sensor mast on the project robot?", ["distance (m, cm, mm)"]),
    ("What is the maximum range of a VLP-16 lidar?", ["range (m, °)"]),
    ("What range should the depth camera cover?", ["range (m, °)"]),
    ("What is the joint range for the shoulder?", ["range (m, °)"]),
    ("What's the price range for a shared robot?", ["price"]),  # a price's range, not a distance
    ("What is the update rate range of an IMU?", ["rate (Hz, FPS)"]),
    ("What resolution does the ZED 2i record depth at?", ["resolution (pixels, °)"]),
    ("How many TOPS does the Jetson AGX Orin deliver?", ["AI throughput (TOPS)"]),
    ("How many degrees of freedom does a humanoid have?", ["degrees of freedom (DOF)"]),
    ("What is the battery capacity of the Go2?", ["battery capacity (Wh, mAh)"]),
    ("How big is the Go2's battery, in watt-hours?", ["value in watt-hours"]),
    ("What voltage does the servo run on?", ["voltage (V)"]),
])
def test_fields_of_view_distances_resolutions_and_other_spec_values(question, kinds) -> None:
    assert [q.name for q in asked_quantities(question)] == kinds


@pytest.mark.parametrize(("question", "quote", "missing"), [
    ("What is the camera's field of view?", "FOV: 60 degrees", ()),
    ("What is the camera's field of view?", "It sees 87° × 58°.", ()),
    ("What is the camera's field of view?", "Intel RealSense D435i or D455 provides depth.",
     ("field of view (°)",)),
    ("How far can a LIDAR measure?", "Accurate distance measurements up to 100+ meters.", ()),
    ("What is the range of the lidar?", "Range: 0.1m to 10m", ()),
    ("What is the joint range for the shoulder?", "Limits of ±90 degrees", ()),
    ("What resolution should the camera have?", "Resolution: 640x480", ()),
    ("What resolution should the map have?", "resolution: 0.05", ()),
    ("How many TOPS does the Jetson give?", "AI Performance: 40 TOPS (INT8)", ()),
    ("How many degrees of freedom does a humanoid have?", "a floating base with six degrees "
     "of freedom", ()),
    ("How many degrees of freedom does a humanoid have?", "A full-size humanoid has 25 to 40 "
     "actuated joints.", ()),
    ("How many degrees of freedom does the arm need?", "a 7+ DOF arm", ()),
    ("How many degrees of freedom does the G1 have?", "Unitree G1 walks dynamically.",
     ("degrees of freedom (DOF)",)),
    ("What is the battery capacity of the Go2?", "It carries a 15,000 mAh pack.", ()),
    ("In which decade was the Kalman filter published?", "Kalman published it in the 1960s.",
     ()),
    ("In which decade was the Kalman filter published?", "Sensor Fusion: Kalman filtering",
     ("year",)),
    ("What voltage does the servo run on?", "The servos take 12 V.", ()),
])
def test_a_field_of_view_distance_resolution_or_spec_value_is_stated(
        question, quote, missing) -> None:
    assert unstated(question, [quote]) == missing
