import { encodeFrame, encodeRecords } from '../../engine-rs/index';
import { hdwpFileSink } from '../../sinks/hdwpFileSink';
import type { HdwpEncoder } from '../../sinks/hdwpFileSink';
import { defineSink } from '../../pipelines/registry';
import { filePath } from '../../pipelines/settings';

const settings = {
  path: filePath({ doc: 'output file of HDWP frames; relative to the pipeline file; written as <path>.partial and renamed when complete' }),
};

/** Encodes chunks as HDWP v1 frames (docs/hdwp.md): a hello, then records / eob / bbn frames. */
export const hdwpFileEncoder: HdwpEncoder = {
  hello: (datasetId, recordSize) => encodeFrame({ kind: 'hello', version: 1, role: 'ingester', datasetId, recordSize }),
  records: (chunk) => encodeRecords(chunk.batchId, chunk.recordSize, chunk.buf),
  eob: (e) => encodeFrame({ kind: 'eob', batchId: e.batchId, recordCount: e.recordCount, closingHash: new Uint8Array(0) }),
  bbn: (b) => encodeFrame({ kind: 'bbn', batchId: b.batchId, reason: b.reason }),
};

/** `hdwpFileSink`: writes batched records as an HDWP frame file, atomically renamed into place. */
export const hdwpFileSinkStage = defineSink({
  name: 'hdwpFileSink',
  kind: 'sink',
  doc: 'Writes batched records as HDWP v1 frames to a file (hello, records, eob/bbn), renamed into place when complete.',
  unit: 'records',
  input: 'batched-records',
  settings,
  create: (c, ctx) => hdwpFileSink({ path: c.path, encoder: hdwpFileEncoder, counters: ctx.counters, flow: ctx.flow, progress: ctx.progress }),
});
