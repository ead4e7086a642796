/**
 * `npm test`'s report on test/shared/ (the repository's copy of the shared test data): when
 * `../shared/` exists next to the repository, lists every file of the copied folders that differs
 * from it, is missing or is extra, and says how to refresh (`npm run shared:refresh`). It only
 * reports: the exit status is 0 either way, so a clone without ../shared, or with an older one,
 * still runs the tests on its own copy.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { SHARED_DIR } from './helpers/shared.ts';

/** The folders of ../shared the tests use. */
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

const source = resolve(import.meta.dirname, '../../shared');
if (!existsSync(source)) {
  console.log(`test/shared: ../shared not found next to the repository; the tests use the repository's copy`);
} else {
  const changed: string[] = [];
  for (const dir of COPIED) {
    const a = files(join(source, dir));
    const b = files(join(SHARED_DIR, dir));
    for (const [f, h] of a) if (b.get(f) !== h) changed.push(`${b.has(f) ? 'differs' : 'missing'}: ${dir}/${f}`);
    for (const f of b.keys()) if (!a.has(f)) changed.push(`extra:   ${dir}/${f}`);
  }
  if (changed.length === 0) console.log(`test/shared: the same as ../shared (${COPIED.join(', ')})`);
  else {
    console.log(`test/shared: ${changed.length} file(s) differ from ../shared; the tests use the repository's copy. Refresh with: npm run shared:refresh`);
    for (const c of changed.slice(0, 20)) console.log(`  ${c}`);
    if (changed.length > 20) console.log(`  … and ${changed.length - 20} more`);
  }
}
