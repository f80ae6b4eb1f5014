"""The offline answerer's rules, each switched off alone: what every rule earns, per book.

For each rule in RULES (a name, what it does, and how it is switched off), the development sets
(or --role "held out") of every book are answered with that rule off and everything else as
shipped, beside the shipped answerer, with bench/quality.py's measurement. Printed per book and
macro-average: the answers holding every key fact and the out-of-scope questions answered, with
the rule on -> off. A rule earns its place (issue 41) when switching it off lowers the macro-
average of answers holding the key facts (or raises the out-of-scope answers, for a refusal) and
costs no book more than one answer when on; the last column says which.

    .venv/bin/python bench/ablation.py --index-root /work/indexes            # every rule
    .venv/bin/python bench/ablation.py --rule window --rule whole_section    # some
    .venv/bin/python bench/ablation.py --json > ablation.json
    .venv/bin/python bench/ablation.py --list

Each variant runs in its own process (a rule is switched off by replacing a function or a
constant in the module that uses it, which a process must not carry into the next variant),
`--jobs` at a time. The unit model's features (rag.answer.unit_scoring) are not switched off
here: the model is fitted with them, and a feature left out is a refit (bench/fit_extractive.py).
Nothing is asserted: it measures, as the other bench scripts do.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.quality import INDEX_ROOT  # noqa: E402


def _set(module: str, name: str, value: Any) -> Callable[[], None]:
    def apply() -> None:
        setattr(importlib.import_module(module), name, value)
    return apply


def _first(*args: Any, **_: Any) -> Any:  # the thing a rule would have changed, unchanged
    return args[0]


def _quoted(_scored: Any, quoted: Any, _budget: int, _question: str) -> list[Any]:
    return list(quoted)


def _none(*_: Any, **__: Any) -> None:
    return None


def _empty(*_: Any, **__: Any) -> list[Any]:
    return []


@dataclass(frozen=True)
class Rule:
    name: str
    does: str
    off: tuple[Callable[[], None], ...]  # what switches it off, in this process


X = "rag.answer.extractive"
RULES = (
    Rule("window", "units next to the lead's quotes fill the answer's words (window.py)",
         (_set(X, "fill_around", _quoted),)),
    Rule("restated", "a unit restating the question counts less (restated.py)",
         (_set(X, "restated_shares", lambda _terms, _stems, texts: [1.0] * len(texts)),)),
    Rule("whole_section", "a quote's short section is read whole (passages.py)",
         (_set(X, "whole_section", _first),)),
    Rule("weak_support", "refuse when the best unit is weak and the quotes hold little of the "
         "question (extractive.py SUPPORT_FLOOR, WEAK_SUPPORT)",
         (_set(X, "SUPPORT_FLOOR", 0.0), _set(X, "WEAK_SUPPORT", 0.0))),
    Rule("stated_quantity", "a question asking a quantity is led by a unit stating one, else "
         "refused (quantity.py)",
         (_set("rag.answer.quantity", "missing", _empty),)),
    Rule("compared_pair", "'X vs Y' answered by the book's definitions of both (quotes.py)",
         (_set(X, "defined_pair", _none),)),
    Rule("definition_sources", "sections defining the asked subject join the evidence "
         "(evidence.py with_definitions)", (_set(X, "with_definitions", _first),)),
    Rule("prerequisites", "'What do I need before ...?' led by the book's prerequisites "
         "(quotes.py)", (_set(X, "prerequisites", _none),)),
    Rule("part_entry", "'What will I learn in week 9?' led by the part's entry (parts.py)",
         (_set(X, "is_entry", lambda *_: False), _set(X, "with_entries", _first))),
    Rule("named_part", "quotes come from the part the question names (quotes.py in_named_part)",
         (_set(X, "in_named_part", _first),)),
    Rule("coverage_gain", "further quotes preferred for the question terms they add "
         "(quotes.py COVERAGE)", (_set("rag.answer.quotes", "COVERAGE", 0.0),)),
    Rule("absent_names", "refuse a question naming what the book never mentions "
         "(guardrails.py unknown_names)",
         (_set("rag.answer.guardrails", "unknown_names", _empty),)),
    Rule("capability", "refuse requests for new code, real-time facts, predictions "
         "(capability.py)", (_set("rag.answer.guardrails", "check_capability", _none),)),
)
BY_NAME = {r.name: r for r in RULES}


def run_variant(rule: str | None, index_root: Path, role: str) -> dict[str, Any]:
    """bench/quality.py's book rows and macro row for `role`, `rule` off (None: as shipped),
    measured in a child process."""
    command = [sys.executable, __file__, "--child", rule or "", "--index-root", str(index_root),
               "--role", role]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"variant {rule or 'shipped'} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def child(rule: str, index_root: Path, role: str) -> None:
    from bench.quality import ROLES, measure
    for off in (BY_NAME[rule].off if rule else ()):
        off()
    report = measure(ROLES[role], role, None, None, index_root)
    print(json.dumps({"books": {r["book"]: r for r in report["books"]},
                      "macro": report["macro"]}))


def verdict(shipped: dict[str, Any], off: dict[str, Any]) -> tuple[float, float, str]:
    """(macro facts on - off, macro out-of-scope answered off - on, earns its place?), from
    bench/quality.py's macro row of each report."""
    gain = shipped["macro"]["facts"] - off["macro"]["facts"]
    guard = (off["macro"]["false"] or 0.0) - (shipped["macro"]["false"] or 0.0)
    costs = [b for b, row in shipped["books"].items()
             if off["books"][b]["right"] - row["right"] > 1]
    raises = gain > 0 or guard > 0
    if raises and not costs:
        word = "earns its place"
    elif raises:
        word = "costs " + ", ".join(costs)
    else:
        word = "earns nothing"
    return round(gain, 4), round(guard, 4), word


