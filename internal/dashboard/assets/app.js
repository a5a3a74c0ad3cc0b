// shardlease dashboard: renders /api/v1/fleet and follows /api/v1/events.
// No framework and no network beyond this server, so it works offline.
"use strict";

// Distinct colours, the first twelve as far apart as possible (a default
// demo has twelve workers); more wrap around.
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
  "#bcbd22", "#393b79", "#fdd835", "#00695c", "#f4a582", "#6b6ecf", "#98df8a", "#ad494a", "#c5b0d5",
  "#637939", "#ffbb78", "#843c39"];
const colours = new Map(); // worker → colour, stable for the life of the page
const canCrash = document.body.dataset.crash === "true";
let lastFleet = null;
let previousOwners = new Map();
let previousTokens = new Map();
const movedAt = new Map(); // shard → when its owner last changed on this page
const HIGHLIGHT_MS = 5000;

function colour(worker) {
  if (!colours.has(worker)) colours.set(worker, PALETTE[colours.size % PALETTE.length]);
  return colours.get(worker);
}

function inkFor(bg) {
  const n = parseInt(bg.slice(1), 16);
  const r = n >> 16, g = (n >> 8) & 255, b = n & 255;
  return (0.299 * r + 0.587 * g + 0.114 * b) > 150 ? "#111" : "#fff";
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function ago(iso) {
  if (!iso) return "";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, "0")}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  return `${Math.floor(s / 86400)}d`;
}

function clock(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour12: false });
}

// shortSession keeps what tells sessions apart: a Consul UUID's first block.
function shortSession(s) {
  if (!s) return "–";
  return s.length > 12 ? s.slice(0, 8) : s;
}

function shortNumber(id) {
  const m = /(\d+)$/.exec(id);
  return m ? m[1] : id;
}

function tile(id, value, sub, cls) {
  const t = document.getElementById(id);
  t.querySelector(".value").textContent = value;
  if (sub !== undefined) t.querySelector(".sub").textContent = sub;
  t.classList.remove("ok", "warn", "bad");
  if (cls) t.classList.add(cls);
}

function render(f) {
  lastFleet = f;
  const err = document.getElementById("error");
  if (f.error) {
    err.hidden = false;
    err.textContent = (f.shards ? "Showing the last view: " : "") + f.error;
  } else {
    err.hidden = true;
  }
  if (!f.shards) return;
  if (!f.config) {
    err.hidden = false;
    err.textContent = `No fleet at ${f.name}: nothing is configured under this prefix yet.`;
  }
  document.body.classList.toggle("has-offsets", !!f.has_offsets);
  for (const w of f.workers) colour(w.id);

  renderAssignor(f.assignor);
  const s = f.summary;
  tile("tile-owned", `${s.owned} / ${s.shards}`,
    s.free || s.orphaned ? `${s.free} free · ${s.orphaned} orphaned` : "every shard has an owner",
    s.owned === s.shards ? "ok" : "bad");
  tile("tile-workers", `${s.workers_live}`,
    `live · ${s.workers_draining} draining` + (s.workers_cordoned ? ` · ${s.workers_cordoned} cordoned` : "") +
    (s.workers_returning ? ` · ${s.workers_returning} returning` : "") + ` · ${s.workers_dead} dead`, s.workers_dead ? "warn" : "ok");
  tile("tile-imbalance", `${s.imbalance}`, s.imbalance <= 1 ? "balanced" : "rebalancing", s.imbalance <= 1 ? "ok" : "warn");
  tile("tile-pending", `${s.pending_moves}`,
    s.pending_moves ? `${s.handoffs_pending} hand-offs in flight · ${s.placements_pending} assigned, not yet taken` : "every shard where the assignor put it",
    s.pending_moves ? "warn" : "ok");
  renderQueue(f);
  const lagTile = document.getElementById("tile-lag");
  lagTile.hidden = s.max_lag === undefined || s.max_lag === null;
  if (!lagTile.hidden) tile("tile-lag", `${s.max_lag}`, undefined, "");

  renderProblems(f);
  renderFreeze(f.freeze);
  renderReshard(f.reshard);
  renderVersions(f.versions || []);
  renderHistory(f.history_behind || [], f.name);
  renderSteps(f.steps_waiting || []);
  renderUnplaceable(f.unplaceable || [], f.name);
  renderGrid(f);
  renderLegend(f);
  renderWorkers(f);
  renderMoves(f);
  renderShards(f);
  if (typeof renderLoad === "function") renderLoad(f);
  document.getElementById("footer").textContent =
    `coordinator index ${f.index} · view built ${clock(f.at)} · ${f.problems ? f.problems.length : 0} problems`;
}

