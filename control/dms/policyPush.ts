/**
 * Policy updates (the reference's policy webhook): when the policy changes, the DMS calls
 * `POST /v1/proxy/config` on every active Proxy with its own certificate (mutual TLS). A Proxy that
 * did not take the new version (down, unreachable) is pushed to again every DMS_POLICY_RETRY_MS
 * until it has it; a Proxy that registers later gets the policy in its registration answer.
 */
import { requestJson } from '../../net/jsonClient';
import type { DmsContext } from './context';
import type { NodeRecord } from './state';

/** The DMS's client identity for the push (its server certificate, OU=dms, serves as client certificate). */
export interface PushIdentity {
  readonly keyPem: string;
  readonly certPem: string;
  readonly caPem: string;
}

/** The outcome of one push. */
export interface PushResult {
  readonly proxy: string;
  readonly result: 'installed' | 'failed';
  readonly message?: string;
}

/** States in which a Proxy is pushed to. */
const ACTIVE = new Set(['registered', 'ready', 'degraded']);

/** Pushes the stored policy to the Proxies that lack it. */
export class PolicyPusher {
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<unknown> = Promise.resolve();

  /** @param ctx the DMS; @param identity the DMS's current client material; @param observe counts pushes */
  constructor(
    private readonly ctx: DmsContext,
    private readonly identity: () => PushIdentity,
    private readonly observe: (result: PushResult['result']) => void = () => undefined,
  ) {}

  /** Starts the retry timer. */
  start(): void {
    this.timer = setInterval(() => void this.pushAll(), this.ctx.settings.policyRetryMs);
    this.timer.unref();
  }

  /** Stops the retry timer. */
  stop(): void {
    clearInterval(this.timer);
  }

  /** Active Proxies whose acknowledged version is behind the stored policy. */
  private behind(): NodeRecord[] {
    const s = this.ctx.store.get();
    const v = s.policy?.version ?? 0;
    if (v === 0) return [];
    return Object.values(s.nodes).filter((n) => n.role === 'proxy' && n.config_url && ACTIVE.has(n.state) && (n.policy_version ?? 0) < v);
  }

  /**
   * Pushes to every Proxy that lacks the current version, in parallel; resolves with each result.
   * Rounds run one after another, and each reads the policy when it starts, so a call made after a
   * policy change always pushes that change.
   */
  pushAll(): Promise<PushResult[]> {
    const next = this.chain.then(() => this.round());
    this.chain = next.catch(() => []);
    return next;
  }

  private async round(): Promise<PushResult[]> {
    const policy = this.ctx.store.get().policy;
    if (!policy) return [];
    const body = { version: policy.version, rego: policy.rego, ...(policy.data && { data: policy.data }) };
    const id = this.identity();
    return Promise.all(
      this.behind().map(async (n): Promise<PushResult> => {
        let r: PushResult;
        try {
          const a = await requestJson('POST', n.config_url as string, { ca: id.caPem, cert: id.certPem, key: id.keyPem, servername: n.name, roles: ['proxy'] }, body, { timeoutMs: this.ctx.settings.policyPushTimeoutMs });
          const b = a.body as { installed?: number; error?: string; message?: string } | undefined;
          // 409: the Proxy already has this version or a newer one (a retry after a lost answer).
          if (a.status === 200 || a.status === 409) r = { proxy: n.name, result: 'installed' };
          else r = { proxy: n.name, result: 'failed', message: `HTTP ${a.status} ${b?.error ?? ''}: ${b?.message ?? ''}` };
        } catch (err) {
          r = { proxy: n.name, result: 'failed', message: (err as Error).message };
        }
        this.observe(r.result);
        if (r.result === 'installed') {
          await this.ctx.store.update((s) => {
            const node = s.nodes[n.name];
            if (node) node.policy_version = Math.max(node.policy_version ?? 0, policy.version);
          });
        } else this.ctx.log(`policy version ${policy.version} did not reach proxy '${n.name}' (${n.config_url}): ${r.message}; retrying every ${this.ctx.settings.policyRetryMs} ms`, 'warn');
        return r;
      }),
    );
  }
}
