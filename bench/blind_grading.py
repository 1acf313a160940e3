"""Two runs' answers to the real-page questions graded by reading, blind: each question whose answers differ is
shown to a grader with both answers in a seeded random order and no word of which run gave which, and every grade
is kept, so an answer text is graded once however many runs give it.

    python bench/blind_grading.py ask --out A.json [--reader DIR] [--sets all]
    python bench/blind_grading.py pairs A.json B.json --out DIR [--parts 4] [--always tornado,gospec]
    python bench/blind_grading.py tally A.json B.json [--graded DIR]

`ask` answers every question of `bench/realdocs/*.json` with one reader ({"set/id": row}). `pairs` writes, for
the questions whose answers differ (and those of the `--always` sets) where an answer is not graded yet,
DIR/partN.json, DIR/key.json (which run is answer_1) and DIR/RUBRIC.md, what a grader is told; a grader writes
DIR/partN_grades.json ({"set/id": {"answer_1": grade, "answer_2": grade, "why": ...}}). `tally` adds those
grades to `bench/realdocs_grades.jsonl` (a line per graded answer: the question's key, the sha256 of the text
as shown, the grade; a text graded again keeps its first grade and counts as agreeing or not) and prints both
runs' grades over the questions whose answers differ, which run reads better on how many, and per set.

Why by reading: the proxies (a quoted sentence in the best candidate, dev containment) moved one way while the
graded answers moved the other in the twenty-third round (bench/eval_results.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

GRADES_FILE = ROOT / "bench" / "realdocs_grades.jsonl"
GRADES = ("right", "partly", "wrong", "wrongly_declined", "correctly_declined", "answered_unanswerable")
GOOD = {"right", "correctly_declined"}  # what the asker should read
DECLINED = "[declined: found=false] "

RUBRIC = """You grade answers of a question-answering system over software manuals, as the person who asked would
read them. Each item of partN.json has `id`, `question`, `after` (when not empty the question is a follow-up
asked after that earlier question), `expect` (what a right answer says, written by someone who read the pages;
"not in the pages: ..." means the right behaviour is to decline) and two answers, `answer_1` and `answer_2`,
from two versions of the system in random order. An answer starting "[declined: found=false]" is one where the
system said it could not find the answer.

Grade each answer on its own with exactly one of:
- right: the asker gets the expected fact from it (harmless extra context is fine; it must not lead with
  something misleading that contradicts it);
- partly: some of what is expected, or the right fact after misleading text, or one part of a multi-part question;
- wrong: the expected fact is not given (or a wrong one is) for a question the pages answer;
- wrongly_declined: declines although `expect` gives an answer from the pages (a declined answer that still
  states the expected fact later is partly);
- correctly_declined: `expect` says not in the pages and the answer declines (or says the pages do not say it);
- answered_unanswerable: `expect` says not in the pages and the answer offers a sentence as if it answered.

Judge only from the texts given. Write partN_grades.json beside partN.json: {"<id>": {"answer_1": grade,
"answer_2": grade, "why": "a short reason when a grade is not right, else empty"}}, every id of the part.
"""


def shown(row: dict) -> str:
    """The answer as a grader reads it: a declined one says so."""
    return ("" if row["found"] else DECLINED) + row["answer"]


def text_key(qid: str, text: str) -> tuple[str, str]:
    return qid, hashlib.sha256(text.encode()).hexdigest()


def load_grades(path: Path = GRADES_FILE) -> dict[tuple[str, str], str]:
    if not path.is_file():
        return {}
    out = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            rec = json.loads(line)
            if rec.get("grade") not in GRADES:
                raise SystemExit(f"{path}:{n}: grade {rec.get('grade')!r} is none of {', '.join(GRADES)}")
            out[(rec["id"], rec["sha256"])] = rec["grade"]
    return out


def differing(a: dict, b: dict, always: set[str] = frozenset()) -> list[str]:
    """The questions both runs answered whose shown answers differ, and every question of the `always` sets."""
    return sorted(k for k in a.keys() & b.keys() if shown(a[k]) != shown(b[k]) or k.split("/")[0] in always)


def make_pairs(a: dict, b: dict, graded: dict, always: set[str], parts: int, seed: int) -> tuple[list[list[dict]], dict]:
    """The items still to grade, split into `parts`, and which run each item shows first."""
    rng = random.Random(seed)
    items, key = [], {}
    for k in differing(a, b, always):
        if text_key(k, shown(a[k])) in graded and text_key(k, shown(b[k])) in graded:
            continue
        first, second = (a, b) if rng.random() < 0.5 else (b, a)
        key[k] = "a_first" if first is a else "b_first"
        items.append({"id": k, "question": a[k]["question"], "after": a[k].get("after", ""), "expect": a[k]["expect"],
                      "answer_1": shown(first[k]), "answer_2": shown(second[k])})
    size = -(-len(items) // parts) if items else 0
    return [items[i:i + size] for i in range(0, len(items), size)] if size else [], key


def add_grades(folder: Path, graded: dict, path: Path = GRADES_FILE) -> tuple[int, int, int]:
    """The graders' files under `folder` added to `path`: (new, agreeing, disagreeing) answer texts."""
    new: list[dict] = []
    agree = disagree = 0
    for part in sorted(folder.glob("part*.json")):
        if part.stem.endswith("_grades"):
            continue
        grades_file = part.with_name(f"{part.stem}_grades.json")
        if not grades_file.is_file():
            raise SystemExit(f"{grades_file} is missing: {part.name} is not graded yet")
        grades = json.loads(grades_file.read_text())
        for item in json.loads(part.read_text()):
            if item["id"] not in grades:
                raise SystemExit(f"{grades_file}: no grade for {item['id']}")
            for side in ("answer_1", "answer_2"):
                grade = grades[item["id"]][side]
                if grade not in GRADES:
                    raise SystemExit(f"{grades_file}: {item['id']} {side}: {grade!r} is none of {', '.join(GRADES)}")
                k = text_key(item["id"], item[side])
                if k in graded:
                    agree += graded[k] == grade
                    disagree += graded[k] != grade
                    continue
                graded[k] = grade
                new.append({"id": k[0], "sha256": k[1], "grade": grade, "why": grades[item["id"]].get("why", "")})
    with path.open("a") as f:
        f.writelines(json.dumps(rec, ensure_ascii=False) + "\n" for rec in new)
    return len(new), agree, disagree


