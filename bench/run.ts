/**
 * `npm run bench`: runs every bench/*.bench.ts in its own Node 24 process, one after the other,
 * and prints their figures (`name: X ms` lines). Benchmarks print figures; they assert nothing.
 */
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const dir = import.meta.dirname;
const only = process.argv.slice(2);
let failed = 0;
for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .sort()) {
  if (only.length && !only.some((o) => file.includes(o))) continue;
  console.log(`== ${file}`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(dir, file)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
