/**
 * Checks that `engine-rs/native.ts` declares exactly what the built addon exports (`npm run check:native`,
 * called by `npm run lint` and .ci/run): every member of its `Native` interface is a function the addon
 * exports, and every export of the addon is declared. The addon must be built (`npm run build:native`).
 * Exits 1 naming each difference.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(__dirname, '..');
const file = path.join(root, 'engine-rs', 'native.ts');
const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
const declared = new Set<string>();
let found = false;
sf.forEachChild((n) => {
  if (!ts.isInterfaceDeclaration(n) || n.name.text !== 'Native') return;
  found = true;
  for (const m of n.members) if (m.name && (ts.isIdentifier(m.name) || ts.isStringLiteral(m.name))) declared.add(m.name.text);
});
if (!found) {
  console.error('check-native: engine-rs/native.ts has no `interface Native`');
  process.exit(1);
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const addon = require(path.join(root, 'engine-rs', 'index.node')) as Record<string, unknown>;
const exported = new Set(Object.keys(addon));
const problems = [
  ...[...declared].filter((k) => !exported.has(k)).map((k) => `declared in native.ts, not exported by the addon: ${k}`),
  ...[...exported].filter((k) => !declared.has(k)).map((k) => `exported by the addon, not declared in native.ts: ${k}`),
  ...[...declared].filter((k) => exported.has(k) && typeof addon[k] !== 'function').map((k) => `not a function in the addon: ${k}`),
];
for (const p of problems) console.error(`check-native: ${p}`);
console.log(`check-native: ${declared.size} declared, ${exported.size} exported, ${problems.length} differences`);
process.exit(problems.length ? 1 : 0);
