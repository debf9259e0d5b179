// Sign-in: an administrator's client certificate (when the browser presents one DMS-CA issued), or
// the one-time login secret `hd up` printed. A certificate that cannot sign in is shown with why.
import { useEffect, useState } from '/vendor/hooks.mjs';
import { api, ErrorLine, html, setCsrf } from '/app.js';

/** What the browser presented on this connection (GET /ui/certificate), with the button or the refusal. */
function CertificateCard({ onIn }) {
  const [v, setV] = useState(null);
  const [r, setR] = useState(null);
  useEffect(() => { api('GET', '/ui/certificate').then((x) => setV(x.body)); }, []);
  if (!v || !v.presented) return null;
  const who = html`<b>${v.subject.cn}</b> <span class="muted">(OU=${v.subject.ou || '—'}, serial ${v.serial}, issued by ${v.issuer || '?'}, expires ${new Date(v.not_after).toLocaleString()})</span>`;
  if (!v.accepted) {
    return html`<div class="card refused" id="cert-refused"><h3>This certificate cannot sign in</h3>
      <p>Your browser presented ${who}.</p><p class="error" id="cert-refusal">${v.reason}</p></div>`;
  }
  const go = async () => {
    const x = await api('POST', '/ui/session/certificate', {});
    if (x.status === 201) { setCsrf(x.body.csrf); onIn(x.body.who); } else setR(x);
  };
  return html`<div class="card" id="cert-card"><h3>Client certificate</h3><p>Your browser presented ${who}.</p>
    <button id="cert-sign-in" onClick=${go}>Sign in with this certificate</button><${ErrorLine} r=${r} /></div>`;
}

/** The sign-in page. */
export function SignIn({ onIn }) {
  const [secret, setSecret] = useState('');
  const [err, setErr] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    const r = await api('POST', '/ui/session', { secret });
    if (r.status === 201) { setCsrf(r.body.csrf); onIn(r.body.who); } else setErr(r);
  };
  return html`<div class="signin"><h2>Sign in to HD</h2><${CertificateCard} onIn=${onIn} />
    <div class="card"><h3>Login secret</h3>
    <p class="muted">Paste the one-time login secret that <code>hd up</code> printed (the file <code>admin/webux-login</code> in the DMS data directory), or one minted with <code>POST /v1/webux/login-secrets</code>.</p>
    <form onSubmit=${submit}><input id="secret" class="wide" type="password" autocomplete="off" value=${secret} onInput=${(e) => setSecret(e.target.value)} placeholder="login secret" />
    <p><button id="sign-in" type="submit">Sign in</button></p></form><${ErrorLine} r=${err} /></div></div>`;
}
