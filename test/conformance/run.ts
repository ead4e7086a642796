/**
 * Conformance runner: `npm run conformance -- [DIR|FILE...]` (default test/reference/conformance, the
 * repository's copy of the shared conformance cases).
 * Runs every case file (*.yaml, *.yml, *.json except READMEs) found below each argument through
 * the adapter that accepts it, prints `FAIL <file> <case>: <why>` for each failed case and ends
 * with `N passed, N failed`. A file no adapter accepts, or that cannot be read, counts as one
 * failed case. Exit status 1 when anything failed.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { adapters } from './adapters.ts';
import type { CaseResult } from './types.ts';
import { referencePath } from '../helpers/reference.ts';

function caseFiles(path: string): string[] {
  const st = statSync(path);
  if (st.isFile()) return [path];
  const out: string[] = [];
  for (const entry of readdirSync(path).sort()) {
    const full = join(path, entry);
    if (statSync(full).isDirectory()) out.push(...caseFiles(full));
    else if (/\.(ya?ml|json)$/i.test(entry) && !/^readme/i.test(entry)) out.push(full);
  }
  return out;
}

async function runFile(file: string): Promise<CaseResult[]> {
  let doc: unknown;
  try {
    doc = parse(readFileSync(file, 'utf8'), { maxAliasCount: -1 });
  } catch (err) {
    return [{ name: '<file>', ok: false, why: `cannot read: ${(err as Error).message.split('\n')[0]}` }];
  }
  const adapter = adapters.find((a) => a.accepts(file, doc));
  if (!adapter) return [{ name: '<file>', ok: false, why: 'no adapter runs this kind of case file' }];
  try {
    return await adapter.run(doc, file);
  } catch (err) {
    return [{ name: '<file>', ok: false, why: `${adapter.name} adapter crashed: ${(err as Error).stack ?? err}` }];
  }
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const roots = args.length ? args : [referencePath('conformance')];
  let passed = 0;
  let failed = 0;
  for (const root of roots) {
    let files: string[];
    try {
      files = caseFiles(root);
    } catch (err) {
      console.log(`FAIL ${root} <dir>: ${(err as Error).message}`);
      failed++;
      continue;
    }
    for (const file of files) {
      const shown = relative(process.cwd(), file) || file;
      for (const result of await runFile(file)) {
        if (result.ok) passed++;
        else {
          failed++;
          console.log(`FAIL ${shown} ${result.name}: ${result.why ?? 'failed'}`);
        }
      }
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed > 0 ? 1 : 0;
}

process.exitCode = await main();
