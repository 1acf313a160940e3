// The page: header (collection picker, API key), the Ask view (a streamed conversation), the
// Documents view and the Insights view, switched by the URL's hash (#ask, #documents, #insights).

import { AnswerView } from "./answer.js";
import { api, apiKey, setApiKey, streamAsk } from "./api.js";
import { DocumentsView } from "./docs.js";
import { clear, h } from "./dom.js";
import { InsightsView } from "./insights.js";
import { initViewer, openDocument } from "./viewer.js";

const $ = (id) => document.getElementById(id);
const COLLECTION_STORAGE = "rag-rlm.collection";

const state = { collection: localStorage.getItem(COLLECTION_STORAGE) || "", turns: [], running: null };

function banner(error) {
  const box = $("banner");
  if (!error) { box.hidden = true; clear(box); return; }
  clear(box).append(h("strong", {}, `${error.type || "error"}: `), error.message);
  box.hidden = false;
}

function showKeyForm(show) {
  $("key-form").hidden = !show;
  $("key-toggle").setAttribute("aria-expanded", String(show));
  if (show) $("api-key").focus();
}

async function loadCollections() {
  const select = $("collection");
  try {
    const { collections } = await api("/v1/collections");
    banner(null);
    const names = collections.map((c) => c.name);
    if (state.collection && !names.includes(state.collection)) names.push(state.collection); // new, still empty
    clear(select).append(...names.map((n) => {
      const c = collections.find((x) => x.name === n);
      return h("option", { value: n }, c ? `${n} (${c.documents} docs)` : `${n} (new)`);
    }));
    if (!names.length) select.append(h("option", { value: "" }, "no collections yet"));
    if (!names.includes(state.collection)) setCollection(names[0] || "", false);
    select.value = state.collection;
  } catch (e) {
    banner(e);
    if (e.status === 401) showKeyForm(true);
  }
}

function setCollection(name, restart = true) {
  state.collection = name;
  localStorage.setItem(COLLECTION_STORAGE, name);
  if (restart) newConversation();
  if (!$("view-documents").hidden) docs.load();
  if (!$("view-insights").hidden) insights.load();
}

function newConversation() {
  state.running?.abort();
  state.turns = [];
  clear($("conversation"));
  $("empty-hint").hidden = false;
}

async function ask(question) {
  const collection = state.collection || undefined;
  const history = state.turns.filter((t) => t.view.result)
    .flatMap((t) => [{ role: "user", content: t.question }, { role: "assistant", content: t.view.result.answer }]);
  const view = new AnswerView({
    collection, api,
    openCitation: (c) => openDocument({ collection, documentId: c.document_id, title: c.title, source: c.source, citation: c }),
    openDocument: (d) => openDocument({ collection, ...d }),
  });
  const turn = { question, view };
  state.turns.push(turn);
  $("empty-hint").hidden = true;
  const item = h("li", { class: "turn" },
    h("div", { class: "question" }, h("span", { class: "visually-hidden" }, "You asked: "), question), view.el);
  $("conversation").append(item);
  item.scrollIntoView({ block: "end" });

  const controller = new AbortController();
  state.running = controller;
  busy(true);
  try {
    await streamAsk({ question, collection, history },
      { signal: controller.signal, onEvent: (kind, data) => view.on(kind, data) });
    if (!view.result && !view.el.classList.contains("failed")) {
      view.fail({ type: "incomplete", message: "the answer stream ended early" });
    }
  } catch (e) {
    if (e.name === "AbortError") view.stopped();
    else {
      view.fail(e);
      if (e.status === 401) showKeyForm(true);
    }
  } finally {
    if (state.running === controller) state.running = null;
    busy(false);
    if (!view.result) state.turns.splice(state.turns.indexOf(turn), 1); // failed turns are not history
  }
}

function busy(on) {
  $("send").disabled = on;
  $("stop").hidden = !on;
  $("ask-form").setAttribute("aria-busy", String(on));
}

const VIEWS = ["ask", "documents", "insights"];

function route() {
  const view = VIEWS.find((v) => location.hash === `#${v}`) || "ask";
  for (const name of VIEWS) {
    $(`view-${name}`).hidden = name !== view;
    const tab = $(`tab-${name}`);
    if (name === view) tab.setAttribute("aria-current", "page");
    else tab.removeAttribute("aria-current");
  }
  if (view === "documents") docs.load();
  if (view === "insights") insights.load();
}

const docs = new DocumentsView({
  collection: () => state.collection,
  openDocument: (d) => openDocument({ collection: state.collection, ...d }),
  collectionsChanged: () => loadCollections(),
});

const insights = new InsightsView({
  collection: () => state.collection,
  openDocument: (d) => openDocument({ collection: state.collection, ...d }),
});

function init() {
  initViewer();
  $("api-key").value = apiKey();
  $("key-toggle").addEventListener("click", () => showKeyForm($("key-form").hidden));
  $("key-form").addEventListener("submit", (e) => {
    e.preventDefault();
    setApiKey($("api-key").value.trim());
    showKeyForm(false);
    loadCollections().then(() => {
      if (!$("view-documents").hidden) docs.load();
      if (!$("view-insights").hidden) insights.load();
    });
  });
  $("key-clear").addEventListener("click", () => { $("api-key").value = ""; setApiKey(""); loadCollections(); });
  $("collection").addEventListener("change", (e) => setCollection(e.target.value));
  $("new-collection").addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = $("new-collection-name").value.trim();
    if (!name) return;
    $("new-collection-name").value = "";
    setCollection(name); // listed as "(new)" until a file is uploaded into it
    await loadCollections();
    $("files").focus();
  });
  $("ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = $("question").value.trim();
    if (!q || state.running) return;
    $("question").value = "";
    ask(q);
  });
  $("question").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("ask-form").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => state.running?.abort());
  $("new-chat").addEventListener("click", () => { newConversation(); $("question").focus(); });
  window.addEventListener("hashchange", route);
  route();
  loadCollections();
}

init();
