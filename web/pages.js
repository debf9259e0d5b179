// The WebUX pages other than Governance: topology (with quarantine), datasets, certificates, bootstrap tokens, license.
import { useState } from '/vendor/hooks.mjs';
import { api, Badge, ErrorLine, html, usePoll } from '/app.js';

const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—');
const left = (iso) => { const d = (Date.parse(iso) - Date.now()) / 3600e3; return d > 48 ? `${Math.round(d / 24)} d` : `${d.toFixed(1)} h`; };
const addr = (a) => Object.entries(a || {}).map(([k, v]) => `${k} ${v.host}:${v.port}`).join(', ');

/** The bad batch notices the SCCs reported for one Storage Node (newest first): why to quarantine it. */
function NoticeList({ name, list }) {
  if (!list || list.length === 0) return html`<p class="muted" data-notices=${name}>no bad batch notices reported</p>`;
  return html`<table class="notices" data-notices=${name}><thead><tr><th>Time</th><th>Dataset</th><th>Batch</th><th>Code</th><th>Reason</th><th>×</th></tr></thead>
    <tbody>${[...list].reverse().map((x) => html`<tr data-batch=${x.batch_id}><td>${when(x.last_at)}</td><td>${x.dataset}</td><td class="muted" title=${x.batch_id}>${x.batch_id.slice(0, 16)}…</td><td>${x.code}</td><td>${x.reason}</td><td>${x.count}</td></tr>`)}</tbody></table>`;
}

function QuarantineControl({ n, reload, notices }) {
  const [reason, setReason] = useState('');
  const [typed, setTyped] = useState('');
  const [r, setR] = useState(null);
  if (n.role !== 'storageNode') return null;
  const reported = html`<${NoticeList} name=${n.name} list=${notices} />`;
  if (n.state === 'quarantined') {
    return html`<div>${reported}<b>${n.quarantine ? n.quarantine.reason : 'quarantined'}</b>
      ${n.quarantine && n.quarantine.notices.length ? html`<ul>${n.quarantine.notices.map((x) => html`<li class="muted">${x}</li>`)}</ul>` : null}
      <button class="secondary" data-release=${n.name} onClick=${async () => { setR(await api('POST', `/v1/nodes/${n.name}/release`, {})); reload(); }}>Release</button><${ErrorLine} r=${r} /></div>`;
  }
  const go = async () => { const given = typed.split('\n').map((x) => x.trim()).filter(Boolean); setR(await api('POST', `/v1/nodes/${n.name}/quarantine`, { reason, ...(given.length > 0 && { notices: given }) })); reload(); };
  return html`<div>${reported}<input placeholder="reason" data-reason=${n.name} value=${reason} onInput=${(e) => setReason(e.target.value)} />
    <input placeholder="notices (one a line; empty: those listed)" value=${typed} onInput=${(e) => setTyped(e.target.value)} />
    <button class="danger" data-quarantine=${n.name} onClick=${go}>Quarantine</button><${ErrorLine} r=${r} /></div>`;
}

/** Cluster topology: every node with role, address, health, certificate expiry and last report (polled). */
export function Topology() {
  const [d, reload] = usePoll('/v1/nodes');
  const [t] = usePoll('/v1/topology', 5000);
  const [bad] = usePoll('/v1/bad-batch-notices');
  if (!d || !d.nodes) return html`<p>Loading…</p>`;
  return html`<h2>Cluster topology</h2>
    <p class="muted">Instance ${t ? t.instance : ''} · primary cluster ${t ? t.primary_cluster : ''} · policy version ${t ? t.policy_version : ''} · refreshed every 2 s</p>
    <table id="nodes"><thead><tr><th>Node</th><th>Role</th><th>Cluster</th><th>State</th><th>Health</th><th>Address</th><th>Certificate expires</th><th>Last report</th><th>Quarantine</th></tr></thead>
    <tbody>${d.nodes.map((n) => html`<tr data-node=${n.name}><td>${n.name}</td><td>${n.role}</td><td>${n.cluster || '—'}</td><td><${Badge} s=${n.state} /></td>
      <td>${n.health ? html`<${Badge} s=${n.health.status} />` : '—'}</td><td class="muted">${addr(n.addresses)}</td>
      <td>${n.cert_not_after ? `${when(n.cert_not_after)} (${left(n.cert_not_after)})` : '—'}</td><td>${when(n.last_seen)}</td>
      <td><${QuarantineControl} n=${n} reload=${reload} notices=${bad && bad.nodes ? bad.nodes[n.name] : undefined} /></td></tr>`)}</tbody></table>`;
}