def _counts(row: dict[str, Any]) -> str:
    return (f"{row['right']}/{row['n_in_scope']} / "
            f"{row['answered_out_of_scope']}/{row['n_out_of_scope']}")


def _delta(off: dict[str, Any], on: dict[str, Any]) -> str:
    return (f"{off['right'] - on['right']:+d} / "
            f"{off['answered_out_of_scope'] - on['answered_out_of_scope']:+d}")


def print_table(shipped: dict[str, Any], variants: dict[str, dict[str, Any]]) -> None:
    books = list(shipped["books"])
    print("rule".ljust(20) + "".join(f"{b[:16]:>20}" for b in books)
          + f"{'macro facts':>13}{'macro OOS':>11}  verdict")
    print("shipped".ljust(20) + "".join(
        f"{_counts(r):>20}" for r in shipped["books"].values()))
    for name, report in variants.items():
        gain, guard, word = verdict(shipped, report)
        cells = "".join(f"{_delta(report['books'][b], shipped['books'][b]):>20}" for b in books)
        print(name.ljust(20) + cells + f"{-gain:>+13.3f}{guard:>+11.3f}  {word}")
    print("\nA rule's row: answers holding every key fact / out-of-scope questions answered, "
          "with the rule off minus as shipped, per book; macro columns likewise.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rule", action="append", choices=sorted(BY_NAME),
                        help="only this rule (repeatable; default every rule)")
    parser.add_argument("--index-root", type=Path, default=INDEX_ROOT)
    parser.add_argument("--role", choices=("development", "held out"), default="development",
                        help="which labelled sets (default development)")
    parser.add_argument("--jobs", type=int, default=2, help="variants run at once (default 2)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--list", action="store_true", help="list the rules and stop")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.index_root, args.role)
        return 0
    if args.list:
        for r in RULES:
            print(f"{r.name:<20} {r.does}")
        return 0
    names = args.rule or [r.name for r in RULES]
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(lambda n: run_variant(n, args.index_root, args.role),
                                [None, *names]))
    shipped, variants = results[0], dict(zip(names, results[1:], strict=True))
    if args.json:
        print(json.dumps({"shipped": shipped, "off": variants,
                          "verdicts": {n: verdict(shipped, v) for n, v in variants.items()}},
                         indent=2))
    else:
        print_table(shipped, variants)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
