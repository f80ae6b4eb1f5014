"""What kind of answer a question wants, and whether a sentence has that kind of content.

"How many / how long / how fast" want a number with its unit, "what is / stand for" a
definition, "why" a reason, "which X" a named thing, "my X fails" a fix, "how do I X" a step
that says what to do. A sentence that has the wanted kind of content gets a bonus when the
extractive answerer ranks sentences; one that lacks it a penalty only for numbers, the one
shape a sentence cannot answer without. The procedure shape (the last asked for, after
every other) left the labelled sets' right answers as they were (184 of 298 development, 41 of
80 held out) and turned "How do you tune a PID controller for a joint?" from the chapter's
introduction to its steps ("Start with the robot safely suspended ... Raise Kp until ...").
"""

from __future__ import annotations

import functools
import re

import re2

NUMBER, DEFINITION, REASON, NAMED, FIX, LIST, PROCEDURE, OTHER = (
    "number", "definition", "reason", "named", "fix", "list", "procedure", "other")

NUMBER_Q = re.compile(
    r"\bhow (?:many|much|long|fast|far|quickly|often|big|large|heavy|high|low|wide|deep|old|"
    r"soon|close)\b|\bwhat (?:rate|frequency|speed|size|percentage|share|voltage|resolution|"
    r"range|latency|budget)\b|\bat what (?:rate|speed|frequency)\b|\buntil when\b|\bwhen\b.*\b"
    r"(?:support|end|release)", re.I)
DEFINITION_Q = re.compile(
    r"\bstand(?:s)? for\b|\bwhat (?:is|are|does|do)\b(?!.*\b(?:difference|best|first|main|"
    r"role)\b)|\bdefine\b|\bmeaning of\b|\bwhat(?:'s| is) meant by\b|\bmean(?:s)?\b\??$", re.I)
REASON_Q = re.compile(r"^\W*why\b|\bwhy (?:do|does|is|are|would|should|can't|won't)\b|"
                      r"\bwhat (?:makes|causes)\b|\breason\b", re.I)
NAMED_Q = re.compile(r"\bwhich\b|\bwhat (?:kind|type|sort|model|board|tool|library|engine|"
                     r"version|middleware|sensor|camera|gpu|card)\b|\bwho\b|"
                     r"^\W*(?:is|are) there (?:an?|any|some)\b", re.I)  # "Is there a tool for ...?"
FIX_Q = re.compile(r"\b(?:error|fails?|failing|crash(?:es)?|won't|doesn't|does not|can't|"
                   r"cannot|not (?:found|working)|refuses|stuck|hangs?|forever|fix|missing|"
                   r"permission denied|no module)\b", re.I)
PROCEDURE_Q = re.compile(r"\bhow (?:do|can|should|would) (?:i|we|you|one)\b|\bhow to\b|"
                         r"\bwhat (?:are the )?steps\b", re.I)
LIST_Q = re.compile(r"\b(?:three|four|five|two|main|parts|components|steps|list|which "
                    r"\w+s\b|what are the)\b", re.I)

UNIT = (r"%|°|(?:k|m|g)?hz|ms|s|sec(?:onds?)?|min(?:utes?)?|h(?:ours?)?|days?|weeks?|months?|"
        r"years?|mm|cm|m|km|m/s|km/h|kg|g|n|nm|n/m|v|w|kw|mah|wh|gb|mb|tb|tops|fps|dof|"
        r"degrees?|meters?|metres?|times|x|fold|bits?|hours|usd|eur|fps|cores?|gpus?")
# A number before its unit is read from the start of its run of digits, commas and points, all
# of it: from every digit of 1,000 it took 3.4 s (quadratic); only whether it matches counts.
NUMBER_RE = re.compile(rf"(?:[$€£]\s?\d[\d,.]*|(?<![\d,.])[,.]*+\d[\d,.]*+\+?"
                       rf"(?:\s?[–—-]\s?\d[\d,.]*+)?\+?\s?"
                       rf"(?:{UNIT})(?!\w)|\b\d+(?:\.\d+)?\s?(?:to|-|–)\s?\d+(?:\.\d+)?\b|\b\d{{4}}\b)",
                       re.I)
ANY_NUMBER_RE = re.compile(r"\d")
REASON_RE = re.compile(r"\b(?:because|since|so that|so the|so it|to avoid|to prevent|in order "
                       r"to|otherwise|prevents?|due to|which means|as a result|therefore|"
                       r"requires?|needs?|cannot|can't|without|too (?:slow|fast|much|little))\b",
                       re.I)
DEFINITION_RE = re.compile(r"\b(?:is|are|refers to|stands for|means|is called|known as|"
                           r"defined as)\b|\(|:|—|–", re.I)
