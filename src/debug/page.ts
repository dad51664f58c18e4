/**
 * The debug UI's one page: plain HTML, CSS and JavaScript served from the package (no CDN, no
 * framework, works offline). Tabs (backends, sessions, logs, trace, orchestrations) under a bar that
 * stays in view, so the logs are one click away whatever the number of backends. Backends are listed
 * running first (a header sorts by its column), an idle one as "not started (remembered)" or
 * "stopped (idle)", and a filter narrows them by id, state or any text of their row. Lists are virtual (only the rows in view are in the DOM), so 10,000
 * trace entries or an orchestration that offered 1,000 tools stay responsive. Every value is put
 * in the page as text (`textContent`), never as HTML: a tool description or a log line cannot
 * inject script.
 */
export const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mcp-agentify debug</title>
<style>
  :root { font: 13px/1.4 system-ui, sans-serif; color: #1d2230; background: #f6f7f9; }
  body { margin: 0; }
  header { display: flex; gap: 16px; align-items: baseline; padding: 8px 14px; background: #1d2230; color: #fff; }
  header h1 { font-size: 15px; margin: 0; }
  header #status { opacity: .8; }
  main { padding: 10px 14px; display: grid; gap: 10px; }
  table { border-collapse: collapse; width: 100%; background: #fff; }
  th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #e3e6ea; white-space: nowrap; }
  th { font-weight: 600; background: #eef0f3; }
  .state-ready { color: #17803d; } .state-failed { color: #b42318; } .state-restarting, .state-starting, .state-needs-auth { color: #b25e09; }
  .state-stopped, .state-idle { color: #667085; }
  nav { position: sticky; top: 0; z-index: 1; background: #f6f7f9; padding: 4px 0; }
  th[data-sort] { cursor: pointer; user-select: none; } th.sorted::after { content: " ▾"; } th.sorted.up::after { content: " ▴"; }
  td button { margin-right: 4px; }
  nav button { border: 1px solid #c9ced6; background: #fff; padding: 4px 12px; cursor: pointer; }
  nav button.active { background: #1d2230; color: #fff; }
  .toolbar { display: flex; gap: 8px; margin: 6px 0; align-items: center; }
  .panel { display: none; } .panel.active { display: block; }
  .list { height: 46vh; overflow-y: auto; position: relative; background: #fff; border: 1px solid #e3e6ea;
    font: 12px/20px ui-monospace, monospace; }
  .list .spacer { position: relative; }
  .row { position: absolute; left: 0; right: 0; height: 20px; padding: 0 6px; white-space: nowrap; overflow: hidden;
    text-overflow: ellipsis; cursor: pointer; }
  .row:hover { background: #eef4ff; } .row.selected { background: #dbe8ff; }
  .lvl-warn { color: #b25e09; } .lvl-error, .lvl-fatal { color: #b42318; } .lvl-debug, .lvl-trace { color: #667085; }
  .err { color: #b42318; }
  pre.detail { background: #fff; border: 1px solid #e3e6ea; padding: 8px; max-height: 38vh; overflow: auto; margin: 6px 0 0;
    white-space: pre-wrap; word-break: break-word; }
  .muted { color: #667085; }
  dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; background: #fff; padding: 8px;
    border: 1px solid #e3e6ea; margin: 6px 0 0; }
  dl.kv dt { font-weight: 600; } dl.kv dd { margin: 0; white-space: pre-wrap; word-break: break-word; }
</style>
</head>
<body>
<header><h1>mcp-agentify</h1><span id="status">connecting…</span></header>
<main>
  <nav><button data-tab="backends" class="active">Backends <span id="backend-tab-count"></span></button><button data-tab="sessions">Sessions <span id="session-tab-count"></span></button><button data-tab="logs">Logs</button><button data-tab="trace">MCP trace</button><button data-tab="orchestrations">Orchestrations</button></nav>
  <section id="backends-panel" data-panel="backends" class="panel active">
    <div class="toolbar">
      <input id="backend-filter" type="search" placeholder="filter: id, state or any text" size="32">
      <span id="backend-count" class="muted"></span>
    </div>
    <table id="backends"><thead><tr>
      <th data-sort="backend">backend</th><th data-sort="state" class="sorted up">state</th><th>address</th><th>protocol</th><th data-sort="tools">tools</th><th>resources</th><th>prompts</th>
      <th data-sort="restarts">restarts</th><th data-sort="calls">calls</th><th data-sort="errors">errors</th><th data-sort="p50Ms">p50</th><th data-sort="p99Ms">p99</th><th>last error</th><th></th>
    </tr></thead><tbody></tbody></table>
  </section>
  <section id="sessions-panel" data-panel="sessions" class="panel">
    <table id="sessions"><thead><tr>
      <th>session</th><th>transport</th><th>client</th><th>user</th><th>opened</th><th>requests</th><th>last request</th><th></th>
    </tr></thead><tbody></tbody></table>
    <p id="sessions-empty" class="muted">No session open.</p>
  </section>
  <section id="logs" data-panel="logs" class="panel">
    <div class="toolbar">
      <label>level <select id="log-level">
        <option value="trace">trace</option><option value="debug">debug</option><option value="info" selected>info</option>
        <option value="warn">warn</option><option value="error">error</option></select></label>
      <input id="log-search" type="search" placeholder="search logs">
      <span id="log-count" class="muted"></span>
    </div>
    <div class="list" id="log-list"><div class="spacer"></div></div>
  </section>
  <section id="trace" data-panel="trace" class="panel">
    <div class="toolbar">
      <input id="trace-filter" type="search" placeholder="filter: method, backend or session">
      <label><input id="trace-newest" type="checkbox"> newest first</label>
      <span id="trace-count" class="muted"></span>
    </div>
    <div class="list" id="trace-list"><div class="spacer"></div></div>
    <pre class="detail" id="trace-detail">Click a message to see its JSON.</pre>
  </section>
  <section id="orchestrations" data-panel="orchestrations" class="panel">
    <div class="list" id="orch-list" style="height: 22vh"><div class="spacer"></div></div>
    <div id="orch-detail" class="muted">Click an orchestration to see it.</div>
  </section>
</main>
<script>
"use strict";
const token = new URLSearchParams(location.search).get("token");
const withToken = (path) => token ? path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : path;
const api = (path, init) => fetch(withToken(path), init).then((r) => r.json());
const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; };
const time = (at) => new Date(at).toISOString().slice(11, 23);
const ms = (v) => v === undefined || v === null ? "-" : v + " ms";

/** A list that renders only the rows in view. */
class VirtualList {
  constructor(container, render, onPick) {
    this.container = container; this.spacer = container.firstElementChild; this.render = render; this.onPick = onPick;
    this.items = []; this.selected = undefined; this.stick = true; this.newestFirst = false;
    container.addEventListener("scroll", () => { this.stick = this.newestFirst ? container.scrollTop <= 24 : container.scrollTop + container.clientHeight >= container.scrollHeight - 24; this.draw(); });
  }
  /** Follows the newest entry while the view is at its end (the bottom, or the top when newest first). */
  set(items) {
    this.items = items; this.spacer.style.height = items.length * 20 + "px";
    if (this.stick) this.container.scrollTop = this.newestFirst ? 0 : this.container.scrollHeight;
    this.draw();
  }
  draw() {
    const first = Math.max(0, Math.floor(this.container.scrollTop / 20) - 5);
    const last = Math.min(this.items.length, first + Math.ceil(this.container.clientHeight / 20) + 10);
    this.spacer.replaceChildren();
    for (let i = first; i < last; i++) {
      const item = this.items[i];
      const row = this.render(item); row.classList.add("row"); row.style.top = i * 20 + "px";
      if (item === this.selected) row.classList.add("selected");
      row.addEventListener("click", () => { this.selected = item; this.onPick && this.onPick(item); this.draw(); });
      this.spacer.appendChild(row);
    }
  }
}

// -- backends
// The last configuration reload: applied (what it changed) or refused (why), as the log says it.
function reloadText(reloads) {
  const last = reloads && reloads[reloads.length - 1];
  if (!last) return "";
  const when = new Date(last.at).toLocaleTimeString();
  if (last.outcome === "refused") return " · config change refused at " + when + ": " + last.message;
  if (last.outcome === "unchanged") return " · config file checked at " + when + ": the running configuration";
  const what = ["added", "removed", "restarted", "reexposed"].filter((k) => last[k] && last[k].length).map((k) => k + " " + last[k].join(", "));
  return " · config reloaded at " + when + (what.length ? " (" + what.join("; ") + ")" : "");
}
// What a backend is doing, in words: an idle one says whether it ran in this start at all.
const stateLabel = (b) => !b.enabled ? "disabled" : b.state !== "idle" ? b.state : b.idle === "stopped" ? "stopped (idle)" : "not started (remembered)";
const stateTitle = (b) => b.state !== "idle" ? "" : b.idle === "stopped"
  ? "stopped after idleMs without use" + (b.idleSince ? " at " + new Date(b.idleSince).toLocaleTimeString() : "") + "; it starts again on its next use"
  : "its tools are known from an earlier run; it starts on its first use";
// Running first, then on the way, then in trouble, then the idle ones (stopped, then never started), then the rest.
const RANK = { ready: 0, starting: 1, restarting: 1, "needs auth": 2, failed: 2, "stopped (idle)": 3, "not started (remembered)": 4, stopped: 5, disabled: 6 };
const rankOf = (b) => RANK[stateLabel(b)] ?? 5;
let backendRows = [];
let sortBy = { key: "state", up: true };
const backendText = (b) => [b.id, b.displayName ?? "", stateLabel(b), b.address ?? "", b.protocolVersion ?? "", b.lastError ?? "", b.signIn ?? "",
  ...(b.pinned ?? []).map((p) => p.name), ...(b.hidden ?? []).map((h) => h.name)].join(" ").toLowerCase();
const compare = (a, b) => {
  const { key, up } = sortBy;
  const by = key === "state" ? rankOf(a.b) - rankOf(b.b) : key === "backend" ? a.b.id.localeCompare(b.b.id) : (a.b[key] ?? -1) - (b.b[key] ?? -1);
  // Numbers largest first until asked the other way; ties keep the configuration's order.
  const signed = key === "state" || key === "backend" ? (up ? by : -by) : (up ? -by : by);
  return signed !== 0 ? signed : a.index - b.index;
};
function showBackends() {
  const terms = document.getElementById("backend-filter").value.toLowerCase().split(/\\s+/).filter(Boolean);
  const rows = backendRows.map((b, index) => ({ b, index, text: backendText(b) }))
    .filter((r) => terms.every((t) => r.text.includes(t)));
  rows.sort(compare);
  const counts = {};
  for (const b of backendRows) counts[stateLabel(b)] = (counts[stateLabel(b)] ?? 0) + 1;
  const summary = Object.keys(counts).sort((x, y) => (RANK[x] ?? 5) - (RANK[y] ?? 5)).map((k) => counts[k] + " " + k).join(" · ");
  document.getElementById("backend-count").textContent = summary + (terms.length ? " · showing " + rows.length + " of " + backendRows.length : "");
  document.getElementById("backend-tab-count").textContent = "(" + (counts.ready ?? 0) + "/" + backendRows.length + " ready)";
  document.querySelectorAll("#backends th[data-sort]").forEach((th) => { th.classList.toggle("sorted", th.dataset.sort === sortBy.key); th.classList.toggle("up", sortBy.up); });
  document.querySelector("#backends tbody").replaceChildren(...rows.map(({ b }) => backendRow(b)));
}
function backendRow(b) {
  const tr = el("tr"); tr.dataset.backend = b.id;
  const cells = [b.displayName ? b.id + " (" + b.displayName + ")" : b.id, stateLabel(b), (b.address ?? "-") + (b.signIn ? " · " + b.signIn : "") + (b.users ? " · users signed in: " + (b.users.map((u) => u.subject).join(", ") || "none") : ""), b.protocolVersion ?? "-",
    b.tools, b.resources ?? "-", b.prompts ?? "-", b.restarts, b.calls, b.errors, ms(b.p50Ms), ms(b.p99Ms),
    [b.lastError ?? "", ...(b.hidden ?? []).map((h) => h.what + " " + h.name + " hides characters (" + h.found + ")"),
      ...(b.pinned ?? []).map((p) => "tool " + p.name + (p.held ? " quarantined" : " flagged") + ": its " + p.changed.join(", ") + " changed since it was pinned; accept with " + p.trust)].filter(Boolean).join("; ")];
  const idleClass = b.state === "idle" ? " state-idle-" + (b.idle ?? "remembered") : "";
  cells.forEach((c, i) => tr.appendChild(el("td", c, i === 1 ? "state state-" + b.state.replace(" ", "-") + idleClass : i === 12 ? "err" : undefined)));
  const title = stateTitle(b); if (title) tr.children[1].title = title;
  // The diff of each changed definition, on hover.
  if ((b.pinned ?? []).length > 0) tr.lastChild.title = b.pinned.map((p) => p.name + ":\\n" + p.diff).join("\\n");
  const td = el("td"); const button = el("button", "restart"); button.disabled = !b.enabled;
  button.addEventListener("click", () => fetch(withToken("/api/backends/" + encodeURIComponent(b.id) + "/restart"), { method: "POST" }).then(refreshBackends));
  // Its log lines: the logs tab, searched for its id.
  const logsButton = el("button", "logs"); logsButton.className = "to-logs";
  logsButton.addEventListener("click", () => { document.getElementById("log-search").value = b.id; openTab("logs"); showLogs(); });
  td.append(button, logsButton); tr.appendChild(td);
  return tr;
}
document.getElementById("backend-filter").addEventListener("input", showBackends);
document.querySelectorAll("#backends th[data-sort]").forEach((th) => th.addEventListener("click", () => {
  sortBy = { key: th.dataset.sort, up: sortBy.key === th.dataset.sort ? !sortBy.up : true };
  showBackends();
}));

// -- sessions: who is connected, with what client, how busy
function showSessions(sessions) {
  document.getElementById("session-tab-count").textContent = "(" + sessions.length + ")";
  document.getElementById("sessions-empty").style.display = sessions.length ? "none" : "";
  document.querySelector("#sessions tbody").replaceChildren(...sessions.map((x) => {
    const tr = el("tr"); tr.dataset.session = x.id;
    [x.id, x.transport, x.client ? x.client + (x.clientVersion ? " " + x.clientVersion : "") : "-", x.subject ?? "-",
      new Date(x.openedAt).toLocaleTimeString(), x.requests ?? 0, x.lastRequestAt ? new Date(x.lastRequestAt).toLocaleTimeString() : "-"]
      .forEach((c) => tr.appendChild(el("td", c)));
    // Its messages: the trace tab, filtered to it.
    const td = el("td"); const button = el("button", "trace");
    button.addEventListener("click", () => { document.getElementById("trace-filter").value = x.id; openTab("trace"); showTrace(); });
    td.appendChild(button); tr.appendChild(td);
    return tr;
  }));
}

async function refreshBackends() {
  try {
    const [status, backends] = await Promise.all([api("/api/status"), api("/api/backends")]);
    document.getElementById("status").textContent =
      "v" + status.version + " · pid " + status.pid + " · " + status.backends.ready + "/" + status.backends.enabled + " backends ready · up " + Math.round(status.uptimeMs / 1000) + " s" + reloadText(status.reloads);
    backendRows = backends;
    showBackends();
    showSessions(status.sessions ?? []);
  } catch (e) { document.getElementById("status").textContent = "gateway not reachable"; }
}

// -- tabs: each has an address (#backends, #sessions, #logs, #trace, #orchestrations), kept in the URL and opened from it
const TABS = ["backends", "sessions", "logs", "trace", "orchestrations"];
const showTab = (tab) => {
  document.querySelectorAll("nav button").forEach((x) => x.classList.toggle("active", x.dataset.tab === tab));
  document.querySelectorAll(".panel").forEach((p) => p.classList.toggle("active", p.dataset.panel === tab));
  if (lists[tab]) lists[tab].draw();
};
// The address without a jump to the panel.
const openTab = (tab) => { history.replaceState(null, "", "#" + tab); showTab(tab); };
const tabOf = () => { const tab = location.hash.slice(1); return TABS.includes(tab) ? tab : "backends"; };
document.querySelectorAll("nav button").forEach((b) => b.addEventListener("click", () => openTab(b.dataset.tab)));
window.addEventListener("hashchange", () => showTab(tabOf()));

const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"];
const MAX = 10000;
const live = (path, onEntry) => {
  const open = () => {
    const ws = new WebSocket(withToken((location.protocol === "https:" ? "wss://" : "ws://") + location.host + path));
    ws.onmessage = (m) => onEntry(JSON.parse(m.data));
    ws.onclose = () => setTimeout(open, 1000);
  };
  open();
};

// -- logs
const logs = [];
const logList = new VirtualList(document.getElementById("log-list"), (e) => {
  const fields = Object.keys(e.fields).length ? " " + JSON.stringify(e.fields) : "";
  return el("div", time(e.at) + " " + e.level.padEnd(5) + " " + e.message + fields, "lvl-" + e.level);
});
const showLogs = () => {
  const min = LEVELS.indexOf(document.getElementById("log-level").value);
  const q = document.getElementById("log-search").value.toLowerCase();
  const shown = logs.filter((e) => LEVELS.indexOf(e.level) >= min && (!q || (e.message + JSON.stringify(e.fields)).toLowerCase().includes(q)));
  document.getElementById("log-count").textContent = shown.length + " of " + logs.length;
  logList.set(shown);
};
document.getElementById("log-level").addEventListener("change", showLogs);
document.getElementById("log-search").addEventListener("input", showLogs);

// -- trace
const trace = [];
const traceDetail = document.getElementById("trace-detail");
const traceList = new VirtualList(document.getElementById("trace-list"), (e) => {
  const arrow = e.channel === "client" ? (e.direction === "in" ? "client → gateway" : "gateway → client") : (e.direction === "out" ? "gateway → " + e.peer : e.peer + " → gateway");
  const text = [time(e.at), arrow.padEnd(26), e.kind.padEnd(12), (e.method ?? "").padEnd(28), e.id === undefined ? "" : "#" + e.id,
    e.durationMs === undefined ? "" : e.durationMs + " ms", e.status ?? ""].join("  ");
  // The server/discover probe a session-era backend refuses is how its era is found: no failure.
  return el("div", text, e.status === "probe" ? "muted" : e.status && e.status !== "ok" ? "err" : undefined);
}, (e) => { try { traceDetail.textContent = JSON.stringify(JSON.parse(e.json), null, 2); } catch { traceDetail.textContent = e.json; } });
const showTrace = () => {
  const q = document.getElementById("trace-filter").value.toLowerCase();
  const shown = q ? trace.filter((e) => ((e.method ?? "") + " " + e.peer).toLowerCase().includes(q)) : trace.slice();
  document.getElementById("trace-count").textContent = shown.length + " of " + trace.length;
  traceList.newestFirst = document.getElementById("trace-newest").checked;
  traceList.set(traceList.newestFirst ? shown.reverse() : shown);
};
document.getElementById("trace-filter").addEventListener("input", showTrace);
document.getElementById("trace-newest").addEventListener("change", () => { traceList.stick = true; showTrace(); });

// -- orchestrations
const orchestrations = [];
const orchDetail = document.getElementById("orch-detail");
const orchList = new VirtualList(document.getElementById("orch-list"), (o) =>
  el("div", time(o.at) + "  " + (o.error ? "✗ " : "✓ ") + o.query.slice(0, 120) + "  → " + (o.choice ? o.choice.name : "(no tool)") + "  " + o.totalMs + " ms", o.error ? "err" : undefined),
  (o) => {
    const dl = el("dl", undefined, "kv");
    const add = (k, v) => { dl.appendChild(el("dt", k)); dl.appendChild(el("dd", v)); };
    add("query", o.query);
    if (o.auditId) add("audit log", "run " + o.auditId);
    add("context", o.context);
    add("routing", o.routing + " · " + o.offered.length + " offered");
    add("offered (ranking)", o.offered.map((t) => t.name + (t.score === undefined ? "" : "  " + t.score)).join("\\n"));
    add("model", (o.model ?? "-") + " · " + ms(o.llmMs) + (o.usage ? " · tokens " + o.usage.promptTokens + " in, " + o.usage.completionTokens + " out" : ""));
    add("choice", o.choice ? o.choice.name + " " + o.choice.arguments : "(none)");
    if (o.explanation) add("explanation", o.explanation);
    add("plan", o.plan ? o.plan.backendId + " " + o.plan.method + " " + o.plan.params : "-");
    if (o.code) add("script", o.code);
    add("steps", (o.steps ?? []).map((s) => s.step + ". " + s.tool + " " + s.arguments + "  " + s.outcome + (s.outcome === "ok" || s.outcome === "approved" || s.outcome === "error" ? " " + s.ms + " ms" : "") + (s.detail ? "  (" + s.detail + ")" : "")).join("\\n") || "-");
    if (o.logs && o.logs.length) add("logs", o.logs.join("\\n"));
    if (o.limit) add("limit", o.limit);
    if (o.error) add("error", o.error.code + " " + o.error.message); else add("result", o.result ?? "");
    add("total", ms(o.totalMs));
    orchDetail.replaceChildren(dl); orchDetail.className = "";
  });
const lists = { logs: logList, trace: traceList, orchestrations: orchList };
showTab(tabOf());
refreshBackends(); setInterval(refreshBackends, 1500);

const push = (array, item, show) => { array.push(item); if (array.length > MAX) array.shift(); schedule(show); };
const pending = new Set();
const schedule = (show) => { if (pending.has(show)) return; pending.add(show); requestAnimationFrame(() => { pending.delete(show); show(); }); };

Promise.all([api("/api/logs?limit=5000&level=trace"), api("/api/mcptrace?limit=10000"), api("/api/orchestrations?limit=500")]).then(([l, t, o]) => {
  logs.push(...l); trace.push(...t); orchestrations.push(...o);
  showLogs(); showTrace(); orchList.set(orchestrations);
  const seen = (array) => array.length ? array[array.length - 1].seq : 0;
  let lastLog = seen(logs), lastTrace = seen(trace);
  live("/ws/logs", (e) => { if (e.seq > lastLog) { lastLog = e.seq; push(logs, e, showLogs); } });
  live("/ws/mcptrace", (e) => {
    if (e.kind === "orchestration") return push(orchestrations, e.entry, () => orchList.set(orchestrations));
    if (e.seq > lastTrace) { lastTrace = e.seq; push(trace, e, showTrace); }
  });
});
</script>
</body>
</html>
`
