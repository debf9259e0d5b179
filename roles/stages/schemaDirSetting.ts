import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Setting } from '../../pipelines/settings';

/**
 * A directory of dataset schema files (`*.json`, by schema id), resolved against the pipeline
 * file's directory; empty means none. The Storage Node's stages read it (nodes/storageNode/querySchemas.ts).
 */
export function schemaDirSetting(doc: string): Setting<string | undefined> {
  return {
    expects: 'a directory of dataset schema JSON files, or empty for none',
    doc,
    required: false,
    fallback: undefined,
    parse(v, ctx) {
      if (typeof v.value !== 'string') return { ok: false, expected: 'a directory path or empty' };
      if (v.value === '') return { ok: true, value: undefined };
      const dir = path.resolve(ctx.baseDir, v.value);
      if (!existsSync(dir) || !statSync(dir).isDirectory()) return { ok: false, expected: `an existing directory of dataset schemas (${dir} is not one)` };
      return { ok: true, value: dir };
    },
  };
}
