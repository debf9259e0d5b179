/**
 * Structural codemod (issue #16): moves files and folders by a move map and rewrites every path that
 * names them, so the tree type-checks and runs exactly as before.
 *
 *   npx tsx scripts/structure/move.ts [--map scripts/structure/moves.json] [--dry-run] [--verbose]
 *
 * The move map is a JSON array of `[old, new]` pairs, repository-relative; an entry is a file or a
 * folder (a folder moves everything under it, tracked or untracked-but-not-ignored). When several
 * entries match a file the longest `old` wins, so a folder can move as a whole while one of its files
 * goes elsewhere. An entry whose `old` no longer exists is skipped: the script is safe to run again,
 * and it reads the tree as it is (it knows nothing of today's file list beyond the map).
 *
 * What it rewrites, resolving every path against the tree *before* the move:
 * - in every .ts/.tsx/.js/.cjs/.mjs file (production, test/, bench/, scripts/): `import`/`export … from`,
 *   `import x = require()`, `require()`, `import()`, `import('…').T` type queries, `jest/vi.mock`-style
 *   calls, and any other string literal that starts with `./` or `../` and names a file or folder
 *   (`path.resolve(__dirname, '../../query/queryDispatch.proto')`); `path.join|resolve(__dirname, 'a',
 *   'b')` calls whose joined literals name a moved file; repository paths in comments;
 * - in Markdown, YAML and JSON files: repository-relative paths of moved files and folders
 *   (`sources/hdwpServer.ts`, `sdk/local/`), also behind `../` in relative links;
 * - tsconfig*.json `include`: every new top-level folder that received TypeScript files is added.
 * Moves use `git mv` for tracked files (history follows) and a rename for untracked ones.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const argv = process.argv.slice(2);
const flag = (n: string): boolean => argv.includes(n);
const opt = (n: string, d: string): string => {
  const i = argv.indexOf(n);
  return i >= 0 && argv[i + 1] !== undefined ? (argv[i + 1] as string) : d;
};
const root = path.resolve(opt('--root', process.cwd()));
const mapFile = path.resolve(root, opt('--map', 'scripts/structure/moves.json'));
const dryRun = flag('--dry-run');
const verbose = flag('--verbose');

const git = (...args: string[]): string => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', maxBuffer: 256 << 20 });
const SKIP = /^(node_modules|dist|\.git|\.hd|out)(\/|$)|\/(target|node_modules)\//;

// ---- 1. the file list and the file-level mapping -------------------------------------------------
const tracked = new Set(git('ls-files', '-z').split('\0').filter(Boolean));
const files = [...new Set([...tracked, ...git('ls-files', '-z', '-o', '--exclude-standard').split('\0').filter(Boolean)])]
  .filter((f) => !SKIP.test(f) && existsSync(path.join(root, f)));
const fileSet = new Set(files);
const dirSet = new Set<string>();
for (const f of files) for (let d = path.posix.dirname(f); d !== '.'; d = path.posix.dirname(d)) dirSet.add(d);

const entries = (JSON.parse(readFileSync(mapFile, 'utf8')) as [string, string][]).map(([o, n]) => [o.replace(/\/+$/, ''), n.replace(/\/+$/, '')] as const);
/** Where a repository path (file or folder) goes; itself when no entry matches. */
function mapPath(p: string): string {
  let best: readonly [string, string] | undefined;
  for (const e of entries) if ((p === e[0] || p.startsWith(`${e[0]}/`)) && (!best || e[0].length > best[0].length)) best = e;
  return best ? best[1] + p.slice(best[0].length) : p;
}
const moves = new Map<string, string>();
for (const f of files) {
  const to = mapPath(f);
  if (to === f) continue;
  if (fileSet.has(to)) throw new Error(`move ${f} → ${to}: the destination already exists`);
  moves.set(f, to);
}
const skipped = entries.filter(([o]) => !fileSet.has(o) && !dirSet.has(o)).map(([o]) => o);
if (skipped.length) console.log(`already moved or absent (skipped): ${skipped.join(', ')}`);
if (moves.size === 0) {
  console.log('nothing to move');
  process.exit(0);
}