def tally(a: dict, b: dict, graded: dict, always: set[str] = frozenset()) -> dict:
    """Both runs' grades over the questions whose answers differ (and the `always` sets)."""
    keys = differing(a, b, always)
    ungraded = [k for k in keys if text_key(k, shown(a[k])) not in graded or text_key(k, shown(b[k])) not in graded]
    if ungraded:
        raise SystemExit(f"{len(ungraded)} questions have an ungraded answer (first: {ungraded[0]}); run pairs")
    ga = {k: graded[text_key(k, shown(a[k]))] for k in keys}
    gb = {k: graded[text_key(k, shown(b[k]))] for k in keys}
    per_set: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for k in keys:
        per_set[k.split("/")[0]][0] += ga[k] in GOOD
        per_set[k.split("/")[0]][1] += gb[k] in GOOD
    changed = [k for k in keys if shown(a[k]) != shown(b[k])]
    return {"questions": len(keys), "a": Counter(ga.values()), "b": Counter(gb.values()),
            "a_good": sum(g in GOOD for g in ga.values()), "b_good": sum(g in GOOD for g in gb.values()),
            "changed": len(changed), "a_better": sum(ga[k] in GOOD and gb[k] not in GOOD for k in changed),
            "b_better": sum(gb[k] in GOOD and ga[k] not in GOOD for k in changed), "per_set": dict(per_set)}


def _report(t: dict, a_name: str, b_name: str) -> str:
    width = max(len(a_name), len(b_name))
    lines = [f"{t['questions']} questions ({t['changed']} answered differently)",
             f"{'':{width}}  " + "  ".join(f"{g:>{len(g)}}" for g in GRADES) + "  right or correctly declined"]
    for name, side in ((a_name, "a"), (b_name, "b")):
        lines.append(f"{name:{width}}  " + "  ".join(f"{t[side][g]:>{len(g)}}" for g in GRADES) + f"  {t[side + '_good']}")
    lines.append(f"better read: {a_name} on {t['a_better']}, {b_name} on {t['b_better']} of {t['changed']}")
    lines.append("per set (right or correctly declined): " + ", ".join(
        f"{s} {x}/{y}" for s, (x, y) in sorted(t["per_set"].items())))
    return "\n".join(lines)


def _read(path: str) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"{path}: {e}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) and "answer" in v and "found" in v for v in data.values()):
        raise SystemExit(f"{path} holds no answers as `ask` writes them ({{\"set/id\": row}})")
    return data


def _ask(args: argparse.Namespace) -> None:
    from realdocs import answer_set, open_assistant

    names = sorted(p.stem for p in (ROOT / "bench" / "realdocs").glob("*.json")) if args.sets == "all" else args.sets.split(",")
    assistant = open_assistant(reader=args.reader)
    rows = {f"{name}/{row['id']}": row for name in names for row in answer_set(assistant, name)}
    assistant.close()
    Path(args.out).write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    print(f"{len(rows)} answers -> {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="answer every real-page question with one reader")
    ask.add_argument("--out", required=True)
    ask.add_argument("--reader", help="a reader folder (default: the shipped one)")
    ask.add_argument("--sets", default="all", help="bench/realdocs names, comma-separated, or all")
    for name in ("pairs", "tally"):
        p = sub.add_parser(name)
        p.add_argument("a")
        p.add_argument("b")
        p.add_argument("--always", default="", help="sets whose every question is graded (a set read first)")
    pairs = sub.choices["pairs"]
    pairs.add_argument("--out", required=True, help="a folder for the parts, the key and the rubric")
    pairs.add_argument("--parts", type=int, default=4)
    pairs.add_argument("--seed", type=int, default=7)
    sub.choices["tally"].add_argument("--graded", help="a folder of graded parts to add first")
    args = parser.parse_args()
    if args.command == "ask":
        return _ask(args)
    a, b = _read(args.a), _read(args.b)
    always = set(filter(None, args.always.split(",")))
    graded = load_grades()
    if args.command == "pairs":
        parts, key = make_pairs(a, b, graded, always, max(1, args.parts), args.seed)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for n, part in enumerate(parts, 1):
            (out / f"part{n}.json").write_text(json.dumps(part, indent=1, ensure_ascii=False))
        (out / "key.json").write_text(json.dumps(key, indent=1))
        (out / "RUBRIC.md").write_text(RUBRIC)
        print(f"{sum(map(len, parts))} questions to grade in {len(parts)} parts under {out} (rubric: RUBRIC.md)")
        return
    if args.graded:
        new, agree, disagree = add_grades(Path(args.graded), graded)
        print(f"{new} answers graded anew; of the {agree + disagree} graded again, {agree} got the same grade")
    print(_report(tally(a, b, graded, always), Path(args.a).stem, Path(args.b).stem))


if __name__ == "__main__":
    main()
