/**
 * What the HDQuery parser's key tests share (hdQueryTop.test.ts, hdQueryTimeWindow.test.ts): the
 * {@link QueryError} a query document is refused with.
 */
import * as assert from 'uvu/assert';
import { parseHdQuery, QueryError } from '../../query/hdQuery';

/** The QueryError parsing `doc` (an HDQuery as JSON) throws; fails the test when it parses. */
export function parseRefusal(doc: Record<string, unknown>): QueryError {
  try {
    parseHdQuery(JSON.stringify(doc));
  } catch (err) {
    assert.instance(err, QueryError);
    return err as QueryError;
  }
  assert.unreachable('expected a QueryError');
  throw new Error('unreachable');
}
