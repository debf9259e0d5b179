/**
 * `registerWithDms` for the SDK clients: the control plane's registration v2 (net/registerWithDms.ts)
 * with the CA bundle and credentials read from the reference's environment variables.
 */
import { registerWithDms, registrationEnv, type RegistrationResult } from '../net/registerWithDms';

function failed(message: string): RegistrationResult {
  return { success: false, client_key_pem: '', signed_cert_pem: '', schema_json: '', scc_targets: [], error_message: message, ca_cert_pem: '', crl_pem: '', not_after: '', renew_after: '', record_size: 0, devices: [], hash_election: null, datasets: [], cluster: null };
}

/**
 * Registers `nodeName` with the DMS at `dmsUrl`. The CA bundle is PLATFORM_CA_CERT_PEM; the credential
 * a pre-issued certificate (PLATFORM_CLIENT_CERT_FILE / _KEY_FILE), PLATFORM_BOOTSTRAP_TOKEN or
 * K8S_SERVICEACCOUNT_TOKEN, in that order (docs/control-plane.md). Never throws: a failure is
 * `success: false` with `error_message` saying what to do.
 */
export async function registerClient(dmsUrl: string, nodeName: string, overrideKeyPem = '', env: Readonly<Record<string, string | undefined>> = process.env): Promise<RegistrationResult> {
  let reg;
  try {
    reg = await registrationEnv(env);
  } catch (err) {
    return failed((err as Error).message);
  }
  if (!reg.caCertPem) return failed('PLATFORM_CA_CERT_PEM is not set: give the CA bundle (PEM text or a file) the DMS certificate must chain to');
  return registerWithDms({ dmsUrl, nodeName, role: 'client', caCertPem: reg.caCertPem, credentials: reg.credentials, ...(overrideKeyPem ? { overrideKeyPem } : {}) });
}
