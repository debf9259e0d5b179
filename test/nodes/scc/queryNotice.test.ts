import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { generateBatchIdNumber } from '../../../engine-rs/batchId';
import { sendBatchNotices } from '../../../nodes/scc/queryNotice';
import { newQueryToken } from '../../../query/token';
import { ResultListener, type QueryResult } from '../../../hdwp/resultListener';

const t = suite("queryNotice: the SCC's own result stream to a client");

t('notices reach an open query as batch errors; a mutual-TLS return address without a certificate is refused at once, naming why', async () => {
  const listener = new ResultListener({ host: '127.0.0.1', port: 0 });
  const { port } = await listener.listen();
  const token = newQueryToken();
  const got: QueryResult[] = [];
  const open = listener.open({ queryId: 77, token }, (r) => void got.push(r));
  try {
    const batchId = generateBatchIdNumber(5).toHex();
    const target = { returnAddress: { host: '127.0.0.1', port }, auth: { queryId: 77, token }, dataset: 'ds', recordSize: 16 };
    assert.is(await sendBatchNotices(target, [{ batchId, code: 13, detail: 'no healthy replica' }]), undefined);
    assert.is(got.length, 1);
    assert.ok(got[0]?.kind === 'batchError' && got[0].error.code === 13);
    const before = listener.stats.acceptedStreams;
    const why = await sendBatchNotices({ ...target, returnAddress: { host: '127.0.0.1', port, tls: true } }, [{ batchId, code: 13, detail: 'x' }]);
    assert.match(why ?? '', /asked for a mutual-TLS result stream \(return_address\.tls\), and this SCC has no certificate/);
    assert.is(listener.stats.acceptedStreams, before, 'nothing was sent in the clear');
  } finally {
    open.close();
    await listener.close();
  }
});

t.run();
