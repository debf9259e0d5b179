/**
 * The vendor's offline license tool (docs/webux.md, "License"). The private key never enters the
 * repository or a DMS: it stays on the signing machine and is named by path.
 *
 *   npx tsx scripts/license.ts keygen --out <dir>
 *       a new Ed25519 key pair: <dir>/hd-license-vendor.key.pem (mode 0600) and .pub.pem; the public
 *       half is what control/dms/webux/license.ts builds in (HD_LICENSE_PUBLIC_KEY)
 *   npx tsx scripts/license.ts sign --key <private key file> --licensee <name> --expires <ISO date>
 *       [--id <id>] [--issued <ISO date>] [--clusters N] [--storage-nodes N] [--proxies N] [--out <file>]
 *       a license file, checked with the key's public half before it is written (stdout without --out)
 *   npx tsx scripts/license.ts verify <license file> [--public-key <file>]
 *       checks a license against the built-in vendor key (or the given one), as the DMS does
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { canonicalJson, HD_LICENSE_KEY_FINGERPRINT, HD_LICENSE_PUBLIC_KEY, licenseKeyFingerprint, verifyLicense, type LicenseBody, type LicenseFile } from '../control/dms/webux/license';

/** Signs `body` with the Ed25519 private key `key`; throws unless the result verifies with the key's public half. */
export function signLicense(body: LicenseBody, key: KeyObject): LicenseFile {
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`the signing key is ${key.asymmetricKeyType ?? 'not asymmetric'}, not Ed25519`);
  const file = { license: body, signature: sign(null, Buffer.from(canonicalJson(body)), key).toString('base64') };
  verifyLicense(file, createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString(), new Date(Math.max(Date.now(), Date.parse(body.issued_at))));
  return file;
}

/** `--name value` pairs and the words before them. */
function parseArgs(argv: readonly string[]): { words: string[]; opts: Map<string, string> } {
  const words: string[] = [];
  const opts = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (!a.startsWith('--')) words.push(a);
    else if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
    else opts.set(a.slice(2), argv[++i] as string);
  }
  return { words, opts };
}

function need(opts: Map<string, string>, name: string): string {
  const v = opts.get(name);
  if (v === undefined || v === '') throw new Error(`--${name} is required`);
  return v;
}

function count(opts: Map<string, string>, name: string, dflt: number): number {
  const v = opts.get(name);
  if (v === undefined) return dflt;
  if (!/^[1-9]\d*$/.test(v)) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return Number(v);
}

function isoDate(v: string, name: string): string {
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw new Error(`--${name} must be an ISO 8601 date, got ${v}`);
  return new Date(t).toISOString();
}

/** Runs one command; resolves with what to print. */
export function run(argv: readonly string[]): string {
  const { words, opts } = parseArgs(argv);
  const [cmd, file] = words;
  if (cmd === 'keygen') {
    const dir = path.resolve(need(opts, 'out'));
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const pair = generateKeyPairSync('ed25519');
    const pub = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    writeFileSync(path.join(dir, 'hd-license-vendor.key.pem'), pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    writeFileSync(path.join(dir, 'hd-license-vendor.pub.pem'), pub, { flag: 'wx' });
    return `wrote ${dir}/hd-license-vendor.key.pem (keep it offline) and .pub.pem, fingerprint ${licenseKeyFingerprint(pub)}; build the public key into HD_LICENSE_PUBLIC_KEY:\n${pub}`;
  }
  if (cmd === 'sign') {
    const key = createPrivateKey(readFileSync(need(opts, 'key')));
    const body: LicenseBody = {
      id: opts.get('id') ?? `L-${randomUUID()}`,
      licensee: need(opts, 'licensee'),
      issued_at: isoDate(opts.get('issued') ?? new Date().toISOString(), 'issued'),
      expires_at: isoDate(need(opts, 'expires'), 'expires'),
      limits: { clusters: count(opts, 'clusters', 1), storage_nodes: count(opts, 'storage-nodes', 4), proxies: count(opts, 'proxies', 1) },
    };
    const text = `${JSON.stringify(signLicense(body, key), null, 2)}\n`;
    const fp = licenseKeyFingerprint(createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString());
    const note = fp === HD_LICENSE_KEY_FINGERPRINT ? '' : `note: this key (${fp}) is not the one built into HD (${HD_LICENSE_KEY_FINGERPRINT}); a DMS will refuse the license\n`;
    const out = opts.get('out');
    if (out === undefined) return `${note}${text}`;
    writeFileSync(out, text, { flag: 'wx' });
    return `${note}wrote ${out}: license ${body.id} for ${body.licensee} until ${body.expires_at}`;
  }
  if (cmd === 'verify' && file !== undefined) {
    const keyFile = opts.get('public-key');
    const l = verifyLicense(JSON.parse(readFileSync(file, 'utf8')) as unknown, keyFile ? readFileSync(keyFile, 'utf8') : HD_LICENSE_PUBLIC_KEY).license;
    return `valid: license ${l.id} for ${l.licensee} until ${l.expires_at}, limits ${JSON.stringify(l.limits)}`;
  }
  throw new Error('usage: scripts/license.ts keygen --out <dir> | sign --key <file> --licensee <name> --expires <date> [...] | verify <file> [--public-key <file>]');
}

if (require.main === module) {
  try {
    process.stdout.write(`${run(process.argv.slice(2))}\n`);
  } catch (err) {
    process.stderr.write(`license: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
