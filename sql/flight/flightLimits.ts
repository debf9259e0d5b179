/**
 * The Arrow Flight SQL door's side of the doors' limits (sql/doorLimits.ts): calls in flight per
 * door (HD_SQL_MAX_CONNECTIONS; gRPC multiplexes calls over connections, so the call is what is
 * counted), prepared statements per peer (HD_SQL_MAX_PREPARED_STATEMENTS) and the bytes of one DoPut
 * (HD_SQL_FLIGHT_MAX_PUT_BYTES). Each refusal is RESOURCE_EXHAUSTED with a message naming the setting.
 */
import * as grpc from '@grpc/grpc-js';
import type { ConnectionGate } from '../doorLimits';
import { SqlError } from '../sqlError';

/** A RESOURCE_EXHAUSTED status carrying the SQLSTATE of `err`, like the door's other errors. */
export function exhausted(err: SqlError): Partial<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  metadata.set('hd-sqlstate', err.codes.sqlstate);
  metadata.set('hd-error-code', err.kind);
  return { code: grpc.status.RESOURCE_EXHAUSTED, details: `${err.message} (SQLSTATE ${err.codes.sqlstate})`, metadata };
}

type AnyCall = grpc.ServerUnaryCall<Buffer, Buffer> | grpc.ServerWritableStream<Buffer, Buffer> | grpc.ServerDuplexStream<Buffer, Buffer>;

/**
 * Every handler of `handlers` behind `gate`: a call past the cap is refused with RESOURCE_EXHAUSTED
 * before it runs; an admitted one is uncounted when it answers, ends or is cancelled.
 */
export function gatedCalls(handlers: grpc.UntypedServiceImplementation, unary: (name: string) => boolean, gate: ConnectionGate, log: (line: string) => void): grpc.UntypedServiceImplementation {
  const out: grpc.UntypedServiceImplementation = {};
  for (const [name, handler] of Object.entries(handlers)) {
    const isUnary = unary(name);
    out[name] = ((call: AnyCall, cb?: grpc.sendUnaryData<Buffer>) => {
      const release = gate.admit();
      if (!release) {
        log(`Flight SQL: ${name} from ${call.getPeer()} refused: ${gate.max} calls in flight (HD_SQL_MAX_CONNECTIONS)`);
        const refusal = exhausted(new SqlError('too_many_connections', gate.refusal().replace('connections', 'calls in flight')));
        if (isUnary) return cb?.(refusal);
        return (call as grpc.ServerWritableStream<Buffer, Buffer>).emit('error', refusal);
      }
      (call as grpc.ServerUnaryCall<Buffer, Buffer>).once('cancelled', release);
      if (isUnary) {
        const answer: grpc.sendUnaryData<Buffer> = (...args) => {
          release();
          (cb as grpc.sendUnaryData<Buffer>)(...args);
        };
        return (handler as (c: unknown, cb: unknown) => void)(call, answer);
      }
      const stream = call as grpc.ServerWritableStream<Buffer, Buffer>;
      stream.once('finish', release);
      stream.once('close', release);
      return (handler as (c: unknown) => void)(call);
    }) as grpc.UntypedHandleCall;
  }
  return out;
}

/** Prepared statements held per peer, capped. */
export class PreparedQuota {
  private readonly held = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Counts one more for `peer`. @throws SqlError `limit_exceeded` when it already holds `max` */
  take(peer: string): void {
    const n = this.held.get(peer) ?? 0;
    if (n >= this.max) throw new SqlError('limit_exceeded', `too many prepared statements: ${peer} holds ${n}, the most one client may keep open (HD_SQL_MAX_PREPARED_STATEMENTS); close those it no longer uses (ClosePreparedStatement)`);
    this.held.set(peer, n + 1);
  }

  /** Uncounts one of `peer`'s. */
  give(peer: string): void {
    const n = (this.held.get(peer) ?? 0) - 1;
    if (n > 0) this.held.set(peer, n);
    else this.held.delete(peer);
  }
}

/**
 * Adds `bytes` to what one DoPut has sent: false (and the call should be refused with
 * {@link putTooLarge}) once the total passes `max`.
 */
export class PutBudget {
  private used = 0;
  constructor(readonly max: number) {}
  add(bytes: number): boolean {
    this.used += bytes;
    return this.used <= this.max;
  }
}

/** The refusal of a DoPut past HD_SQL_FLIGHT_MAX_PUT_BYTES. */
export function putTooLarge(max: number): Partial<grpc.StatusObject> {
  return exhausted(new SqlError('limit_exceeded', `DoPut sent more than ${max} bytes (HD_SQL_FLIGHT_MAX_PUT_BYTES): it binds one row of parameters of a prepared statement`));
}
