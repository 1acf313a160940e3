"""Prometheus text-format metrics, written by hand (a few counters and histograms need no library).

Metrics are per process: with several workers or app replicas, Prometheus scrapes each one and
sums, as it does for any horizontally scaled service.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

Labels = tuple[tuple[str, str], ...]

_HELP = {
    "rag_rlm_http_requests_total": ("counter", "HTTP requests by route, method and status."),
    "rag_rlm_http_request_duration_seconds": ("histogram", "HTTP request latency by route."),
    "rag_rlm_answers_total": ("counter", "Answers produced, by status (ok, partial, degraded)."),
    "rag_rlm_answer_duration_seconds": ("histogram", "Time spent producing an answer."),
    "rag_rlm_llm_calls_total": ("counter", "Generation backend calls made for answers."),
    "rag_rlm_tokens_total": ("counter", "Tokens sent to (in) and received from (out) the backend."),
    "rag_rlm_cache_hits_total": ("counter", "Memo cache hits while answering."),
    "rag_rlm_errors_total": ("counter", "Error responses by error type."),
    "rag_rlm_answers_in_flight": ("gauge", "Answers running or queued right now."),
    "rag_rlm_upload_jobs": ("gauge", "Upload jobs of this process right now, by status (queued, running)."),
}


def _labels(labels: Mapping[str, str]) -> Labels:
    return tuple(sorted((k, str(v)) for k, v in labels.items()))


def _fmt(labels: Labels, extra: tuple[tuple[str, str], ...] = ()) -> str:
    items = labels + extra
    if not items:
        return ""
    escaped = (f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"' for k, v in items)
    return "{" + ",".join(escaped) + "}"


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, dict[Labels, float]] = defaultdict(lambda: defaultdict(float))
        self._hists: dict[str, dict[Labels, list[float]]] = defaultdict(dict)

    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        with self._lock:
            self._values[name][_labels(labels)] += amount

    def set(self, name: str, value: float, **labels: str) -> None:
        with self._lock:
            self._values[name][_labels(labels)] = value

    def observe(self, name: str, seconds: float, **labels: str) -> None:
        key = _labels(labels)
        with self._lock:
            # buckets..., +Inf count, sum
            hist = self._hists[name].setdefault(key, [0.0] * (len(LATENCY_BUCKETS) + 2))
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    hist[i] += 1
            hist[-2] += 1
            hist[-1] += seconds

    def record_answer(self, result: Mapping[str, object]) -> None:
        usage = result.get("usage") or {}
        assert isinstance(usage, Mapping)
        self.inc("rag_rlm_answers_total", status=str(result.get("status", "ok")))
        self.inc("rag_rlm_llm_calls_total", float(usage.get("llm_calls", 0) or 0))
        self.inc("rag_rlm_tokens_total", float(usage.get("tokens_in", 0) or 0), direction="in")
        self.inc("rag_rlm_tokens_total", float(usage.get("tokens_out", 0) or 0), direction="out")
        self.inc("rag_rlm_cache_hits_total", float(usage.get("cache_hits", 0) or 0))
        self.observe("rag_rlm_answer_duration_seconds", float(usage.get("seconds", 0) or 0))

    def render(self) -> str:
        lines: list[str] = []
        with self._lock:
            for name, (kind, text) in _HELP.items():
                lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
                if kind == "histogram":
                    lines += self._render_hist(name)
                else:
                    series = self._values.get(name) or {(): 0.0}
                    lines += [f"{name}{_fmt(k)} {_num(v)}" for k, v in sorted(series.items())]
        return "\n".join(lines) + "\n"

    def _render_hist(self, name: str) -> list[str]:
        out = []
        for key, hist in sorted(self._hists.get(name, {}).items()):
            for bound, count in zip(LATENCY_BUCKETS, hist, strict=False):
                out.append(f"{name}_bucket{_fmt(key, (('le', str(bound)),))} {_num(count)}")
            out.append(f"{name}_bucket{_fmt(key, (('le', '+Inf'),))} {_num(hist[-2])}")
            out.append(f"{name}_count{_fmt(key)} {_num(hist[-2])}")
            out.append(f"{name}_sum{_fmt(key)} {hist[-1]:.6f}")
        return out


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6f}"