NAME_RE = re.compile(r"(?<!^)(?<![.!?]\s)\b(?:[A-Z][a-z]*[A-Z0-9]\w*|[A-Z]{2,}\w*|[A-Z][a-z]+"
                     r"(?:\s[A-Z0-9][\w-]*)+|\w+\d\w*)")
# An instruction: a step that opens on what to do, after "Step 2:" or "First,"/"Then,"
# ("Raise Kp until the joint tracks a small step target briskly with slight overshoot.").
STEP_RE = re.compile(r"^(?:(?:step|stage|phase|terminal|option|tip)\s*\d*:\s*)?"
                     r"(?:(?:first|then|next|finally|now),?\s+)?(?:start|"
                     r"raise|lower|increase|decrease|reduce|add|set|run|install|create|open|"
                     r"check|use|build|launch|source|configure|edit|write|select|click|connect|"
                     r"type|copy|place|mount|tune|repeat|record|measure|define|declare|call|make|"
                     r"keep|remove|replace|enable|disable|update|download|clone|import|export|"
                     r"save|load|test|verify|ensure|move|plug|attach|apply|adjust|calibrate|"
                     r"log|plot|compare|wait|press|navigate|follow|transfer|deploy|flash|"
                     r"upload|send|push|pull|train|convert|register|sign|restart|reboot)\b", re.I)
FIX_RE = re.compile(r"\b(?:run|install|source|add|set|check|ensure|make sure|use|restart|"
                    r"rebuild|export|sudo|update|enable|verify|solution|fix|cause)\b", re.I)


# Units that point elsewhere, restate a problem or describe a lesson rather than answer.
# A link's label counts too, after any emoji: "🎓 View Full Capstone Details: Capstone Project
# Requirements" answered "What's the capstone project about?"; so does a roadmap ("In the next
# lesson, we'll explore sim-to-real transfer techniques." answered "What is sim-to-real transfer
# and why is it hard?"). Neither changed an answer of the labelled sets (bench/quality.py).
DETOUR_RE = re.compile(r"^[^\w\"'(]*(?:see|refer to|read|check (?:out )?the \w+(?: \w+)? (?:guide|"
                       r"section|lesson|chapter|page|documentation|docs)|symptom|problem|error|"
                       r"issue|estimated time|prerequisites?|duration|difficulty|next|related|"
                       r"in this (?:lesson|section|chapter)|learn more|in the next (?:lesson|"
                       r"section|chapter|module|week)|this (?:chapter|lesson|module) (?:covers|"
                       r"explains|develops|introduces|describes|looks at|presents)|"
                       r"(?:view|open|visit|go to|click)(?: the)? "
                       r"(?:full|complete|all|more|detailed))\b", re.I)
FIX_LEAD_RE = re.compile(r"^(?:cause|solution|fix|prevention|resolution|workaround)\b", re.I)


# "What are those launch actions called?" asks for names, not for what they are
CALLED_Q = re.compile(r"\bwhat(?:'s| is| are) (?:it|they|this|that|these|those)\b[^?]{0,30}"
                      r"\bcalled\b", re.I)


def question_shape(question: str) -> str:
    """The main kind of content the question asks for (first match wins)."""
    for shape, pattern in ((NAMED, CALLED_Q), (NUMBER, NUMBER_Q), (REASON, REASON_Q), (FIX, FIX_Q),
                           (DEFINITION, DEFINITION_Q), (NAMED, NAMED_Q), (LIST, LIST_Q),
                           (PROCEDURE, PROCEDURE_Q)):
        if pattern.search(question):
            return shape
    return OTHER


# Shapes whose answer is one specific thing: the sentence that holds it either is among the
# evidence or is not, so the best unit's probability says more about the answer being right than
# for a reason, a fix or an open "how" (rag.answer.correctness).
SPECIFIC = (NUMBER, DEFINITION)


def asks_specific(question: str) -> bool:
    """Whether the question asks for a number with its unit or a definition."""
    return question_shape(question) in SPECIFIC


ARTICLE = r"(?:(?:an?|the)\s+)?"
SUBJECT_RE = re.compile(r"\bwhat(?:['’]s| is| are| does| do)\s+" + ARTICLE +
                        r"(.+?)(?:\s+(?:stand for|mean|do|(?:used|good|useful|needed|best|suited) "
                        r"for|for|and)\b|[,?;]|$)", re.I)
ACRONYM_RE = re.compile(r"\b[A-Z][A-Z0-9]{1,7}s?\b")


# "What's the role of tf2?" asks what tf2 is for
ROLE_OF = re.compile(r"^(?:role|purpose|point|job|function|use) of\s+" + ARTICLE, re.I)


