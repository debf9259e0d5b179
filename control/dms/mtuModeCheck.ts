/**
 * The registration check of a node's MTU mode (docs/control-plane.md, "MTU mode"): the data
 * plane's MTU mode is instance-wide, so an SCC or a Storage Node registering with another mode than
 * the DMS's MTU_MODE is refused (409 conflict) with what to change. Other roles send no datagrams
 * on the data plane: their declaration, when they make one, must still be a mode.
 */
import { HttpError } from '../http/errors';
import { DEFAULT_MTU_MODE, MTU_BYTES, MTU_MODES, parseMtuMode, type MtuMode } from '../../net/mtuMode';
import type { NodeRole } from './state';

/** Roles whose data-plane datagrams the MTU mode sizes: they must declare the instance's mode (absent: standard). */
export const MTU_MODE_ROLES: readonly NodeRole[] = ['scc', 'storageNode'];

/**
 * Refuses a registration whose `declared` mode (the body's `mtu_mode`; absent from an SCC or a
 * Storage Node means standard, the reference's default) is not the instance's `instance` mode.
 */
export function checkDeclaredMtuMode(nodeName: string, role: NodeRole, declared: string | undefined, instance: MtuMode): void {
  const mode = declared === undefined ? undefined : parseMtuMode(declared);
  if (declared !== undefined && mode === undefined) throw new HttpError('invalid_request', `'mtu_mode' must be one of ${MTU_MODES.join(', ')}, got ${JSON.stringify(declared)}`);
  if (!MTU_MODE_ROLES.includes(role) && mode === undefined) return;
  const own = mode ?? DEFAULT_MTU_MODE;
  if (own === instance) return;
  throw new HttpError(
    'conflict',
    `${role} '${nodeName}' runs MTU mode ${own} (${MTU_BYTES[own]}-byte datagrams${declared === undefined ? ', the default: it declared none' : ''}) but this instance runs ${instance} (${MTU_BYTES[instance]}-byte datagrams); the MTU mode is instance-wide: set MTU_MODE=${instance} on the node, or change MTU_MODE on the DMS and restart every node of the instance`,
  );
}
