/**
 * hd_sql's own key (HD_DMS_CLIENT_KEY_FILE) sealed with PLATFORM_PKI_WRAP_KEY, as every node's key
 * is when that setting is set (security issue #14, item 7): it opens with the right wrap key and
 * fails with an error naming the setting without it or with another.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE_KEY_PURPOSE } from '../../net/nodeIdentity';
import { seal } from '../../net/pki/wrapKey';
import { readClientKey } from '../../sql/schemaSources';

const KEY_PEM = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIKx1\n-----END PRIVATE KEY-----\n';

function withWrapKey<T>(value: string | undefined, fn: () => T): T {
  const before = process.env.PLATFORM_PKI_WRAP_KEY;
  if (value === undefined) delete process.env.PLATFORM_PKI_WRAP_KEY;
  else process.env.PLATFORM_PKI_WRAP_KEY = value;
  try {
    return fn();
  } finally {
    if (before === undefined) delete process.env.PLATFORM_PKI_WRAP_KEY;
    else process.env.PLATFORM_PKI_WRAP_KEY = before;
  }
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-client-key-'));
const wrap = randomBytes(32);
const sealedFile = path.join(dir, 'sealed.key.pem');
writeFileSync(sealedFile, seal(KEY_PEM, wrap, NODE_KEY_PURPOSE), { mode: 0o600 });
const plainFile = path.join(dir, 'plain.key.pem');
writeFileSync(plainFile, KEY_PEM, { mode: 0o600 });

test('a plain key reads as it is, with or without a wrap key', () => {
  assert.is(withWrapKey(undefined, () => readClientKey(plainFile)), KEY_PEM);
  assert.is(withWrapKey(wrap.toString('hex'), () => readClientKey(plainFile)), KEY_PEM);
});

test('a sealed key opens with PLATFORM_PKI_WRAP_KEY', () => {
  assert.is(withWrapKey(wrap.toString('hex'), () => readClientKey(sealedFile)), KEY_PEM);
});

test('a sealed key without the wrap key, or with another, fails naming the setting', () => {
  assert.throws(() => withWrapKey(undefined, () => readClientKey(sealedFile)), /sealed but PLATFORM_PKI_WRAP_KEY is not set/);
  assert.throws(() => withWrapKey(randomBytes(32).toString('hex'), () => readClientKey(sealedFile)), /cannot decrypt HD_DMS_CLIENT_KEY_FILE .*PLATFORM_PKI_WRAP_KEY/);
});

test.run();
