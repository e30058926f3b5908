// The mkq dashboard: renders each snapshot the manager streams (/ui/events), keeps their
// history in the page for the plots, and fetches a workload's history when it is clicked.
// Every text from the system goes in through textContent, never as HTML.
"use strict";

const STATES = ["Pending", "Dispatched", "Admitted", "Running", "Succeeded", "Failed", "Evicted", "Cancelled"];
const FINISHED = new Set(["Succeeded", "Failed", "Cancelled"]);
const RUNNING = new Set(["Admitted", "Running"]);
const HISTORY = 600; // points kept for the plots (ten minutes at one a second)
const history = [];
let latest = null;

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "text") node.textContent = value;
    else if (key === "style") node.style.cssText = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function stateBadge(state) {
  return el("span", { class: "state", text: state, style: `background: var(--${state}, #64748b)` });
}

function age(stamp) {
  if (!stamp) return "";
  const seconds = Math.max(0, (Date.now() - Date.parse(stamp)) / 1000);
  if (seconds < 60) return `${Math.round(seconds)}s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)}m ago`;
  return `${Math.round(seconds / 3600)}h ago`;
}

function clock(stamp) {
  return stamp ? new Date(stamp).toLocaleTimeString() : "";
}

function replaceRows(table, rows) {
  const body = document.querySelector(`${table} tbody`);
  body.replaceChildren(...rows);
}

function renderSummary(counts) {
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  const boxes = [el("div", { class: "count", "data-state": "total" }, el("b", { text: String(total) }), "workloads")];
  for (const state of STATES) {
    if (!counts[state]) continue;
    boxes.push(el("div", { class: "count", "data-state": state }, el("b", { text: String(counts[state]) }), state));
  }
  document.getElementById("summary").replaceChildren(...boxes);
}

function quantity(text) {
  // Kubernetes quantities as numbers, for the bars only (the text shown is the original).
  const match = /^([0-9.]+)([a-zA-Z]*)$/.exec(String(text ?? "0"));
  if (!match) return 0;
  const scale = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 };
  return parseFloat(match[1]) * (scale[match[2]] ?? 1);
}

function renderClusters(clusters) {
  const cards = clusters.map((cluster) => {
    const card = el("article", { class: "card", "data-cluster": cluster.name },
      el("h3", {}, cluster.name + " ", stateBadge(cluster.state)));
    const why = [cluster.reason, cluster.message].filter(Boolean).join(": ");
    card.append(el("div", { class: "why", text: why || `last contact ${age(cluster.lastContact) || "never"}` }));
    if (cluster.capacity.length) {
      const rows = cluster.capacity.map((entry) => {
        const used = quantity(entry.usage);
        const nominal = quantity(entry.nominal);
        const share = nominal > 0 ? Math.min(1, used / nominal) : 0;
        const bar = el("div", { class: used > nominal ? "bar over" : "bar", title: `${entry.usage} of ${entry.nominal}` },
          el("span", { style: `width: ${(share * 100).toFixed(1)}%` }));
        return el("tr", {},
          el("td", { text: entry.clusterQueue }), el("td", { text: entry.cohort || "" }),
          el("td", { text: entry.flavor }), el("td", { text: entry.resource }),
          el("td", {}, el("div", { class: "usage" }, bar, `${entry.usage} / ${entry.nominal}`)),
          el("td", { text: entry.pending }));
      });
      card.append(el("table", {},
        el("thead", {}, el("tr", {}, ...["ClusterQueue", "Cohort", "Flavor", "Resource", "Usage / quota", "Pending"].map((h) => el("th", { text: h })))),
        el("tbody", {}, ...rows)));
    }
    return card;
  });
  document.getElementById("clusters").replaceChildren(...cards);
}

function renderQueues(queues) {
  replaceRows("#queues", queues.map((queue) => {
    const states = queue.states;
    const sum = (set) => Object.entries(states).filter(([s]) => set(s)).reduce((a, [, n]) => a + n, 0);
    return el("tr", { "data-queue": `${queue.namespace}/${queue.name}` },
      el("td", { text: queue.namespace }), el("td", { text: queue.name }),
      el("td", { text: String(sum((s) => !FINISHED.has(s) && !RUNNING.has(s))) }),
      el("td", { text: String(sum((s) => RUNNING.has(s))) }),
      el("td", { text: String(sum((s) => FINISHED.has(s))) }),
      el("td", { text: String(sum(() => true)) }));
  }));
}

function matches(workload, filter) {
  if (!filter) return true;
  const text = [workload.namespace, workload.name, workload.queue, workload.state, workload.cluster || "", workload.kind]
    .join(" ").toLowerCase();
  return filter.split(/\s+/).every((word) => text.includes(word));
}

function renderWorkloads() {
  if (!latest) return;
  const filter = document.getElementById("search").value.trim().toLowerCase();
  replaceRows("#workloads", latest.workloads.filter((w) => matches(w, filter)).map((w) => {
    const row = el("tr", { "data-workload": `${w.namespace}/${w.name}`, tabindex: "0" },
      el("td", { text: w.namespace }), el("td", { text: w.name }), el("td", { text: w.kind }),
      el("td", { text: w.queue }), el("td", { text: String(w.priority) }), el("td", {}, stateBadge(w.state)),
      el("td", { text: w.cluster || "" }), el("td", { text: age(w.createdAt), title: w.createdAt }));
    row.addEventListener("click", () => showDetail(w.namespace, w.name));
    row.addEventListener("keydown", (event) => { if (event.key === "Enter") showDetail(w.namespace, w.name); });
    return row;
  }));
}