// renderAssignor: who holds P/assignor, at which epoch, since when. Nobody
// holding it (between two assignors) is shown as a problem: nothing is
// being assigned.
function renderAssignor(a) {
  const t = document.getElementById("tile-assignor");
  if (!a || !a.held) {
    tile("tile-assignor", "none", a && a.problem ? a.problem : "nobody holds P/assignor: nothing is assigned", "bad");
  } else {
    tile("tile-assignor", a.worker || "(unreadable)",
      `epoch ${a.epoch}` + (a.since ? ` · since ${clock(a.since)} (${ago(a.since)} ago)` : ""), a.worker ? "ok" : "warn");
  }
  t.dataset.worker = a && a.held ? a.worker || "" : "";
  t.dataset.epoch = a && a.held ? String(a.epoch) : "";
  t.title = (a && a.problem) || "";
}

// markText says who set an operator's state, when and why.
function markText(m) {
  let s = `by ${m.by || "(unknown: the key cannot be read)"}`;
  if (m.at) s += ` since ${clock(m.at)} (${ago(m.at)} ago)`;
  if (m.reason) s += `: ${m.reason}`;
  return s;
}

// renderFreeze: while the fleet is frozen, a banner above everything says
// so, with who froze it, when and why.
function renderFreeze(freeze) {
  const b = document.getElementById("freeze");
  b.hidden = !freeze;
  b.dataset.by = freeze ? freeze.by : "";
  b.textContent = freeze
    ? `Frozen ${markText(freeze)} — no rebalancing moves start, only failover of crashed workers' shards ('shardctl unfreeze' lifts it).`
    : "";
}

// renderReshard: while a reshard runs, a banner says to what, who started
// it, and how far it is: parents closed, closing now and waiting their
// turn; children open and waiting for a parent.
function renderReshard(r) {
  const b = document.getElementById("reshard");
  b.hidden = !r;
  b.dataset.waiting = r ? String((r.waiting || []).length) : "";
  if (!r) {
    b.textContent = "";
    return;
  }
  const n = a => (a || []).length;
  const l = r.layout;
  const closing = n(r.closing), open = n(r.open);
  b.textContent = `Resharding to ${l.shards} shards named ${l.name}-… (lineage ${l.lineage}), started ${markText(l.started)}: ` +
    `parents ${n(r.closed)} closed, ${closing} closing now, ${open - closing} waiting their turn; ` +
    `children ${n(r.opened) + n(r.openable)} open, ${n(r.waiting)} waiting for a parent.`;
}

// renderVersions: while the live workers run more than one release or
// protocol (a roll in progress, or one stopped halfway), a banner says
// which, with how many workers each.
function renderVersions(vs) {
  const b = document.getElementById("mixed");
  b.hidden = vs.length < 2;
  b.dataset.versions = String(vs.length);
  b.textContent = vs.length < 2 ? ""
    : "Mixed versions: " + vs.map(v => `${v.release} (protocol ${v.protocol}) ×${v.workers}`).join(", ") + " — a roll in progress, or one that stopped halfway.";
}

// renderHistory: held shards whose tokens are below the offsets store's
// floors cannot run: the coordinator lost its history; a banner says so
// and names the command that recovers.
function renderHistory(behind, name) {
  const b = document.getElementById("history");
  b.hidden = behind.length === 0;
  b.dataset.behind = String(behind.length);
  b.textContent = behind.length === 0 ? ""
    : `History behind: ${behind.length} held shard${behind.length === 1 ? "'s token is" : "s' tokens are"} below the offsets store's floors, ` +
      "so their fences are refused and they do not run: the coordinator's history is older than the store's " +
      `(rebuilt empty, or restored from an older snapshot). Once every worker uses this coordinator: shardctl recover -prefix ${name} -offsets …`;
}

