// Metrics: live graphs per node from the DMS's scrapes of the nodes' /metrics and /health
// (GET /v1/metrics/history, docs/webux.md "Metrics"). The charts are small SVG line charts drawn
// here: a few polylines need no chart library, and nothing more is served from node_modules.
import { html, usePoll } from '/app.js';

const W = 300;
const H = 90;
const PAD = { l: 4, r: 4, t: 16, b: 4 };
const COLORS = ['#2d6fd0', '#c0392b', '#17692a', '#b8860b', '#6a3fb5', '#555'];

/** A value for people: bytes in KiB…TiB, rates with at most two decimals. */
function fmt(v, unit) {
  if (v === undefined || v === null) return '—';
  if (unit === 'bytes') {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return `${v.toFixed(i ? 1 : 0)} ${u[i]}`;
  }
  return `${v >= 100 ? Math.round(v) : Number(v.toFixed(2))} ${unit}`;
}

/**
 * A line chart of `lines` ([{key, label, points: [[t, v]]}]) over [from, to] (ms), y from 0 to the
 * largest value; the test reads data-points and data-max.
 */
export function LineChart({ node, chart, title, unit, lines, from, to }) {
  const all = lines.flatMap((l) => l.points.map((p) => p[1]));
  const max = Math.max(0, ...all);
  const top = max > 0 ? max * 1.1 : 1;
  const x = (t) => PAD.l + ((t - from) / Math.max(1, to - from)) * (W - PAD.l - PAD.r);
  const y = (v) => H - PAD.b - (v / top) * (H - PAD.t - PAD.b);
  const last = lines.length === 1 && lines[0].points.length ? lines[0].points[lines[0].points.length - 1][1] : undefined;
  return html`<figure class="chart">
    <svg viewBox=${`0 0 ${W} ${H}`} width=${W} height=${H} data-node=${node} data-chart=${chart} data-max=${max} role="img" aria-label=${`${title} of ${node}`}>
      <rect class="frame" x="0" y="0" width=${W} height=${H} />
      <text x="4" y="11" class="title">${title}${last !== undefined ? ` · ${fmt(last, unit)}` : ''}</text>
      <text x=${W - 4} y="11" class="max" text-anchor="end">max ${fmt(max, unit)}</text>
      ${lines.map((l, i) => html`<polyline fill="none" stroke=${COLORS[i % COLORS.length]} stroke-width="1.5" data-series=${l.key} data-points=${l.points.length}
        points=${l.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ')} />`)}
    </svg>
    ${lines.length > 1 ? html`<figcaption>${lines.map((l, i) => html`<span class="key"><span class="swatch" data-color=${i}>■</span> ${l.label} ${fmt(l.points.length ? l.points[l.points.length - 1][1] : undefined, '')}</span>`)}</figcaption>` : null}
  </figure>`;
}

/** The charts of one node: a chart per series it has, and one with a line per replica state. */
function NodeCharts({ n, series, from, to }) {
  const keys = new Set(n.points.flatMap((p) => Object.keys(p.v)));
  const pts = (k) => n.points.filter((p) => p.v[k] !== undefined).map((p) => [p.t, p.v[k]]);
  const charts = Object.entries(series).filter(([k]) => keys.has(k)).map(([k, s]) => html`<${LineChart} node=${n.name} chart=${k} title=${s.title} unit=${s.unit} lines=${[{ key: k, label: s.title, points: pts(k) }]} from=${from} to=${to} />`);
  const states = [...keys].filter((k) => k.startsWith('replicas.')).sort();
  if (states.length > 0) charts.push(html`<${LineChart} node=${n.name} chart="replicas" title="Replica states" unit="replicas" lines=${states.map((k) => ({ key: k, label: k.slice(9), points: pts(k) }))} from=${from} to=${to} />`);
  return html`<div class="card" data-metrics-node=${n.name}><h3>${n.name} <span class="muted">${n.role} · last read ${n.last_scrape ? new Date(n.last_scrape).toLocaleTimeString() : 'never'}</span></h3>
    ${n.last_error ? html`<p class="error">Not read: ${n.last_error}</p>` : null}
    ${n.problems ? html`<p class="muted">Unreadable /metrics lines: ${n.problems.join('; ')}</p>` : null}
    <div class="charts">${charts.length ? charts : html`<p class="muted">No points yet (rates need two reads).</p>`}</div></div>`;
}

/** The Metrics page. */
export function Metrics() {
  const [d] = usePoll('/v1/metrics/history', 2000);
  if (!d || !d.nodes) return html`<p>Loading…</p>`;
  if (d.interval_ms === 0) return html`<h2>Metrics</h2><p class="muted">Scraping is off (DMS_METRICS_INTERVAL_MS=0).</p>`;
  const ts = d.nodes.flatMap((n) => n.points.map((p) => p.t));
  const to = ts.length ? Math.max(...ts) : Date.now();
  const from = Math.max(ts.length ? Math.min(...ts) : to, to - d.capacity * d.interval_ms);
  return html`<h2>Metrics</h2>
    <p class="muted">Each node's /metrics and /health, read by the DMS every ${d.interval_ms / 1000} s; the last ${d.capacity} reads are kept in memory. Nodes are read at the observability address they registered or were declared with.</p>
    ${d.nodes.length === 0 ? html`<p class="muted">No node with an observability address yet.</p>` : d.nodes.map((n) => html`<${NodeCharts} n=${n} series=${d.series} from=${from} to=${to} />`)}`;
}
