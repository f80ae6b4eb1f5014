"""What of a fenced code block a reader may quote: a short command or snippet right after its
lead-in or heading, as one unit ("Add dependencies to package.xml: <exec_depend>launch
</exec_depend>"; "Verify installation: nvidia-smi"), a shell block's steps (commented_steps:
the commands under each comment, or under the heading when none names them) and a program's
comments with the line they explain or name (explained_lines). The rest of a longer block is a
program, not an answer. Explained lines answered "In create_publisher(Float32, 'temperature',
10), what is the 10 for?" (physical-ai-train1.yaml) and changed no other answer of the
development or held-out sets (Physical AI book: 67 more units).

Of the key facts that held-out questions expect, 16 of 126 were in an expected section's text but
in none of its units, 14 of them inside code blocks (development sets: 9 of 565, 6 in code).
Short comments that name their line ("Apply Gaussian blur: blurred = cv2.GaussianBlur(gray, (5,
5), 0)") and uncommented commands under a heading ("Install NVIDIA Container Toolkit: sudo
apt-get update && ...") made 54 more units of the Physical AI book (facts no unit holds: held
out 16 -> 14, development 9 -> 6); development answers holding every key fact 184 -> 186 of 298,
held out 41 -> 42 of 80, false answers unchanged. The rest are in long programs and
configuration files, which stay unquoted."""

from __future__ import annotations

import re

from rag.book.inline import clean_inline, quotable

MAX_COMMAND_LINES = 2  # a longer block is a program, not an answer
MAX_STEP_LINES = 4  # commands under one comment of a shell block (commented_steps)
SHELL_FENCES = ("", "bash", "sh", "shell", "console", "zsh")  # "": a fence with no language
# Three or four lines of shell or configuration this short after a lead-in are a snippet to
# paste ("Add dependencies to package.xml: <exec_depend>launch</exec_depend>; ..."); as many
# lines of Python are a program.
SNIPPET_FENCES, SNIPPET_CHARS = (*SHELL_FENCES, "xml", "yaml", "yml", "toml", "ini", "text",
                                  "json", "cmake"), 160
CODE_LIKE_RE = re.compile(r"[=$;{}]|--|\w\(|^\S+\s*$|^(?:sudo|export|source|cd|ros2|colcon)\b")
COMMENTED_FENCES = ("python", "py", "yaml", "yml")  # whose '#' lines explain the code
EXPLAINS, MAX_EXPLAINED_CODE = 6, 100  # words of such a comment; characters of its code line
NAMES = 2  # words of a comment that names what the code line under it does
# a command line ("sudo apt-get ...", "LIBGL_ALWAYS_SOFTWARE=1 rviz2", "./launcher.AppImage"),
# not printed output ("[INFO] [talker]: ...", "ModuleNotFoundError: ...")
COMMAND_RE = re.compile(r"^(?:\$ )?(?:[A-Za-z_]\w*=\S*\s+)*[a-z.~/][\w.+/~-]*(?:\s|$)")
IMPORT_RE = re.compile(r"^(?:import|from \S+ import|#include|using)\b")  # not what a comment names


def trailing_comment(line: str) -> tuple[str, str] | None:
    """"cmd  # does this" (or '# "move_forward", "stop", etc.'): (the command, its comment) when
    a command has a comment beside it. A scan, not a regex: the pattern it replaces was
    quadratic on a long run of spaces."""
    at = next((k for k, c in enumerate(line) if c in "#'\""), -1)
    if at <= 0 or line[at] != "#" or not line[at - 1].isspace():
        return None
    code, comment = line[:at].rstrip(), line[at + 1:].lstrip()
    if not code or not comment or not (comment[0].isascii() and comment[0].isalpha()
                                       or comment[0] in "\"'"):
        return None
    return code, comment


