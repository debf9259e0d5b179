/**
 * The shape checks of HDQuery `aggregate` and of the aggregate frame's payload (query/aggregate.ts):
 * unknown keys refused, and partials of version 1 and 2 (merged, HDQuery `merge_batches`).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { checkAggregate, MAX_MERGED_BATCHES, parseAggregatePartial } from '../../query/aggregate';
import { QueryError } from '../../query/queryError';

const ID = (n: number): string => n.toString(16).padStart(128, '0');

function refused(fn: () => unknown, path: string, reason: RegExp): void {
  try {
    fn();
  } catch (err) {
    assert.instance(err, QueryError);
    assert.is((err as QueryError).path, path);
    assert.match((err as QueryError).message, reason);
    return;
  }
  assert.unreachable(`expected a refusal at ${path}`);
}

const t = suite('HDQuery aggregate: shape and partials');

t('the spec keeps what it was given; an unknown key is refused naming it', () => {
  assert.equal(checkAggregate({ version: 1, measures: [{ fn: 'count' }] }), { version: 1, measures: [{ fn: 'count' }] });
  refused(() => checkAggregate({ version: 1, measures: [{ fn: 'count' }], merge_batches: true }), 'aggregate.merge_batches', /./);
});

t('a v1 partial parses; a v2 partial needs its batches', () => {
  assert.equal(parseAggregatePartial('{"v":1,"groups":[{"k":["6"],"m":["1"]}]}'), { v: 1, groups: [{ k: ['6'], m: ['1'] }] });
  const v2 = parseAggregatePartial(`{"v":2,"batches":[["${ID(1)}",3],["${ID(2)}",0]],"groups":[]}`);
  assert.equal(v2.batches, [
    [ID(1), 3],
    [ID(2), 0],
  ]);
});

t('malformed partials are refused at path aggregate', () => {
  const bad = [
    'not json',
    '[]',
    '{"v":3,"groups":[]}',
    '{"v":1,"groups":[{"k":[1],"m":["1"]}]}',
    `{"v":1,"batches":[["${ID(1)}",1]],"groups":[]}`,
    '{"v":2,"groups":[]}',
    '{"v":2,"batches":[],"groups":[]}',
    `{"v":2,"batches":[["${ID(1)}"]],"groups":[]}`,
    `{"v":2,"batches":[["${ID(1).toUpperCase().replace(/0/g, 'A')}",1]],"groups":[]}`,
    `{"v":2,"batches":[["${ID(1).slice(1)}",1]],"groups":[]}`,
    `{"v":2,"batches":[["${ID(1)}",1],["${ID(1)}",2]],"groups":[]}`,
    `{"v":2,"batches":[["${ID(1)}",-1]],"groups":[]}`,
    `{"v":2,"batches":[["${ID(1)}",1.5]],"groups":[]}`,
    `{"v":2,"batches":[["${ID(1)}",9007199254740993]],"groups":[]}`,
    `{"v":2,"batches":${JSON.stringify(Array.from({ length: MAX_MERGED_BATCHES + 1 }, (_, i) => [ID(i), 1]))},"groups":[]}`,
  ];
  for (const json of bad) refused(() => parseAggregatePartial(json), 'aggregate', /partial/);
});

t.run();
