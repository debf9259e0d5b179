/**
 * Checked reads of JSON request bodies. Every reader throws an `invalid_request` {@link HttpError}
 * naming the key and what was expected, so a client learns exactly what to fix.
 */
import { HttpError } from './errors';

/** A JSON object body. */
export type JsonObject = Record<string, unknown>;

/** `v` as a JSON object, or an error naming `what`. */
export function asObject(v: unknown, what = 'the request body'): JsonObject {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new HttpError('invalid_request', `${what} must be a JSON object`);
  return v as JsonObject;
}

/** Refuses keys of `o` not in `allowed` (a misspelt key is not silently ignored). */
export function onlyKeys(o: JsonObject, allowed: readonly string[], what = 'the request body'): void {
  const bad = Object.keys(o).filter((k) => !allowed.includes(k));
  if (bad.length > 0) throw new HttpError('invalid_request', `${what} has unknown key${bad.length > 1 ? 's' : ''} ${bad.map((k) => `'${k}'`).join(', ')}; expected: ${allowed.join(', ')}`);
}

interface StrOpts {
  readonly max?: number;
  readonly pattern?: RegExp;
  readonly patternDoc?: string;
}

/** A required non-empty string at `key`. */
export function reqString(o: JsonObject, key: string, opts: StrOpts = {}): string {
  const v = optString(o, key, opts);
  if (v === undefined) throw new HttpError('invalid_request', `'${key}' is required: a non-empty string`);
  return v;
}

/** An optional non-empty string at `key`. */
export function optString(o: JsonObject, key: string, opts: StrOpts = {}): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v === '') throw new HttpError('invalid_request', `'${key}' must be a non-empty string`);
  if (opts.max !== undefined && v.length > opts.max) throw new HttpError('invalid_request', `'${key}' is longer than ${opts.max} characters`);
  if (opts.pattern && !opts.pattern.test(v)) throw new HttpError('invalid_request', `'${key}' must be ${opts.patternDoc ?? `a string matching ${opts.pattern.source}`}, got ${JSON.stringify(v.slice(0, 80))}`);
  return v;
}

/** An optional integer in `min..max` at `key`. */
export function optInt(o: JsonObject, key: string, min: number, max: number): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) throw new HttpError('invalid_request', `'${key}' must be an integer ${min}..${max}, got ${JSON.stringify(v)}`);
  return v;
}

/** An optional boolean at `key`. */
export function optBool(o: JsonObject, key: string): boolean | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw new HttpError('invalid_request', `'${key}' must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

/** An optional array of non-empty strings at `key`. */
export function optStringArray(o: JsonObject, key: string, maxItems = 1024): string[] | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > maxItems || !v.every((x) => typeof x === 'string' && x !== '')) {
    throw new HttpError('invalid_request', `'${key}' must be an array of at most ${maxItems} non-empty strings`);
  }
  return v as string[];
}

/** An optional `{ host, port }` at `key`. */
export function optHostPort(o: JsonObject, key: string): { host: string; port: number } | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  const hp = asObject(v, `'${key}'`);
  onlyKeys(hp, ['host', 'port'], `'${key}'`);
  const host = hp.host;
  const port = hp.port;
  if (typeof host !== 'string' || host === '' || host.length > 253) throw new HttpError('invalid_request', `'${key}.host' must be a host name or address`);
  if (typeof port !== 'number' || !Number.isSafeInteger(port) || port < 1 || port > 65535) throw new HttpError('invalid_request', `'${key}.port' must be an integer 1..65535`);
  return { host, port };
}

/** Node names, cluster ids and dataset ids: letters, digits, `.`, `_`, `-`, 1..64 characters. */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** How {@link NAME_PATTERN} reads in messages. */
export const NAME_DOC = '1..64 letters, digits, ".", "_" or "-", starting with a letter or digit';
