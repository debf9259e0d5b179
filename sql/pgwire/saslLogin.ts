/**
 * The login of one PostgreSQL wire connection when credentials are set: AuthenticationSASL offering
 * SCRAM-SHA-256 (and SCRAM-SHA-256-PLUS on TLS, with tls-server-end-point channel binding), then SASLInitialResponse → AuthenticationSASLContinue, SASLResponse →
 * AuthenticationSASLFinal. Each step answers the bytes to send, or the FATAL error that ends the
 * connection (28P01 for a wrong password, 08P01 for anything malformed or out of order).
 */
import { backend, type PgErrorFields } from './backend';
import { parseSaslInitialResponse, PgProtocolError, type FrontendMessage } from './frontend';
import { SCRAM_SHA_256, SCRAM_SHA_256_PLUS, ScramError, ScramExchange, type ScramVerifier } from './scram';

/** What a login step leads to: more bytes to send, the login done (send, then AuthenticationOk), or the end. */
export type LoginStep = { readonly kind: 'continue'; readonly send: Buffer } | { readonly kind: 'done'; readonly send: Buffer } | { readonly kind: 'refuse'; readonly error: PgErrorFields };

/** What a refused password hints at, by where the credentials come from. */
export const LOGIN_HINTS = {
  password: 'the password is the first line of the file named by HD_SQL_PGWIRE_PASSWORD_FILE on the server',
  users: 'the user and its password come from the file named by HD_SQL_USERS_FILE on the server',
} as const;

function refuse(code: '28P01' | '08P01', message: string, hint?: string): LoginStep {
  return { kind: 'refuse', error: { severity: 'FATAL', code, message, ...(hint ? { hint } : {}) } };
}

/** One connection's SASL login. */
export class SaslLogin {
  private scram: ScramExchange | undefined;

  /**
   * @param channelBinding the TLS connection's tls-server-end-point data: -PLUS is offered (first,
   * as PostgreSQL does) and a client that could bind but says the server cannot ("y") is refused
   */
  constructor(
    private readonly verifier: ScramVerifier,
    private readonly user: string,
    private readonly channelBinding?: Buffer,
    private readonly hint: string = LOGIN_HINTS.password,
  ) {}

  /** AuthenticationSASL: the request that opens the login. */
  request(): Buffer {
    return backend.authSasl(this.channelBinding ? [SCRAM_SHA_256_PLUS, SCRAM_SHA_256] : [SCRAM_SHA_256]);
  }

  /** The next client message of the login. Never throws: every fault is a 'refuse'. */
  step(m: FrontendMessage): LoginStep {
    if (m.kind !== 'authResponse') return refuse('08P01', `protocol violation: expected a SASL response during authentication, got ${m.kind === 'other' ? `message ${JSON.stringify(m.code)}` : m.kind}`);
    try {
      if (this.scram === undefined) {
        const init = parseSaslInitialResponse(m.data);
        const plus = init.mechanism === SCRAM_SHA_256_PLUS && this.channelBinding !== undefined;
        if (init.mechanism !== SCRAM_SHA_256 && !plus) {
          return refuse('08P01', `protocol violation: SASL mechanism ${JSON.stringify(init.mechanism.slice(0, 64))} is not offered; this server offers ${this.channelBinding ? `${SCRAM_SHA_256_PLUS} and ` : ''}${SCRAM_SHA_256}${this.channelBinding ? '' : ' only (channel binding needs TLS: connect with sslmode=require)'}`);
        }
        if (init.data === null) return refuse('08P01', 'protocol violation: SASLInitialResponse carries no SCRAM client-first-message');
        // "y": the client could bind but believes the server cannot — over TLS that is a downgrade (RFC 5802 §6).
        if (!plus && this.channelBinding && init.data[0] === 0x79) return refuse('08P01', 'protocol violation: SCRAM channel binding negotiation error: the client supports channel binding and thinks this server does not, but it does (a downgrade?)');
        this.scram = new ScramExchange(this.verifier, undefined, plus ? this.channelBinding : undefined);
        return { kind: 'continue', send: backend.authSaslContinue(this.scram.first(init.data)) };
      }
      return { kind: 'done', send: backend.authSaslFinal(this.scram.final(m.data)) };
    } catch (err) {
      if (err instanceof ScramError && err.kind === 'auth') return refuse('28P01', `password authentication failed for user "${this.user}"`, this.hint);
      const why = err instanceof ScramError || err instanceof PgProtocolError ? err.message : String(err);
      return refuse('08P01', `protocol violation: ${why}`);
    }
  }
}
