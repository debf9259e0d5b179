/** Settings shared by the control-plane stages (`dmsService`, `proxyService`). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { RegistrationCredentials } from '../../net/registerWithDms';
import { isSealed, parseWrapKey, unseal, WrapKeyError } from '../../net/pki/wrapKey';
import { str, type Setting } from '../../pipelines/settings';

/** PLATFORM_PKI_WRAP_KEY: empty, 64 hex digits or 32 bytes of base64. */
export const wrapKeySetting: Setting<Buffer | undefined> = {
  expects: 'empty, or a 256-bit AES key as 64 hex digits or base64',
  doc: 'seals persisted private keys at rest (AES-256-GCM) — PLATFORM_PKI_WRAP_KEY',
  required: false,
  fallback: undefined,
  parse(v) {
    if (typeof v.value !== 'string') return { ok: false, expected: this.expects };
    try {
      return { ok: true, value: parseWrapKey(v.value) };
    } catch (err) {
      if (err instanceof WrapKeyError) return { ok: false, expected: this.expects };
      throw err;
    }
  },
};

/** A comma-separated list (empty allowed). */
export function list(doc: string, fallback: string[]): Setting<string[]> {
  return {
    expects: 'a comma-separated list',
    doc,
    required: false,
    fallback,
    parse: (v) => (typeof v.value === 'string' ? { ok: true, value: v.value.split(',').map((x) => x.trim()).filter((x) => x !== '') } : { ok: false, expected: 'a comma-separated list' }),
  };
}

/** A file read when the pipeline loads (empty: none); `marker` must appear in it. */
function pemFile(doc: string, marker: string, what: string): Setting<string | undefined> {
  return {
    expects: `empty, or the path of a ${what} file`,
    doc,
    required: false,
    fallback: undefined,
    parse(v, ctx) {
      if (v.value === '') return { ok: true, value: undefined };
      if (typeof v.value !== 'string') return { ok: false, expected: this.expects };
      try {
        const text = readFileSync(path.resolve(ctx.baseDir, v.value), 'utf8');
        if (!text.includes(marker)) return { ok: false, expected: `a ${what} file (${marker})` };
        return { ok: true, value: text };
      } catch (err) {
        return { ok: false, expected: `a readable ${what} file (${(err as Error).message})` };
      }
    },
  };
}

/** A PEM public key file, read at load. */
export function publicKeyFile(doc: string): Setting<string | undefined> {
  return pemFile(doc, '-----BEGIN PUBLIC KEY-----', 'PEM public key');
}

/** A PEM certificate file, read at load. */
export function certificateFile(doc: string): Setting<string | undefined> {
  return pemFile(doc, '-----BEGIN CERTIFICATE-----', 'PEM certificate');
}

/** A private key file (PEM, or sealed with PLATFORM_PKI_WRAP_KEY), read at load. */
export function privateKeyFile(doc: string): Setting<string | undefined> {
  return pemFile(doc, '-----BEGIN', 'PEM private key');
}

/** PLATFORM_CA_CERT_PEM: PEM text, or the path of a PEM file. */
export const caBundleSetting: Setting<string> = {
  expects: 'the CA bundle: PEM text or the path of a PEM file',
  doc: 'the CA bundle the DMS certificate must chain to — PLATFORM_CA_CERT_PEM',
  required: true,
  parse(v, ctx) {
    if (typeof v.value !== 'string' || v.value === '') return { ok: false, expected: this.expects };
    if (v.value.includes('-----BEGIN CERTIFICATE-----')) return { ok: true, value: v.value };
    try {
      const text = readFileSync(path.resolve(ctx.baseDir, v.value), 'utf8');
      if (!text.includes('-----BEGIN CERTIFICATE-----')) return { ok: false, expected: 'a PEM certificate (BEGIN CERTIFICATE)' };
      return { ok: true, value: text };
    } catch (err) {
      return { ok: false, expected: `PEM text or a readable PEM file (${(err as Error).message})` };
    }
  },
};

/** The registration credentials every registering node's stage takes (the reference's variables). */
export const credentialSettings = {
  bootstrap_token: str({ doc: 'single-use registration token — PLATFORM_BOOTSTRAP_TOKEN', default: '', allowEmpty: true }),
  k8s_token: str({ doc: 'Kubernetes service-account token — K8S_SERVICEACCOUNT_TOKEN', default: '', allowEmpty: true }),
  client_cert_file: certificateFile('pre-issued certificate — PLATFORM_CLIENT_CERT_FILE'),
  client_key_file: privateKeyFile('pre-issued private key (PEM, or sealed with PLATFORM_PKI_WRAP_KEY) — PLATFORM_CLIENT_KEY_FILE'),
  pki_wrap_key: wrapKeySetting,
};

/** The credentials {@link credentialSettings} give, in the form registerWithDms takes (the pre-issued key unsealed). */
export function credentialsOf(c: { readonly bootstrap_token: string; readonly k8s_token: string; readonly client_cert_file?: string; readonly client_key_file?: string; readonly pki_wrap_key?: Buffer }): RegistrationCredentials {
  const keyPem = preIssuedKey(c);
  return {
    ...(c.client_cert_file !== undefined && { certPem: c.client_cert_file, keyPem }),
    ...(c.bootstrap_token !== '' && { bootstrapToken: c.bootstrap_token }),
    ...(c.k8s_token !== '' && { k8sToken: c.k8s_token }),
  };
}

/** The pre-issued key, unsealed; the certificate and key come together or not at all. */
function preIssuedKey(c: { readonly client_cert_file?: string; readonly client_key_file?: string; readonly pki_wrap_key?: Buffer }): string | undefined {
  if ((c.client_cert_file === undefined) !== (c.client_key_file === undefined)) throw new Error('client_cert_file (PLATFORM_CLIENT_CERT_FILE) and client_key_file (PLATFORM_CLIENT_KEY_FILE) must be set together');
  const keyPem = c.client_key_file;
  if (keyPem === undefined || !isSealed(keyPem)) return keyPem;
  if (!c.pki_wrap_key) throw new Error('client_key_file (PLATFORM_CLIENT_KEY_FILE) is sealed but PLATFORM_PKI_WRAP_KEY is not set');
  return unseal(keyPem, c.pki_wrap_key, 'node.key.pem', 'PLATFORM_CLIENT_KEY_FILE');
}