// renderSteps: a protocol step some live workers do not speak holds back
// what needs it (docs/design.md, "Compatibility"); a banner names them.
function renderSteps(waits) {
  const b = document.getElementById("steps");
  b.hidden = waits.length === 0;
  b.textContent = waits.map(w => `Step waiting: "${w.step}" is not spoken by live workers ${w.workers.join(", ")}` +
    (w.step === "generations" ? " — 'shardctl recover' refuses until they are upgraded or stopped." : ".")).join(" ");
}

// renderUnplaceable: shards the placement rules let no live worker own
// stay unowned rather than go elsewhere; a banner names how many and the
// first few, and the command that changes the rules.
function renderUnplaceable(ids, name) {
  const b = document.getElementById("unplaceable");
  b.hidden = ids.length === 0;
  b.dataset.shards = String(ids.length);
  b.textContent = ids.length === 0 ? ""
    : `Unplaceable: ${ids.length} shard${ids.length === 1 ? "" : "s"} (${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""}) ` +
      "no live worker may own under the placement rules; they stay unowned until a worker the rules allow joins, " +
      `or the rules change (shardctl rules -prefix ${name}).`;
}

// renderQueue: hand-offs in flight against the budget (when the server
// knows it), and those waiting for room or for the freeze to be lifted.
function renderQueue(f) {
  const q = f.queue || { in_flight: 0, queued: 0 };
  const t = document.getElementById("tile-queue");
  t.dataset.inFlight = String(q.in_flight);
  t.dataset.queued = String(q.queued);
  t.dataset.budget = q.budget ? String(q.budget) : "";
  const waiting =
    q.queued ? `${q.queued} waiting` + (f.freeze ? " until the freeze is lifted" : " for room under the budget") : "nothing waiting";
  tile("tile-queue", q.budget ? `${q.in_flight} / ${q.budget}` : `${q.in_flight}`, waiting, q.queued ? "warn" : "ok");
}

// A fleet full of foreign keys would push everything else off the page:
// the first few problems are listed, the rest counted.
const MAX_PROBLEMS = 20;

function renderProblems(f) {
  const problems = f.problems || [];
  const panel = document.getElementById("problems");
  panel.hidden = problems.length === 0;
  const items = problems.slice(0, MAX_PROBLEMS).map(p => el("li", { text: p }));
  if (problems.length > MAX_PROBLEMS) items.push(el("li", { text: `… and ${problems.length - MAX_PROBLEMS} more (shardctl status lists them all)` }));
  panel.querySelector("ul").replaceChildren(...items);
}

function renderGrid(f) {
  const grid = document.getElementById("grid");
  const cells = [];
  const owners = new Map();
  for (const sh of f.shards) {
    owners.set(sh.id, sh.state === "owned" ? sh.owner + "@" + sh.token : "");
    const lines = [sh.id];
    if (sh.state === "owned") lines.push(`owner ${sh.owner} · token ${sh.token}`, `since ${clock(sh.since)} (${ago(sh.since)} ago)`);
    else if (sh.state === "orphaned") lines.push(`ORPHANED: held by session ${sh.session} · token ${sh.token}`);
    else lines.push("FREE: no owner");
    if (f.has_offsets) lines.push(`offset ${sh.offset ?? 0} · floor ${sh.floor ?? 0}` + (sh.lag !== undefined ? ` · lag ${sh.lag}` : ""));
    if (sh.assigned && sh.assigned !== sh.owner) lines.push(`assigned to ${sh.assigned}`);
    else if (!sh.assigned && sh.state === "owned") lines.push("in no assignment key (being handed off, or its owner's key is missing)");
    lines.push(`why: ${sh.why}`);
    const c = el("div", {
      class: "cell " + sh.state, title: lines.join("\n"),
      "data-shard": sh.id, "data-state": sh.state, "data-owner": sh.state === "owned" ? sh.owner : "",
      "data-token": String(sh.token), text: shortNumber(sh.id),
    });
    if (sh.state === "owned") {
      const bg = colour(sh.owner);
      c.style.background = bg;
      c.style.color = inkFor(bg);
      // A move, not a first acquisition: the shard had an owner before.
      const before = previousOwners.get(sh.id);
      if (before !== undefined && before !== owners.get(sh.id) && (previousTokens.get(sh.id) || 0) > 0 && !firstOwner(sh)) {
        movedAt.set(sh.id, Date.now());
      }
      if (Date.now() - (movedAt.get(sh.id) || 0) < HIGHLIGHT_MS) c.classList.add("moved");
    }
    cells.push(c);
  }
  previousOwners = owners;
  previousTokens = new Map(f.shards.map(sh => [sh.id, sh.token]));
  grid.replaceChildren(...cells);
}

