"""GET /v1/insights on a realistic load: 10,000 stored questions, timed on a real server.

    .venv/bin/python bench/bench_insights.py [--questions 10000] [--calls 7] [--not-found 0.35]
                                             [--data bench/out/insights] [--no-sample]

(1) The handbook sample (examples/sample) is ingested into two collections of a fresh embedded
PostgreSQL under --data. (2) Sample: about 60 questions a team might ask of it, answerable and
not (paraphrases of a dozen missing topics), are asked through a real server's /v1/ask, a few
answers are rated down, and the report's groups are printed: do the clusters read sensibly?
(3) Load: --questions questions are written straight into the question log of the second
collection (the log's own `log()`, as the server's background writer does), over the last 80
days: answerable ones citing the documents they are about, --not-found of them unanswerable,
made from paraphrase templates over 40 missing topics with the openings and fillers people type,
plus the 452 dev questions of /work/shared/data as a long tail of one-off questions; each distinct
wording embedded once with the bundled MiniLM; 200 ratings. Then GET /v1/insights?since=90d is
called --calls times on the server (the first call is reported apart: cold caches), and the
report's parts are timed in-process (reading the log, clustering). Target: p50 under 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_server import free_port, serve_process  # noqa: E402 - one way to start and await a server

SAMPLE = ROOT / "examples" / "sample"
DEV = [Path("/work/shared/data") / s / "questions.jsonl" for s in ("hotpotqa", "musique", "squad2")]

# -- (2) what a team asks of the handbook: answerable, and paraphrases of what it lacks ----------
SAMPLE_FOUND = [
    "How many vacation days do new hires get per year?", "Can I carry over unused vacation days?",
    "Who approves expenses over $500?", "How fast must the on-call primary acknowledge a page?",
    "When is the deploy freeze?", "Where is the Lisbon office?", "How many days a week can I work remotely?",
    "What do I need to do in my first week?", "Who do I report a security incident to?",
]
SAMPLE_MISSING = {
    "gym": ["Is there a gym membership discount for employees?", "Do we get a discount on gym memberships?",
            "Does the company pay for a gym or fitness membership?", "Can I get my gym subscription reimbursed?"],
    "pets": ["Can I bring my dog to the office?", "Are pets allowed in the office?", "Is the office dog friendly?"],
    "pension": ["What is the company pension plan?", "Does Halcyon offer a retirement savings plan?",
                "Is there a 401k match?"],
    "parking": ["Is there parking at the office?", "Where can I park my car at work?",
                "Do we get free parking spaces?"],
    "wifi": ["What is the guest wifi password?", "How do I connect to the office wifi?",
             "What's the wifi password for visitors?"],
    "laptop": ["How often do we get a new laptop?", "Can I get my laptop replaced?",
               "What is the laptop refresh cycle?"],
    "dental": ["Does our health insurance cover dental?", "Is dental care included in the benefits?"],
    "referral": ["Is there a referral bonus for hiring friends?", "How much is the employee referral bonus?"],
    "tuition": ["Will the company pay for a university course?", "Is there a tuition reimbursement program?",
                "Do we have a training budget for courses?"],
    "dress": ["Is there a dress code?", "What should I wear to the office?"],
    "holiday party": ["When is the holiday party?", "Is there a Christmas party this year?"],
    "stock": ["Do employees get stock options?", "How does the equity vesting schedule work?"],
}

# -- (3) a load: templates over the topics people ask about -------------------------------------
FOUND_TOPICS = {  # what the handbook answers, and the document an answer cites
    "vacation days": "vacation-policy.txt", "carrying over vacation": "vacation-policy.txt",
    "public holidays": "vacation-policy.txt", "travel booking": "travel-policy.html",
    "hotel limits": "travel-policy.html", "expense approval": "expense-policy.md",
    "expense receipts": "expense-policy.md", "meal expenses": "expense-policy.md",
    "the on-call rotation": "on-call-policy.md", "paging": "on-call-policy.md",
    "the deploy freeze": "deployment-process.md", "rollbacks": "deployment-process.md",
    "remote work": "remote-work.txt", "home office equipment": "remote-work.txt",
    "the Lisbon office": "office-locations.html", "the Berlin office": "office-locations.html",
    "the first week": "onboarding.md", "getting a badge": "onboarding.md", "team leads": "team-structure.md",
}
MISSING_TOPICS = [
    "gym membership discount", "parental leave", "pension plan", "parking spaces", "guest wifi password",
    "laptop replacement", "dental insurance", "referral bonus", "tuition reimbursement", "dress code",
    "holiday party", "stock options", "bike storage", "company car", "overtime pay", "sick leave",
    "mental health days", "sabbatical", "relocation package", "visa sponsorship", "lunch vouchers",
    "phone plan reimbursement", "coworking space allowance", "standing desks", "childcare support",
    "volunteering days", "performance review schedule", "salary bands", "promotion process",
    "bereavement leave", "jury duty leave", "conference budget", "language classes",
    "noise-cancelling headphones", "office plants", "shower facilities", "quiet rooms", "fire drills",
    "first aid kits", "lost and found",
]
TEMPLATES = [
    "Is there a {t} policy?", "Do we have {t}?", "What is our policy on {t}?", "How does {t} work here?",
    "Who do I ask about {t}?", "Where can I find information about {t}?", "Does Halcyon offer {t}?",
    "Can I get {t}?", "What are the rules for {t}?", "Is {t} covered?", "Tell me about {t}.",
    "Any info on {t}?",
]
FOUND_TEMPLATES = ["What is the policy on {t}?", "How does {t} work?", "Where do I read about {t}?",
                   "What are the rules for {t}?", "Explain {t}."]
OPENINGS = ["", "", "", "Hi, ", "Quick question: ", "Hey team, ", "Sorry if this was asked before: "]
ENDINGS = ["", "", "", " Thanks!", " Thanks in advance.", " (new joiner here)"]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--questions", type=int, default=10_000)
    p.add_argument("--not-found", type=float, default=0.35, help="share of the load answered found: false")
    p.add_argument("--calls", type=int, default=7, help="GET /v1/insights calls timed (after one cold call)")
    p.add_argument("--data", default=str(ROOT / "bench" / "out" / "insights"), help="a folder of its own (emptied)")
    p.add_argument("--sample", action=argparse.BooleanOptionalAction, default=True,
                   help="also ask the handbook questions through the server and print their groups")
    p.add_argument("--seed", type=int, default=18)
    return p.parse_args()


def dev_questions() -> list[str]:
    out = []
    for path in DEV:
        with path.open(encoding="utf-8") as f:
            out += [json.loads(line)["question"] for line in f if line.strip()]
    return out


def load(n: int, not_found: float, rng: random.Random) -> list[tuple[str, bool, tuple[str, ...]]]:
    """(question, found, cited documents), n of them."""
    dev = dev_questions()
    out = []
    missing_weights = [1 / (i + 1) ** 0.8 for i in range(len(MISSING_TOPICS))]  # a few topics are asked a lot
    for _ in range(n):
        r = rng.random()
        if r < not_found * 0.85:
            topic = rng.choices(MISSING_TOPICS, missing_weights)[0]
            q = rng.choice(OPENINGS) + rng.choice(TEMPLATES).format(t=topic) + rng.choice(ENDINGS)
            out.append((q, False, ()))
        elif r < not_found:
            out.append((rng.choice(dev), False, ()))
        else:
            topic, doc = rng.choice(list(FOUND_TOPICS.items()))
            q = rng.choice(OPENINGS) + rng.choice(FOUND_TEMPLATES).format(t=topic) + rng.choice(ENDINGS)
            out.append((q, True, (doc,)))
    return out


def start_server(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    return serve_process(env, port, "-q")


def print_groups(report: dict, limit: int) -> None:
    print(f"  {report['questions']} questions, {report['not_found_questions']} not found, "
          f"{report['not_found_groups']} groups")
    for g in report["not_found"][:limit]:
        others = [q["question"] for q in g["questions"] if q["question"] != g["label"]][:3]
        print(f"  {g['count']:>5}  {g['label']}")
        if others:
            print("         also: " + " | ".join(others))


def sample_part(http: httpx.Client) -> None:
    print("\n== the handbook sample: questions asked through /v1/ask ==")
    asked = [*SAMPLE_FOUND, *(q for qs in SAMPLE_MISSING.values() for q in qs)]
    asked += ["How many vacation days do new hires get per year?", "Is there a gym membership discount for employees?",
              "Are pets allowed in the office?", "Is there parking at the office?"]  # asked again
    down = {}
    for q in asked:
        body = http.post("/v1/ask", json={"question": q, "collection": "sample"}).json()
        if q in ("Can I carry over unused vacation days?", "When is the deploy freeze?"):
            down[q] = body["trace_id"]
    for q, trace in down.items():
        http.post(f"/v1/answers/{trace}/feedback", json={"rating": "down", "comment": f"not what I asked: {q}"})
    report = http.get("/v1/insights", params={"collection": "sample", "since": "1d"}).json()
    print_groups(report, 15)
    print("  rated down: " + "; ".join(f"{a['question']} ({', '.join(c['document_id'] for c in a['citations'])})"
                                       for a in report["rated_down"]))
    print("  most cited: " + ", ".join(f"{d['document_id']} {d['citations']}" for d in report["most_cited"]))
    print("  never cited: " + ", ".join(d["document_id"] for d in report["never_cited"]))


def seed(store_url: str, data: str, n: int, not_found: float, seed_value: int) -> None:
    import numpy as np

    from rag_rlm.embed import load_embedder
    from rag_rlm.insights import AskedQuestion, Rating
    from rag_rlm.insights.store import open_insight_store

    rng = random.Random(seed_value)
    rows = load(n, not_found, rng)
    distinct = sorted({q for q, _, _ in rows})
    t0 = time.perf_counter()
    vectors = dict(zip(distinct, load_embedder().embed(distinct), strict=True))
    print(f"embedded {len(distinct)} distinct wordings of {n} questions in {time.perf_counter() - t0:.1f} s")
    store = open_insight_store(store_url, data)
    now = time.time()
    t0 = time.perf_counter()
    try:
        for i, (q, found, cited) in enumerate(rows):
            at = now - rng.uniform(0, 80 * 86400)
            store.log(AskedQuestion(f"load-{i}", "", "handbook", q, found, cited, vector=np.asarray(vectors[q]), at=at))
        for i, (q, _found, cited) in enumerate(rows[:200]):
            store.rate(Rating(f"load-{i}", f"rater-{i % 7}", "", "handbook", "down" if i % 3 else "up",
                              "out of date" if i % 6 == 1 else "", q, "(answer)",
                              [{"n": 1, "document_id": d, "title": d} for d in cited], at=now - i * 600))
    finally:
        store.close()
    print(f"wrote {n} questions and 200 ratings to the log in {time.perf_counter() - t0:.1f} s "
          f"({sum(not f for _, f, _ in rows)} not found)")


def in_process(store_url: str, data: str) -> None:
    """Where a report's time goes: reading the log, and building the report (clustering)."""
    from rag_rlm.insights import Window, cutoff, readable_by
    from rag_rlm.insights.report import build
    from rag_rlm.insights.store import open_insight_store
    from rag_rlm.memory import open_store

    vectors = open_store(store_url)
    documents = vectors.documents("handbook")
    vectors.close()
    store = open_insight_store(store_url, data)
    window = Window("handbook", cutoff("90d"))
    try:
        reads, builds = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            questions, ratings = store.questions(window), store.ratings(window)
            t1 = time.perf_counter()
            build(questions, ratings, documents, readable_by(None))
            reads.append(t1 - t0)
            builds.append(time.perf_counter() - t1)
    finally:
        store.close()
    print(f"in process, p50 of 5: read the log {statistics.median(reads) * 1000:.0f} ms, "
          f"build the report (group {sum(not q.found for q in questions)} not-found questions) "
          f"{statistics.median(builds) * 1000:.0f} ms")


