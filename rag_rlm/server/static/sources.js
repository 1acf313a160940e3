// The Sources part of the Documents view: the folders, Git repositories and web sites a collection
// is kept in step with, each with its last sync; Sync now (the job followed until it ends), Remove
// (two clicks, like Delete: no native dialog) and the Add source form, whose errors are shown next
// to the field the server names.

import { api, enc } from "./api.js";
import { clear, h } from "./dom.js";

const $ = (id) => document.getElementById(id);
const POLL_MS = 700;
const FIELDS = ["name", "kind", "location", "branch", "every", "include", "exclude", "groups"];
const PLACEHOLDERS = {
  folder: "a folder on the server, e.g. /srv/docs/handbook",
  git: "https://github.com/org/repo.git, or a repository on the server",
  web: "https://docs.example.com/guide/",
};

export class SourcesView {
  // ctx: {collection(), documentsChanged()}
  constructor(ctx) {
    this.ctx = ctx;
    this.progress = new Map(); // key(collection, source) -> {text, error?}: survives a re-render
    this.armed = null; // {name, until}: Remove was clicked once
    this.sources = [];
    $("source-kind").addEventListener("change", () => this.kindChanged());
    $("source-form").addEventListener("submit", (e) => { e.preventDefault(); this.add(); });
    this.kindChanged();
  }

  kindChanged() {
    const kind = $("source-kind").value;
    $("source-branch-field").hidden = kind !== "git";
    $("source-location").placeholder = PLACEHOLDERS[kind] || "";
  }

  async load() {
    const name = this.ctx.collection();
    if (!name) { this.sources = []; this.render(); return; }
    try {
      const data = await api(`/v1/collections/${enc(name)}/sources`);
      if (name !== this.ctx.collection()) return; // the collection changed meanwhile
      this.sources = data.sources || [];
      this.showError(null);
    } catch (e) {
      this.sources = [];
      this.showError(e);
    }
    this.render();
  }

  showError(error) {
    const box = $("sources-error");
    if (!error) { box.hidden = true; clear(box); return; }
    clear(box).append(h("strong", {}, `${error.type || "error"}: `), error.message);
    box.hidden = false;
  }

  status(text) {
    $("sources-status").textContent = text;
  }

  render() {
    const list = clear($("sources-list"));
    $("sources-empty").hidden = this.sources.length > 0;
    for (const s of this.sources) list.append(this.item(s));
  }

  item(s) {
    const key = this.key(s.name);
    const running = this.progress.get(key);
    const sync = h("button", { type: "button", class: "sync", "aria-label": `Sync ${s.name} now`,
      disabled: Boolean(running && !running.error), onclick: () => this.sync(s.name) }, "Sync now");
    const remove = h("button", { type: "button", class: "danger remove" });
    this.arm(remove, s.name, this.armed?.name === s.name && Date.now() < this.armed.until);
    remove.addEventListener("click", () => this.confirmRemove(remove, s.name));
    return h("li", { class: "source-item", "data-source": s.name },
      h("div", { class: "source-head" },
        h("h4", {}, s.name), h("span", { class: "kind" }, s.kind),
        h("code", { class: "source-location" }, s.location),
        s.kind === "git" ? h("span", { class: "muted" }, `branch ${s.branch || "(default)"}`) : null),
      h("p", { class: "source-schedule muted" }, schedule(s)),
      s.groups && s.groups.length ? h("p", { class: "source-groups muted" }, `Readable by groups: ${s.groups.join(", ")}`) : null,
      lastSync(s.last_sync),
      h("p", { class: `source-progress${running?.error ? " error" : ""}`, role: "status" }, running?.text || ""),
      h("div", { class: "source-actions" }, sync, remove));
  }

  key(source) {
    return `${this.ctx.collection()}\u0000${source}`;
  }