def code_units(lead_in: str, lines: list[str], info: str, title: str = "") -> list[str]:
    """The units of one fenced block (`lines` inside the fences, `info` the text after the
    opening fence), given the lead-in ending in ':' right before it ("" if none) and the
    heading right above it ("" if none)."""
    body = [b.strip() for b in lines if b.strip() and not b.strip().startswith("#")]
    language = (info.split() or [""])[0].lower()
    shell = language in SHELL_FENCES
    # a snippet right under a heading is named by it ("Parameter file format: my_node:;
    # ros__parameters:; speed: 1.0")
    lead_in = lead_in or (f"{title}:" if title and not shell else "")
    if lead_in and 0 < len(body) <= MAX_STEP_LINES and (
            len(body) <= MAX_COMMAND_LINES or language in SNIPPET_FENCES and
            sum(map(len, body)) <= SNIPPET_CHARS):
        if not shell or not all(COMMAND_RE.match(b) for b in body):
            return [f"{lead_in} {'; '.join(body)}"]  # a snippet, or printed output
        # a comment beside a command goes after the whole: joined as it stands, "cd ~/ws  # not
        # ~/ws/src! && colcon build" would leave colcon build inside the comment
        beside = [trailing_comment(b) for b in body]
        commands = [m[0] if m else b for m, b in zip(beside, body, strict=True)]
        notes = [clean_inline(m[1]) for m in beside if m]
        return [f"{lead_in} {' && '.join(commands)}" + (f" ({'; '.join(notes)})" if notes else "")]
    if shell:
        return commented_steps(lines, lead_in.rstrip(":").strip() or title)
    return explained_lines(lines) if language in COMMENTED_FENCES else []


def explained_lines(lines: list[str]) -> list[str]:
    """A program's explanations: a comment line that reads as a sentence (EXPLAINS words or
    more, not code), with the line of code under it ("The '10' is the queue size - how many
    messages to buffer if subscriber is slow: self.publisher_ = self.create_publisher(...)"); a
    shorter one (NAMES words or more) that names what the whole line under it does, with that
    line ("Apply Gaussian blur: blurred = cv2.GaussianBlur(gray, (5, 5), 0)")."""
    out = []
    for n, raw in enumerate(lines):
        line = raw.strip()
        if not line.startswith("#") or line.startswith("#!"):
            continue
        said = clean_inline(line.lstrip("#"))
        if CODE_LIKE_RE.search(said):
            continue
        code = next((c.strip() for c in lines[n + 1:] if c.strip()), "")
        code = "" if code.startswith("#") or len(code) > MAX_EXPLAINED_CODE else code
        words = len(said.split())
        if words >= EXPLAINS:
            out.append(f"{said}: {code}" if code else said)
        elif words >= NAMES and code and _whole(code) and \
                not (n and lines[n - 1].strip().startswith("#")):
            # a one-line comment that names what the whole line under it does ("Apply Gaussian
            # blur: blurred = cv2.GaussianBlur(gray, (5, 5), 0)"), not the end of a longer
            # comment, nor an import or the opening of a call or a block ("Use in node: Node(")
            out.append(f"{said}: {code}")
    return [text for text in out if quotable(text)]


def _whole(code: str) -> bool:
    """A whole statement: it closes every bracket it opens, opens no block and imports
    nothing."""
    if beside := trailing_comment(code):
        code = beside[0]
    depth = 0
    for char in code:
        depth += (char in "([{") - (char in ")]}")
        if depth < 0:
            return False
    return depth == 0 and not code.rstrip().endswith(("=", ",", ":", "\\")) and \
        not IMPORT_RE.match(code)


def commented_steps(lines: list[str], label: str = "") -> list[str]:
    """A shell block's commented steps: a comment and the commands right under it are one unit
    ("Build with symbolic links (faster iteration): colcon build --symlink-install"); more than
    MAX_STEP_LINES commands are a script, not an answer, and a comment with no command under it
    is a step of its own when it reads as prose ("If not found, try a different USB port"). A
    command with a comment beside it is one too ("Visual graph (GUI tool): rqt_graph")."""
    steps: list[str] = []
    comment, commands = "", []
    for raw in [*lines, ""]:
        line = raw.strip()
        if line.startswith("#") or not line:
            if comment and 0 < len(commands) <= MAX_STEP_LINES:
                steps.append(f"{comment}: {' && '.join(commands)}")
            elif label and 0 < len(commands) <= MAX_STEP_LINES and \
                    all(COMMAND_RE.match(c) and " #" not in c for c in commands):
                # commands with no comment above them under a heading or a lead-in are its steps
                # ("Install NVIDIA Container Toolkit: sudo apt-get update && ..."), also when
                # each has one beside it; printed output is not, nor a line whose comment could
                # not be told from its code (joined, it would comment out the rest)
                steps.append(f"{label}: {' && '.join(commands)}")
            elif comment and not commands and not CODE_LIKE_RE.search(comment):
                steps.append(comment)
            shebang = line.startswith("#!")
            comment, commands = ("" if shebang else clean_inline(line.lstrip("#")), [])
        elif beside := trailing_comment(line):
            command = beside[0].removeprefix("$ ")
            steps.append(f"{clean_inline(beside[1])}: {command}")
            commands.append(command)
        else:
            commands.append(line.removeprefix("$ "))
    return [step for step in steps if quotable(step)]  # 4-80 words, not a question