/** Datasets: the schemas and their clusters; add one from JSON with the engine's errors by path. */
export function Datasets() {
  const [d, reload] = usePoll('/v1/admin/datasets', 5000);
  const [text, setText] = useState('');
  const [clusters, setClusters] = useState('');
  const [check, setCheck] = useState(null);
  const [r, setR] = useState(null);
  const parse = () => { try { return JSON.parse(text); } catch (e) { setCheck({ valid: false, issues: [{ path: '(JSON)', message: e.message }] }); return undefined; } };
  const validate = async () => { const s = parse(); if (s !== undefined) setCheck((await api('POST', '/v1/datasets/validate', { schema: s })).body); };
  const add = async () => {
    const s = parse(); if (s === undefined) return;
    const res = await api('PUT', `/v1/datasets/${encodeURIComponent(s.id || '')}`, { schema: s, clusters: clusters.split(',').map((x) => x.trim()).filter(Boolean) });
    setR(res); if (res.status === 200) { setCheck(null); reload(); }
  };
  return html`<h2>Datasets</h2>
    <table id="datasets"><thead><tr><th>Id</th><th>Name</th><th>Record size</th><th>Fields</th><th>Clusters</th><th>Updated</th></tr></thead>
    <tbody>${(d && d.datasets ? d.datasets : []).map((x) => html`<tr><td>${x.id}</td><td>${x.schema.name}</td><td>${x.schema.record_size}</td>
      <td class="muted">${x.schema.fields.map((f) => `${f.name}:${f.type}@${f.offset}+${f.size}`).join(' ')}</td><td>${x.clusters.length ? x.clusters.join(', ') : 'every cluster'}</td><td>${when(x.updated_at)}</td></tr>`)}</tbody></table>
    <div class="card"><h3>Add a dataset (schema JSON, docs/schema.md)</h3>
    <textarea id="schema" rows="10" value=${text} onInput=${(e) => setText(e.target.value)}></textarea>
    <p>Distribute to clusters (comma separated; empty: every cluster) <input id="clusters" value=${clusters} onInput=${(e) => setClusters(e.target.value)} /></p>
    <button id="validate-schema" class="secondary" onClick=${validate}>Validate</button><button id="add-dataset" onClick=${add}>Add</button>
    ${check && (check.valid ? html`<p class="ok">Valid: ${check.id}, ${check.record_size}-byte records</p>`
      : html`<ul class="issues error" id="schema-issues">${check.issues.map((i) => html`<li><b>${i.path}</b>: ${i.message}</li>`)}</ul>`)}
    <${ErrorLine} r=${r} />${r && r.status === 200 ? html`<p class="ok">Added ${r.body.id}</p>` : null}</div>`;
}

/** Certificates DMS-CA issued, revocation with one click (the CRL is re-signed). */
export function Certificates() {
  const [d, reload] = usePoll('/v1/certificates', 5000);
  const [r, setR] = useState(null);
  const revoke = async (serial) => { setR(await api('POST', '/v1/certificates/revoke', { serial, reason: 'revoked in the WebUX' })); reload(); };
  return html`<h2>Certificates</h2><p class="muted">CRL number ${d ? d.crl_number : ''} · revocation list at <code>GET /v1/crl</code></p><${ErrorLine} r=${r} />
    <table id="certificates"><thead><tr><th>Node</th><th>Role</th><th>Serial</th><th>Issued</th><th>Expires</th><th>Status</th><th></th></tr></thead>
    <tbody>${(d && d.certificates ? d.certificates : []).map((c) => html`<tr><td>${c.node_name}</td><td>${c.role}</td><td class="muted">${c.serial}</td><td>${when(c.issued_at)}</td><td>${when(c.not_after)}</td>
      <td>${c.revoked_at ? html`<${Badge} s="revoked" /> ${c.reason}` : html`<${Badge} s="valid" />`}</td>
      <td>${c.revoked_at ? null : html`<button class="danger" data-revoke=${c.serial} onClick=${() => revoke(c.serial)}>Revoke</button>`}</td></tr>`)}</tbody></table>`;
}

