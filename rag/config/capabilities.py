"""What a book's Folio refuses to do whatever the book contains: [guardrails]
disallowed_capabilities in settings.toml or in the book's own folio.toml.

The original design (SPEC §4, capability boundary) refuses requests to write code, for
real-time data and for predictions; a book whose readers should get none of these refusals (a
style guide asked "write me a sentence ...", say) lists fewer.
"""

from __future__ import annotations

from collections.abc import Iterable

CODE, REALTIME, PREDICTIONS = "code", "realtime", "predictions"
CAPABILITIES = {  # name -> what it refuses, as the error message lists them
    CODE: "requests to write new code (\"Write a function that ...\")",
    REALTIME: "questions about what is happening now (\"What is the weather today?\")",
    PREDICTIONS: "questions about what will happen (\"Will X replace Y by 2030?\")",
}
DEFAULT_DISALLOWED = tuple(CAPABILITIES)  # the design refuses all three


def capabilities_problem(names: Iterable[str]) -> str:
    """A sentence naming the unknown capabilities and the known ones; "" when all are known."""
    unknown = [n for n in names if n not in CAPABILITIES]
    if not unknown:
        return ""
    known = "; ".join(f"{name!r}: {what}" for name, what in CAPABILITIES.items())
    return (f"[guardrails] disallowed_capabilities names {', '.join(map(repr, unknown))}, "
            f"which Folio does not know; list any of {known} (or [] to refuse none)")
