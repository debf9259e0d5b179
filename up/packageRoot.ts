/**
 * Finds the hdstore package root (where pipelines/ and bin/ are), from the source tree or dist/.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The directory of hdstore's package.json above `from` (default: this file). */
export function packageRoot(from = __dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === 'hdstore') return dir;
    if (path.dirname(dir) === dir) throw new Error(`no hdstore package.json above ${from}`);
  }
}

/**
 * How to run `hd` as a child process: the built command (bin/hd.js → dist/) when this code runs
 * compiled, the TypeScript sources through tsx when it runs from them (tests, development).
 */
export function hdCommand(root = packageRoot()): string[] {
  if (__filename.endsWith('.js')) return [process.execPath, path.join(root, 'bin', 'hd.js')];
  return [process.execPath, '-r', 'tsx/cjs', '-e', "require('./bin/cli').main(process.argv.slice(1)).then((c) => process.exit(c ?? 0), (e) => { console.error(e); process.exit(1); })"];
}
