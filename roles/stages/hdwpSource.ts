import { HDWP_DEFAULT_MAX_PAYLOAD, HDWP_MAX_PAYLOAD_CEILING, HDWP_ROLES } from '../../engine-rs/hdwpFrame';
import type { HdwpRole } from '../../engine-rs/hdwpFrame';
import { serverLink } from '../../net/nodeLinks';
import { hdwpSource } from '../../sources/hdwpSource';
import { DEFAULT_ACCEPTED_ROLES, DEFAULT_CREDIT_WINDOW, DEFAULT_HANDSHAKE_TIMEOUT_MS, MIN_CREDIT_WINDOW } from '../../hdwp/hdwpServer';
import { defineSource } from '../../pipelines/registry';
import { bool, byteSize, int, oneOf, str, type Setting } from '../../pipelines/settings';
import { usesIdentity } from '../services/nodeIdentity';

const ROLES_EXPECTED = `a comma-separated list of ${HDWP_ROLES.join(', ')} (empty: the role's default)`;

/** Comma-separated client roles; empty means the server role's default. */
const rolesSetting: Setting<readonly HdwpRole[]> = {
  expects: ROLES_EXPECTED,
  doc: "client roles accepted in hello; empty: ingestClient and ingester for an scc, scc for a storageNode",
  required: false,
  fallback: [],
  parse(v) {
    if (typeof v.value !== 'string') return { ok: false, expected: ROLES_EXPECTED };
    const names = v.value.split(',').map((x) => x.trim()).filter((x) => x !== '');
    const bad = names.filter((n) => !(HDWP_ROLES as readonly string[]).includes(n));
    if (bad.length > 0) return { ok: false, expected: `${ROLES_EXPECTED}; unknown: ${bad.join(', ')}` };
    return { ok: true, value: names as HdwpRole[] };
  },
};

const settings = {
  host: str({ doc: 'address to listen on (PRODUCTION_IP)', default: '0.0.0.0' }),
  port: int({ doc: 'TCP port to listen on (PRODUCTION_PORT); 0 picks a free one', default: 6987, min: 0, max: 65535 }),
  role: oneOf(['scc', 'storageNode'] as const, { doc: 'the role answered in hello' }),
  roles: rolesSetting,
  credit_window: byteSize({ doc: 'records frame bytes a sender may have in flight per connection', default: DEFAULT_CREDIT_WINDOW, min: MIN_CREDIT_WINDOW, max: HDWP_MAX_PAYLOAD_CEILING }),
  max_payload: byteSize({ doc: 'largest frame payload accepted; a larger frame closes its connection', default: HDWP_DEFAULT_MAX_PAYLOAD, min: 1024, max: HDWP_MAX_PAYLOAD_CEILING }),
  max_pending: int({ doc: 'units of downstream work allowed in flight before a connection gets its credit back', default: 2, min: 0, max: 64 }),
  handshake_timeout_ms: int({ doc: 'a connection must send hello within this long (0: no limit)', default: DEFAULT_HANDSHAKE_TIMEOUT_MS, min: 0, max: 2 ** 31 - 1 }),
  idle_timeout_ms: int({ doc: 'close a connection with nothing in flight after this long without traffic (0: never)', default: 0, min: 0, max: 2 ** 31 - 1 }),
  on_disconnect: oneOf(['keep', 'discard'] as const, {
    doc: "batches a connection leaves open when it ends: keep (the batch timeout settles them) or discard (a bbn for each; Storage Nodes)",
    default: 'keep',
  }),
  mutual_tls: bool({ doc: 'with a registered node identity (uses: [a nodeIdentity service]): serve mutual TLS and accept only peers whose certificate role is one of roles (docs/control-plane.md)', default: false }),
};

/** `hdwpSource`: accepts HDWP ingest streams over TCP and emits their batches (docs/ingest-protocol.md). */
export const hdwpSourceStage = defineSource({
  name: 'hdwpSource',
  kind: 'source',
  doc: 'Accepts HDWP ingest streams over TCP with credit flow control; emits batched records, eob and bbn (with an ack hook) from every connection.',
  unit: 'records',
  output: 'batched-records',
  settings,
  // With an identity the listener opens once the node is registered (the service starts first).
  uses: { identity: usesIdentity },
  create: (c, ctx) => {
    const id = ctx.services.identity;
    return hdwpSource({
        host: c.host,
        port: c.port,
        role: c.role,
        roles: c.roles.length > 0 ? c.roles : undefined,
        creditWindow: c.credit_window,
        maxPayload: c.max_payload,
        maxPending: c.max_pending,
        handshakeTimeoutMs: c.handshake_timeout_ms,
        idleTimeoutMs: c.idle_timeout_ms,
        onDisconnect: c.on_disconnect,
        flow: ctx.flow,
        counters: ctx.counters,
        report: (m) => ctx.report(m),
        trackTeardown: (w) => ctx.trackTeardown(w),
        ...(id && c.mutual_tls && { link: serverLink(id, 'production', c.roles.length > 0 ? c.roles : DEFAULT_ACCEPTED_ROLES[c.role]) }),
      });
  },
});
