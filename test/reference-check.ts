/**
 * `npm run reference:check -- DIR`: a maintainer's report on test/reference/ (the repository's
 * copy of the project's shared test data) against DIR, the folder it was copied from: every file of
 * the copied folders that differs, is missing or is extra, and how to refresh (`npm run
 * reference:refresh -- DIR`). Exit 0 when they are the same, 1 when they differ, 2 without a DIR
 * that exists. The tests never read DIR: they use test/reference/ only.
 *
 * `npm run reference:refresh -- DIR` (`--refresh DIR`): replaces the copied folders of
 * test/reference/ with DIR's, to review and commit.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { REFERENCE_DIR } from './helpers/reference.ts';

/** The folders of DIR the tests use. */
export const COPIED = ['conformance', 'crds', 'samples', 'differential'];

function files(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir).sort()) {
      const p = join(dir, e);
      if (statSync(p).isDirectory()) walk(p);
      else out.set(relative(root, p), createHash('sha256').update(readFileSync(p)).digest('hex'));
    }
  };
  if (existsSync(root)) walk(root);
  return out;
}

const refresh = process.argv[2] === '--refresh';
const arg = process.argv[refresh ? 3 : 2];
const command = refresh ? 'reference:refresh' : 'reference:check';
if (!arg || !existsSync(arg)) {
  console.error(`${command}: ${arg ? `${arg} not found` : 'no folder given'}; usage: npm run ${command} -- DIR (the shared test data test/reference/ ${refresh ? 'is copied' : 'was copied'} from)`);
  process.exit(2);
}
const source = resolve(arg);
if (refresh) {
  for (const dir of COPIED) {
    rmSync(join(REFERENCE_DIR, dir), { recursive: true, force: true });
    cpSync(join(source, dir), join(REFERENCE_DIR, dir), { recursive: true });
  }
  console.log(`test/reference refreshed from ${source} (${COPIED.join(', ')}); review with git status`);
  process.exit(0);
}
const changed: string[] = [];
for (const dir of COPIED) {
  const a = files(join(source, dir));
  const b = files(join(REFERENCE_DIR, dir));
  for (const [f, h] of a) if (b.get(f) !== h) changed.push(`${b.has(f) ? 'differs' : 'missing'}: ${dir}/${f}`);
  for (const f of b.keys()) if (!a.has(f)) changed.push(`extra:   ${dir}/${f}`);
}
if (changed.length === 0) console.log(`test/reference: the same as ${source} (${COPIED.join(', ')})`);
else {
  console.log(`test/reference: ${changed.length} file(s) differ from ${source}. Refresh with: npm run reference:refresh -- ${arg}`);
  for (const c of changed.slice(0, 20)) console.log(`  ${c}`);
  if (changed.length > 20) console.log(`  … and ${changed.length - 20} more`);
  process.exitCode = 1;
}
