"""Aggregate the rows into figures, and write report.json, summary.md, plot.png and (for a set
with unanswerable questions) answerability.png.

Answer figures (exact match, F1, containment, lead containment) are over answerable questions,
recall figures over questions with supporting ids, words per answer over found answers, and the
answerability shares over the rows that did not fail.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import answerability, metrics
from .runner import Row
from .splits import HALVES, half


def aggregate(rows: Sequence[Row]) -> dict[str, dict[str, dict[str, float]]]:
    """{mode: {k: figures}} over the given rows."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for mode in dict.fromkeys(r.mode for r in rows):
        out[mode] = {}
        for k in sorted({r.k for r in rows if r.mode == mode}):
            out[mode][str(k)] = figures([r for r in rows if r.mode == mode and r.k == k])
    return out


def figures(rows: Sequence[Row]) -> dict[str, float]:
    ok = [r for r in rows if r.status != "error"]
    seconds = [r.seconds for r in ok]
    answerable = [r for r in rows if r.answerable]
    supported = [r for r in rows if r.supporting_ids]
    words = [float(r.words) for r in ok if r.found]
    declined_unans, wrongly = metrics.declined_shares([not r.found for r in ok], [r.answerable for r in ok])
    return {
        "questions": len(rows),
        "answerable": len(answerable),
        "unanswerable": len(rows) - len(answerable),
        "errors": len(rows) - len(ok),
        "recall": _mean(r.recall for r in supported),
        "all_supporting": _mean(r.all_supporting for r in supported),
        "exact_match": _mean(r.exact_match for r in answerable),
        "f1": _mean(r.f1 for r in answerable),
        "containment": _mean(r.containment for r in answerable),
        "lead_containment": _mean(r.lead_containment for r in answerable),
        "words_p50": metrics.percentile(words, 50),
        "words_p90": metrics.percentile(words, 90),
        "declined": _mean(float(not r.found) for r in ok),
        "declined_unanswerable": declined_unans,  # at the current default (`found`)
        "wrongly_declined": wrongly,
        "latency_p50": metrics.percentile(seconds, 50),
        "latency_p95": metrics.percentile(seconds, 95),
        "latency_mean": _mean(seconds),
        "llm_calls": _mean(r.llm_calls for r in rows),
        "tokens_in": _mean(r.tokens_in for r in rows),
        "tokens_out": _mean(r.tokens_out for r in rows),
        "cache_hits": _mean(r.cache_hits for r in rows),
        "retrievals": _mean(r.retrievals for r in rows),
        "documents_read": _mean(len(r.documents_read) for r in rows),
    }


def build_report(rows: Sequence[Row], meta: dict[str, Any]) -> dict[str, Any]:
    types = sorted({r.type for r in rows if r.type})
    return {
        "meta": meta,
        "overall": aggregate(rows),
        "by_type": {t: aggregate([r for r in rows if r.type == t]) for t in types},
        "by_half": {h: aggregate([r for r in rows if half(r.id) == h]) for h in HALVES},
        "answerability": answerability.section(rows),
        "rows": [r.to_dict() for r in rows],
    }