  setProgress(key, source, value) {
    if (value) this.progress.set(key, value);
    else this.progress.delete(key);
    const el = [...$("sources-list").children].find((li) => li.dataset.source === source);
    if (!el || key !== this.key(source)) return; // not shown (another collection): kept for later
    const line = el.querySelector(".source-progress");
    line.textContent = value?.text || "";
    line.classList.toggle("error", Boolean(value?.error));
    el.querySelector("button.sync").disabled = Boolean(value && !value.error);
  }

  async sync(source) {
    const collection = this.ctx.collection();
    const key = this.key(source);
    this.setProgress(key, source, { text: "Sync queued…" });
    try {
      const job = await api(`/v1/collections/${enc(collection)}/sources/${enc(source)}/sync`, { method: "POST" });
      await this.follow(job, key, source);
    } catch (e) {
      this.setProgress(key, source, { text: `Sync failed: ${e.message}`, error: true });
    }
  }

  // Polls GET /v1/jobs/{id} until the sync ends, then refreshes the sources and the documents.
  // Throws only when the job cannot be asked about (the server is gone, the key was dropped).
  async follow(job, key, source) {
    const url = job.url || `/v1/jobs/${enc(job.id)}`;
    let state = job;
    while (state.status === "queued" || state.status === "running") {
      const p = state.progress || {};
      const of = p.documents_total ? ` of ${p.documents_total}` : "";
      const count = p.documents_done ? `, ${p.documents_done}${of} documents written` : "";
      this.setProgress(key, source, { text: `Syncing: ${state.status}${count}…` });
      await new Promise((r) => setTimeout(r, POLL_MS));
      state = await api(url);
    }
    this.setProgress(key, source, null);
    await this.load();
    this.ctx.documentsChanged();
    // a sync that could not read its source says why in its last sync; any other end is said here
    const last = this.sources.find((s) => s.name === source)?.last_sync;
    if (state.status !== "done" && !(state.error && last?.error === state.error)) {
      this.setProgress(key, source, { text: `Sync ${state.status}${state.error ? `: ${state.error}` : ""}`, error: true });
    }
  }

  // Remove takes two clicks; the armed state survives a re-render of the list.
  arm(button, source, on) {
    if (on) button.dataset.armed = "1";
    else delete button.dataset.armed;
    button.textContent = on ? "Confirm remove" : "Remove";
    button.setAttribute("aria-label", on ? `Confirm: remove source ${source} and its documents`
      : `Remove source ${source} and its documents`);
  }

  confirmRemove(button, source) {
    if (button.dataset.armed) { this.armed = null; this.remove(source); return; }
    this.armed = { name: source, until: Date.now() + 5000 };
    this.arm(button, source, true);
    this.status(`Click Confirm remove to remove ${source}: its documents are deleted too.`);
    setTimeout(() => {
      if (this.armed?.name === source) this.armed = null;
      if (button.isConnected) this.arm(button, source, false);
    }, 5000);
  }

  async remove(source) {
    const collection = this.ctx.collection();
    this.showError(null);
    try {
      const out = await api(`/v1/collections/${enc(collection)}/sources/${enc(source)}`, { method: "DELETE" });
      const n = out.documents_deleted || 0;
      this.status(`Removed source ${source} and its ${n} document${n === 1 ? "" : "s"}.`);
    } catch (e) {
      this.status("");
      this.showError(e);
    }
    await this.load();
    this.ctx.documentsChanged();
  }

  fieldError(field, message) {
    const box = $(`source-${field}-error`);
    const input = $(`source-${field}`);
    if (!box || !input) return false;
    box.textContent = message;
    box.hidden = false;
    input.setAttribute("aria-invalid", "true");
    input.focus();
    return true;
  }

  clearErrors() {
    for (const field of FIELDS) {
      const box = $(`source-${field}-error`);
      box.hidden = true;
      box.textContent = "";
      $(`source-${field}`).removeAttribute("aria-invalid");
    }
    $("source-form-error").hidden = true;
    clear($("source-form-error"));
  }

