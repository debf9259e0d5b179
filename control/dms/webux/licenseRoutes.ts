/**
 * License routes (docs/webux.md, "License"): `GET /v1/license` shows the mode, the limits, the
 * usage and the key licenses are verified with; `PUT /v1/license` imports a license file (refused
 * with the reason when it is malformed, tampered, signed by another key or expired); `DELETE
 * /v1/license` goes back to community mode. communityLimits.ts enforces the limits.
 */
import type { FastifyInstance } from 'fastify';
import { HttpError } from '../../http/errors';
import type { Store } from '../../store/jsonFileStore';
import { ADMIN_ROLE, requireRole, type DmsContext } from '../context';
import { usageOf } from './communityLimits';
import { LicenseError, licenseStatus, verifyLicense, type LicenseStatus } from './license';
import type { WebuxState } from './webuxState';

/** The current license status. */
export function currentLicense(ctx: DmsContext, web: Store<WebuxState>, publicKeyPem: string): LicenseStatus {
  const stored = web.get().license;
  return licenseStatus(stored === null ? undefined : stored, usageOf(ctx.store.get()), publicKeyPem);
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
