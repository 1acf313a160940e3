"""Each rule of the answerer's table (`rag_rlm/reasoning/rules.py`) switched off, one at a time, on every
question we hold: which answers it changes, and on the dev sets whether the lead still holds the gold answer.

Every question is asked once with all rules on; the trace says which rules fired. It is then asked again with each
of those rules off, one at a time (a rule that did not fire changes nothing, except the two that act without
firing: `long_question` wraps the reader, so every question of 12 words or more is asked again without it, and
`followup` every follow-up). The real-page sets (`bench/realdocs/*.json`) are graded by reading the changed
answers this writes; the dev sets (`../shared/data/<set>`, both halves) by lead containment and `found`.

    python bench/rule_audit.py [--sets pg,py | all] [--dev hotpotqa,musique,squad2 | none] --out FILE.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rag_rlm.assistant import Assistant  # noqa: E402
from rag_rlm.config import Settings  # noqa: E402
from rag_rlm.eval.data import read_questions  # noqa: E402
from rag_rlm.eval.runner import ask_one  # noqa: E402
from rag_rlm.eval.splits import half  # noqa: E402
from rag_rlm.reasoning.build import build_reasoner, build_scorer  # noqa: E402
from rag_rlm.reasoning.forms import LONG_QUESTION  # noqa: E402
from rag_rlm.reasoning.rules import NAMES  # noqa: E402

REALDOCS = ROOT / "bench" / "realdocs"
DEV_DATA = ROOT.parent / "shared" / "data"
DEV_K = 10


class _LastTrace:
    """Shared state that keeps no memo and only the last trace: the rules that fired for the last ask."""

    def __init__(self):
        self.last: dict = {}

    def get(self, kind: str, key: str) -> dict | None:
        return None

    def put(self, kind: str, key: str, value: dict) -> None:
        if kind == "trace":
            self.last = value

    def fired(self) -> list[str]:
        return list(dict.fromkeys(r for node in self.last.get("nodes", ()) for r in node.get("rules", ())))


class Askers:
    """One assistant per switched-off rule, sharing the store, the embedder and the reader."""

    def __init__(self, settings: Settings, rules: list[str]):
        self.settings = settings
        self.rules = rules  # the rules switched off, one at a time
        self.base = Assistant(settings, state=_LastTrace())
        self.scorer = build_scorer(settings)
        self._off: dict[str, Assistant] = {"": self.base}

    def without(self, rule: str) -> Assistant:
        if rule not in self._off:
            s = dataclasses.replace(self.settings, rules_off=rule)
            reasoner = build_reasoner(s, self.base.answer_embedder, scorer=self.scorer)
            self._off[rule] = Assistant(s, store=self.base.store, embedder=self.base.embedder, reasoner=reasoner,
                                        state=_LastTrace())
        return self._off[rule]

    def audited(self, fired: list[str]) -> list[str]:
        return [r for r in dict.fromkeys(fired) if r in self.rules]

    def close(self) -> None:
        self.base.close()


def silent_rules(question: str, follow_up: bool) -> list[str]:
    """The rules that act on this question without saying so in the trace."""
    return (["long_question"] if len(question.split()) >= LONG_QUESTION else []) + (["followup"] if follow_up else [])


def audit_realdocs(askers: Askers, name: str) -> list[dict]:
    spec = json.loads((REALDOCS / f"{name}.json").read_text())
    collection = f"real_{name}"
    askers.base.ingest_files([Path(spec["root"]) / (p if "." in p else f"{p}.html") for p in spec["pages"]],
                             collection)

    def ask(assistant: Assistant, q: dict) -> tuple[str, str, list[str]]:
        history = None
        if q.get("after"):
            first = assistant.ask(q["after"], collection)
            history = [{"role": "user", "content": q["after"]}, {"role": "assistant", "content": first.answer}]
        result = assistant.ask(q["question"], collection, history=history)
        return result.answer, result.short_answer, assistant.state.fired()

    rows = []
    for q in spec["questions"]:
        answer, short, fired = ask(askers.base, q)
        row = {"set": name, "id": q["id"], "question": q["question"], "after": q.get("after", ""),
               "expect": q["expect"], "answer": answer, "short_answer": short, "fired": fired, "off": {}}
        for rule in askers.audited(fired + silent_rules(q["question"], bool(q.get("after")))):
            off_answer, off_short, _ = ask(askers.without(rule), q)
            if (off_answer, off_short) != (answer, short):
                row["off"][rule] = {"answer": off_answer, "short_answer": off_short}
        rows.append(row)
    return rows


def audit_dev(askers: Askers, name: str) -> list[dict]:
    collection = f"dev_{name}"
    rows = []
    for q in read_questions(DEV_DATA / name / "questions.jsonl"):
        base = ask_one(askers.base, q, collection, "recursive", DEV_K)
        fired = askers.base.state.fired()
        row = {"set": name, "id": q.id, "half": half(q.id), "question": q.question, "gold": list(q.answers),
               "answerable": q.answerable, "answer": base.answer, "short_answer": base.short_answer,
               "lead_containment": base.lead_containment,
               "found": base.found, "fired": fired, "off": {}}
        for rule in askers.audited(fired + silent_rules(q.question, False)):
            off = ask_one(askers.without(rule), q, collection, "recursive", DEV_K)
            if (off.answer, off.short_answer) != (base.answer, base.short_answer):
                row["off"][rule] = {"answer": off.answer, "short_answer": off.short_answer,
                                    "lead_containment": off.lead_containment, "found": off.found}
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> str:
    """Per rule: questions it fired on, answers that change without it, and on the dev sets the lead
    containment and verdicts it wins (+) or loses (-) against its absence, per half."""
    fired, changed = Counter(), Counter()
    dev = defaultdict(lambda: Counter())
    for row in rows:
        kind = "dev" if "half" in row else "real"
        for rule in row["fired"]:
            fired[rule, kind] += 1
        for rule, off in row["off"].items():
            changed[rule, kind] += 1
            if kind != "dev":
                continue
            h = row["half"]
            if row["answerable"]:
                on_c, off_c = row["lead_containment"] or 0.0, off["lead_containment"] or 0.0
                dev[rule][f"lead_{h}"] += (on_c > off_c) - (on_c < off_c)
                dev[rule][f"found_{h}"] += row["found"] - off["found"]
            else:
                dev[rule][f"declined_{h}"] += off["found"] - row["found"]
    lines = ["rule                  fired real/dev  changed real/dev   dev, the rule on vs off: lead tune/check, "
             "answerable found tune/check, unanswerable declined tune/check"]
    for rule in NAMES:
        d = dev[rule]
        lines.append(f"{rule:22s}{fired[rule, 'real']:5d} /{fired[rule, 'dev']:4d}   {changed[rule, 'real']:5d} /"
                     f"{changed[rule, 'dev']:4d}      {d['lead_tune']:+d} / {d['lead_check']:+d}        "
                     f"{d['found_tune']:+d} / {d['found_check']:+d}        {d['declined_tune']:+d} / "
                     f"{d['declined_check']:+d}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="all", help="real-page sets (bench/realdocs/*.json names), or all")
    parser.add_argument("--dev", default="hotpotqa,musique,squad2", help="dev sets, or none")
    parser.add_argument("--store", help="store of the real-page collections (default: bench/out/realdocs)")
    parser.add_argument("--dev-store", default="pgserver://.rag_rlm/pgdata",
                        help="store of the dev collections dev_<set> (`rag-rlm eval --corpus` makes them)")
    parser.add_argument("--rules", default="all", help="the rules switched off (comma-separated), or all")
    parser.add_argument("--out", required=True, help="the rows as JSON")
    args = parser.parse_args()
    names = sorted(p.stem for p in REALDOCS.glob("*.json")) if args.sets == "all" else args.sets.split(",")
    names = [n for n in names if n]
    rules = list(NAMES) if args.rules == "all" else args.rules.split(",")
    if unknown := set(rules) - set(NAMES):
        parser.error(f"unknown rule(s) {', '.join(sorted(unknown))}; the rules are: {', '.join(NAMES)}")
    devs = [] if args.dev == "none" else args.dev.split(",")
    data = ROOT / "bench" / "out" / "realdocs"
    rows: list[dict] = []
    started = time.perf_counter()
    if names:
        askers = Askers(Settings.from_env(store=args.store or f"pgserver://{data}/pgdata", data_dir=str(data)), rules)
        for name in names:
            rows += audit_realdocs(askers, name)
            print(f"{name}: {sum(1 for r in rows if r['set'] == name)} questions, "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
        askers.close()
    if devs:
        askers = Askers(Settings.from_env(store=args.dev_store), rules)
        for name in devs:
            rows += audit_dev(askers, name)
            print(f"{name}: {sum(1 for r in rows if r['set'] == name)} questions, "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
        askers.close()
    Path(args.out).write_text(json.dumps(rows, indent=1))
    print(summary(rows))


if __name__ == "__main__":
    main()
