import { RecordCodec } from '../../engine-rs/index';
import { parse } from '../../operators/parse';
import type { BlockParser } from '../../operators/parse';
import { defineOperator } from '../../pipelines/registry';
import { int, oneOf, str } from '../../pipelines/settings';
import { schemaFile } from './schemaSetting';

const settings = {
  schema: schemaFile('dataset schema the records are encoded by'),
  format: oneOf(['ndjson', 'csv'] as const, { doc: 'input text format', default: 'ndjson' }),
  header: oneOf(['first_line', 'none'] as const, { doc: 'CSV only: column names come from the first line, or from `columns`', default: 'first_line' }),
  columns: str({ doc: 'CSV only: comma-separated column names when header is none', default: '', allowEmpty: true }),
  delimiter: str({ doc: 'CSV only: the one-character field delimiter', default: ',' }),
  max_line_bytes: int({ doc: 'longest accepted line; longer lines are rejected and skipped', default: 1024 * 1024, min: 64, max: 4 * 1024 * 1024 }),
};

/** `parse`: NDJSON or CSV text → packed records of the schema, one native call per block of whole lines. */
export const parseStage = defineOperator({
  name: 'parse',
  kind: 'operator',
  doc: 'Parses NDJSON or CSV lines into packed records (one native call per block); bad lines are reported and dropped.',
  unit: 'records',
  input: 'bytes',
  output: 'records',
  settings,
  create: (c, ctx) => {
    const codec = new RecordCodec(c.schema);
    let parser: BlockParser;
    if (c.format === 'ndjson') {
      parser = (lines, firstLine) => codec.parseNdjson(lines, firstLine);
    } else {
      const header: readonly string[] | undefined = c.header === 'none' ? c.columns.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
      if (c.header === 'none' && (!header || header.length === 0)) throw new Error(`stage '${ctx.id}': header is none, so columns must name the CSV columns`);
      // Without configured columns the first block's header row names them (read natively, so
      // quoting applies); later blocks reuse the names.
      let names = header;
      parser = async (lines, firstLine) => {
        const r = await codec.parseCsv(lines, { header: names, delimiter: c.delimiter, firstLine });
        names ??= r.header;
        return r;
      };
    }
    return parse({
      parser,
      dataset: c.schema.id,
      recordSize: c.schema.recordSize,
      counters: ctx.counters,
      flow: ctx.flow,
      onProblem: (m) => ctx.report(m),
      maxLineBytes: c.max_line_bytes,
    });
  },
});
