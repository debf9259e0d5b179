// DMS-WebUX front end: Preact + htm as plain ES modules served by the DMS (no bundler, no CDN).
// The session cookie is HttpOnly; the CSRF token from /ui/session goes in X-CSRF-Token on every change.
import { h, render } from '/vendor/preact.mjs';
import { useEffect, useState } from '/vendor/hooks.mjs';
import htm from '/vendor/htm.mjs';
import { Topology, Datasets, Certificates, Tokens, License } from '/pages.js';
import { Governance } from '/governance.js';
import { Metrics } from '/metrics.js';
import { SignIn } from '/signIn.js';

export const html = htm.bind(h);
let csrf = '';

/** Keeps the session's CSRF token (the sign-in answers carry it). */
export function setCsrf(token) { csrf = token; }

/** Calls the admin API; resolves with {status, body}. */
export async function api(method, path, body) {
  const headers = { 'x-csrf-token': csrf };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  let data = null;
  try { data = await r.json(); } catch { data = null; }
  return { status: r.status, body: data };
}

/** Polls `path` every `ms` (live updates); returns [data, reload]. */
export function usePoll(path, ms = 2000) {
  const [data, setData] = useState(null);
  const load = () => api('GET', path).then((r) => setData(r.body));
  useEffect(() => { load(); const t = setInterval(load, ms); return () => clearInterval(t); }, [path]);
  return [data, load];
}

/** A state badge. */
export const Badge = ({ s }) => html`<span class=${`state ${s}`}>${s}</span>`;

/** An error answer's message, or nothing. */
export const ErrorLine = ({ r }) => (r && r.status >= 400 ? html`<p class="error" data-test="error">${r.body ? `${r.body.error}: ${r.body.message}` : `HTTP ${r.status}`}</p>` : null);

const PAGES = { topology: ['Topology', Topology], metrics: ['Metrics', Metrics], datasets: ['Datasets', Datasets], governance: ['Governance', Governance], certificates: ['Certificates', Certificates], tokens: ['Bootstrap tokens', Tokens], license: ['License', License] };

function App() {
  const [who, setWho] = useState(undefined);
  const [page, setPage] = useState((location.hash || '#topology').slice(1));
  useEffect(() => { api('GET', '/ui/session').then((r) => { if (r.status === 200) { csrf = r.body.csrf; setWho(r.body.who); } else setWho(null); }); }, []);
  useEffect(() => { const f = () => setPage((location.hash || '#topology').slice(1)); addEventListener('hashchange', f); return () => removeEventListener('hashchange', f); }, []);
  if (who === undefined) return html`<p>Loading…</p>`;
  if (who === null) return html`<${SignIn} onIn=${setWho} />`;
  const [, Page] = PAGES[page] || PAGES.topology;
  const signOut = async () => { await api('DELETE', '/ui/session'); setWho(null); };
  return html`<header><h1>HD DMS-WebUX</h1>
    ${Object.entries(PAGES).map(([k, [label]]) => html`<button class=${`tab ${k === page ? 'active' : ''}`} id=${`tab-${k}`} onClick=${() => { location.hash = k; }}>${label}</button>`)}
    <span class="who">${who} <button class="secondary" onClick=${signOut}>Sign out</button></span></header>
    <main><${Page} /></main>`;
}

const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
