import type { Schema } from '../../engine-rs/index';
import type { TextFormat } from '../../sources/textRecords';
import { byteSize, int, oneOf, str } from '../../pipelines/settings';
import { schemaFile } from './schemaSetting';

/** The settings of how an ingester source reads lines (shared by `kafkaSource` and `s3Source`). */
export const textFormatSettings = {
  schema: schemaFile('dataset schema the lines are encoded by'),
  format: oneOf(['ndjson', 'csv'] as const, { doc: 'line format', default: 'ndjson' }),
  columns: str({ doc: 'CSV: comma-separated column names (kafkaSource: required for CSV; s3Source: empty reads each object\'s first line as the header)', default: '', allowEmpty: true }),
  delimiter: str({ doc: 'CSV: the one-character field delimiter', default: ',' }),
  block_size: byteSize({ doc: 'input bytes encoded per native call', default: 1024 * 1024, min: 4096, max: 4 * 1024 * 1024 }),
  max_pending: int({ doc: 'units of downstream work allowed in flight before the next block is read', default: 2, min: 0, max: 64 }),
};

/** The {@link TextFormat} of validated settings; `needColumns` refuses CSV without columns. */
export function textFormatOf(c: { format: 'ndjson' | 'csv'; columns: string; delimiter: string }, stageId: string, needColumns: boolean): TextFormat {
  if (c.format === 'ndjson') return { format: 'ndjson' };
  if (c.delimiter.length !== 1) throw new Error(`stage '${stageId}': delimiter must be one character, got ${JSON.stringify(c.delimiter)}`);
  const columns = c.columns.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (needColumns && columns.length === 0) throw new Error(`stage '${stageId}': format csv needs columns (messages carry no header line)`);
  return { format: 'csv', delimiter: c.delimiter, ...(columns.length > 0 ? { columns } : {}) };
}

/** Dataset id and record size of a schema. */
export function datasetOf(schema: Schema): { dataset: string; recordSize: number } {
  return { dataset: schema.id, recordSize: schema.recordSize };
}
