/** A node-like process for errorTracking.test.ts: starts error tracking from its environment, then crashes with an uncaught error. */
import { startErrorTracking } from '../../lib/errorTracking';

const state = startErrorTracking(process.env, { node: 'crash-node', role: 'fixture' });
process.stdout.write(`tracking ${state.enabled ? 'on' : 'off'}\n`);
setTimeout(() => {
  throw new Error('fixture crash 7f3a');
}, 10);