def headline_k(report: dict[str, Any]) -> str:
    """The k whose answer figures the summary shows: 5 when measured, else the middle one."""
    ks = sorted({k for by_k in report["overall"].values() for k in by_k}, key=int)
    return "5" if "5" in ks else ks[len(ks) // 2]


def summary_markdown(report: dict[str, Any]) -> str:
    overall = report["overall"]
    modes = list(overall)
    ks = sorted({k for by_k in overall.values() for k in by_k}, key=int)
    hk = headline_k(report)
    meta = report["meta"]
    lines = [f"## {meta.get('title', 'eval')}", "",
             f"{meta.get('questions', '?')} questions, collection `{meta.get('collection')}`, "
             f"reasoner {meta.get('reasoner')} (reader {meta.get('reader', '-')}), hybrid={meta.get('hybrid')}, max_depth={meta.get('max_depth')}. "
             f"Answer and cost rows are at k={hk}.", ""]
    both = len(modes) == 2
    head = "| metric | " + " | ".join(modes) + (" | Δ |" if both else " |")
    lines += [head, "|---" * (len(modes) + 1 + both) + "|"]

    def row(label: str, key: str, k: str, fmt: str = "{:.3f}", delta: bool = True) -> None:
        vals = [overall[m].get(k, {}).get(key, math.nan) for m in modes]
        cells = [_cell(v, fmt) for v in vals]
        if both:
            cells.append(_cell(vals[1] - vals[0], fmt.replace("{:", "{:+")) if delta else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    for k in ks:
        row(f"recall@{k}", "recall", k)
    for k in ks:
        row(f"all-supporting@{k}", "all_supporting", k)
    row(f"exact match (k={hk})", "exact_match", hk)
    row(f"token F1 (k={hk})", "f1", hk)
    row(f"containment (k={hk})", "containment", hk)
    row(f"lead containment (k={hk})", "lead_containment", hk)
    row(f"words / found answer, median (k={hk})", "words_p50", hk, "{:.1f}")
    row(f"words / found answer, p90 (k={hk})", "words_p90", hk, "{:.1f}")
    if report.get("answerability"):
        row(f"unanswerable declined (k={hk})", "declined_unanswerable", hk)
        row(f"answerable wrongly declined (k={hk})", "wrongly_declined", hk)
    row(f"latency p50 s (k={hk})", "latency_p50", hk)
    row(f"latency p95 s (k={hk})", "latency_p95", hk)
    row(f"reasoner calls / question (k={hk})", "llm_calls", hk, "{:.2f}")
    row(f"retrievals / question (k={hk})", "retrievals", hk, "{:.2f}")
    row(f"tokens in+out / question (k={hk})", "tokens_in", hk, "{:.0f}", delta=False)
    for k in ks:
        row(f"distinct docs read / question (k={k})", "documents_read", k, "{:.1f}")
    if both:
        f, r = overall[modes[0]].get(hk, {}), overall[modes[1]].get(hk, {})
        if f.get("latency_p50"):
            lines.append(f"\nLatency ratio {modes[1]}/{modes[0]} at k={hk}: p50 "
                         f"{r['latency_p50'] / f['latency_p50']:.2f}x, mean {r['latency_mean'] / f['latency_mean']:.2f}x.")
    errors = sum(v["errors"] for by_k in overall.values() for v in by_k.values())
    if errors:
        lines.append(f"\n{errors} answers failed (see rows with status 'error' in report.json).")
    lines += _half_lines(report, hk)
    lines += answerability.summary_lines(report, hk)
    if report["by_type"]:
        lines += ["", f"Per question type (k={hk}):", "",
                  "| type | n | " + " | ".join(f"{m} recall" for m in modes) + " | "
                  + " | ".join(f"{m} all-supp." for m in modes) + " | "
                  + " | ".join(f"{m} contain." for m in modes) + " | "
                  + " | ".join(f"{m} declined" for m in modes) + " |",
                  "|---" * (2 + 4 * len(modes)) + "|"]
        for t, agg in report["by_type"].items():
            cells = [str(int(next(iter(agg.values()))[hk]["questions"]))]
            for key in ("recall", "all_supporting", "containment", "declined"):
                cells += [_cell(agg[m][hk][key]) if m in agg and hk in agg[m] else "-" for m in modes]
            lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _half_lines(report: dict[str, Any], hk: str) -> list[str]:
    """The headline figures on the tune half (iterated on) and the check half (never looked at
    while tuning): a gain that shows on tune only does not generalise."""
    halves = report.get("by_half") or {}
    if not halves:
        return []
    keys = [("recall", "recall"), ("all_supporting", "all-supp."), ("lead_containment", "lead contain."),
            ("containment", "contain."), ("declined_unanswerable", "unans. declined"),
            ("wrongly_declined", "wrongly declined")]
    lines = ["", f"Tune and check halves (k={hk}; `rag_rlm/eval/splits.py`):", "",
             "| mode | half | n | " + " | ".join(label for _, label in keys) + " |", "|---" * (3 + len(keys)) + "|"]
    for mode in report["overall"]:
        for h in HALVES:
            f = halves.get(h, {}).get(mode, {}).get(hk)
            if f:
                lines.append(f"| {mode} | {h} | {int(f['questions'])} | " + " | ".join(_cell(f[k]) for k, _ in keys) + " |")
    return lines


def plot_recall(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    for mode, by_k in report["overall"].items():
        ks = sorted(by_k, key=int)
        xs = [int(k) for k in ks]
        line, = ax.plot(xs, [by_k[k]["recall"] for k in ks], marker="o", label=f"{mode} recall@k")
        ax.plot(xs, [by_k[k]["all_supporting"] for k in ks], marker="s", linestyle="--", color=line.get_color(),
                label=f"{mode} all-supporting@k")
    ax.set_xlabel("k (spans per retrieval)")
    ax.set_ylabel("share")
    ax.set_ylim(0, 1)
    ax.set_title(report["meta"].get("title", "supporting-document recall"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_report(report: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"report": out / "report.json", "summary": out / "summary.md", "plot": out / "plot.png"}
    paths["report"].write_text(json.dumps(_clean(report), indent=1, ensure_ascii=False, allow_nan=False), encoding="utf-8")
    paths["summary"].write_text(summary_markdown(report), encoding="utf-8")
    plot_recall(report, paths["plot"])
    if report.get("answerability"):
        paths["answerability"] = out / "answerability.png"
        answerability.plot(report, headline_k(report), paths["answerability"])
    return paths


def _clean(value: Any) -> Any:
    """NaN (a figure over no values) as null, so report.json is strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _cell(value: float | None, fmt: str = "{:.3f}") -> str:
    """A figure for the summary; "-" for one over no rows (NaN, or null once read back)."""
    return "-" if value is None or math.isnan(value) else fmt.format(value)


def _mean(values) -> float:
    return metrics.mean(list(values))
