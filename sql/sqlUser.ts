/**
 * The SQL user a statement runs for, carried from the door that authenticated it to the fetcher
 * that reads through the Proxy (HD_SQL_IDENTITY=user), without threading it through the engine:
 * the door runs the statement inside {@link runAsSqlUser} and every read it starts sees
 * {@link currentSqlUser} (AsyncLocalStorage follows the statement's promises, and only its own).
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** The identity the Proxy evaluates its policy for (X-Forwarded-Role / X-Forwarded-Email). */
export interface SqlUserIdentity {
  /** The user name the door authenticated. */
  readonly name: string;
  readonly role: string;
  readonly email: string;
}

const current = new AsyncLocalStorage<SqlUserIdentity | undefined>();

/** Runs `fn` (a statement) for `user`; undefined: the service's own identity. */
export function runAsSqlUser<T>(user: SqlUserIdentity | undefined, fn: () => T): T {
  return current.run(user, fn);
}

/** The user of the statement running here, if a door set one. */
export function currentSqlUser(): SqlUserIdentity | undefined {
  return current.getStore();
}