  async add() {
    const collection = this.ctx.collection();
    this.clearErrors();
    if (!collection) {
      this.formError({ type: "no_collection", message: "choose or create a collection first" });
      return;
    }
    const kind = $("source-kind").value;
    const body = {
      name: $("source-name").value.trim(), kind, location: $("source-location").value.trim(),
      include: globs($("source-include").value), exclude: globs($("source-exclude").value),
      groups: globs($("source-groups").value),
    };
    if (kind === "git" && $("source-branch").value.trim()) body.branch = $("source-branch").value.trim();
    if ($("source-every").value.trim()) body.every = $("source-every").value.trim();
    const submit = $("source-form").querySelector("button[type=submit]");
    submit.disabled = true;
    try {
      const source = await api(`/v1/collections/${enc(collection)}/sources`, { method: "POST", json: body });
      $("source-form").reset();
      this.kindChanged();
      $("add-source").open = false;
      this.status(`Added source ${source.name}.`);
      await this.load();
      if (source.job) {
        const key = this.key(source.name);
        this.follow(source.job, key, source.name)
          .catch((e) => this.setProgress(key, source.name, { text: `Sync failed: ${e.message}`, error: true }));
      }
    } catch (e) {
      // the server's message names the field first ("location: ..."): the field is shown already
      const message = e.field ? e.message.replace(new RegExp(`^${e.field}: `), "") : e.message;
      if (!(e.field && this.fieldError(e.field, message))) this.formError(e);
    } finally {
      submit.disabled = false;
    }
  }

  formError(error) {
    const box = $("source-form-error");
    clear(box).append(h("strong", {}, `${error.type || "error"}: `), error.message);
    box.hidden = false;
  }
}

// A document's source for the document list: a web page's URL as a link, anything else as text
// (a source's relative path, `path@commit` for Git); nothing when it only repeats the id.
export function documentSource(doc) {
  const src = doc.source;
  if (!src || src === doc.id) return null;
  if (/^https?:\/\//i.test(src)) {
    return h("a", { class: "doc-source", href: src, target: "_blank", rel: "noopener noreferrer" }, src);
  }
  return h("span", { class: "doc-source muted" }, src);
}

function globs(text) {
  return text.split(/[,\n]/).map((g) => g.trim()).filter(Boolean);
}

const when = (seconds) => new Date(seconds * 1000).toLocaleString();

function duration(seconds) {
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

function schedule(s) {
  const next = s.next_run ? ` · next run ${when(s.next_run)}` : "";
  return s.every ? `Syncs every ${duration(s.every)}${next}` : `No schedule: syncs when asked${next}`;
}

function counts(last) {
  const parts = ["added", "updated", "deleted", "unchanged", "failed"].map((k) => `${last[k] || 0} ${k}`);
  if (last.renamed) parts.splice(2, 0, `${last.renamed} renamed`);
  return parts.join(", ");
}

function readerNote(r = {}) {
  if (r.commit) return `commit ${r.commit.slice(0, 12)}`;
  if (r.pages !== undefined) {
    return `${r.pages} page${r.pages === 1 ? "" : "s"}${r.not_modified ? ` (${r.not_modified} not modified)` : ""}`;
  }
  if (r.files !== undefined) return `${r.files} file${r.files === 1 ? "" : "s"}`;
  return "";
}

function lastSync(last) {
  if (!last) return h("div", { class: "source-last" }, h("p", { class: "muted" }, "Not synced yet."));
  const at = last.finished || last.started;
  const took = last.seconds ? ` in ${last.seconds.toFixed(1)} s` : "";
  const note = readerNote(last.reader);
  return h("div", { class: "source-last" },
    h("p", {}, "Last sync ", h("time", { datetime: new Date(at * 1000).toISOString() }, when(at)), `${took}: `,
      h("strong", { class: `sync-${last.status}` }, last.status),
      last.status === "failed" && !last.added && !last.updated && !last.deleted ? "" : ` — ${counts(last)}`,
      note ? ` · ${note}` : ""),
    last.error ? h("p", { class: "error" }, last.error) : null,
    last.failures?.length ? h("ul", { class: "failed" }, last.failures.map((f) =>
      h("li", {}, h("code", {}, f.item), `: ${f.reason}`))) : null);
}
