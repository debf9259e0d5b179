import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../engine-rs/batchId';
import { HDWP_ERROR_FRAME_CODES } from '../../engine-rs/hdwpFrame';
import { batchStateRefusal, isQueryAlreadyRunning, queryAlreadyRunning, readBatchStateRefusal, type BatchEnd } from '../../hdwp/refusals';

const id = generateBatchIdNumber(9);
const t = suite('refusals: batch state');
t('every batch end reads back as written, with the record count of a closed batch', () => {
  const ends: BatchEnd[] = [
    { state: 'closed', cause: 'eob' },
    { state: 'closed', cause: 'timeout', detail: 'no activity for 5 ms (BATCH_TIMEOUT_MS, TIMEOUT_ACTION=EOB)' },
    { state: 'discarded', cause: 'timeout', detail: 'no activity' },
    { state: 'discarded', cause: 'bbn', detail: 'the batch timeout hit upstream' },
    { state: 'discarded', cause: 'eobRefused', detail: 'batch mismatch: timeout' },
    { state: 'discarded', cause: 'tooManyOpen', detail: '10 batches are open already' },
  ];
  for (const end of ends) {
    for (const kind of ['eob', 'bbn'] as const) {
      const r = batchStateRefusal("it's", id, kind, end, 42);
      const back = readBatchStateRefusal(r.code, r.message);
      assert.equal(back, end.state === 'closed' ? { state: end.state, cause: end.cause, holds: 42 } : { state: end.state, cause: end.cause }, r.message);
      assert.is(r.code, end.cause === 'timeout' ? HDWP_ERROR_FRAME_CODES.timeout : HDWP_ERROR_FRAME_CODES.protocol, 'the code follows the cause, not words in the detail');
    }
  }
});
t('the wording is the one operators and tests know', () => {
  const r = batchStateRefusal('ds', id, 'eob', { state: 'closed', cause: 'eob' }, 500);
  assert.is(r.code, 1);
  assert.is(r.message, `batch ${id.toString()} of 'ds' is closed (closed by its eob); its eob is refused; the batch holds 500 records`);
});
t('other errors are not batch state refusals', () => {
  assert.is(readBatchStateRefusal(HDWP_ERROR_FRAME_CODES.batchMismatch, "batch 9 of 'ds' is closed (closed by its eob)"), undefined);
  assert.is(readBatchStateRefusal(HDWP_ERROR_FRAME_CODES.protocol, 'ERR_HDWP_BAD_MAGIC at byte 0'), undefined);
  assert.is(readBatchStateRefusal(undefined, "is closed (closed by its eob)"), undefined);
});
t.run();

const q = suite('refusals: query already running');
q('written and read back; other bad-query errors are not it', () => {
  const r = queryAlreadyRunning(7);
  assert.is(r.code, HDWP_ERROR_FRAME_CODES.badQuery);
  assert.ok(isQueryAlreadyRunning(r));
  assert.not.ok(isQueryAlreadyRunning({ code: HDWP_ERROR_FRAME_CODES.overloaded, message: r.message }));
  assert.not.ok(isQueryAlreadyRunning({ code: HDWP_ERROR_FRAME_CODES.badQuery, message: 'sub_queries[0].field: unknown field' }));
});
q.run();