def question_subject(question: str) -> str:
    """What a definition question asks about ("What is colcon used for?" -> "colcon", "What's
    the role of tf2?" -> "tf2")."""
    m = SUBJECT_RE.search(question)
    return ROLE_OF.sub("", m.group(1).strip(" ?.,")) if m else ""


# where a thing named last ends: tried only after a letter, its spaces taken whole (as `\s*` after
# `[^?,;]+?`, each step through a run of spaces scanned the rest of it: quadratic)
THING_END = r"(?<!\s)\s*+(?:[?,;]|$)"
THE = r"(?:(?:an?|the)\s++)?"  # ARTICLE, its spaces taken whole (`\s+` was quadratic here)
# "What's the difference between forward and inverse kinematics?" compares two things the book
# may define one by one: "forward kinematics" (the word the two share goes to both), "inverse
# kinematics". "... both MoveIt and Nav2 mentioned. What's the difference between them?"
COMPARED_RE = (
    # names of at most 200 characters: from each of many "difference between" a name ran on
    re.compile(rf"\bdifferen(?:ce|ces) between {THE}(?P<a>[^?,;]{{1,200}}?) and {THE}"
               r"(?P<b>[^?,;]{1,200}?)" + THING_END, re.I),
    re.compile(rf"\bhow (?:is|are|does|do) {THE}(?P<a>[^?,;]{{1,200}}?) (?:differ(?:ent)?|"
               rf"compared?) (?:from|to|with) {THE}(?P<b>[^?,;]{{1,200}}?)" + THING_END, re.I),
    re.compile(rf"^\W*+(?:what(?:'s| is| are)\s+)?{THE}(?P<a>[\w./+-]+(?: [\w./+-]+){{0,2}}) "
               rf"(?:vs\.?|versus) {THE}(?P<b>[^?,;]+?)" + THING_END, re.I),
    # RE2 (no backtracking): every " in" after "both X and Y" scanned the rest of the question
    re2.compile(r"(?i)\bboth (?:(?:an?|the)\s+)?(?P<a>[^?,;.]+?) and (?:(?:an?|the)\s+)?"
                r"(?P<b>[^?,;.]+?)"
                r"(?: (?:mentioned|used|in|on)\b|[?,;.]).*\bdifferen(?:ce|t)\b.*\bthem\b"),
    # two questions in one: "What is URDF? And what is SDF?"
    re.compile(rf"^\W*what (?:is|are) {THE}(?P<a>[^?,;]+?)(?<!\s)\s*+\?\s*+(?:and\s++)?what "
               rf"(?:is|are|about) {THE}(?P<b>[^?,;]+?)(?<!\s)\s*+\??\s*+$", re.I))


TRAILING_RE = re.compile(r"(?<!\s)\s++(?:in|on|for|within|inside|when|while|during)\s.*$", re.I)
PLAIN_RE = re.compile(r"^(?:ordinary|regular|normal|plain|standard|traditional|classic)\s+",
                      re.I)  # "ordinary SLAM": the book's "SLAM"


def compared_subjects(question: str) -> tuple[str, ...]:
    """The two things a question compares ("difference between X and Y", "how is X different
    from Y", "X vs Y"), each as the book would name it; () when it compares none. A word the
    second names after its own qualifier is shared ("forward and inverse kinematics")."""
    for pattern in COMPARED_RE:
        if m := pattern.search(question):
            a, b = (PLAIN_RE.sub("", TRAILING_RE.sub("", " ".join(m.group(g).split())))
                    .strip(" .") for g in ("a", "b"))
            if len(b.split()) > len(a.split()) and not ACRONYM_RE.fullmatch(a) and \
                    pattern is not COMPARED_RE[-1]:  # two questions name each thing whole
                a = f"{a} {b.split()[-1]}"  # "forward and inverse kinematics"
            return (a, b) if a and b and a.lower() != b.lower() else ()
    return ()


# What may stand before the subject of a definition: nothing, an article ("The ZMP is ..."), a
# label ("In ROS 2 terms: URDF is ..."); not a word that qualifies it ("The delivery service
# provides ...", "Path planner node: ...", "VSLAM: ..." for SLAM) or a clause it sits in
# ("Always check if a service is available ...").
OPENS_ON = re.compile(r"^(?:.*[:;,.)\]—–\"'-]\s*)?(?:(?:the|an?|this|these)\s+)?$", re.I | re.S)


def defines(sentence: str, subject: str) -> bool:
    """The sentence opens with the subject and then defines it ("X is ...", "X: ...", "X (...");
    the subject in the singular or the plural ("What's a launch file?": "Launch files are
    Python (or XML/YAML) scripts that ...")."""
    return any(_defines(sentence, form) for form in _number_forms(subject))


