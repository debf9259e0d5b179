/**
 * The offsets a Kafka source may commit across consumer-group generations (sources/kafkaSourceCommits.ts,
 * docs/ingester.md "Rebalances").
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { KafkaCommits } from '../../sources/kafkaSourceCommits';

const t = suite('KafkaCommits');

t('a checkpoint of the generation commits its positions, only forward', () => {
  const c = new KafkaCommits();
  c.assign({ flows: [0, 1] });
  c.advance('flows', 0, '9');
  const snap = c.snapshot();
  assert.equal(c.due(snap), [{ topic: 'flows', partition: 0, offset: '10' }]);
  c.markCommitted(c.due(snap));
  assert.equal(c.due(snap), [], 'committed already');
});

t('a rebalance drops older checkpoints and forgets every read position: the partitions are read again from the commit', () => {
  const c = new KafkaCommits();
  c.assign({ flows: [0, 1] });
  c.advance('flows', 0, '9');
  c.advance('flows', 1, '19');
  const old = c.snapshot();
  assert.equal(c.assign({ flows: [0] }), ['flows/1'], 'the partition held earlier and gone now');
  assert.equal(c.due(old), [], 'an older generation commits nothing');
  assert.is(c.droppedCheckpoints, 1);
  assert.equal(c.due(c.snapshot()), [], 'no position survives the rebalance, even of a partition still assigned');
  c.advance('flows', 0, '4');
  assert.equal(c.due(c.snapshot()), [{ topic: 'flows', partition: 0, offset: '5' }]);
  assert.equal(c.assign({ flows: [0, 1] }), [], 'whole again');
  assert.is(c.currentGeneration, 3);
});

t.run();
