// Governance: the active Rego policy in an editor with highlighting, validation (line:col), dry run, publish, history, roll-back.
import { useEffect, useState } from '/vendor/hooks.mjs';
import { api, ErrorLine, html } from '/app.js';

const KW = /\b(package|import|if|contains|default|not|some|every|in|with|else|true|false|null|input|data)\b/;
const TOKEN = /(#.*$)|("(?:[^"\\]|\\.)*")|(\b\d+(?:\.\d+)?\b)|(\b[A-Za-z_]\w*\b)|(\s+)|(.)/gm;

/** Rego source as highlighted lines; `bad` marks the line of a compiler error. */
function Highlighted({ text, bad }) {
  return html`<pre class="code" id="rego-view">${text.split('\n').map((line, i) => {
    const parts = [];
    for (const m of line.matchAll(TOKEN)) {
      if (m[1]) parts.push(html`<span class="com">${m[1]}</span>`);
      else if (m[2]) parts.push(html`<span class="str">${m[2]}</span>`);
      else if (m[3]) parts.push(html`<span class="num">${m[3]}</span>`);
      else if (m[4] && KW.test(m[4])) parts.push(html`<span class="kw">${m[4]}</span>`);
      else parts.push(m[0]);
    }
    return html`<div class=${bad === i + 1 ? 'bad' : ''}><span class="com">${String(i + 1).padStart(3)} </span>${parts}</div>`;
  })}</pre>`;
}

function Mask({ fields }) {
  return html`<div class="mask" id="dry-run-mask">${fields.map((f) => html`<div><b>${f.name}</b> <span class="muted">bytes ${f.offset}–${f.offset + f.size - 1}</span><br />
    ${Array.from({ length: f.size }, () => html`<span class=${f.hidden ? 'off' : 'on'}>${f.hidden ? '00' : 'ff'}</span>`)}</div>`)}</div>`;
}

/** The Governance page. */
export function Governance() {
  const [rego, setRego] = useState('');
  const [current, setCurrent] = useState(null);
  const [history, setHistory] = useState([]);
  const [check, setCheck] = useState(null);
  const [dry, setDry] = useState(null);
  const [r, setR] = useState(null);
  const [dataset, setDataset] = useState('');
  const [role, setRole] = useState('guest');
  const [email, setEmail] = useState('guest@example.com');
  const [query, setQuery] = useState('{"sub_queries": []}');
  const load = async () => {
    const p = await api('GET', '/v1/policy');
    if (p.status === 200) { setCurrent(p.body); setRego((x) => x || p.body.rego); }
    const hst = await api('GET', '/v1/policy/history');
    if (hst.status === 200) setHistory(hst.body.versions);
  };
  useEffect(() => { load(); api('GET', '/v1/admin/datasets').then((d) => { if (d.body && d.body.datasets && d.body.datasets[0]) setDataset(d.body.datasets[0].id); }); }, []);
  const validate = async () => setCheck((await api('POST', '/v1/policy/validate', { rego })).body);
  const dryRun = async () => {
    let q; try { q = JSON.parse(query); } catch (e) { setDry({ error: `the sample query is not JSON: ${e.message}` }); return; }
    const res = await api('POST', '/v1/policy/dry-run', { rego, dataset, identity: { role, email }, query: q });
    setDry(res.status === 200 ? res.body : { error: `${res.body.error}: ${res.body.message}` });
  };
  const publish = async () => { const res = await api('PUT', '/v1/policy', { rego }); setR(res); if (res.status === 200) { setCheck(null); load(); } };
  const rollback = async (version) => { const res = await api('POST', '/v1/policy/rollback', { version }); setR(res); if (res.status === 200) { const p = await api('GET', '/v1/policy'); setRego(p.body.rego); load(); } };
  const bad = check && !check.valid ? check.issues[0].line : 0;
  return html`<h2>Security › Governance</h2>
    <p class="muted">Active policy version <b id="policy-version">${current ? current.version : 'none'}</b>${current ? ` since ${new Date(current.updated_at).toLocaleString()}` : ''}. Publishing pushes it to every Proxy at once.</p>
    <div class="row"><div><textarea id="rego" rows="14" spellcheck="false" value=${rego} onInput=${(e) => { setRego(e.target.value); setCheck(null); }}></textarea>
      <${Highlighted} text=${rego} bad=${bad} /></div>
    <div><button id="validate-policy" class="secondary" onClick=${validate}>Validate</button><button id="publish-policy" onClick=${publish}>Publish to every Proxy</button>
      ${check && (check.valid ? html`<p class="ok" id="policy-check">Compiles.</p>` : html`<ul class="issues error" id="policy-check">${check.issues.map((i) => html`<li>line ${i.line}, column ${i.column}: ${i.message}</li>`)}</ul>`)}
      <${ErrorLine} r=${r} />${r && r.status === 200 ? html`<p class="ok" id="publish-result">Version ${r.body.version}: ${(r.body.proxies || []).map((p) => `${p.proxy} ${p.result}`).join(', ') || 'no Proxy registered'}</p>` : null}
      <div class="card"><h3>Dry run</h3>Dataset <input id="dry-dataset" value=${dataset} onInput=${(e) => setDataset(e.target.value)} />
        Role <input id="dry-role" value=${role} onInput=${(e) => setRole(e.target.value)} /> Email <input value=${email} onInput=${(e) => setEmail(e.target.value)} />
        <p>Sample query <input id="dry-query" style="width:100%" value=${query} onInput=${(e) => setQuery(e.target.value)} /></p>
        <button id="dry-run" class="secondary" onClick=${dryRun}>Dry run</button>
        ${dry && (dry.error ? html`<p class="error">${dry.error}</p>` : !dry.valid ? html`<p class="error">The draft does not compile (validate it).</p>` : !dry.evaluated ? html`<p class="error">${dry.error}</p>`
          : html`<div id="dry-result"><p>allow: <b>${String(dry.allow)}</b> · hidden: <b>${dry.hidden_fields.join(', ') || 'none'}</b> · constraints: ${dry.constraints.length} · unmatchable branches: ${dry.unmatchable_branches}</p><${Mask} fields=${dry.fields} /></div>`)}</div>
      <div class="card"><h3>History</h3><table id="policy-history"><tbody>${history.map((v) => html`<tr><td>v${v.version}</td><td>${new Date(v.updated_at).toLocaleString()}</td>
        <td>${current && v.version === current.version ? 'active' : html`<button class="secondary" data-rollback=${v.version} onClick=${() => rollback(v.version)}>Roll back to this</button>`}</td></tr>`)}</tbody></table></div>
    </div></div>`;
}