async function showDetail(namespace, name) {
  const response = await fetch(`/ui/workloads/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`);
  if (!response.ok) return;
  const workload = await response.json();
  document.getElementById("detail-title").textContent = `${workload.namespace}/${workload.name}`;
  const state = document.getElementById("detail-state");
  state.replaceChildren(stateBadge(workload.state), ` ${workload.kind} in ${workload.queue}`,
    workload.cluster ? `, on ${workload.cluster}` : "", workload.message ? ` (${workload.message})` : "");
  replaceRows("#detail-attempts", workload.attempts.map((a) => el("tr", {},
    el("td", { text: a.cluster }), el("td", { text: a.state }), el("td", { text: a.reason || "" }),
    el("td", { text: clock(a.createdAt), title: a.createdAt }))));
  replaceRows("#detail-events", (workload.events || []).map((e) => el("tr", {},
    el("td", { text: clock(e.at), title: e.at }), el("td", { text: e.kind }), el("td", { text: e.cluster || "" }),
    el("td", { text: e.message }))));
  document.getElementById("detail").hidden = false;
}

function svgNode(tag, attributes) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  return node;
}

function plot(svgId, series, colors) {
  // Lines over the history: series is {name: [values, one per history point]}.
  const svg = document.getElementById(svgId);
  const width = 600, height = 200, left = 36, bottom = 18;
  const values = Object.values(series).flat().filter((v) => v !== null);
  const top = Math.max(1, ...values);
  const points = history.length;
  const x = (i) => left + (points > 1 ? (i / (points - 1)) * (width - left - 4) : 0);
  const y = (v) => height - bottom - (v / top) * (height - bottom - 6);
  const nodes = [
    svgNode("line", { x1: left, y1: height - bottom, x2: width, y2: height - bottom, stroke: "#c5ccd6" }),
    svgNode("text", { x: 2, y: 12, "font-size": 11, fill: "#5b6675" }),
    svgNode("text", { x: 2, y: height - bottom, "font-size": 11, fill: "#5b6675" }),
  ];
  nodes[1].textContent = Number.isInteger(top) ? String(top) : top.toFixed(2);
  nodes[2].textContent = "0";
  for (const [name, line] of Object.entries(series)) {
    const coordinates = line.map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`)).filter(Boolean);
    if (!coordinates.length) continue;
    nodes.push(svgNode("polyline", {
      points: coordinates.join(" "), fill: "none", "stroke-width": 2, "data-series": name,
      stroke: colors[name] || "#3b82f6",
    }));
  }
  svg.replaceChildren(...nodes);
}

function cpuInUse(clusters) {
  // Per worker, the share of its ClusterQueues' nominal CPU in use (null without a report).
  return Object.fromEntries(clusters.map((cluster) => {
    const cpu = cluster.capacity.filter((entry) => entry.resource === "cpu");
    const nominal = cpu.reduce((sum, entry) => sum + quantity(entry.nominal), 0);
    const used = cpu.reduce((sum, entry) => sum + quantity(entry.usage), 0);
    return [cluster.name, nominal > 0 ? Math.round((100 * used) / nominal) : null];
  }));
}

function renderPlots() {
  const style = getComputedStyle(document.documentElement);
  const colors = Object.fromEntries(STATES.map((s) => [s, style.getPropertyValue(`--${s}`).trim()]));
  const shown = STATES.filter((s) => history.some((point) => point.counts[s]));
  plot("plot-states", Object.fromEntries(shown.map((s) => [s, history.map((p) => p.counts[s] || 0)])), colors);
  document.getElementById("legend-states").replaceChildren(
    ...shown.map((s) => el("span", {}, el("i", { style: `background: ${colors[s]}` }), s)));
  plot("plot-admission", { mean: history.map((p) => p.admission) }, { mean: "#3b82f6" });
  const palette = ["#3b82f6", "#f59e0b", "#16a34a", "#8b5cf6", "#dc2626", "#0891b2", "#64748b"];
  const workers = [...new Set(history.flatMap((p) => Object.keys(p.cpu)))].sort();
  const workerColors = Object.fromEntries(workers.map((w, i) => [w, palette[i % palette.length]]));
  plot("plot-usage", Object.fromEntries(workers.map((w) => [w, history.map((p) => p.cpu[w] ?? null)])), workerColors);
  document.getElementById("legend-usage").replaceChildren(
    ...workers.map((w) => el("span", {}, el("i", { style: `background: ${workerColors[w]}` }), w)));
}

function render(snapshot) {
  latest = snapshot;
  history.push({
    at: Date.now(),
    counts: snapshot.counts,
    admission: snapshot.admission.meanSeconds,
    cpu: cpuInUse(snapshot.clusters),
  });
  if (history.length > HISTORY) history.shift();
  renderSummary(snapshot.counts);
  renderClusters(snapshot.clusters);
  renderQueues(snapshot.queues);
  renderWorkloads();
  renderPlots();
  document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  document.body.dataset.snapshots = String(history.length);
}

function connect() {
  const status = document.getElementById("status");
  const source = new EventSource("/ui/events");
  source.addEventListener("snapshot", (event) => {
    status.dataset.state = "live";
    status.textContent = "live";
    render(JSON.parse(event.data));
  });
  source.addEventListener("error", () => {
    // EventSource reconnects by itself (each stream ends after a while, by design).
    status.dataset.state = "reconnecting";
    status.textContent = "reconnecting";
  });
}

document.getElementById("search").addEventListener("input", renderWorkloads);
document.getElementById("detail-close").addEventListener("click", () => { document.getElementById("detail").hidden = true; });
connect();
