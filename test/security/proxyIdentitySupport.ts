/** Helpers of the security tests: DMS-CA certificates of any role, issued by a test DMS. */
import * as assert from 'uvu/assert';
import type { NodeRole } from '../../control/dms/state';
import { MtlsIdentity } from '../../net/mtls';
import { registerWithDms } from '../../net/registerWithDms';
import type { TestDms } from '../control/support';

/** Declares node `name` of `role` (privileged roles are issued only for declared nodes) and registers it with a fresh bootstrap token. */
export async function enrol(dms: TestDms, name: string, role: NodeRole): Promise<MtlsIdentity> {
  const declared = await dms.call('PUT', `/v1/nodes/${name}`, dms.admin, { role, addresses: { control: { host: '127.0.0.1', port: 1 } } });
  assert.ok(declared.status < 300, `declaring ${name}: ${JSON.stringify(declared.body)}`);
  const token = ((await dms.call('POST', '/v1/bootstrap-tokens', dms.admin, { node_name: name, role })).body as { token: string }).token;
  const r = await registerWithDms({ dmsUrl: dms.url, nodeName: name, role, caCertPem: dms.server.caCertPem, credentials: { bootstrapToken: token }, keyBits: 2048 });
  assert.ok(r.success, `registering ${name} (${role}): ${r.error_message}`);
  return MtlsIdentity.fromRegistration(r);
}
