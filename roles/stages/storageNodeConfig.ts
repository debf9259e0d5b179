/** The Storage Node `config.json` setting, shared by the `storageNode` and `nodeIdentity` services. */
import path from 'node:path';
import { ConfigError, loadStorageNodeConfig, type StorageNodeConfig } from '../../nodes/storageNode/config';
import type { Setting } from '../../pipelines/settings';

/**
 * A Storage Node `config.json` setting: read and validated when the pipeline loads, so `hd validate`
 * reports every bad key at the line of the setting.
 */
export function storageNodeConfigFile(doc: string): Setting<StorageNodeConfig> {
  return {
    expects: 'a Storage Node config.json (see docs/storage-node.md)',
    doc,
    required: true,
    parse(v, ctx) {
      if (typeof v.value !== 'string' || v.value === '') return { ok: false, expected: 'a Storage Node config.json path' };
      try {
        return { ok: true, value: loadStorageNodeConfig(path.resolve(ctx.baseDir, v.value)) };
      } catch (err) {
        if (err instanceof ConfigError) return { ok: false, expected: `a valid Storage Node config; ${err.message}` };
        throw err;
      }
    },
  };
}
