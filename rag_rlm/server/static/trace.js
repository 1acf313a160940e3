// "Why this answer": the call tree of GET /v1/traces/{id} as nested, collapsible steps.

import { h, ms } from "./dom.js";

const KIND_LABEL = {
  ask: "question", retrieve: "retrieve", plan: "plan", answer: "answer", merge: "merge",
  reflect: "check", sub_questions: "sub-questions", sub_question: "sub-question", memo: "memo",
};

export function renderTrace(trace, result) {
  const nodes = trace.nodes || [];
  const children = new Map();
  for (const n of nodes) {
    const key = n.parent_id || "";
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(n);
  }
  const known = new Set(nodes.map((n) => n.id));
  const roots = nodes.filter((n) => !n.parent_id || !known.has(n.parent_id));
  const titles = new Map((result?.citations || []).map((c) => [c.document_id, c.title]));
  const sum = (k) => nodes.reduce((a, n) => a + (n[k] || 0), 0);
  const hits = nodes.filter((n) => n.cache_hit).length;
  // steps that only group others are not timed themselves: the answer's own clock is the total
  const top = result?.usage?.seconds ? result.usage.seconds * 1000 : Math.max(0, ...nodes.map((n) => n.latency_ms || 0));

  const summary = h("p", { class: "trace-summary" },
    `${nodes.length} steps · ${ms(top)} · ${sum("tokens_in")} → ${sum("tokens_out")} tokens`,
    hits ? ` · ${hits} cache hit${hits > 1 ? "s" : ""}` : "");
  const step = (n) => {
    const kids = children.get(n.id) || [];
    const row = h("div", { class: `step-row status-${n.status || "ok"}` },
      h("span", { class: `kind kind-${n.kind}` }, KIND_LABEL[n.kind] || n.kind),
      h("span", { class: "step-q" }, n.question || ""),
      h("span", { class: "stats" },
        n.span_ids?.length ? h("span", { class: "stat" }, `${n.span_ids.length} spans`) : null,
        n.cache_hit ? h("span", { class: "stat hit" }, "cache hit") : null,
        n.tokens_in || n.tokens_out ? h("span", { class: "stat" }, `${n.tokens_in} → ${n.tokens_out} tok`) : null,
        n.latency_ms || !kids.length ? h("span", { class: "stat" }, ms(n.latency_ms || 0)) : null,
        n.status && n.status !== "ok" ? h("span", { class: "stat bad" }, n.status) : null));
    const detail = [];
    if (n.span_ids?.length) {
      detail.push(h("ul", { class: "spans", "aria-label": "Retrieved spans" }, n.span_ids.map((id) => {
        const cut = id.lastIndexOf("#");
        const doc = cut > 0 ? id.slice(0, cut) : id;
        return h("li", {}, titles.get(doc) || doc, cut > 0 ? h("span", { class: "muted" }, ` #${id.slice(cut + 1)}`) : "");
      })));
    }
    if (n.note) detail.push(h("p", { class: "step-note" }, n.note));
    if (!kids.length && !detail.length) return h("li", { class: "step leaf" }, row);
    return h("li", { class: "step" }, h("details", { open: n.depth < 1 && kids.length > 0 },
      h("summary", {}, row), ...detail,
      kids.length ? h("ol", { class: "steps" }, kids.map(step)) : null));
  };
  return h("div", {}, summary, h("ol", { class: "steps root" }, roots.map(step)));
}