// firstOwner: the shard's first acquisition ever (nothing moved).
function firstOwner(sh) {
  return sh.reason === "initial: never owned";
}

function renderLegend(f) {
  const items = f.workers.filter(w => w.state !== "dead" || w.shards > 0).map(w =>
    el("span", { "data-worker": w.id },
      el("i", { class: "swatch", style: `background:${colour(w.id)}` }),
      `${w.id} (${w.shards})`));
  items.push(el("span", {}, el("i", { class: "swatch", style: "border:2px dashed #c4320a;background:#fff" }), "free"));
  document.getElementById("legend").replaceChildren(...items);
}

function renderWorkers(f) {
  // Grouped by zone when workers have one, as the assignor splits the shards.
  const zoned = f.workers.some(w => w.zone);
  const workers = zoned ? [...f.workers].sort((a, b) => (a.zone || "").localeCompare(b.zone || "")) : f.workers;
  const rows = workers.map(w => {
    const crash = canCrash && w.state !== "dead"
      ? el("button", { class: "crash", text: "crash", title: `crash ${w.id}: abandon its session without releasing`, onclick: () => crashWorker(w.id) })
      : null;
    const isAssignor = f.assignor && f.assignor.held && f.assignor.worker === w.id;
    const cordoned = w.cordon && w.state !== "dead";
    const tr = el("tr", { class: w.state, "data-worker": w.id, "data-state": w.state, "data-shards": String(w.shards),
      "data-cordon": cordoned ? w.cordon.by : "", "data-returning": w.returning ? w.rejoin_until : "",
      "data-assigned": String(w.assigned ?? 0), "data-stuck": w.stuck ? "true" : "", "data-assignor": isAssignor ? "true" : "" },
      el("td", {}, el("i", { class: "swatch", style: `background:${colour(w.id)}` })),
      el("td", { class: "zone", "data-zone": w.zone || "", text: w.zone || "–" }),
      el("td", { class: "mono" }, w.id, isAssignor ? el("span", { class: "badge assignor", text: "assignor", title: `holds P/assignor, epoch ${f.assignor.epoch}` }) : null),
      el("td", {}, el("span", { class: "badge " + w.state, text: w.state }),
        w.stuck ? el("span", { class: "badge stuck", text: "stuck", title: "the assignor gave it shards it did not take: it is given nothing until the verdict ends or it restarts" }) : null,
        w.probation ? el("span", { class: "badge stuck", text: "probation", title: "a stuck verdict ended: it is given one shard more than it holds until it takes one" }) : null,
        cordoned ? el("span", { class: "badge cordoned", text: "cordoned", title: `cordoned ${markText(w.cordon)}: keeps what it has, given nothing new` }) : null,
        w.returning ? el("span", { class: "badge returning", text: `returning by ${clock(w.rejoin_until)}`,
          title: `restarting: its shards are reserved for it (idle) until ${clock(w.rejoin_until)}` }) : null),
      el("td", { class: "num" + (w.shards !== w.assigned && w.state !== "dead" ? " differs" : ""),
        title: `owns ${w.shards} · its assignment gives it ${w.assigned}`, text: `${w.shards} / ${w.assigned}` }),
      el("td", { class: "version", text: w.version || "–" }),
      el("td", { class: "mono", title: w.session || "", text: shortSession(w.session) }),
      el("td", { text: w.state === "dead" ? "" : ago(w.started) }),
      el("td", { class: "act" }, crash));
    return tr;
  });
  document.querySelector("#workers tbody").replaceChildren(...rows);
  document.getElementById("workers").classList.toggle("no-versions", !f.workers.some(w => w.version));
  document.getElementById("workers").classList.toggle("no-zones", !zoned);
}