def main() -> None:
    args = parse_args()
    data = Path(args.data).resolve()
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    store_url = f"pgserver://{data / 'pg'}"
    env = {**os.environ, "RAG_RLM_STORE": store_url, "RAG_RLM_DATA_DIR": str(data), "RAG_RLM_COLLECTION": "handbook",
           "RAG_RLM_RATE_LIMIT_PER_MINUTE": "100000", "PYTHONPATH": str(ROOT)}
    for name in ("handbook", "sample"):
        subprocess.run([sys.executable, "-m", "ingest", str(SAMPLE), "--collection", name, "-q"], env=env, cwd=ROOT,
                       check=True)
    seed(store_url, str(data), args.questions, args.not_found, args.seed)
    port = free_port()
    proc = start_server(env, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            if args.sample:
                sample_part(http)
            print(f"\n== GET /v1/insights over {args.questions} stored questions ==")
            times = []
            for i in range(args.calls + 1):
                t0 = time.perf_counter()
                r = http.get("/v1/insights", params={"collection": "handbook", "since": "90d"})
                times.append(time.perf_counter() - t0)
                r.raise_for_status()
                if i == 0:
                    report = r.json()
            warm = sorted(times[1:])
            print(f"cold call {times[0] * 1000:.0f} ms; then {len(warm)} calls: p50 {statistics.median(warm) * 1000:.0f} ms, "
                  f"min {warm[0] * 1000:.0f} ms, max {warm[-1] * 1000:.0f} ms (target: p50 under 1000 ms)")
            r = http.get("/v1/insights", params={"collection": "handbook", "since": "30d"})
            print(f"since=30d: {r.json()['questions']} questions, {r.elapsed.total_seconds() * 1000:.0f} ms")
            print_groups(report, 12)
            print(f"  rated down: {report['rated_down_answers']} answers; most cited: "
                  + ", ".join(f"{d['document_id']} {d['citations']}" for d in report["most_cited"][:4])
                  + "; never cited: " + ", ".join(d["document_id"] for d in report["never_cited"]))
    finally:
        proc.terminate()
        proc.wait(30)
    in_process(store_url, str(data))


if __name__ == "__main__":
    main()
