/**
 * License routes (docs/webux.md, "License"): `GET /v1/license` shows the mode, the limits and the
 * usage; `PUT /v1/license` imports a license file (refused with the reason when it is malformed,
 * tampered, signed by another key or expired); `DELETE /v1/license` goes back to community mode.
 */
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../../http/errors';
import type { Store } from '../../store/jsonFileStore';
import { ADMIN_ROLE, requireRole, type DmsContext } from '../context';
import { LicenseError, licenseStatus, verifyLicense, type LicenseStatus, type LicenseUsage } from './license';
import type { WebuxState } from './webuxState';

/** How many clusters, Storage Nodes and Proxies the instance has. */
export function usageOf(ctx: DmsContext): LicenseUsage {
  const s = ctx.store.get();
  const nodes = Object.values(s.nodes);
  return { clusters: Object.keys(s.clusters).length, storage_nodes: nodes.filter((n) => n.role === 'storageNode').length, proxies: nodes.filter((n) => n.role === 'proxy').length };
}

/** The current license status. */
export function currentLicense(ctx: DmsContext, web: Store<WebuxState>, publicKeyPem: string): LicenseStatus {
  const stored = web.get().license;
  return licenseStatus(stored === null ? undefined : stored, usageOf(ctx), publicKeyPem);
}

/** Registers the license routes on `app`; `publicKeyPem` is the key licenses must be signed with. */
export function registerLicenseRoutes(app: FastifyInstance, ctx: DmsContext, web: Store<WebuxState>, publicKeyPem: string): void {
  app.get('/v1/license', async (req) => {
    requireRole(req, ctx, [ADMIN_ROLE]);
    return currentLicense(ctx, web, publicKeyPem);
  });

  app.put('/v1/license', async (req) => {
    requireRole(req, ctx, [ADMIN_ROLE]);
    let file;
    try {
      file = verifyLicense(req.body, publicKeyPem);
    } catch (err) {
      if (err instanceof LicenseError) throw new HttpError('invalid_request', `license refused: ${err.message}`);
      throw err;
    }
    await web.update((w) => void (w.license = file));
    ctx.log(`license ${file.license.id} for ${file.license.licensee} imported (expires ${file.license.expires_at})`);
    return currentLicense(ctx, web, publicKeyPem);
  });

  app.delete('/v1/license', async (req) => {
    requireRole(req, ctx, [ADMIN_ROLE]);
    await web.update((w) => void (w.license = null));
    return currentLicense(ctx, web, publicKeyPem);
  });
}
