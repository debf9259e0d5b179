import { MAX_CHUNK_BYTES } from '../../stream/chunk';
import { fileSource } from '../../sources/fileSource';
import { defineSource } from '../../pipelines/registry';
import { byteSize, filePath, int } from '../../pipelines/settings';

const settings = {
  path: filePath({ doc: 'file to read; relative to the pipeline file' }),
  block_size: byteSize({ doc: 'bytes read per block', default: 1024 * 1024, min: 4096, max: MAX_CHUNK_BYTES }),
  max_pending: int({ doc: 'units of downstream work allowed in flight before the next read', default: 2, min: 0, max: 64 }),
};

/** `fileSource`: reads a file in blocks, pulling (the next block once downstream has settled). */
export const fileSourceStage = defineSource({
  name: 'fileSource',
  kind: 'source',
  doc: 'Reads a file as raw byte blocks, the next block only once downstream has settled.',
  unit: 'bytes',
  output: 'bytes',
  settings,
  create: (c, ctx) =>
    fileSource({ path: c.path, blockSize: c.block_size, maxPending: c.max_pending, flow: ctx.flow, counters: ctx.counters, progress: ctx.progress }),
});
