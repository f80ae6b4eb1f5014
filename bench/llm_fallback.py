"""How long a streamed answer takes when an OpenAI-compatible server fails, against the same
server answering normally (the floor), on the sample book through the real pipeline and openai
SDK, the server being tests/fakes' loopback one.

    .venv/bin/python bench/llm_fallback.py                       # index in data/index
    .venv/bin/python bench/llm_fallback.py --index /tmp/folio-bench --rounds 10

For each way of failing, p50/p95 of the whole answer (until the Response) and, for failures
after the first delta, of the time from that delta to the Response: how long a reader looks at a
half-written answer before the offline one replaces it. Every failure must end in the offline
answer with an llm_fallback notice within the budget ([budget] total_s, 5 s by default).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402,F401  (thread settings before numpy/torch load)
from rag.answer.pipeline import Pipeline  # noqa: E402
from rag.config import load_settings  # noqa: E402
from rag.index.load import load_index  # noqa: E402
from rag.providers.openai_llm import OpenAICompatibleLLM  # noqa: E402
from tests.fakes.openai_server import OpenAIServer  # noqa: E402

QUESTION = "What does the integral term of a PID controller correct?"
MODES = {  # name -> the server's plan for each request
    "answers (floor)": {}, "500": {"status": 500}, "429": {"status": 429},
    "ignores the labels": {"text": "The integral term removes steady-state error."},
    "dies mid-answer": {"cut": "close"}, "resets mid-answer": {"cut": "reset"},
    "ends unfinished": {"cut": "end"}, "stalls mid-answer": {"stall": 30.0},
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def timed_answer(pipeline: Pipeline) -> tuple[float, float | None, object]:
    """Seconds to the Response, seconds from the first delta to it, and the Response."""
    started, first = time.perf_counter(), None
    for item in pipeline.answer_stream(QUESTION):
        if isinstance(item, str) and first is None:
            first = time.perf_counter()
    ended = time.perf_counter()
    return ended - started, None if first is None else ended - first, item


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with OpenAIServer() as server:
        settings = load_settings(index_dir=args.index, llm="openai", openai_model="fake",
                                 openai_base_url=server.base_url)
        index, _ = load_index(settings)
        llm = OpenAICompatibleLLM("fake", server.base_url, api_key="")
        pipeline = Pipeline(index, settings, llm)
        timed_answer(pipeline)  # warm-up: the SDK's first request, caches
        print(f"load average {os.getloadavg()[0]:.1f}; budget total {settings.budget_total_s} s,"
              f" synthesis {settings.budget_synthesis_s} s; {args.rounds} rounds")
        print(f"{'server':<20} {'answer p50':>10} {'p95':>7} {'after delta p50':>16} "
              f"{'p95':>7}  answered by")
        for name, plan in MODES.items():
            totals, afters, providers = [], [], set()
            for _ in range(args.rounds):
                server.plan(**plan)
                total, after, response = timed_answer(pipeline)
                totals.append(total)
                afters += [after] if after is not None and plan.get("cut") or \
                    plan.get("stall") else []
                notices = [n["code"] for n in response.validation["notices"]]
                providers.add(f"{response.draft.provider} {','.join(notices)}".strip())
                assert total < settings.budget_total_s, (name, total)
            after = (f"{percentile(afters, 50):16.3f} {percentile(afters, 95):7.3f}" if afters
                     else f"{'-':>16} {'-':>7}")
            print(f"{name:<20} {percentile(totals, 50):10.3f} {percentile(totals, 95):7.3f} "
                  f"{after}  {'; '.join(sorted(providers))}")


if __name__ == "__main__":
    main()
