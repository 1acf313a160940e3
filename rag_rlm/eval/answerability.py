"""Answerability in the eval report: how often the system declines ("not found") an unanswerable
question, how often it wrongly declines an answerable one, and the trade-off between the two when
a threshold on the answerability score (`Row.confidence`) decides instead of `Row.found`.

Only for a question set with both kinds of questions. Rows whose answer failed (status 'error')
are no verdict on answerability and are left out (the report counts them under `errors`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import metrics
from .runner import Row

MAX_WRONGLY_DECLINED = 0.10  # the suggested threshold wrongly declines at most this share of answerables
TABLE_ROWS = 12  # curve points in the summary's table (plus the suggested one)


def has_both_kinds(rows: Sequence[Row]) -> bool:
    return any(r.answerable for r in rows) and any(not r.answerable for r in rows)


def section(rows: Sequence[Row]) -> dict[str, Any]:
    """{"max_wrongly_declined", mode: {k: trade-off}} for report.json; {} unless the rows hold
    both answerable and unanswerable questions."""
    if not has_both_kinds(rows):
        return {}
    out: dict[str, Any] = {"max_wrongly_declined": MAX_WRONGLY_DECLINED}
    for mode in dict.fromkeys(r.mode for r in rows):
        out[mode] = {str(k): trade_off([r for r in rows if r.mode == mode and r.k == k])
                     for k in sorted({r.k for r in rows if r.mode == mode})}
    return out


def trade_off(rows: Sequence[Row]) -> dict[str, Any]:
    """The shares at the current default (`found`), the curve over confidence thresholds, and the
    suggested threshold, over the rows of one mode and k."""
    ok = [r for r in rows if r.status != "error"]
    answerable = [r.answerable for r in ok]
    declined_unans, wrongly = metrics.declined_shares([not r.found for r in ok], answerable)
    curve = metrics.answerability_curve([r.confidence for r in ok], answerable)
    return {
        "answerable": sum(answerable), "unanswerable": len(ok) - sum(answerable),
        "at_default": {"declined_unanswerable": declined_unans, "wrongly_declined": wrongly},
        "suggested": metrics.pick_threshold(curve, MAX_WRONGLY_DECLINED),
        "curve": curve,
    }


def table_points(curve: Sequence[dict[str, float]], suggested: dict[str, float] | None) -> list[dict[str, float]]:
    """About TABLE_ROWS points spread evenly along the curve, its two ends and the suggested one
    included, in threshold order."""
    if len(curve) <= TABLE_ROWS + 1:
        return list(curve)
    picked = {round(j * (len(curve) - 1) / (TABLE_ROWS - 1)) for j in range(TABLE_ROWS)}
    points = [curve[i] for i in sorted(picked)]
    if suggested is not None and suggested not in points:
        points.append(suggested)
    return sorted(points, key=lambda p: p["threshold"])


def _label(point: dict[str, float], curve: Sequence[dict[str, float]]) -> str:
    """The threshold as shown; the last point (just above the highest score) as "> highest"."""
    if len(curve) > 1 and point == curve[-1]:
        return f"> {curve[-2]['threshold']:.4g}"
    return f"{point['threshold']:.4g}"


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)  # NaN in memory, null once read back from report.json


def _pct(share: float | None) -> str:
    return f"{100 * share:.1f}%" if _finite(share) else "-"


def summary_lines(report: dict[str, Any], k: str) -> list[str]:
    """The summary.md section: per mode at k, the default's shares and a compact curve table."""
    section_ = report.get("answerability") or {}
    modes = [m for m in section_ if m != "max_wrongly_declined" and k in section_[m]]
    if not modes:
        return []
    limit = section_["max_wrongly_declined"]
    lines = ["", f"Answerability at k={k}: declined when confidence < threshold; suggested threshold: the most "
             f"unanswerable questions declined with at most {100 * limit:.0f}% of answerable ones wrongly declined.",
             ""]
    for mode in modes:
        t = section_[mode][k]
        d = t["at_default"]
        lines += [f"{mode} ({t['unanswerable']} unanswerable, {t['answerable']} answerable):", "",
                  "| threshold | declined unanswerable | wrongly declined answerable |", "|---|---|---|",
                  f"| default (found) | {_pct(d['declined_unanswerable'])} | {_pct(d['wrongly_declined'])} |"]
        for p in table_points(t["curve"], t["suggested"]):
            mark = " **suggested**" if p == t["suggested"] else ""
            lines.append(f"| {_label(p, t['curve'])}{mark} | {_pct(p['declined_unanswerable'])} | "
                         f"{_pct(p['wrongly_declined'])} |")
        lines.append("")
    return lines[:-1]


def cli_lines(report: dict[str, Any], k: str) -> list[str]:
    """One line per mode for the terminal: the default's shares and the suggested threshold."""
    section_ = report.get("answerability") or {}
    out = []
    for mode, by_k in section_.items():
        if mode == "max_wrongly_declined" or k not in by_k:
            continue
        t = by_k[k]
        d, s = t["at_default"], t["suggested"]
        line = (f"answerability {mode} k={k}: declines {_pct(d['declined_unanswerable'])} of {t['unanswerable']} "
                f"unanswerable, wrongly declines {_pct(d['wrongly_declined'])} of {t['answerable']} answerable")
        if s is not None:
            line += (f"; suggested threshold {s['threshold']:.4g} (confidence below it declines): declines "
                     f"{_pct(s['declined_unanswerable'])}, wrongly declines {_pct(s['wrongly_declined'])}")
        out.append(line)
    return out


def plot(report: dict[str, Any], k: str, path: Path) -> None:
    """answerability.png: x wrongly declined answerables, y declined unanswerables, per mode at k;
    the table's points labelled with their thresholds, the suggested one and the default marked."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    section_ = report["answerability"]
    fig, ax = plt.subplots(figsize=(6.5, 5), dpi=110)
    for mode, by_k in section_.items():
        if mode == "max_wrongly_declined" or k not in by_k:
            continue
        t = by_k[k]
        curve = t["curve"]
        line, = ax.plot([p["wrongly_declined"] for p in curve], [p["declined_unanswerable"] for p in curve],
                        label=f"{mode}: threshold on confidence")
        color = line.get_color()
        for p in table_points(curve, t["suggested"]):
            ax.plot(p["wrongly_declined"], p["declined_unanswerable"], "o", color=color, markersize=3)
            ax.annotate(_label(p, curve), (p["wrongly_declined"], p["declined_unanswerable"]), fontsize=6,
                        xytext=(3, -8), textcoords="offset points", color=color)
        if t["suggested"] is not None:
            s = t["suggested"]
            ax.plot(s["wrongly_declined"], s["declined_unanswerable"], "*", color=color, markersize=12,
                    label=f"{mode}: suggested {s['threshold']:.4g}")
        d = t["at_default"]
        if _finite(d["wrongly_declined"]) and _finite(d["declined_unanswerable"]):
            ax.plot(d["wrongly_declined"], d["declined_unanswerable"], "D", color=color, markersize=6,
                    markerfacecolor="none", label=f"{mode}: default (found)")
    ax.axvline(section_["max_wrongly_declined"], color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("answerable questions wrongly declined (share)")
    ax.set_ylabel("unanswerable questions declined (share)")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"{report['meta'].get('title', 'answerability')}: answerability at k={k}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