def _number_forms(subject: str) -> tuple[str, ...]:
    """The subject as asked, then its other grammatical number: "launch file" -> "launch
    files", "launch files" -> "launch file", "IMU" -> "IMUs"; "class", "status", "analysis"
    and "physics" only as asked."""
    if not subject or subject.endswith(("ss", "us", "is", "ics")):  # "class", "physics"
        return (subject,)
    if subject.endswith("s"):  # "launch files", "IMUs"; not "ROS", "GPS"
        return subject, subject[:-1]
    return subject, subject + "s"


def _defines(sentence: str, subject: str) -> bool:
    if not subject:
        return False
    if re.match(rf"[^:;.]{{1,40}}\(\s*{re.escape(subject)}\s*\)\s*:", sentence, re.I):
        return True  # a label that names it: "Python Client Library (rclpy): Standard node ..."
    *qualifier, noun = subject.split()
    if qualifier and re.match(rf"\W*{re.escape(noun)}\W*\(\s*{re.escape(' '.join(qualifier))}"
                              rf"\s*\)\W*:", sentence, re.I):
        return True  # a glossary's entry: "Node (ROS 2): Independent process ..." (ROS 2 node)
    head = sentence[: len(subject) + 40].lower()
    at = head.find(subject.lower())
    if at < 0 or at > 20 or not OPENS_ON.search(head[:at]):
        return False
    rest = head[at + len(subject):].lstrip(" *)")
    # after a label, the subject is defined by what a verb says of it: "In ROS 2 terms: URDF is
    # ...", not "Blue rectangles: ROS 2 nodes (our publisher and subscriber)" (a legend)
    marks = "" if ":" in head[:at] else r"\(|:|—|–|-\s|"
    return bool(re.match(rf"(?:{marks}(?:is|are)\b(?!\s+(?:only|not|also|as|more|less|too|"
                         r"still|just|never|rarely|often|sometimes|always|hard|easy|difficult|"
                         r"expensive|cheap|slow|fast|better|worse|the same|similar|different|"
                         r"important|useful|good|bad|limited|essential|therefore|thus|then|now|"
                         r"at|behind|ahead|above|below|near)\b)(?!\s+\d)|"
                         r"refers\b|stands\b|"
                         r"means\b|provides\b|measures\b|describes\b|lies\b|tells\b|"
                         r"answers\b)", rest))


def expands(sentence: str, question: str) -> bool:
    """An acronym of the question spelled out: "SDF (Simulation Description Format)" or
    "Simulation Description Format (SDF)"."""
    for acronym in ACRONYM_RE.findall(question):
        if any(p.search(sentence) for p in _expansions(acronym.rstrip("s"))):
            return True
    return False


@functools.lru_cache(maxsize=256)
def _expansions(letters: str) -> tuple:
    """RE2, without backtracking: with Python's re, the words in brackets were exponential in
    their hyphens ("SDF (" + "A-" * 14: 3.4 s). `[\\pL\\pN_]` is Python's `\\w`."""
    word = r"[A-Z][\pL\pN_-]*"
    return (re2.compile(rf"\b{re2.escape(letters)}\s*\((?:{word}[\s-]*){{2,}}\)"),
            re2.compile(rf"(?:{word}[\s-]+){{1,}}{word}\s*\({re2.escape(letters)}\)"))


def detour(sentence: str) -> bool:
    return bool(DETOUR_RE.match(sentence))


def shape_match(shape: str, sentence: str, question: str = "") -> float:
    """+1 when the sentence has the content the shape wants, -1 when a number is wanted and the
    sentence has none, 0 otherwise. "Which X?" wants a name the `question` does not already
    hold (new_name): to "Which ROS 2 version does the course use?", "Check the ROS 2 release
    notes" names only what was asked about."""
    if shape == NUMBER:
        return 1.0 if NUMBER_RE.search(sentence) else (0.0 if ANY_NUMBER_RE.search(sentence)
                                                        else -1.0)
    if shape == FIX and FIX_LEAD_RE.match(sentence):
        return 1.5
    if shape == PROCEDURE:
        return 1.0 if STEP_RE.match(sentence) else 0.0
    if shape == NAMED and question:
        return 1.0 if new_name(sentence, question) else 0.0
    pattern = {REASON: REASON_RE, DEFINITION: DEFINITION_RE, NAMED: NAME_RE,
               FIX: FIX_RE}.get(shape)
    return 1.0 if pattern is not None and pattern.search(sentence) else 0.0


def new_name(sentence: str, question: str) -> bool:
    """The sentence names something (NAME_RE: "Humble Hawksbill", "RTX 4070", "ROS 2")
    whose words are not all in the question."""
    asked = question.lower()
    return any(not all(re.search(rf"\b{re.escape(word)}\b", asked) for word in name.split())
               for name in (m.group(0).lower() for m in NAME_RE.finditer(sentence)))
