/**
 * The login of one PostgreSQL wire connection when a password is set: AuthenticationSASL offering
 * SCRAM-SHA-256, then SASLInitialResponse → AuthenticationSASLContinue, SASLResponse →
 * AuthenticationSASLFinal. Each step answers the bytes to send, or the FATAL error that ends the
 * connection (28P01 for a wrong password, 08P01 for anything malformed or out of order).
 */
import { backend, type PgErrorFields } from './backend';
import { parseSaslInitialResponse, PgProtocolError, type FrontendMessage } from './frontend';
import { SCRAM_SHA_256, ScramError, ScramExchange, type ScramVerifier } from './scram';

/** What a login step leads to: more bytes to send, the login done (send, then AuthenticationOk), or the end. */
export type LoginStep = { readonly kind: 'continue'; readonly send: Buffer } | { readonly kind: 'done'; readonly send: Buffer } | { readonly kind: 'refuse'; readonly error: PgErrorFields };

const HINT = 'the password is the first line of the file named by HD_SQL_PGWIRE_PASSWORD_FILE on the server';

function refuse(code: '28P01' | '08P01', message: string, hint?: string): LoginStep {
  return { kind: 'refuse', error: { severity: 'FATAL', code, message, ...(hint ? { hint } : {}) } };
}

/** One connection's SASL login. */
export class SaslLogin {
  private scram: ScramExchange | undefined;

  constructor(
    private readonly verifier: ScramVerifier,
    private readonly user: string,
  ) {}

  /** AuthenticationSASL: the request that opens the login. */
  request(): Buffer {
    return backend.authSasl([SCRAM_SHA_256]);
  }

  /** The next client message of the login. Never throws: every fault is a 'refuse'. */
  step(m: FrontendMessage): LoginStep {
    if (m.kind !== 'authResponse') return refuse('08P01', `protocol violation: expected a SASL response during authentication, got ${m.kind === 'other' ? `message ${JSON.stringify(m.code)}` : m.kind}`);
    try {
      if (this.scram === undefined) {
        const init = parseSaslInitialResponse(m.data);
        if (init.mechanism !== SCRAM_SHA_256) return refuse('08P01', `protocol violation: SASL mechanism ${JSON.stringify(init.mechanism)} is not offered; this server offers ${SCRAM_SHA_256} only`);
        if (init.data === null) return refuse('08P01', 'protocol violation: SASLInitialResponse carries no SCRAM client-first-message');
        this.scram = new ScramExchange(this.verifier);
        return { kind: 'continue', send: backend.authSaslContinue(this.scram.first(init.data)) };
      }
      return { kind: 'done', send: backend.authSaslFinal(this.scram.final(m.data)) };
    } catch (err) {
      if (err instanceof ScramError && err.kind === 'auth') return refuse('28P01', `password authentication failed for user "${this.user}"`, HINT);
      const why = err instanceof ScramError || err instanceof PgProtocolError ? err.message : String(err);
      return refuse('08P01', `protocol violation: ${why}`);
    }
  }
}
