// Quarry web UI: a plain client of the HTTP API. Every text from the
// server is written with textContent, never as HTML.
"use strict";

const $ = (sel) => document.querySelector(sel);
const keyInput = $("#api-key");
keyInput.value = localStorage.getItem("quarry.key") || "";
keyInput.addEventListener("change", () => { localStorage.setItem("quarry.key", keyInput.value.trim()); refresh(); });

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  const k = keyInput.value.trim();
  if (k) h["Authorization"] = "Bearer " + k;
  return h;
}

async function api(method, path, body) {
  const opts = { method, headers: headers(body !== undefined && !(body instanceof FormData)) };
  if (body instanceof FormData) opts.body = body;
  else if (body !== undefined) opts.body = JSON.stringify(body);
  const resp = await fetch(path, opts);
  const data = resp.status === 204 ? null : await resp.json().catch(() => null);
  if (!resp.ok) throw new Error((data && data.detail) || resp.statusText);
  return data;
}

// events reads a server-sent event stream from a fetch response and calls
// on(name, data) for each event.
async function events(resp, on) {
  if (!resp.ok) {
    const data = await resp.json().catch(() => null);
    throw new Error((data && data.detail) || resp.statusText);
  }
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let name = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) on(name, JSON.parse(data));
    }
  }
}

function collection() { return $("#collection").value || "default"; }

function setStatus(text, isError) {
  const s = $("#status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

// Tabs.
for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => {
    for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t === tab);
    for (const p of document.querySelectorAll(".panel")) p.classList.toggle("active", p.id === tab.dataset.panel);
    if (tab.dataset.panel === "hierarchy") loadHierarchy();
  });
}

// The knowledge hierarchy: the tree with passage counts and triggers, and
// the health audit.
function treeList(node) {
  const li = document.createElement("li");
  const name = document.createElement("span");
  name.className = "node";
  name.textContent = node.name + " ";
  const count = document.createElement("span");
  count.className = "count";
  count.textContent = `${node.total} passages`;
  li.append(name, count);
  if (node.triggers && node.triggers.length) {
    const tr = document.createElement("div");
    tr.className = "triggers";
    tr.textContent = "triggers: " + node.triggers.join(", ");
    li.append(tr);
  }
  if (node.children && node.children.length) {
    const ul = document.createElement("ul");
    for (const c of node.children) ul.append(treeList(c));
    li.append(ul);
  }
  return li;
}