/** Bootstrap tokens: create (the token is shown once), see expiry, revoke. */
export function Tokens() {
  const [d, reload] = usePoll('/v1/bootstrap-tokens', 5000);
  const [name, setName] = useState('');
  const [role, setRole] = useState('client');
  const [r, setR] = useState(null);
  const create = async () => { setR(await api('POST', '/v1/bootstrap-tokens', { node_name: name, role })); reload(); };
  return html`<h2>Bootstrap tokens</h2><div class="card">Node name <input id="token-node" value=${name} onInput=${(e) => setName(e.target.value)} />
    Role <select value=${role} onChange=${(e) => setRole(e.target.value)}>${['client', 'ingester', 'storageNode', 'scc', 'proxy', 'sqlServer'].map((x) => html`<option>${x}</option>`)}</select>
    <button id="create-token" onClick=${create}>Create</button><${ErrorLine} r=${r} />
    ${r && r.status === 201 ? html`<p class="ok">Token for ${r.body.node_name} (${r.body.role}), shown once: <code id="new-token">${r.body.token}</code>, expires ${when(r.body.expires_at)}</p>` : null}</div>
    <table id="tokens"><thead><tr><th>Id</th><th>Node</th><th>Role</th><th>Expires</th><th>Status</th><th></th></tr></thead>
    <tbody>${(d && d.tokens ? d.tokens : []).map((t) => html`<tr><td class="muted">${t.id}</td><td>${t.node_name}</td><td>${t.role}</td><td>${when(t.expires_at)}</td><td><${Badge} s=${t.status} /></td>
      <td><button class="danger" onClick=${async () => { setR(await api('DELETE', `/v1/bootstrap-tokens/${t.id}`)); reload(); }}>Revoke</button></td></tr>`)}</tbody></table>`;
}

/** The Enterprise License: mode, limits against usage, import. */
export function License() {
  const [d, reload] = usePoll('/v1/license', 5000);
  const [text, setText] = useState('');
  const [r, setR] = useState(null);
  const importIt = async () => { let doc; try { doc = JSON.parse(text); } catch (e) { setR({ status: 400, body: { error: 'invalid_json', message: e.message } }); return; } setR(await api('PUT', '/v1/license', doc)); reload(); };
  if (!d || !d.limits) return html`<p>Loading…</p>`;
  return html`<h2>License</h2><div class="card" id="license-state"><p>Mode <${Badge} s=${d.mode} /> ${d.license ? html` licensed to <b>${d.license.licensee}</b> until ${when(d.license.expires_at)} (${d.license.id})` : ' (no license: community limits)'}</p>
    ${d.problem ? html`<p class="error">${d.problem}</p>` : null}
    <table id="license-limits"><thead><tr><th>Limit</th><th>Allowed</th><th>In use</th></tr></thead><tbody>${Object.keys(d.limits).map((k) => html`<tr><td>${k}</td><td>${d.limits[k]}</td><td>${d.usage[k]} ${d.over.includes(k) ? html`<${Badge} s="over" />` : null}</td></tr>`)}</tbody></table>
    <p class="muted">A new cluster, or the first registration of a Storage Node or Proxy, beyond these is refused, naming the license; what registered before keeps running and re-registering, so <code>hd up</code> is never blocked (docs/webux.md, "License").
      Licenses are verified with ${d.key.vendor ? 'the vendor key built into HD' : html`<b>a key other than the vendor's</b>`} (SHA-256 ${d.key.fingerprint.slice(0, 16)}…).</p></div>
    <div class="card"><h3>Import a license file</h3><textarea id="license-file" rows="8" value=${text} onInput=${(e) => setText(e.target.value)}></textarea>
    <button id="import-license" onClick=${importIt}>Import</button><${ErrorLine} r=${r} />${r && r.status === 200 ? html`<p class="ok">License imported.</p>` : null}</div>`;
}
