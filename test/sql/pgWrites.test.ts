/**
 * The wire door's writes: once logged in, the messages of one answer (RowDescription, DataRows,
 * CommandComplete, ReadyForQuery) leave in one socket write (sql/pgwire/pgServer.ts corks the
 * socket for the tick), not one system call — and with TLS one record — each.
 */
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RawSession, serveDoor, startupMessage } from './pgRawSession';
import { fe, roundTrip, summary, untilReady } from './pgWireMessages';
import { T0 } from './support';

const test = suite('pgwire writes');
const server = serveDoor(test, 20);

test('a small answer leaves in one write', async () => {
  const s = await RawSession.open(server.port);
  s.send(startupMessage({ user: 'tester', database: 'hd' }));
  await untilReady(s);
  const proto = net.Socket.prototype as unknown as Record<'_write' | '_writev', (this: net.Socket, ...a: unknown[]) => unknown>;
  const write = proto._write;
  const writev = proto._writev;
  let writes = 0;
  proto._write = function (...a) {
    if (this.localPort === server.port) writes++;
    return write.apply(this, a);
  };
  proto._writev = function (...a) {
    if (this.localPort === server.port) writes++;
    return writev.apply(this, a);
  };
  try {
    const sql = `SELECT count(*) AS n, sum(bytes) AS b FROM flows WHERE ts >= ${T0} AND ts < ${T0 + 20}`;
    await roundTrip(s, fe.query(sql)); // the first run of a statement plans it
    writes = 0;
    const msgs = await roundTrip(s, fe.query(sql));
    assert.equal(summary(msgs).map((m) => m.split(':')[0]), ['T', 'D', 'C', 'Z']);
    assert.is(writes, 1, 'RowDescription, DataRow, CommandComplete and ReadyForQuery in one write');
  } finally {
    proto._write = write;
    proto._writev = writev;
    s.end();
  }
});

test.run();
