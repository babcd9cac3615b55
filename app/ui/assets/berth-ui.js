// berth web UI: one script for both faces. Live (served at /ui/ by `berth run` / `berth serve`) it
// polls /ui/api/*; offline (`berth simulate --html`, `berth capacity --html`) it reads the document
// embedded in the page (<script id="berth-data" type="application/json">). Everything is built with
// textContent, never innerHTML, so names from the cluster cannot inject markup.
"use strict";
(function () {
  const POLL_MS = 2000;
  const BARS_SHOWN = 20; // score bars before "Show all"
  const ROWS_SHOWN = 200; // table rows before "Show more"
  const embedded = document.getElementById("berth-data");
  const OFFLINE = embedded !== null;
  const REPORT = OFFLINE ? JSON.parse(embedded.textContent) : null;
  const main = document.getElementById("main");
  const statusEl = document.getElementById("status");
  const pauseBtn = document.getElementById("pause");
  const state = { info: null, decisions: [], nodes: [], paused: false, shown: {}, filters: {}, render: 0 };

  // ---- small DOM helpers -------------------------------------------------------------------
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const fmt = (n) => (typeof n === "number" ? (Number.isInteger(n) ? n.toLocaleString("en") : n.toLocaleString("en", { maximumFractionDigits: 2 })) : String(n));
  const podHref = (key) => "#/pod/" + key.split("/").map(encodeURIComponent).join("/");
  const nodeHref = (name) => "#/node/" + encodeURIComponent(name);
  const badge = (status) => h("span", { class: "badge " + status, text: ({ Scheduled: "✓ ", Unschedulable: "✕ ", Error: "! ", Filtered: "→ " }[status] || "· ") + status });
  function table(headers, rows, opts) {
    const head = h("tr", {}, headers.map((c) => h("th", { scope: "col", class: c.num ? "num" : null, text: c.label || c })));
    return h("div", { class: "scroll" }, h("table", opts || {}, h("thead", {}, head), h("tbody", {}, rows)));
  }
  function bytes(n) {
    const units = ["B", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let i = 0;
    while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + (i ? units[i] : "");
  }
  const amount = (resource, n) => (resource === "memory" || resource === "ephemeral-storage" || resource.startsWith("hugepages-") ? bytes(n) : fmt(n));
  // viridis: a sequential ramp readable with every common colour-vision deficiency
  const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function viridis(f) {
    f = Math.max(0, Math.min(1, f));
    const x = f * (VIRIDIS.length - 1), i = Math.min(Math.floor(x), VIRIDIS.length - 2), t = x - i;
    const c = VIRIDIS[i].map((v, k) => Math.round(v + (VIRIDIS[i + 1][k] - v) * t));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }
  function more(key, total, render) {
    const shown = state.shown[key] || ROWS_SHOWN;
    if (total <= shown) return null;
    return h("p", { class: "more" }, h("button", { type: "button", onclick: () => { state.shown[key] = shown * 5; render(); } }, `Show more (${fmt(shown)} of ${fmt(total)} shown)`));
  }

  // ---- data ---------------------------------------------------------------------------------
  async function api(path) {
    const res = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    const body = await res.json().catch(() => ({ Error: `HTTP ${res.status}` }));
    if (!res.ok) throw new Error(body.Error || `HTTP ${res.status}`);
    return body;
  }
  function offlineDoc() { return REPORT.doc; }
  function offlineDecisions() {
    const doc = offlineDoc();
    return (doc.pods || []).map((p, i) => ({ pod: p.pod, profile: p.profile || "", status: p.status, node: p.node, message: p.message, order: i + 1, nominatedNode: p.nominatedNode }));
  }
  async function loadDecisions(incremental) {
    if (OFFLINE) { state.decisions = offlineDecisions(); return; }
    // A poll asks only for what was decided since the newest decision it holds; every 15th poll
    // (30 s) reloads the whole list, which also drops the pods berth has forgotten (deleted ones).
    state.polls = (state.polls || 0) + 1;
    const since = state.decisions.reduce((t, d) => Math.max(t, d.time || 0), 0);
    if (!incremental || !since || state.polls % 15 === 0) { state.decisions = (await api("api/decisions")).decisions; return; }
    const fresh = (await api(`api/decisions?since=${since}`)).decisions;
    if (!fresh.length) return;
    const renewed = new Set(fresh.map((d) => d.pod));
    state.decisions = fresh.concat(state.decisions.filter((d) => !renewed.has(d.pod))).slice(0, 500);
  }
  async function loadNodes() {
    if (OFFLINE) {
      const placed = {};
      for (const p of offlineDoc().pods || []) if (p.node && p.status === "Scheduled") (placed[p.node] = placed[p.node] || []).push(p.pod);
      state.nodes = (offlineDoc().nodes || []).map((n) => ({ ...n, pods: placed[n.node] || [] }));
    } else {
      state.nodes = (await api("api/nodes")).nodes;
    }
  }
  async function loadPod(key) {
    if (OFFLINE) return (offlineDoc().pods || []).find((p) => p.pod === key) || null;
    const [ns, name] = key.split("/");
    try { return await api(`api/pods/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`); } catch (e) { return { missing: e.message }; }
  }
  function weightsFor(record, profile) {
    // /debug/pods traces carry an empty mapping: the weights then come from the profile.
    if (record.weights && Object.keys(record.weights).length) return record.weights;
    const byProfile = (state.info && state.info.weights) || {};
    const names = Object.keys(byProfile);
    // simulate's pods name no profile: with one profile (the usual case) its weights are the pod's
    return byProfile[profile] || (names.length === 1 ? byProfile[names[0]] : byProfile["default-scheduler"]) || null;
  }

  // ---- pages --------------------------------------------------------------------------------
  function summaryCards(decisions) {
    const counts = {};
    for (const d of decisions) counts[d.status] = (counts[d.status] || 0) + 1;
    return h("div", { class: "cards" }, h("div", { class: "card" }, h("b", { text: fmt(decisions.length) }), "pods"),
      Object.entries(counts).map(([s, n]) => h("div", { class: "card" }, h("b", { text: fmt(n) }), badge(s))));
  }
  function selectFilter(id, label, values) {
    const current = state.filters[id] || "";
    const sel = h("select", { id: "filter-" + id, onchange: (e) => { state.filters[id] = e.target.value; route(); } },
      h("option", { value: "", text: "all" }), [...values].sort().map((v) => h("option", { value: v, text: v || "(none)", selected: v === current })));
    return h("label", { for: "filter-" + id }, label, sel);
  }
  function pageDecisions() {
    const all = state.decisions;
    const f = state.filters;
    const namespaces = new Set(all.map((d) => d.pod.split("/")[0]));
    const outcomes = new Set(all.map((d) => d.status));
    const profiles = new Set(all.map((d) => d.profile).filter((p) => p));
    const text = (f.text || "").toLowerCase();
    const rows = all.filter((d) => (!f.namespace || d.pod.split("/")[0] === f.namespace) && (!f.outcome || d.status === f.outcome)
      && (!f.profile || d.profile === f.profile) && (!text || d.pod.toLowerCase().includes(text) || (d.node || "").toLowerCase().includes(text) || (d.message || "").toLowerCase().includes(text)));
    const search = h("input", { id: "filter-text", type: "search", value: f.text || "", placeholder: "pod, node or reason", oninput: (e) => { state.filters.text = e.target.value; renderDecisionRows(); } });
    const body = h("tbody");
    const shownKey = "decisions";
    function renderDecisionRows() {
      const t = (state.filters.text || "").toLowerCase();
      const visible = rows.filter((d) => !t || d.pod.toLowerCase().includes(t) || (d.node || "").toLowerCase().includes(t) || (d.message || "").toLowerCase().includes(t));
      body.replaceChildren(...visible.slice(0, state.shown[shownKey] || ROWS_SHOWN).map((d) => h("tr", { class: "clickable", "data-pod": d.pod },
        h("td", {}, h("a", { href: podHref(d.pod), text: d.pod })),
        h("td", {}, badge(d.status)),
        h("td", { text: d.node || d.message || "" }),
        profiles.size ? h("td", { class: "hide-narrow", text: d.profile }) : null,
        h("td", { class: "num hide-narrow", text: OFFLINE ? String(d.order) : new Date(d.time * 1000).toLocaleTimeString() }))));
      moreSlot.replaceChildren(more(shownKey, visible.length, route) || "");
    }
    const moreSlot = h("div");
    const headers = ["Pod", "Outcome", "Node or reason"];
    if (profiles.size) headers.push({ label: "Profile" });
    headers.push({ label: OFFLINE ? "Order" : "Time", num: true });
    const tbl = h("div", { class: "scroll" }, h("table", { id: "decisions" }, h("thead", {}, h("tr", {}, headers.map((c, i) => h("th", { scope: "col", class: (c.num ? "num " : "") + (i >= 3 ? "hide-narrow" : ""), text: c.label || c })))), body));
    renderDecisionRows();
    const note = OFFLINE || !state.info ? null
      : !state.info.decisions ? h("p", { class: "muted" }, "This berth records no decisions. The Nodes page shows its cache.")
      : state.info.face === "serve" ? h("p", { class: "muted", id: "extender-note" }, "berth serve is kube-scheduler's extender: each row is berth's part of a decision, from the verbs kube-scheduler called. Filtered: berth's filters passed some of the nodes kube-scheduler asked about (and its scores, when /prioritize was called, are on the pod's page); kube-scheduler picks the node. Scheduled: berth's /bind bound it. Unschedulable: berth passed none of them.")
      : null;
    return [h("h1", { text: OFFLINE ? "Decisions of this simulation" : "Recent decisions" }), note, summaryCards(rows),
      h("div", { class: "filters", role: "search" }, selectFilter("namespace", "Namespace", namespaces), selectFilter("outcome", "Outcome", outcomes),
        profiles.size ? selectFilter("profile", "Profile", profiles) : null, h("label", { for: "filter-text" }, "Search", search)),
      rows.length ? tbl : h("p", { class: "muted", text: all.length ? "No decision matches the filters." : "No decisions yet." }), moreSlot];
  }

  function scoreSection(record, profile) {
    const scores = record.scores || {};
    const nodes = Object.keys(scores);
    if (!nodes.length) return [h("h2", { text: "Scores" }), h("p", { class: "muted", text: record.status === "Scheduled" ? "Not scored: only one node passed the filters (kube-scheduler skips Score then)." : "No node was scored." })];
    const weights = weightsFor(record, profile);
    const plugins = [];
    for (const n of nodes) for (const p of Object.keys(scores[n])) if (p !== "total" && !plugins.includes(p)) plugins.push(p);
    const weightOf = (p) => (weights && p in weights ? weights[p] : 1);
    const weighted = (n, p) => (scores[n][p] || 0) * weightOf(p);
    nodes.sort((a, b) => scores[b].total - scores[a].total || (a < b ? -1 : 1));
    const max = Math.max(1, ...nodes.map((n) => plugins.reduce((s, p) => s + Math.max(0, weighted(n, p)), 0)), ...nodes.map((n) => scores[n].total));
    const key = "bars:" + record.pod;
    const limit = state.shown[key] || BARS_SHOWN;
    const legend = h("ul", { class: "legend", "aria-label": "Score plugins" }, plugins.map((p, i) => h("li", {}, h("span", { class: "swatch p" + (i % 12), "aria-hidden": "true" }), `${p} ×${weightOf(p)}`)));
    const bars = h("div", { class: "bars", id: "score-bars", role: "list" }, nodes.slice(0, limit).map((n) => [
      h("a", { class: "name", href: nodeHref(n), text: n, title: n }),
      h("div", { class: "stack", role: "listitem", "data-node": n, "data-total": scores[n].total, "aria-label": `${n}: total ${scores[n].total}` },
        plugins.map((p, i) => { const w = weighted(n, p); return w > 0 ? h("span", { class: "p" + (i % 12), "data-plugin": p, "data-weighted": w, style: `width:${(100 * w) / max}%`, title: `${p}: ${scores[n][p]} × ${weightOf(p)} = ${w}` }) : null; })),
      h("span", { class: "num", text: fmt(scores[n].total) })]));
    const showAll = nodes.length > limit ? h("p", { class: "more" }, h("button", { type: "button", onclick: () => { state.shown[key] = nodes.length; route(); } }, `Show all ${fmt(nodes.length)} scored nodes`)) : null;
    const rows = nodes.slice(0, limit).map((n) => h("tr", { "data-node": n }, h("th", { scope: "row", text: n }), h("td", { class: "num", text: fmt(scores[n].total) }),
      plugins.map((p) => h("td", { class: "num", "data-plugin": p, text: `${scores[n][p] ?? "–"}${weightOf(p) !== 1 ? " ×" + weightOf(p) : ""}` }))));
    const omitted = record.scoresOmitted ? h("p", { class: "muted", text: `The report keeps the ${fmt(nodes.length)} best-scored nodes; ${fmt(record.scoresOmitted)} more were scored.` }) : null;
    const unweighted = weights ? null : h("p", { class: "muted", text: "The Score weights are not known here: bars show each plugin's normalized score (weight 1)." });
    return [h("h2", { text: "Scores (weighted, per plugin)" }), unweighted, legend, bars, showAll, omitted,
      h("details", { open: true }, h("summary", { text: "Score numbers (normalized score × weight)" }), table([{ label: "Node" }, { label: "Total", num: true }, ...plugins.map((p) => ({ label: p, num: true }))], rows, { id: "score-table" }))];
  }

  function filterSection(record) {
    const filter = record.filter || {};
    const scores = record.scores || {};
    const names = new Set([...Object.keys(filter), ...Object.keys(scores)]);
    if (record.node) names.add(record.node);
    for (const n of state.nodes) names.add(n.node);
    const ordered = [...names].sort((a, b) => (a in filter) - (b in filter) || (a < b ? -1 : 1));
    const groups = {};
    for (const v of Object.values(filter)) for (const r of v.reasons.length ? v.reasons : [v.status]) { const k = `${v.plugin}\u0000${r}`; groups[k] = (groups[k] || 0) + 1; }
    const summary = record.filterSummary || Object.entries(groups).map(([k, n]) => { const [plugin, reason] = k.split("\u0000"); return { plugin, reason, nodes: n }; }).sort((a, b) => b.nodes - a.nodes);
    const key = "filter:" + record.pod;
    const rows = ordered.slice(0, state.shown[key] || ROWS_SHOWN).map((n) => {
      const v = filter[n];
      const passed = !v && (n in scores || n === record.node);
      const verdict = v ? h("span", { class: "badge reject", text: "✕ " + v.status }) : passed ? h("span", { class: "badge pass", text: "✓ Passed" }) : h("span", { class: "muted", text: "not evaluated" });
      return h("tr", { "data-node": n, "data-verdict": v ? "rejected" : passed ? "passed" : "none" }, h("th", { scope: "row" }, h("a", { href: nodeHref(n), text: n })), h("td", {}, verdict),
        h("td", { text: v ? v.plugin : "" }), h("td", { text: v ? [...v.reasons, ...(v.details || [])].join("; ") : "" }));
    });
    const omitted = record.filterOmitted ? h("p", { class: "muted", text: `The report keeps ${fmt(Object.keys(filter).length)} rejected nodes of ${fmt(Object.keys(filter).length + record.filterOmitted)}; the summary above counts them all.` }) : null;
    return [h("h2", { text: "Filter verdicts per node" }),
      summary.length ? h("ul", { id: "filter-summary" }, summary.map((s) => h("li", {}, h("b", { text: fmt(s.nodes) }), ` node(s): ${s.plugin}: ${s.reason}`))) : null,
      table(["Node", "Verdict", "Plugin", "Reasons"], rows, { id: "filter-table" }), more(key, ordered.length, route), omitted];
  }

  function preemptionSection(record) {
    // berth serve's /preempt: the candidate nodes berth kept, each with the victims it agreed to.
    const nodes = Object.entries(record.preemption || {});
    if (!nodes.length) return null;
    return [h("h2", { text: "Preemption candidates berth accepted" }),
      table(["Node", "Victims"], nodes.map(([n, victims]) => h("tr", {}, h("th", { scope: "row", text: n }), h("td", { text: victims.join(", ") }))), { id: "preemption" })];
  }
  function hintsSection(record) {
    if (!record.hints || !record.hints.length) return null;
    return [h("h2", { text: "What would make it fit" }), h("ol", { class: "hints", id: "hints" }, record.hints.map((x) => h("li", {},
      h("span", { class: "pill", text: x.kind }), " ", x.summary, x.verified ? " (verified)" : "",
      x.nodes && x.nodes.length ? h("div", { class: "muted", text: "fits on: " + x.nodes.slice(0, 10).join(", ") + (x.nodes.length > 10 ? ` and ${x.nodes.length - 10} more` : "") }) : null)))];
  }

  async function pagePod(key) {
    const record = await loadPod(key);
    if (!record || record.missing) return [h("h1", { text: key }), h("p", { class: "muted", text: (record && record.missing) || "No decision recorded for this pod." }), h("p", {}, h("a", { href: "#/decisions", text: "Back to decisions" }))];
    const decision = state.decisions.find((d) => d.pod === key) || {};
    const profile = record.profile || decision.profile || "";
    const card = (label, value) => h("div", { class: "card" }, h("b", { text: value }), label);
    const cards = h("div", { class: "cards" },
      card("outcome", record.status), card("node", record.node || "–"),
      card("feasible / evaluated", `${fmt(record.feasibleNodes ?? 0)} / ${fmt(record.evaluatedNodes ?? 0)}`),
      record.winner ? card("winner", `${record.winner.node} (${record.winner.total})`) : null,
      record.runnerUp ? card("runner-up", `${record.runnerUp.node} (${record.runnerUp.total})`) : null,
      record.nominatedNode ? card("nominated node", record.nominatedNode) : null,
      profile ? card("profile", profile) : null);
    return [h("p", {}, h("a", { href: "#/decisions", text: "← Decisions" })), h("h1", {}, key, " ", badge(record.status)), cards,
      record.message ? [h("h2", { text: record.status === "Unschedulable" ? "FitError" : "Message" }), h("div", { class: "fiterror", id: "fiterror", text: record.message })] : null,
      record.victims && record.victims.length ? h("p", {}, "Preempted: " + record.victims.join(", ")) : null,
      record.volumes && record.volumes.length ? h("p", {}, "Volumes: " + record.volumes.join("; ")) : null,
      !OFFLINE && state.info && state.info.face === "serve" ? h("p", { class: "muted", id: "extender-scope" }, "berth's part of this decision, as its verbs answered kube-scheduler: its Filter verdicts on the nodes kube-scheduler's own filters passed, and its Score plugins' scores (kube-scheduler adds its own plugins' scores and berth's total mapped to 0–10 times the extender's weight).") : null,
      hintsSection(record), preemptionSection(record), scoreSection(record, profile), filterSection(record)];
  }

  function resourcesOf(nodes) {
    const out = [];
    for (const n of nodes) for (const r of Object.keys(n.resources || {})) if (!out.includes(r)) out.push(r);
    return out;
  }
  function utilCell(n, r) {
    const u = (n.resources || {})[r];
    if (!u) return h("td", { class: "muted", text: "–" });
    const f = u.allocatable ? u.requested / u.allocatable : 0;
    return h("td", { "data-resource": r, "data-fraction": f.toFixed(4) }, h("div", { class: "util" },
      h("div", { class: "meter", role: "img", "aria-label": `${r} ${Math.round(f * 100)}%` }, h("span", { style: `width:${Math.min(100, f * 100)}%;background:${viridis(f)}` })),
      h("small", { text: `${Math.round(f * 100)}% ${amount(r, u.requested)}/${amount(r, u.allocatable)}` })));
  }
  function pageNodes(focus) {
    const nodes = state.nodes;
    const resources = resourcesOf(nodes);
    const metric = state.filters.heat || "max";
    const fraction = (n) => {
      const rs = metric === "max" ? resources : [metric];
      return Math.max(0, ...rs.map((r) => { const u = (n.resources || {})[r]; return u && u.allocatable ? u.requested / u.allocatable : 0; }));
    };
    const heat = h("div", { class: "heat", id: "heatmap", role: "img", "aria-label": `Utilization heatmap of ${nodes.length} nodes (${metric})` },
      nodes.map((n) => { const f = fraction(n); return h("a", { href: nodeHref(n.node), tabindex: "-1", title: `${n.node}: ${Math.round(f * 100)}%`, style: `background:${viridis(f)}` }); }));
    const metricSel = h("select", { id: "heat-metric", onchange: (e) => { state.filters.heat = e.target.value; route(); } },
      ["max", ...resources].map((r) => h("option", { value: r, selected: r === metric, text: r === "max" ? "fullest resource" : r })));
    const key = "nodes";
    const rows = nodes.slice(0, state.shown[key] || ROWS_SHOWN).map((n) => h("tr", { "data-node": n.node, class: n.node === focus ? "focus" : null },
      h("th", { scope: "row" }, h("a", { href: nodeHref(n.node), text: n.node })), resources.map((r) => utilCell(n, r)), h("td", { class: "num", text: fmt((n.pods || []).length) })));
    const detail = focus ? nodeDetail(nodes.find((n) => n.node === focus), focus) : null;
    return [h("h1", { text: `Nodes (${fmt(nodes.length)})` }), detail,
      h("div", { class: "filters" }, h("label", { for: "heat-metric" }, "Heatmap colour", metricSel), h("div", { class: "scale", "aria-hidden": "true" }, "0%", h("span", { class: "ramp" }), "100%")), heat,
      table([{ label: "Node" }, ...resources.map((r) => ({ label: r })), { label: OFFLINE ? "Pods placed" : "Pods", num: true }], rows, { id: "nodes-table" }), more(key, nodes.length, route)];
  }
  function nodeDetail(n, name) {
    if (!n) return h("p", { class: "muted", text: `No node named ${name}.` });
    const resources = Object.keys(n.resources || {});
    return h("section", { id: "node-detail", class: "card" }, h("h2", { text: n.node }),
      table(["Resource", "Utilization"], resources.map((r) => h("tr", {}, h("th", { scope: "row", text: r }), utilCell(n, r)))),
      h("h2", { text: OFFLINE ? `Pods this run placed here (${n.pods.length})` : `Pods on this node (${n.pods.length})` }),
      n.pods.length ? h("ul", { id: "node-pods" }, n.pods.map((p) => h("li", {}, h("a", { href: podHref(p), text: p })))) : h("p", { class: "muted", text: "None." }));
  }

  function pageCompare() {
    const c = offlineDoc().comparison;
    if (!c) return [h("h1", { text: "Comparison" }), h("p", { class: "muted", text: "This report has no comparison (run berth simulate with --compare-config)." })];
    const sum = (s) => Object.entries(s || {}).filter(([k]) => k !== "reasons").map(([k, v]) => `${v} ${k}`).join(", ");
    const moved = (c.moved || []).slice(0, state.shown.moved || ROWS_SHOWN).map((m) => h("tr", {}, h("th", { scope: "row" }, h("a", { href: podHref(m.pod), text: m.pod })),
      h("td", { text: m.a || "–" }), h("td", { text: m.b || "–" }),
      h("td", { text: Object.entries(m.plugins || {}).map(([p, v]) => `${p} ${v.a}→${v.b}`).join(", ") })));
    const resources = resourcesOf((c.nodes || []).flatMap((n) => [{ resources: n.a }, { resources: n.b }]));
    const nodeRows = (c.nodes || []).slice(0, state.shown.cnodes || ROWS_SHOWN).map((n) => h("tr", {}, h("th", { scope: "row", text: n.node }),
      resources.map((r) => [utilCell({ resources: n.a }, r), utilCell({ resources: n.b }, r)])));
    const delta = (c.unschedulable || {}).delta || 0;
    return [h("h1", { text: "Configuration A against B" }),
      h("div", { class: "cards" },
        h("div", { class: "card" }, h("b", { text: "A" }), (c.a || {}).config || "", h("div", { class: "muted", text: sum((c.a || {}).summary) })),
        h("div", { class: "card" }, h("b", { text: "B" }), (c.b || {}).config || "", h("div", { class: "muted", text: sum((c.b || {}).summary) })),
        h("div", { class: "card" }, h("b", { class: delta > 0 ? "delta-up" : delta < 0 ? "delta-down" : "", text: (delta > 0 ? "+" : "") + delta }), "unschedulable (B − A)"),
        h("div", { class: "card" }, h("b", { text: fmt((c.moved || []).length) }), "pods moved"),
        h("div", { class: "card" }, h("b", { text: `${((c.emptyNodes || {}).a || []).length} → ${((c.emptyNodes || {}).b || []).length}` }), "empty nodes")),
      h("h2", { text: "Pods placed differently" }), table(["Pod", "A", "B", "Weighted scores A→B"], moved, { id: "moved-table" }), more("moved", (c.moved || []).length, route),
      h("h2", { text: "Node utilization, A then B" }), table([{ label: "Node" }, ...resources.flatMap((r) => [{ label: r + " A" }, { label: r + " B" }])], nodeRows, { id: "compare-nodes" }), more("cnodes", (c.nodes || []).length, route)];
  }

  function pageCapacity() {
    const c = offlineDoc();
    const per = Object.entries(c.nodes || {}).sort((a, b) => b[1] - a[1]);
    const max = Math.max(1, ...per.map(([, n]) => n));
    const key = "capacity";
    return [h("h1", { text: `${fmt(c.replicas)} more replica(s) of ${c.pod} fit` }),
      c.stoppedBy ? [h("h2", { text: c.stoppedBy.reason === "FitError" ? "The next one does not fit" : "Stopped" }), h("div", { class: "fiterror", id: "fiterror", text: c.stoppedBy.message })] : null,
      h("h2", { text: "Replicas per node" }),
      h("div", { class: "bars", id: "capacity-bars" }, per.slice(0, state.shown[key] || ROWS_SHOWN).map(([n, k]) => [h("span", { class: "name", text: n, title: n }),
        h("div", { class: "stack", "data-node": n, "data-replicas": k }, k ? h("span", { class: "p4", style: `width:${(100 * k) / max}%` }) : null), h("span", { class: "num", text: fmt(k) })])),
      more(key, per.length, route)];
  }

  // ---- routing, polling ---------------------------------------------------------------------
  function current() {
    const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    if (OFFLINE && REPORT.kind === "capacity" && !["capacity"].includes(parts[0])) return ["capacity"];
    return parts[0] ? parts : ["decisions"];
  }
  async function route() {
    const ticket = ++state.render;
    const [page, ...rest] = current();
    let content;
    try {
      if (page === "pod") content = await pagePod(rest.join("/"));
      else if (page === "nodes" || page === "node") content = pageNodes(rest[0]);
      else if (page === "compare") content = pageCompare();
      else if (page === "capacity") content = pageCapacity();
      else content = pageDecisions();
    } catch (e) {
      content = [h("h1", { text: "Could not load this page" }), h("p", { class: "fiterror", text: e.message })];
    }
    if (ticket !== state.render) return; // a newer render started meanwhile
    const active = document.activeElement && document.activeElement.id;
    const scroll = window.scrollY;
    main.replaceChildren(...[content].flat(Infinity).filter((c) => c));
    for (const a of document.querySelectorAll(".top nav a")) {
      const p = a.dataset.page;
      a.toggleAttribute("aria-current", p === page || (p === "nodes" && page === "node") || (p === "decisions" && page === "pod"));
      if (a.hasAttribute("aria-current")) a.setAttribute("aria-current", "page");
    }
    document.title = `berth · ${page}${rest.length ? " · " + rest.join("/") : ""}`;
    if (active) { const el = document.getElementById(active); if (el) el.focus(); }
    window.scrollTo(0, scroll);
  }
  async function refresh(rerender) {
    if (state.paused) return;
    try {
      const [page] = current();
      const before = [state.decisions, state.nodes];
      if (page === "nodes" || page === "node" || page === "pod") await loadNodes();
      if (page === "decisions" || page === "pod") await loadDecisions(true);
      statusEl.textContent = "live · updated " + new Date().toLocaleTimeString();
      // Redraw only when something changed: an idle cluster costs the browser (and the machine) nothing.
      const changed = JSON.stringify(before) !== JSON.stringify([state.decisions, state.nodes]);
      if (rerender && changed) await route();
    } catch (e) {
      statusEl.textContent = "update failed: " + e.message;
    }
  }
  async function start() {
    if (OFFLINE) {
      const doc = offlineDoc();
      document.querySelector('[data-page="compare"]').hidden = !doc.comparison;
      const capacity = REPORT.kind === "capacity";
      document.querySelector('[data-page="capacity"]').hidden = !capacity;
      document.querySelector('[data-page="decisions"]').hidden = capacity;
      document.querySelector('[data-page="nodes"]').hidden = capacity;
      statusEl.textContent = REPORT.title || "offline report";
      state.info = { weights: REPORT.weights || {} };
      if (!capacity) { await loadDecisions(); await loadNodes(); }
      window.addEventListener("hashchange", () => { window.scrollTo(0, 0); route(); });
      await route();
      return;
    }
    state.info = await api("api/info");
    pauseBtn.hidden = false;
    pauseBtn.addEventListener("click", () => {
      state.paused = !state.paused;
      pauseBtn.setAttribute("aria-pressed", String(state.paused));
      pauseBtn.textContent = state.paused ? "Resume updates" : "Pause updates";
      statusEl.textContent = state.paused ? "paused" : statusEl.textContent;
    });
    await Promise.all([loadDecisions(), loadNodes()]);
    window.addEventListener("hashchange", async () => { window.scrollTo(0, 0); await refresh(false); await route(); });
    await route();
    statusEl.textContent = "live · updated " + new Date().toLocaleTimeString();
    // Poll only while the page is visible: a background tab costs the scheduler nothing.
    setInterval(() => { if (!document.hidden) refresh(true); }, POLL_MS);
  }
  start().catch((e) => { main.replaceChildren(h("h1", { text: "berth UI failed to start" }), h("p", { class: "fiterror", text: e.message })); });
})();
