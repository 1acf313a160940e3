// The Insights view (GET /v1/insights): what the collection is missing. Questions it could not
// answer, grouped by meaning; answers people rated down, with their citations and comments;
// the documents answers cite most, and those no answer cited.

import { api } from "./api.js";
import { clear, h } from "./dom.js";

const $ = (id) => document.getElementById(id);
const day = (iso) => (iso || "").slice(0, 10);

export class InsightsView {
  // ctx: {collection(), openDocument(doc)}
  constructor(ctx) {
    this.ctx = ctx;
    $("insights-since").addEventListener("change", () => this.load());
  }

  async load() {
    const name = this.ctx.collection();
    $("insights-collection").textContent = name || "—";
    const box = clear($("insights-body"));
    const error = $("insights-error");
    error.hidden = true;
    if (!name) return;
    box.append(h("p", { class: "muted" }, "Loading…"));
    const since = $("insights-since").value;
    try {
      const data = await api(`/v1/insights?collection=${encodeURIComponent(name)}&since=${encodeURIComponent(since)}`);
      if (this.ctx.collection() === name) this.render(data);
    } catch (e) {
      clear(box);
      clear(error).append(h("strong", {}, `${e.type || "error"}: `), e.message);
      error.hidden = false;
    }
  }

  render(data) {
    $("insights-summary").textContent = `${plural(data.questions, "question")} since ${day(data.since)}, ` +
      `${data.not_found_questions} not found, ${plural(data.rated_down_answers, "answer")} rated down.`;
    clear($("insights-body")).append(
      section("insights-missing", "Not found, grouped by meaning",
        data.not_found.length ? h("ol", { class: "groups" }, data.not_found.map((g) => this.group(g)))
          : empty("No unanswered questions in this window.")),
      section("insights-rated", "Answers rated down",
        data.rated_down.length ? h("ol", { class: "rated" }, data.rated_down.map((a) => this.rated(a)))
          : empty("No answer was rated down in this window.")),
      section("insights-cited", "Most cited",
        data.most_cited.length ? h("ol", { class: "cited" }, data.most_cited.map((d) => h("li", {},
          this.docLink(d), h("span", { class: "count" }, `${d.citations}×`))))
          : empty("No answer cited a document in this window.")),
      section("insights-never", `Never cited (${data.never_cited_documents} of ${data.documents} documents)`,
        data.never_cited.length ? h("ul", { class: "never" }, data.never_cited.map((d) => h("li", {}, this.docLink(d))))
          : empty("Every document was cited.")));
  }

  group(g) {
    const others = g.questions.filter((q) => q.question !== g.label);
    return h("li", { class: "group" },
      h("span", { class: "count", title: `asked ${g.count} times` }, `${g.count}×`),
      h("span", { class: "label" }, g.label),
      h("span", { class: "muted" }, ` last asked ${day(g.last_asked)}`),
      others.length ? h("details", {}, h("summary", {}, `${g.wordings - 1} other wording${g.wordings > 2 ? "s" : ""}`),
        h("ul", {}, others.map((q) => h("li", {}, q.question, q.count > 1 ? ` (${q.count}×)` : ""))))
        : null);
  }

  rated(a) {
    return h("li", { class: "rated-answer" },
      h("p", { class: "q" }, h("strong", {}, a.question)),
      h("p", { class: "a" }, a.answer || "(no answer text)"),
      a.citations.length ? h("p", { class: "cites-line muted" }, "Cited: ",
        a.citations.flatMap((c, i) => [i ? ", " : "", this.docLink(c)])) : null,
      ...a.comments.map((c) => h("blockquote", {}, c)),
      h("p", { class: "muted" }, `${a.down} down · ${a.up} up · ${day(a.last_rated)}`));
  }

  docLink(d) {
    return h("button", { type: "button", class: "link",
      onclick: () => this.ctx.openDocument({ documentId: d.document_id, title: d.title }) }, d.title || d.document_id);
  }
}

function section(id, title, body) {
  return h("section", { id, "aria-labelledby": `${id}-title` }, h("h3", { id: `${id}-title` }, title), body);
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function empty(text) {
  return h("p", { class: "empty-small muted" }, text);
}