// linkGraph draws the link graph as SVG: nodes on a circle, sized by
// their passages, links as thick as they are heavy, the evidence in a
// tooltip; a click searches the node's first trigger in mode auto, which
// leads with the node's passages.
function linkGraph(links, nodes) {
  const ns = "http://www.w3.org/2000/svg";
  const paths = [];
  for (const l of links) for (const p of [l.from_path, l.to_path]) if (!paths.includes(p)) paths.push(p);
  const size = 420, r = size / 2 - 70, at = {};
  paths.forEach((p, i) => {
    const a = (2 * Math.PI * i) / paths.length - Math.PI / 2;
    at[p] = [size / 2 + r * Math.cos(a), size / 2 + r * Math.sin(a)];
  });
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
  svg.setAttribute("class", "graph");
  const el = (name, attrs, title) => {
    const e = document.createElementNS(ns, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (title) {
      const t = document.createElementNS(ns, "title");
      t.textContent = title;
      e.append(t);
    }
    return e;
  };
  for (const l of links) {
    const [x1, y1] = at[l.from_path], [x2, y2] = at[l.to_path];
    svg.append(el("line", { x1, y1, x2, y2, class: "edge", "stroke-width": 1 + 5 * l.weight },
      `${l.from_name} — ${l.to_name}: ${l.type}, weight ${l.weight.toFixed(3)}\n${l.evidence}`));
  }
  for (const p of paths) {
    const n = nodes[p] || { name: p, total: 0, triggers: [] };
    const [x, y] = at[p];
    const g = el("g", { class: "graph-node", "data-path": p });
    g.append(el("circle", { cx: x, cy: y, r: 6 + 2 * Math.sqrt(n.total) }, `${n.name}: ${n.total} passages`));
    const label = el("text", { x, y: y - 10 - 2 * Math.sqrt(n.total), "text-anchor": "middle" });
    label.textContent = n.name;
    g.append(label);
    g.addEventListener("click", () => {
      $("#search-q").value = (n.triggers && n.triggers[0]) || n.name;
      $("#search-mode").value = "auto";
      $("#tab-search").click();
      $("#search-form").requestSubmit();
    });
    svg.append(g);
  }
  return svg;
}

// treeNodes indexes a tree's nodes by path.
function treeNodes(node, out = {}) {
  if (!node) return out;
  out[node.path] = node;
  for (const c of node.children || []) treeNodes(c, out);
  return out;
}

async function loadHierarchy() {
  const tree = $("#tree"), health = $("#health"), graph = $("#links");
  tree.replaceChildren();
  health.replaceChildren();
  graph.replaceChildren();
  const c = encodeURIComponent(collection());
  try {
    const t = await api("GET", `/v1/collections/${c}/tree`);
    if (!t.root) {
      tree.textContent = "No hierarchy yet: ingest a folder.";
    } else {
      const ul = document.createElement("ul");
      ul.append(treeList(t.root));
      tree.append(ul);
    }
    const g = await api("GET", `/v1/collections/${c}/links`);
    if (g.links.length) graph.append(linkGraph(g.links, treeNodes(t.root)));
    else graph.textContent = "No links yet.";
    const h = (await api("GET", `/v1/collections/${c}/health`)).report;
    const head = document.createElement("p");
    head.id = "health-summary";
    head.textContent = `${h.ok ? "OK" : "Needs attention"} · ${h.nodes} nodes · ${h.chunks} chunks · ${h.links} links · ${h.serious} serious · ${h.warnings} warnings`;
    health.append(head);
    for (const f of h.findings || []) {
      const d = document.createElement("div");
      d.className = "finding " + f.severity;
      d.textContent = `${f.check} (${f.severity}, ${f.count}): ${f.advice}` + (f.items && f.items.length ? " — " + f.items.slice(0, 5).join(", ") : "");
      health.append(d);
    }
  } catch (e) {
    const p = document.createElement("p");
    p.className = "error";
    p.textContent = e.message;
    tree.append(p);
  }
}

// Status and collections.
async function refresh() {
  try {
    const st = await api("GET", "/v1/status");
    const sel = $("#collection");
    const current = sel.value || st.default_collection;
    sel.replaceChildren();
    const names = st.collections.map((c) => c.name);
    if (!names.includes(current)) names.unshift(current);
    for (const n of names) {
      const o = document.createElement("option");
      o.value = o.textContent = n;
      sel.append(o);
    }
    sel.value = current;
    const body = $("#collection-table tbody");
    body.replaceChildren();
    for (const c of st.collections) {
      const tr = document.createElement("tr");
      const fields = c.schema && c.schema.fields ? c.schema.fields.filter((f) => f.filterable).map((f) => f.name).join(", ") : "";
      const types = Object.entries(c.by_type || {}).map(([t, n]) => `${t} ${n}`).join(" · ");
      for (const v of [c.name, String(c.documents), types, c.model.provider + "/" + c.model.model, c.search_default || "", fields]) {
        const td = document.createElement("td");
        td.textContent = v;
        tr.append(td);
      }
      tr.dataset.collection = c.name;
      body.append(tr);
    }
    await loadProfiles((st.profiles || []).length > 0);
    setStatus(`${st.model.provider}/${st.model.model} · ${st.chat ? "chat model" : "extractive answers"} · ${st.permission}${st.scoped ? " (scoped)" : ""}`);
  } catch (e) {
    setStatus(e.message, true);
  }
}

// Agent profiles: the selected one goes with every search and question; a
// profile that searches other collections moves the collection with it.
let profiles = [];
async function loadProfiles(limited) {
  const sel = $("#profile");
  const current = sel.value;
  profiles = (await api("GET", "/v1/profiles")).profiles;
  sel.replaceChildren();
  // A key limited to profiles goes through one of them whatever is chosen,
  // so "none" is only offered to callers who may search without.
  if (!limited) {
    const none = document.createElement("option");
    none.value = "";
    none.textContent = "none";
    sel.append(none);
  }
  for (const p of profiles) {
    const o = document.createElement("option");
    o.value = p.name;
    o.textContent = p.name;
    o.title = p.description || "";
    sel.append(o);
  }
  if (profiles.some((p) => p.name === current)) sel.value = current;
}
function profile() { return $("#profile").value; }
$("#profile").addEventListener("change", () => {
  const p = profiles.find((x) => x.name === profile());
  if (p && p.collections && p.collections.length && !p.collections.includes(collection())) {
    const sel = $("#collection");
    if (![...sel.options].some((o) => o.value === p.collections[0])) {
      const o = document.createElement("option");
      o.value = o.textContent = p.collections[0];
      sel.append(o);
    }
    sel.value = p.collections[0];
  }
});

// kindLabel marks a source that is not a file: an object, a web page, a
// text added by hand, a conversation.
function kindLabel(t) {
  return { object: "object · ", url: "web · ", manual: "added · ", conversation: "conversation · " }[t] || "";
}

// The passage panel shows a cited or found passage with where it is.
function where(p) {
  const parts = [p.source];
  if (p.page) parts.push("page " + p.page);
  if (p.headings && p.headings.length) parts.push(p.headings.join(" › "));
  if (p.lineStart) parts.push(`lines ${p.lineStart}–${p.lineEnd}`);
  return parts.join(" · ");
}

function openPassage(p) {
  $("#passage-source").textContent = `[${p.rank}] ${p.source}`;
  const meta = [];
  if (p.page) meta.push("Page " + p.page);
  if (p.headings && p.headings.length) meta.push("Heading: " + p.headings.join(" › "));
  if (p.lineStart) meta.push(`Lines ${p.lineStart}–${p.lineEnd}`);
  meta.push(p.sourceType);
  $("#passage-meta").textContent = meta.join(" · ");
  $("#passage-text").textContent = p.text;
  $("#passage").hidden = false;
}
$("#passage-close").addEventListener("click", () => { $("#passage").hidden = true; });

// Chat: the answer streams in; markers and source chips open passages.
// One thread per page load, so follow-up questions see earlier turns.
const sessionThread = "ui-" + Math.random().toString(36).slice(2, 10);

function renderAnswer(el, text, citations) {
  el.replaceChildren();
  const byN = new Map(citations.map((c) => [c.rank, c]));
  const re = /\[(\d+)\]/g;
  let last = 0, m;
  while ((m = re.exec(text))) {
    el.append(document.createTextNode(text.slice(last, m.index)));
    const c = byN.get(Number(m[1]));
    if (c) {
      const s = document.createElement("span");
      s.className = "marker";
      s.textContent = m[0];
      s.addEventListener("click", () => openPassage(c));
      el.append(s);
    } else {
      el.append(document.createTextNode(m[0]));
    }
    last = re.lastIndex;
  }
  el.append(document.createTextNode(text.slice(last)));
}

// stepLine is one line about an agent's step.
function stepLine(s) {
  if (s.triage) return `triage (${s.triage.by}): ${s.triage.kind}` + (s.triage.aspects.length > 1 ? ` — ${s.triage.aspects.join(" · ")}` : "");
  if (s.call) return `${s.round}: ${s.call.tool} ${JSON.stringify(s.call.arguments)}`;
  if (s.result) return s.result.error ? `${s.round}: ${s.result.tool} failed: ${s.result.error}` : `${s.round}: → ${s.result.ids.length} passages, ${s.result.new} new`;
  if (s.verdict) return `${s.round}: ${s.verdict.sufficient ? "sufficient" : "not sufficient"}` + (s.verdict.reason ? ` — ${s.verdict.reason}` : "");
  return s.kind;
}

$("#chat-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const q = $("#chat-q").value.trim();
  if (!q) return;
  const msgs = $("#messages");
  const user = document.createElement("div");
  user.className = "msg user";
  user.textContent = q;
  const bot = document.createElement("div");
  bot.className = "msg answer";
  const text = document.createElement("div");
  text.className = "text";
  const sources = document.createElement("div");
  sources.className = "sources";
  // An agent's steps, folded beside the answer.
  const steps = document.createElement("details");
  steps.className = "steps";
  steps.hidden = true;
  const stepsSummary = document.createElement("summary");
  const stepList = document.createElement("ol");
  steps.append(stepsSummary, stepList);
  bot.append(steps, text, sources);
  msgs.append(user, bot);
  $("#chat-q").value = "";
  const body = { question: q, thread: sessionThread };
  if (profile()) body.profile = profile();
  const f = $("#chat-filter").value.trim();
  if (f) body.filter = f;
  if ($("#chat-agent").checked) body.agent = true;
  let answer = "";
  const cites = [];
  try {
    const resp = await fetch(`/v1/collections/${encodeURIComponent(collection())}/ask/stream`,
      { method: "POST", headers: { ...headers(true), Accept: "text/event-stream" }, body: JSON.stringify(body) });
    await events(resp, (name, data) => {
      if (name === "step") {
        steps.hidden = false;
        const li = document.createElement("li");
        li.textContent = stepLine(data);
        li.dataset.kind = data.kind;
        stepList.append(li);
        stepsSummary.textContent = `agent: ${stepList.children.length} steps`;
      } else if (name === "text") { answer += data.text; text.textContent = answer; }
      else if (name === "citation") {
        cites.push(data);
        const chip = document.createElement("button");
        chip.type = "button";
        chip.className = "chip";
        chip.textContent = `[${data.rank}] ${kindLabel(data.sourceType)}${where(data)}`;
        chip.dataset.kind = data.sourceType || "";
        chip.addEventListener("click", () => openPassage(data));
        sources.append(chip);
      } else if (name === "answer") {
        renderAnswer(text, data.answer, data.citations);
        if (data.agent) stepsSummary.textContent = `agent: ${data.agent.triage.kind.replace("_", "-")}, ${data.agent.rounds} rounds, ${data.agent.toolCalls} tool calls, ${data.agent.stopped}`;
        bot.dataset.done = "true";
      }
      else if (name === "error") { throw new Error(data.detail); }
    });
  } catch (e) {
    text.textContent = e.message;
    text.className = "text error";
    bot.dataset.done = "true";
  }
});
// Search playground.
$("#search-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const out = $("#search-results");
  const body = { query: $("#search-q").value.trim(), explain: $("#search-explain").checked, top_k: Number($("#search-k").value) || 10 };
  if (!body.query) return;
  const mode = $("#search-mode").value;
  if (mode) body.mode = mode;
  if (profile()) body.profile = profile();
  const f = $("#search-filter").value.trim();
  if (f) body.filter = f.startsWith("{") ? JSON.parse(f) : f;
  out.replaceChildren();
  try {
    const res = await api("POST", `/v1/collections/${encodeURIComponent(collection())}/search`, body);
    const head = document.createElement("p");
    head.textContent = `${res.results.length} results · ${res.mode}`;
    head.id = "search-summary";
    out.append(head);
    for (const r of res.results) {
      const div = document.createElement("div");
      div.className = "result";
      const w = document.createElement("div");
      w.className = "where";
      w.textContent = `#${r.rank} · ${where(r)} · score ${r.score.toFixed(4)}`;
      div.append(w);
      if (r.explain) {
        const e = document.createElement("div");
        e.className = "explain";
        const parts = [];
        if (r.explain.vector) parts.push(`vector rank ${r.explain.vector.rank} (${r.explain.vector.score.toFixed(4)})`);
        if (r.explain.keyword) parts.push(`keyword rank ${r.explain.keyword.rank} (${r.explain.keyword.score.toFixed(4)})`);
        if (r.explain.fusion) parts.push(r.explain.fusion);
        e.textContent = parts.join(" · ");
        div.append(e);
      }
      const p = document.createElement("p");
      p.textContent = r.text;
      div.append(p);
      div.addEventListener("click", () => openPassage(r));
      out.append(div);
    }
  } catch (e) {
    const p = document.createElement("p");
    p.className = "error";
    p.textContent = e.message;
    out.append(p);
  }
});

// Uploads: the job's progress streams until it ends.
$("#upload-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const files = $("#upload-file").files;
  if (!files.length) return;
  const fd = new FormData();
  for (const f of files) fd.append("file", f, f.name);
  const meta = $("#upload-meta").value.trim();
  if (meta) fd.append("metadata", meta);
  const state = $("#job-state");
  const bar = $("#job-progress");
  state.className = "";
  state.textContent = "uploading…";
  try {
    const job = await api("POST", `/v1/collections/${encodeURIComponent(collection())}/uploads`, fd);
    const resp = await fetch(`/v1/jobs/${encodeURIComponent(job.job_id)}/events`, { headers: { ...headers(false), Accept: "text/event-stream" } });
    await events(resp, (name, j) => {
      if (name === "error") throw new Error(j.detail);
      bar.max = Math.max(1, j.total);
      bar.value = j.files;
      state.textContent = `${j.state}: ${j.files}/${j.total} files, ${j.chunks} chunks` + (j.failed ? `, ${j.failed} failed` : "") + (j.error ? ` (${j.error})` : "");
      state.dataset.state = j.state;
    });
    await refresh();
  } catch (e) {
    state.className = "error";
    state.textContent = e.message;
    state.dataset.state = "failed";
  }
});

refresh();