// ---- 2. path rewriting, resolved against the tree before the move --------------------------------
const EXT = ['', '.ts', '.tsx', '.d.ts', '.js', '.cjs', '.mjs', '.json', '/index.ts', '/index.js'];
/** A repository path that a `./`/`../` specifier written in `from` names (module resolution), with what was appended. */
function resolveRel(from: string, spec: string): { target: string; suffix: string } | undefined {
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec)).replace(/\/+$/, '');
  if (base.startsWith('..')) return undefined;
  for (const s of EXT) {
    const t = base + s;
    if (fileSet.has(t)) return { target: t, suffix: s };
    if (s === '' && dirSet.has(t)) return { target: t, suffix: '' };
  }
  return undefined;
}
/** The specifier `fromNew` needs for what `spec` (written in `fromOld`) named; undefined when unchanged. */
function rewriteSpec(fromOld: string, spec: string): string | undefined {
  const r = resolveRel(fromOld, spec);
  if (!r) return undefined;
  const fromNew = moves.get(fromOld) ?? fromOld;
  const targetNew = moves.get(r.target) ?? mapPath(r.target);
  if (fromNew === fromOld && targetNew === r.target) return undefined;
  let s = path.posix.relative(path.posix.dirname(fromNew), targetNew.slice(0, targetNew.length - r.suffix.length) || '.');
  if (!s.startsWith('.')) s = `./${s}`;
  if (s === './') s = '.';
  if (spec.endsWith('/') && !s.endsWith('/')) s += '/';
  return s === spec ? undefined : s;
}

// Repository paths in prose (comments, Markdown, YAML): moved files (with and without .ts) and moved folders.
const tokens = new Map<string, string>();
for (const [o, n] of moves) {
  tokens.set(o, n);
  if (/\.tsx?$/.test(o) && /\.tsx?$/.test(n)) tokens.set(o.replace(/\.tsx?$/, ''), n.replace(/\.tsx?$/, ''));
}
for (const [o, n] of entries) if (dirSet.has(o)) tokens.set(`${o}/`, `${n}/`);
const byLength = (a: string, b: string): number => b.length - a.length;
const fileKeys = [...tokens.keys()].filter((k) => k.includes('/') && !k.endsWith('/')).sort(byLength);
const dirKeys = [...tokens.keys()].filter((k) => k.endsWith('/')).sort(byLength);
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
// Not inside a longer path (`test/sources/x.ts`), except behind `../`; a file path not followed by more
// of a name (`sources/hdwpServer` in `sources/hdwpServer.test.ts`); a folder path (ends in `/`) anywhere.
const alts = [
  ...(fileKeys.length ? [`(?:${fileKeys.map(esc).join('|')})(?![\\w\\-]|\\.[\\w])`] : []),
  ...(dirKeys.length ? [`(?:${dirKeys.map(esc).join('|')})`] : []),
];
const tokenRe = alts.length ? new RegExp(`(?<![\\w\\-]|[\\w\\-]/)(?:${alts.join('|')})`, 'g') : undefined;
const proseReplace = (text: string): string => (tokenRe ? text.replace(tokenRe, (m) => tokens.get(m) ?? m) : text);

interface Edit { start: number; end: number; text: string }
const CODE = /\.(ts|tsx|js|cjs|mjs|mts|cts)$/;
const PROSE = /\.(md|ya?ml)$/;

