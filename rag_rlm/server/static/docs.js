// The Documents view: list a collection's documents, upload files (drop or pick) with the
// upload's and the ingest job's progress, delete a document (two clicks: no native dialog); the
// collection's sources are sources.js's.

import { api, docPath, enc, upload } from "./api.js";
import { clear, h } from "./dom.js";
import { documentSource, SourcesView } from "./sources.js";

const $ = (id) => document.getElementById(id);

export class DocumentsView {
  // ctx: {collection(), openDocument(doc), collectionsChanged()}
  constructor(ctx) {
    this.ctx = ctx;
    this.sources = new SourcesView({
      collection: ctx.collection,
      documentsChanged: () => { this.load({ keepError: true, sources: false }); ctx.collectionsChanged(); },
    });
    const zone = $("dropzone");
    for (const ev of ["dragenter", "dragover"]) {
      zone.addEventListener(ev, (e) => { e.preventDefault(); zone.classList.add("over"); });
    }
    for (const ev of ["dragleave", "drop"]) zone.addEventListener(ev, () => zone.classList.remove("over"));
    zone.addEventListener("drop", (e) => {
      e.preventDefault();
      if (e.dataTransfer?.files?.length) this.upload([...e.dataTransfer.files]);
    });
    $("files").addEventListener("change", (e) => {
      const files = [...e.target.files];
      e.target.value = "";
      if (files.length) this.upload(files);
    });
  }

  showError(error) {
    const box = $("docs-error");
    if (!error) { box.hidden = true; clear(box); return; }
    clear(box).append(h("strong", {}, `${error.type || "error"}: `), error.message);
    box.hidden = false;
  }

  // keepError: after an upload or delete, whose error (if any) must stay on screen
  // sources: the collection's sources are listed again too
  async load({ keepError = false, sources = true } = {}) {
    const name = this.ctx.collection();
    if (sources) this.sources.load();
    $("docs-collection").textContent = name || "—";
    const body = $("docs-table").querySelector("tbody");
    if (!name) { clear(body); $("docs-empty").hidden = false; return; }
    try {
      const data = await api(`/v1/collections/${enc(name)}/documents`);
      if (name !== this.ctx.collection()) return; // the collection changed meanwhile: its list is not this one
      if (!keepError) this.showError(null);
      this.render(name, data.documents || []);
    } catch (e) {
      if (name !== this.ctx.collection()) return;
      clear(body);
      $("docs-empty").hidden = true;
      // a collection that does not exist yet is simply empty: uploading creates it
      if (e.status === 404) { $("docs-empty").hidden = false; return; }
      this.showError(e);
    }
  }

  render(name, documents) {
    const body = clear($("docs-table").querySelector("tbody"));
    $("docs-empty").hidden = documents.length > 0;
    for (const d of documents) {
      const del = h("button", { type: "button", class: "danger" });
      this.arm(del, d, this.armed?.id === d.id && Date.now() < this.armed.until);
      del.addEventListener("click", () => this.confirmDelete(del, name, d));
      body.append(h("tr", { "data-id": d.id },
        h("td", {}, h("button", { type: "button", class: "link",
          onclick: () => this.ctx.openDocument({ documentId: d.id, title: d.title, source: d.source }) },
        d.title || d.id), documentSource(d)),
        h("td", {}, h("code", {}, d.id)),
        h("td", { class: "num" }, String(d.chunks ?? "")),
        h("td", { class: "actions" }, del)));
    }
  }

  // Delete takes two clicks; the armed state survives a re-render of the list.
  arm(button, doc, on) {
    if (on) button.dataset.armed = "1";
    else delete button.dataset.armed;
    button.textContent = on ? "Confirm delete" : "Delete";
    button.setAttribute("aria-label", on ? `Confirm: delete ${doc.id}` : `Delete ${doc.id}`);
  }

  confirmDelete(button, name, doc) {
    if (button.dataset.armed) { this.armed = null; this.remove(name, doc); return; }
    this.armed = { id: doc.id, until: Date.now() + 5000 };
    this.arm(button, doc, true);
    setTimeout(() => {
      if (this.armed?.id === doc.id) this.armed = null;
      if (button.isConnected) this.arm(button, doc, false);
    }, 5000);
  }

  async remove(name, doc) {
    this.showError(null);
    try {
      await api(docPath(name, doc.id), { method: "DELETE" });
      this.status(`Deleted ${doc.id}.`);
    } catch (e) {
      this.showError(e);
    }
    await this.load({ keepError: true });
    this.ctx.collectionsChanged();
  }

  status(...parts) {
    clear($("upload-status")).append(...parts);
  }

  async upload(files) {
    const name = this.ctx.collection();
    if (!name) { this.showError({ type: "no_collection", message: "choose a collection first" }); return; }
    this.showError(null);
    const what = files.length === 1 ? files[0].name : `${files.length} files`;
    const bar = h("progress", { max: "100", value: "0", "aria-label": "Upload progress" });
    this.status(`Uploading ${what}… `, bar);
    try {
      const { status, body } = await upload(name, files, (f) => { bar.value = Math.round(f * 100); });
      this.status(`Ingesting ${what}…`);
      const summary = status === 202 ? await this.followJob(body, what) : body;
      if (summary) this.status(...describe(summary));
    } catch (e) {
      this.status("");
      this.showError(e);
    }
    await this.load({ keepError: true });
    this.ctx.collectionsChanged();
  }

  // Polls the job: its state and documents done, with a Cancel button (DELETE /v1/jobs/{id}).
  async followJob(job, what) {
    const url = job.url || `/v1/jobs/${enc(job.job_id)}`;
    const cancel = h("button", { type: "button", class: "danger", "aria-label": `Cancel the upload of ${what}` },
      "Cancel");
    cancel.addEventListener("click", async () => {
      cancel.disabled = true;
      try { await api(url, { method: "DELETE" }); } catch (e) { this.showError(e); }
    });
    for (;;) {
      const state = await api(url);
      if (state.status === "done") return state.summary;
      if (state.status === "failed") throw { type: "job_failed", message: state.error || "the upload job failed" };
      if (state.status === "cancelled") {
        throw { type: "job_cancelled", message: "the upload was cancelled; documents written before it stopped are kept, each whole" };
      }
      const p = state.progress || {};
      const count = p.documents_total ? `, ${p.documents_done || 0} of ${p.documents_total} documents` : "";
      if (state.cancel_requested) cancel.disabled = true;
      this.status(`Ingesting ${what}: job ${state.status}${count}… `, cancel);
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

function describe(s) {
  const total = ["new", "updated", "unchanged", "failed"].reduce((a, k) => a + (s[`documents_${k}`] || 0), 0);
  if (!total) return ["Nothing was ingested: no file of a supported type (txt, md, html, pdf, docx, jsonl)."];
  const parts = [`${s.documents_new || 0} new`, `${s.documents_updated || 0} updated`,
    `${s.documents_unchanged || 0} unchanged`, `${s.documents_failed || 0} failed`];
  const out = [`Done: ${parts.join(", ")} · ${s.chunks_written || 0} chunks written.`];
  if (s.failed?.length) {
    out.push(h("ul", { class: "failed" }, s.failed.map((f) => h("li", {}, h("code", {}, f.path), `: ${f.reason}`))));
  }
  return out;
}
