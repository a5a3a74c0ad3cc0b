// shardlease dashboard, load: shown only while the workers carry loads in
// their member records (a fleet balancing load). Per worker, a bar of its
// load per unit of capacity against its share (the mark at 1×) and the
// tolerance band around it; per shard, a heat grid.
"use strict";

// renderLoad draws the load panel from the fleet view, or hides it.
function renderLoad(f) {
  const panel = document.getElementById("load-panel");
  const l = f.load;
  panel.hidden = !l;
  loadTile(f);
  if (!l) return;
  const tol = l.tolerance;
  document.getElementById("load-summary").textContent =
    `mean ${fmtLoad(l.mean)} per unit of capacity · workers at ${l.min_ratio.toFixed(2)}–${l.max_ratio.toFixed(2)}× their share · ` +
    `band ±${Math.round(tol * 100)} % · ${l.shards_measured} of ${f.summary.owned} owned shards measured`;
  panel.classList.toggle("out-of-band", !l.in_band);
  panel.dataset.inBand = String(l.in_band);
  panel.dataset.tolerance = String(tol);

  // The bars' scale runs from 0 to twice the share, or further when a
  // worker is further out, so the band sits in the middle.
  const live = f.workers.filter(w => w.state !== "dead" && w.load !== undefined);
  const scale = Math.max(2, ...live.map(w => (w.load_ratio ?? 0) * 1.05));
  const pct = x => `${(100 * x / scale).toFixed(2)}%`;
  const rows = live.map(w => {
    const r = w.load_ratio;
    const out = r !== undefined && (r > 1 + tol || r < 1 - tol);
    const bar = el("div", { class: "load-track" },
      el("div", { class: "load-fill" + (out ? " out" : ""), style: `width:${pct(r ?? 0)};background:${colour(w.id)}` }),
      el("div", { class: "load-band", style: `left:${pct(1 - tol)};width:${pct(2 * tol)}`, title: `the band: ${(1 - tol).toFixed(2)}–${(1 + tol).toFixed(2)}× the share` }),
      el("div", { class: "load-share", style: `left:${pct(1)}`, title: "its share: the fleet's mean load per unit of capacity × its capacity" }));
    return el("div", { class: "load-row", "data-worker": w.id, "data-ratio": r !== undefined ? r.toFixed(3) : "",
      "data-out": out ? "true" : "", title: `${w.id}: load ${fmtLoad(w.load)} · capacity ${w.weight} · ` +
        (r !== undefined ? `${r.toFixed(2)}× its share` : "no capacity (draining)") },
      el("span", { class: "mono name", text: w.id }), bar,
      el("span", { class: "num ratio", text: r !== undefined ? `${r.toFixed(2)}×` : "–" }));
  });
  document.getElementById("load-bars").replaceChildren(...rows);

  const max = Math.max(0, ...f.shards.map(sh => sh.load ?? 0));
  const cells = f.shards.map(sh => {
    const known = sh.load !== undefined;
    const heat = known && max > 0 ? sh.load / max : 0;
    const c = el("div", { class: "heat" + (known ? "" : " unknown"), "data-shard": sh.id, "data-load": known ? String(sh.load) : "",
      title: `${sh.id}` + (sh.state === "owned" ? ` on ${sh.owner}` : ` (${sh.state})`) +
        (known ? ` · load ${fmtLoad(sh.load)} (${Math.round(heat * 100)} % of the hottest)` : " · no load figure (counts as the mean)"),
      text: shortNumber(sh.id) });
    if (known) {
      c.style.background = heatColour(heat);
      c.style.color = heat > 0.55 ? "#fff" : "#111";
    }
    return c;
  });
  document.getElementById("heat").replaceChildren(...cells);
}

// heatColour runs from pale yellow (cold) to deep red (the hottest shard).
function heatColour(x) {
  const stops = [[255, 247, 188], [254, 196, 79], [236, 112, 20], [153, 52, 4]];
  const p = Math.min(1, Math.max(0, x)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(p)), t = p - i;
  const mix = stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * t));
  return `rgb(${mix.join(",")})`;
}

// fmtLoad prints a load with three significant digits, as workers carry it.
function fmtLoad(v) {
  if (v === undefined || v === null) return "–";
  return Number(v.toPrecision(3)).toString();
}

// loadTile: while the fleet balances load, uneven counts are expected, so
// the imbalance tile shows the load spread against the band instead.
function loadTile(f) {
  const t = document.getElementById("tile-imbalance");
  const label = t.querySelector(".label");
  t.dataset.load = f.load ? "true" : "";
  if (!f.load) {
    label.textContent = "imbalance (max − min)";
    return;
  }
  const l = f.load;
  label.textContent = "load spread (÷ share)";
  tile("tile-imbalance", `${l.min_ratio.toFixed(2)}–${l.max_ratio.toFixed(2)}×`,
    (l.in_band ? "in" : "outside") + ` the band ±${Math.round(l.tolerance * 100)} % · shard counts differ by ${f.summary.imbalance}`,
    l.in_band ? "ok" : "warn");
}