function codeEdits(file: string, text: string): Edit[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, /\.tsx$/.test(file) ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const edits: Edit[] = [];
  const lit = (n: ts.Node): n is ts.StringLiteral | ts.NoSubstitutionTemplateLiteral => ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n);
  const visit = (n: ts.Node): void => {
    // path.join(__dirname, 'a', 'b') / path.resolve(__dirname, '..', 'x.ts'): rewrite the literals as one.
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && /^(join|resolve)$/.test(n.expression.name.text)) {
      const [first, ...rest] = n.arguments;
      if (first && ts.isIdentifier(first) && first.text === '__dirname' && rest.length && rest.every(lit)) {
        const joined = rest.map((a) => (a as ts.StringLiteral).text).join('/');
        const spec = joined.startsWith('.') ? joined : `./${joined}`;
        const r = resolveRel(file, spec);
        const s = r ? rewriteSpec(file, spec) : undefined;
        if (s !== undefined) {
          const q = rest[0]!.getText(sf)[0];
          edits.push({ start: rest[0]!.getStart(sf), end: rest[rest.length - 1]!.getEnd(), text: `${q}${s.replace(/^\.\/(?=.)/, '')}${q}` });
          return;
        }
      }
    }
    if (lit(n) && /^\.\.?(\/|$)/.test(n.text)) {
      const s = rewriteSpec(file, n.text);
      if (s !== undefined) edits.push({ start: n.getStart(sf) + 1, end: n.getEnd() - 1, text: s });
      return;
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  // Repository paths in comments.
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  for (let k = scanner.scan(); k !== ts.SyntaxKind.EndOfFileToken; k = scanner.scan()) {
    if (k !== ts.SyntaxKind.SingleLineCommentTrivia && k !== ts.SyntaxKind.MultiLineCommentTrivia) continue;
    const c = scanner.getTokenText();
    const r = proseReplace(c);
    if (r !== c) edits.push({ start: scanner.getTokenPos(), end: scanner.getTextPos(), text: r });
  }
  return edits;
}

function applyEdits(text: string, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => b.start - a.start);
  let out = text;
  let last = Infinity;
  for (const e of sorted) {
    if (e.end > last) continue; // overlapping (a literal inside a comment range cannot happen; be safe)
    out = out.slice(0, e.start) + e.text + out.slice(e.end);
    last = e.start;
  }
  return out;
}

const newText = new Map<string, string>();
let codeFiles = 0;
let specEdits = 0;
const self = path.posix.relative(root, path.dirname(__filename).split(path.sep).join('/'));
for (const f of files) {
  if ((!CODE.test(f) && !PROSE.test(f)) || f.startsWith(`${self}/`)) continue; // not the codemod and its map
  const text = readFileSync(path.join(root, f), 'utf8');
  let out: string;
  if (CODE.test(f)) {
    const edits = codeEdits(f, text);
    specEdits += edits.length;
    out = applyEdits(text, edits);
  } else out = proseReplace(text);
  if (out !== text) {
    codeFiles++;
    newText.set(f, out);
    if (verbose) console.log(`rewrite ${f}`);
  }
}

// tsconfig*.json include: add new top-level folders that receive TypeScript.
const newTops = new Set<string>();
for (const [o, n] of moves) if (/\.tsx?$/.test(n) && n.includes('/') && o.split('/')[0] !== n.split('/')[0]) newTops.add(n.split('/')[0]!);
for (const cfg of files.filter((f) => /^tsconfig[^/]*\.json$/.test(f))) {
  const text = newText.get(cfg) ?? readFileSync(path.join(root, cfg), 'utf8');
  const m = /("include"\s*:\s*\[)([^\]]*)\]/.exec(text);
  if (!m) continue;
  const have = new Set([...m[2]!.matchAll(/"([^"]+)"/g)].map((x) => x[1]));
  const add = [...newTops].filter((t) => !have.has(t)).sort();
  if (!add.length) continue;
  const body = m[2]!.replace(/\s*$/, '');
  newText.set(cfg, text.slice(0, m.index) + m[1] + body + (body.trim() ? ', ' : '') + add.map((t) => `"${t}"`).join(', ') + ']' + text.slice(m.index + m[0].length));
}

console.log(`${moves.size} files to move, ${newText.size} files to rewrite (${specEdits} code paths)`);
if (verbose || dryRun) for (const [o, n] of moves) console.log(`  ${o} → ${n}`);
if (dryRun) process.exit(0);

// ---- 3. move, then write the rewritten text at the new place --------------------------------------
for (const [o, n] of moves) {
  mkdirSync(path.dirname(path.join(root, n)), { recursive: true });
  if (tracked.has(o)) git('mv', o, n);
  else renameSync(path.join(root, o), path.join(root, n));
}
for (const [f, text] of newText) {
  const at = path.join(root, moves.get(f) ?? f);
  if (statSync(at).isFile()) writeFileSync(at, text);
}
// Stage the rewrites of tracked files so `git status` shows renames with their edits.
const stage = [...newText.keys()].filter((f) => tracked.has(f)).map((f) => moves.get(f) ?? f);
for (let i = 0; i < stage.length; i += 200) git('add', '--', ...stage.slice(i, i + 200));
console.log('done');
