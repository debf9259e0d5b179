/**
 * Error tracking: with PLATFORM_OPT_IN=true and TRACKER_DSN set (a Sentry DSN,
 * `https://<public key>@<host>[:port]/<project id>`), uncaught exceptions, unhandled rejections and
 * the failure that ends a node are sent with the Sentry Node SDK (`@sentry/node`). Otherwise the
 * SDK is not even loaded and nothing is sent: no connection is attempted.
 */
import type { NodeClient } from '@sentry/node';

/** The environment settings error tracking reads. */
export interface ErrorTrackingEnv {
  readonly PLATFORM_OPT_IN?: string;
  readonly TRACKER_DSN?: string;
}

/** Who reports: shown with each event. */
export interface ErrorTrackingIdentity {
  /** The node's name (the event's `server_name`). */
  readonly node: string;
  /** The node's role or pipeline name (tag `role`). */
  readonly role: string;
}

/** Whether error tracking is on, and why not when it is off. */
export type ErrorTrackingState = { readonly enabled: true; readonly dsn: string } | { readonly enabled: false; readonly reason: string };

/** Parses the DSN the way users write it; the problem as a sentence when it is not one. */
export function checkDsn(dsn: string): string | undefined {
  let u: URL;
  try {
    u = new URL(dsn);
  } catch {
    return `TRACKER_DSN '${dsn}' is not a URL (expected https://<public key>@<host>/<project id>)`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `TRACKER_DSN must be http(s), got ${u.protocol}`;
  if (!u.username) return 'TRACKER_DSN has no public key (https://<public key>@<host>/<project id>)';
  if (!/^\/(.*\/)?\d+$/.test(u.pathname)) return 'TRACKER_DSN has no project id (https://<public key>@<host>/<project id>)';
  return undefined;
}

/** What the settings ask for, without acting on it. */
export function errorTrackingState(env: ErrorTrackingEnv): ErrorTrackingState {
  if ((env.PLATFORM_OPT_IN ?? '').trim().toLowerCase() !== 'true') return { enabled: false, reason: 'PLATFORM_OPT_IN is not true' };
  const dsn = (env.TRACKER_DSN ?? '').trim();
  if (!dsn) return { enabled: false, reason: 'TRACKER_DSN is not set' };
  const problem = checkDsn(dsn);
  return problem ? { enabled: false, reason: problem } : { enabled: true, dsn };
}

let client: NodeClient | undefined;
type SentryModule = typeof import('@sentry/node');
let sentry: SentryModule | undefined;

/**
 * Starts error tracking when the settings opt in; returns the state. Idempotent: a second call
 * keeps the first client. Off, `@sentry/node` is never required.
 */
export function startErrorTracking(env: ErrorTrackingEnv, who: ErrorTrackingIdentity): ErrorTrackingState {
  const state = errorTrackingState(env);
  if (!state.enabled || client) return state;
  // Loaded only when opted in: no SDK code, no socket, no handler otherwise.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  sentry = require('@sentry/node') as SentryModule;
  client = sentry.init({
    dsn: state.dsn,
    serverName: who.node,
    initialScope: { tags: { role: who.role, node: who.node } },
    // Errors only: spans belong to the OpenTelemetry pipeline of lib/tracing, not to the tracker.
    enableOpenTelemetrySetup: false,
    defaultIntegrations: false,
    integrations: [
      sentry.onUncaughtExceptionIntegration({ exitEvenIfOtherHandlersAreRegistered: true }),
      sentry.onUnhandledRejectionIntegration({ mode: 'strict' }),
      sentry.linkedErrorsIntegration(),
      sentry.contextLinesIntegration(),
    ],
  });
  return state;
}

/** Sends `err` (the failure that ends a node, say) when tracking is on; a no-op otherwise. */
export function reportError(err: unknown): void {
  if (client && sentry) sentry.captureException(err);
}

/** Waits (at most `timeoutMs`) until the events captured so far are sent; true when they were. */
export async function flushErrorTracking(timeoutMs = 2000): Promise<boolean> {
  return client ? client.flush(timeoutMs) : true;
}
