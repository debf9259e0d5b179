import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Schema, SchemaError } from '../../engine-rs/index';
import type { Setting } from '../../pipelines/settings';

/**
 * A dataset schema file setting: the path resolves against the pipeline file's directory, and the
 * schema is read and validated when the pipeline loads, so a bad schema is reported at the line of
 * the setting with every issue the validator found.
 */
export function schemaFile(doc: string): Setting<Schema> {
  return {
    expects: 'a dataset schema JSON file (see docs/schema.md)',
    doc,
    required: true,
    parse(v, ctx) {
      if (typeof v.value !== 'string' || v.value === '') return { ok: false, expected: 'a dataset schema JSON file path' };
      const file = path.resolve(ctx.baseDir, v.value);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        return { ok: false, expected: `a readable dataset schema file (${(err as Error).message})` };
      }
      try {
        return { ok: true, value: Schema.parse(text) };
      } catch (err) {
        if (err instanceof SchemaError) {
          const issues = err.issues.map((i) => `${i.path}: ${i.message}`).join('; ');
          return { ok: false, expected: `a valid dataset schema; ${file} has: ${issues}` };
        }
        return { ok: false, expected: `a valid dataset schema (${(err as Error).message})` };
      }
    },
  };
}