const ICONS = { acquired: "→", released: "←", expired: "✕", joined: "+", left: "−", draining: "↓", undrained: "↑",
  elected: "★", vacated: "☆", cordoned: "⊘", uncordoned: "○", frozen: "❄", unfrozen: "▶" };
let seenEvents = new Set();

function renderMoves(f) {
  const list = document.getElementById("moves");
  const fresh = new Set();
  const items = (f.events || []).map(e => {
    const key = `${e.index}|${e.kind}|${e.shard || ""}|${e.worker}`;
    fresh.add(key);
    let what;
    if (e.shard) {
      const who = e.kind === "acquired"
        ? `${e.worker}${e.from && e.from !== e.worker ? " from " + e.from : ""} · token ${e.token}`
        : `${e.worker} ${e.kind}`;
      what = [el("i", { class: "swatch", style: `background:${colour(e.worker)}` }), " ", el("b", { text: e.shard }), " ", who];
    } else if (e.kind === "frozen" || e.kind === "unfrozen") {
      what = [el("b", { text: "fleet" }), ` ${e.kind}`];
    } else {
      what = [el("b", { text: e.worker }), ` ${e.kind}` + (e.kind === "elected" || e.kind === "vacated" ? ` assignor (epoch ${e.token})` : "")];
    }
    const li = el("li", { class: e.kind + (seenEvents.size && !seenEvents.has(key) ? " fresh" : ""),
      "data-kind": e.kind, "data-shard": e.shard || "", "data-worker": e.worker, "data-from": e.from || "" },
      el("span", { class: "t", text: clock(e.at) }),
      el("span", { class: "k", text: ICONS[e.kind] || "·" }),
      el("span", { class: "what", title: e.reason }, ...what, el("span", { class: "why", text: " — " + e.reason })));
    return li;
  });
  seenEvents = fresh;
  if (items.length === 0) items.push(el("span", { class: "empty", text: "no moves seen yet" }));
  list.replaceChildren(...items);
}

function renderShards(f) {
  if (!document.getElementById("shards-details").open) return;
  const rows = f.shards.map(sh => el("tr", { "data-shard": sh.id },
    el("td", { class: "mono", text: sh.id }),
    el("td", {}, sh.state === "owned" ? el("i", { class: "swatch", style: `background:${colour(sh.owner)}` }) : null,
      " " + (sh.state === "owned" ? sh.owner : sh.state)),
    el("td", { class: "num", text: sh.token ? String(sh.token) : "–" }),
    el("td", { text: sh.state === "owned" ? `${clock(sh.since)} (${ago(sh.since)})` : "" }),
    el("td", { class: "num offsets", text: sh.offset !== undefined ? String(sh.offset) : "" }),
    el("td", { class: "num offsets", text: sh.lag !== undefined ? String(sh.lag) : "" }),
    el("td", { class: "why", text: sh.why })));
  document.querySelector("#shards tbody").replaceChildren(...rows);
}

async function crashWorker(id) {
  const r = await fetch(`api/v1/workers/${encodeURIComponent(id)}/crash`, { method: "POST", headers: { "X-Shardlease-Action": "crash" } });
  if (!r.ok) alert(`crash ${id}: ${await r.text()}`);
}

function connected(ok, text) {
  const c = document.getElementById("conn");
  c.classList.toggle("live", ok);
  c.classList.toggle("down", !ok);
  document.getElementById("conn-text").textContent = text;
}

function follow() {
  const es = new EventSource("api/v1/events");
  es.addEventListener("fleet", ev => {
    connected(true, "live");
    render(JSON.parse(ev.data));
  });
  es.onerror = () => connected(false, "disconnected: retrying…");
}

document.getElementById("shards-details").addEventListener("toggle", () => lastFleet && renderShards(lastFleet));
fetch("api/v1/fleet").then(r => r.json()).then(render).catch(() => {}).finally(follow);
// Ages ("up 3m") move even when nothing else does.
setInterval(() => lastFleet && renderWorkers(lastFleet), 5000);
