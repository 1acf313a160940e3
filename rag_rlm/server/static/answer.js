// One answer in the conversation: filled in as the stream arrives (plan, sub-answers, words,
// citations, done), then its sources and the "Why this answer" call tree.

import { clear, h, ms } from "./dom.js";
import { feedbackBar } from "./feedback.js";
import { renderTrace } from "./trace.js";

const MARKER = /\[(\d+(?:\s*,\s*\d+)*)\]/g;

// Text with [n] / [n, m] markers as nodes: plain text, and a button per cited number.
export function markedText(text, citationOf, onCite) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(MARKER)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const group = h("span", { class: "cites" });
    for (const n of m[1].split(",").map((s) => Number(s.trim()))) {
      const c = citationOf(n);
      group.append(h("button", {
        type: "button", class: "cite", "data-n": String(n), "data-doc": c?.document_id, disabled: !c,
        "aria-label": c ? `Source ${n}: ${c.title || c.document_id}` : `Source ${n}`,
        title: c ? `${c.title || c.document_id} (chunk ${c.chunk_index})` : undefined,
        onclick: () => c && onCite(c),
      }, String(n)));
    }
    out.push(group);
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export class AnswerView {
  // ctx: {collection, openCitation(c), openDocument(doc), api}
  constructor(ctx) {
    this.ctx = ctx;
    this.text = "";
    this.citations = [];
    this.subs = new Map();
    this.el = h("article", { class: "answer pending", "aria-busy": "true" });
    this.progress = h("p", { class: "progress" }, h("span", { class: "spinner", "aria-hidden": "true" }), "Searching the documents…");
    this.planList = h("ol", { class: "plan", hidden: true, "aria-label": "Sub-questions" });
    this.body = h("div", { class: "answer-text" });
    this.extra = h("div", { class: "answer-extra" });
    this.el.append(this.progress, this.planList, this.body, this.extra);
    this.queued = false;
  }

  on(kind, data) {
    if (kind === "plan") this.plan(data.sub_questions || []);
    else if (kind === "sub_answer") this.subAnswer(data);
    else if (kind === "delta") this.delta(data.text || "");
    else if (kind === "citations") { this.citations = data.citations || []; this.renderText(); }
    else if (kind === "done") this.done(data);
    else if (kind === "error") this.fail(data.error || {});
  }

  plan(questions) {
    if (!questions.length) return;
    this.setProgress(`Split into ${questions.length} sub-questions…`);
    clear(this.planList).hidden = false;
    for (const sub of questions) {
      const q = typeof sub === "string" ? sub : sub.question || sub.text || ""; // {question, focus, kind}
      const item = h("li", { class: "sub pending" }, h("span", { class: "sub-state", "aria-hidden": "true" }), q);
      this.subs.set(q, item);
      this.planList.append(item);
    }
  }

  subAnswer({ question, status }) {
    let item = this.subs.get(question);
    if (!item) {
      item = h("li", { class: "sub" }, h("span", { class: "sub-state", "aria-hidden": "true" }), question);
      this.subs.set(question, item);
      this.planList.hidden = false;
      this.planList.append(item);
    }
    item.className = `sub ${status === "ok" ? "ok" : "failed"}`;
    item.setAttribute("aria-label", `${question} (${status})`);
  }

  delta(piece) {
    this.text += piece;
    this.setProgress("Writing the answer…");
    if (!this.queued) { // re-render at most once a frame, however fast words arrive
      this.queued = true;
      requestAnimationFrame(() => { this.queued = false; if (!this.result) this.renderText(); });
    }
  }

  renderText() {
    const byN = new Map(this.citations.map((c) => [c.n, c]));
    clear(this.body).append(h("p", { class: "text" },
      ...markedText(this.text, (n) => byN.get(n), (c) => this.ctx.openCitation(c))));
  }

  setProgress(text) {
    clear(this.progress).append(h("span", { class: "spinner", "aria-hidden": "true" }), text);
  }

  done(result) {
    this.result = result;
    this.citations = result.citations || [];
    this.text = result.answer || "";
    this.el.classList.remove("pending");
    this.el.removeAttribute("aria-busy");
    this.progress.remove();
    if (this.planList.childElementCount === 0) this.planList.remove();
    if (result.found === false) this.notFound(result);
    else this.found(result);
    if (result.trace_id) this.extra.append(feedbackBar(result, this.ctx.api));
    this.extra.append(this.whyView(result), this.metaLine(result));
  }

  found(result) {
    this.el.classList.add("found");
    this.renderText();
    if (result.short_answer) {
      this.body.prepend(h("p", { class: "short" }, h("span", { class: "label" }, "Short answer"), result.short_answer));
    }
    const missing = (result.parts || []).filter((p) => p.found === false);
    if ((result.parts || []).length > 1 && missing.length) {
      this.extra.append(h("p", { class: "partial-note" }, "Not found in the documents: ",
        missing.map((p) => p.question).join("; ")));
    }
    if (this.citations.length) {
      this.extra.append(h("section", { class: "sources", "aria-label": "Sources" },
        h("h3", {}, "Sources"),
        h("ol", {}, this.citations.map((c) => h("li", { value: String(c.n) },
          h("button", { type: "button", class: "link", onclick: () => this.ctx.openCitation(c) },
            c.title || c.document_id),
          // the path under the folder it was ingested from, never the server's absolute path
          h("span", { class: "muted" }, ` ${c.document_id}, chunk ${c.chunk_index}`))))));
    }
  }

  notFound(result) {
    this.el.classList.add("not-found");
    const related = result.related_documents || [];
    clear(this.body).append(
      h("p", { class: "nf-title" }, h("span", { class: "nf-icon", "aria-hidden": "true" }, "∅"),
        "Not found in ", h("strong", {}, result.collection || this.ctx.collection)),
      h("p", { class: "text" }, result.answer || "The documents do not answer this question."));
    if (related.length) {
      this.extra.append(h("section", { class: "related", "aria-label": "Related documents" },
        h("h3", {}, "Related documents"),
        h("ul", {}, related.map((d) => h("li", {},
          h("button", { type: "button", class: "link",
            onclick: () => this.ctx.openDocument({ documentId: d.id, title: d.title }) }, d.title || d.id))))));
    }
  }

  whyView(result) {
    const box = h("div", { class: "trace" }, h("p", { class: "muted" }, "Loading the call tree…"));
    let loaded = false;
    const details = h("details", { class: "why" }, h("summary", {}, "Why this answer"), box);
    details.addEventListener("toggle", async () => {
      if (!details.open || loaded || !result.trace_id) return;
      loaded = true;
      try {
        const trace = await this.ctx.api(`/v1/traces/${encodeURIComponent(result.trace_id)}`);
        clear(box).append(renderTrace(trace, result));
      } catch (e) {
        loaded = false;
        clear(box).append(h("p", { class: "error", role: "alert" }, `Could not load the trace: ${e.message}`));
      }
    });
    if (!result.trace_id) clear(box).append(h("p", { class: "muted" }, "This answer has no trace."));
    return details;
  }

  metaLine(result) {
    const u = result.usage || {};
    const bits = [result.status && result.status !== "ok" ? result.status : null,
      u.seconds !== undefined ? ms(u.seconds * 1000) : null,
      u.retrievals ? `${u.retrievals} retrievals` : null,
      u.cache_hits ? `${u.cache_hits} cache hits` : null,
      u.tokens_in || u.tokens_out ? `${u.tokens_in || 0} → ${u.tokens_out || 0} tokens` : null].filter(Boolean);
    const line = h("p", { class: "meta muted" }, bits.join(" · "));
    if (result.resolved_question && result.resolved_question !== result.question) {
      line.append(h("span", { class: "resolved" }, ` · understood as “${result.resolved_question}”`));
    }
    for (const note of result.notes || []) line.append(h("span", { class: "note" }, ` · ${note}`));
    return line;
  }

  fail(error) {
    this.el.classList.remove("pending");
    this.el.classList.add("failed");
    this.el.removeAttribute("aria-busy");
    this.progress.remove();
    this.body.append(h("p", { class: "error", role: "alert" },
      h("strong", {}, error.type ? `${error.type}: ` : "Error: "), error.message || "the answer failed"));
  }

  stopped() {
    if (this.result) return;
    this.fail({ type: "stopped", message: "you stopped this answer" });
  }
}
