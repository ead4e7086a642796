/**
 * Shrinks a disagreeing case of the differential test to the objects the disagreement needs:
 *
 *   node test/differential/minimize.ts CASE.yaml --what 'controller team-a/svc-2 addresses' [--detail TEXT] [--runs R] [-o OUT.yaml]
 *
 * Greedily drops one object (and one speaker node) at a time, keeping every removal after which
 * the comparison named by --what (a prefix of an item's `what`, as the runner prints it) still
 * disagrees (with --detail: in a way whose one-line detail contains TEXT), until nothing more can go; writes the result (default: CASE.min.yaml). Where
 * MetalLB's answer is random, use enough --runs (default 16) for the disagreement to show.
 */
import { writeFileSync } from 'node:fs';
import type { KubeObject } from '../../src/core/kube.ts';
import { caseYaml, readCase, runDifferential } from './run.ts';
import type { DifferentialCase } from './generate.ts';

let detail = '';

async function disagrees(c: DifferentialCase, what: string, runs: number): Promise<boolean> {
  const s = await runDifferential({ replay: [c], out: null, runs, print: () => {} });
  return s.cases[0]!.items.some((i) => i.verdict === 'disagree' && i.what.startsWith(what) && i.detail.includes(detail));
}

const KEEP_LAST = new Set(['Namespace']);

export async function minimize(c: DifferentialCase, what: string, runs: number, log: (l: string) => void = () => {}): Promise<DifferentialCase> {
  if (!(await disagrees(c, what, runs))) throw new Error(`${c.id}: "${what}" does not disagree`);
  let cur = c;
  for (let changed = true; changed; ) {
    changed = false;
    // objects, Namespaces last (they rarely matter but other objects may name them)
    const order = cur.resources.map((o, i) => ({ o, i })).sort((a, b) => Number(KEEP_LAST.has(a.o.kind ?? '')) - Number(KEEP_LAST.has(b.o.kind ?? '')));
    for (const { o } of order) {
      const resources = cur.resources.filter((x) => x !== o);
      const nodes = o.kind === 'Node' ? cur.nodes.filter((n) => n !== o.metadata?.name) : cur.nodes;
      const speakers = o.kind === 'Node' && cur.speakers ? cur.speakers.filter((n) => n !== o.metadata?.name) : cur.speakers;
      const next: DifferentialCase = { ...cur, resources, nodes, speakers };
      if (await disagrees(next, what, runs)) {
        log(`dropped ${o.kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`);
        cur = next;
        changed = true;
      }
    }
    // speakers to run: one node is enough unless the item names one
    for (const n of cur.nodes) {
      if (cur.nodes.length <= 1 || what.includes(` ${n} `) || what.endsWith(` ${n}`)) continue;
      const next: DifferentialCase = { ...cur, nodes: cur.nodes.filter((x) => x !== n) };
      if (await disagrees(next, what, runs)) {
        cur = next;
        changed = true;
      }
    }
  }
  return cur;
}

if (import.meta.main) {
  const argv = process.argv.slice(2);
  let file: string | undefined;
  let what: string | undefined;
  let out: string | undefined;
  let runs = 16;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--what') what = argv[++i];
    else if (a === '--detail') detail = argv[++i] ?? '';
    else if (a === '--runs') runs = Number(argv[++i]);
    else if (a === '-o') out = argv[++i];
    else file = a;
  }
  if (!file || !what) {
    process.stderr.write('usage: node test/differential/minimize.ts CASE.yaml --what PREFIX [--runs R] [-o OUT.yaml]\n');
    process.exit(2);
  }
  const c = readCase(file);
  const min = await minimize(c, what, runs, (l) => process.stderr.write(`${l}\n`));
  const dest = out ?? file.replace(/\.ya?ml$/, '') + '.min.yaml';
  writeFileSync(dest, caseYaml(min, [`${c.id} minimized for: ${what}${detail ? ` (${detail})` : ''}`]));
  process.stderr.write(`${min.resources.length} of ${c.resources.length} objects kept: ${dest}\n`);
  const kinds = (rs: readonly KubeObject[]): string => rs.map((r) => `${r.kind}/${r.metadata?.name}`).join(' ');
  process.stdout.write(`${kinds(min.resources)}\n`);
}
