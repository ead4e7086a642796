/**
 * The differential test: MetalLB v0.16.1's own code against metallb-ts on generated clusters.
 *
 *   npm run differential -- [--cases N] [--seed S] [--areas parse,controller,speaker] [--runs R] [--out DIR] [--replay FILE…]
 *
 * Each case (test/differential/generate.ts, deterministic from the seed) goes to
 *  - MetalLB: the oracle test binaries test/setup.d/50-metallb-differential.sh builds from the Go
 *    module proxy (test/differential/oracle): `speaker.test` (config.For over the namespace; the
 *    speaker of every node in frr-k8s mode) and `controller.test` (the controller restarted R
 *    times, list orders and Go map orders varying);
 *  - metallb-ts, through the code the CLI and the daemons run: parseConfig (accept/reject of the
 *    whole namespace, frr-k8s mode), controllerConfig + allocateAll (`allocate --dry-run`),
 *    speakerDryRun per node (`speaker --dry-run`: speakerConfig, the BGP and layer2 decisions,
 *    the FRRConfiguration and the ServiceBGPStatus peers);
 * and every answer is compared. A case is
 *  - agree: every answer equal (MetalLB answering the same in each of its runs);
 *  - disagree: an answer differs where MetalLB answered the same in every run and metallb-ts does
 *    not call the item nondeterministic, or MetalLB's answer varied between runs while metallb-ts
 *    calls it deterministic;
 *  - undetermined (no disagreement, but): MetalLB's own answer varied between runs (Go map order,
 *    the informer's list order) and metallb-ts says the item is nondeterministic; or metallb-ts
 *    says so and gives an answer MetalLB never gave, not even in 24 more runs (its runs do not
 *    refute it, nor confirm it).
 * Prints one line per disagreement (and per undetermined item), writes each disagreeing case to
 * DIR/<id>.yaml (a `kind: List` any metallb-ts command reads with -f, the options in an
 * annotation) with DIR/<id>.answers.json, and ends with `N agree, N disagree, N undetermined`.
 * Exit 1 on any disagreement, 2 on a usage error or a missing oracle.
 * METALLB_DIFFERENTIAL_TRACE=1 makes the controller oracle print every reconcile, write and event
 * on stderr (with --replay FILE --runs 1, to see what MetalLB did).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import YAML from 'yaml';
import { clusterStateFromObjects, type ClusterState, type KubeObject } from '../../src/core/kube.ts';
import { parseConfig } from '../../src/core/config/index.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { allocateAll, type AllocateAllResult } from '../../src/core/controller/index.ts';
import { controllerConfig } from '../../src/core/explain/index.ts';
import { compileNodeFilter, speakerConfigState } from '../../src/core/speaker/config.ts';
import { speakerDryRun, type SpeakerDryRun } from '../../src/speaker/dry-run.ts';
import { generateCase, type DifferentialCase } from './generate.ts';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const ORACLE_DIR = join(REPO_ROOT, '.cache/metallb-differential');

export type Verdict = 'agree' | 'disagree' | 'undetermined';

/** One compared answer of one case. */
export interface Item {
  readonly area: 'parse' | 'controller' | 'speaker';
  /** what was compared, e.g. `controller team-a/svc-2 addresses` */
  readonly what: string;
  readonly verdict: Verdict;
  /** one line: MetalLB's answer(s), metallb-ts's */
  readonly detail: string;
  readonly metallb: unknown;
  readonly metallbTs: unknown;
  /** undetermined only because metallb-ts's answer is not among MetalLB's (identical) answers */
  readonly unseen?: true;
}

export interface CaseResult {
  readonly id: string;
  readonly verdict: Verdict;
  readonly items: readonly Item[];
  readonly file?: string;
}

export type Area = 'parse' | 'controller' | 'speaker';
export const AREAS: readonly Area[] = ['parse', 'controller', 'speaker'];

export interface RunOptions {
  readonly cases?: number;
  /** what to compare (default all): `parse` and `speaker` run speaker.test, `controller` controller.test */
  readonly areas?: readonly Area[];
  readonly seed?: number;
  /** controller restarts per case (default 8) */
  readonly runs?: number;
  /** speaker runs per node (default 1: the speaker's answers do not depend on map order) */
  readonly speakerRuns?: number;
  /** where disagreeing cases are written (default .cache/differential) */
  readonly out?: string | null;
  /** cases to run instead of generated ones */
  readonly replay?: readonly DifferentialCase[];
  /** only these case indexes of the seed (instead of 0 … cases-1) */
  readonly indexes?: readonly number[];
  readonly oracleDir?: string;
  /** cases per oracle invocation */
  readonly batch?: number;
  /** receives the output lines (default: stdout) */
  readonly print?: (line: string) => void;
}

export interface RunSummary {
  readonly agree: number;
  readonly disagree: number;
  readonly undetermined: number;
  readonly cases: readonly CaseResult[];
  readonly seconds: number;
  /** items compared per area and verdict */
  readonly items: Record<string, Record<Verdict, number>>;
}

// ------------------------------------------------------------------------------------ oracle

interface OracleSpeakerService {
  bgp: string;
  layer2: string;
  peers: string[];
}
interface OracleNode {
  configError: string | null;
  frrConfiguration: unknown;
  services: Record<string, OracleSpeakerService>;
  passes: number;
}
interface OracleSpeaker {
  id: string;
  parse: string | null;
  nodes: Record<string, OracleNode[]>;
  panic?: string;
}
interface OracleService {
  ips: string[];
  pool: string | null;
  events: [string, string, string][];
  writes: number;
  oscillates?: string[][];
}
interface OracleRun {
  configError: string | null;
  services: Record<string, OracleService>;
  steps: number;
  capped: boolean;
}
interface OracleController {
  id: string;
  runs: OracleRun[];
  panic?: string;
}

function oracleInput(c: DifferentialCase, runs: number, speakerRuns: number): string {
  return JSON.stringify({
    id: c.id,
    resources: c.resources,
    namespace: c.namespace,
    frrk8sNamespace: c.frrk8sNamespace,
    ignoreExcludeLB: c.ignoreExcludeLB,
    lbClass: c.lbClass,
    speakers: c.speakers,
    nodes: c.nodes,
    controllerRuns: runs,
    speakerRuns,
    seed: c.seed * 1000003 + c.index,
  });
}

/** Oracle processes running now: stopped with the runner (SIGINT, SIGTERM, exit). */
const children = new Set<ChildProcess>();
let cleanupInstalled = false;
function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  const stop = (): void => {
    for (const c of children) c.kill('SIGKILL');
  };
  process.on('exit', stop);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      stop();
      process.exit(128 + (sig === 'SIGINT' ? 2 : 15));
    });
  }
}

function runOracle(bin: string, input: string, output: string): Promise<void> {
  installCleanup();
  return new Promise((res, rej) => {
    const p = spawn(bin, ['-test.run', '^TestDifferentialOracle$', '-test.count', '1', '-test.timeout', '0'], {
      env: { ...process.env, METALLB_DIFFERENTIAL_IN: input, METALLB_DIFFERENTIAL_OUT: output, GOMAXPROCS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    const trace = process.env.METALLB_DIFFERENTIAL_TRACE;
    p.stdout.on('data', (d) => (log += d));
    p.stderr.on('data', (d) => (trace ? process.stderr.write(d) : (log += d)));
    children.add(p);
    p.on('error', (err) => {
      children.delete(p);
      rej(err);
    });
    p.on('close', (code) => {
      children.delete(p);
      if (code === 0) res();
      else rej(new Error(`${bin} exited ${code}:\n${log.slice(-4000)}`));
    });
  });
}

function readLines<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

async function oracle(dir: string, cases: readonly DifferentialCase[], runs: number, speakerRuns: number, which: { speaker: boolean; controller: boolean } = { speaker: true, controller: true }) {
  const tmp = mkdtempSync(join(tmpdir(), 'metallb-differential-'));
  try {
    const input = join(tmp, 'cases.jsonl');
    writeFileSync(input, cases.map((c) => oracleInput(c, runs, speakerRuns)).join('\n') + '\n');
    await Promise.all([
      which.speaker ? runOracle(join(dir, 'speaker.test'), input, join(tmp, 'speaker.jsonl')) : null,
      which.controller ? runOracle(join(dir, 'controller.test'), input, join(tmp, 'controller.jsonl')) : null,
    ]);
    const byId = <T extends { id: string }>(f: string): Map<string, T> => new Map(existsSync(f) ? readLines<T>(f).map((x) => [x.id, x]) : []);
    return { speaker: byId<OracleSpeaker>(join(tmp, 'speaker.jsonl')), controller: byId<OracleController>(join(tmp, 'controller.jsonl')) };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------ metallb-ts

interface TsAnswers {
  parse: string | null;
  controller: { error: string | null; result: AllocateAllResult | null };
  speakers: Map<string, SpeakerDryRun>;
}

function configErrorOf(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
}

async function metallbTs(c: DifferentialCase, areas: ReadonlySet<Area>): Promise<TsAnswers> {
  const state: ClusterState = clusterStateFromObjects(c.resources as KubeObject[]);
  const filter = compileNodeFilter(state, c.namespace);
  const parse = areas.has('parse') ? configErrorOf(() => parseConfig(speakerConfigState(state, c.namespace, filter), { mode: 'frr-k8s' })) : null;
  let result: AllocateAllResult | null = null;
  const error = areas.has('controller')
    ? configErrorOf(() => {
        const config = controllerConfig(state, c.namespace);
        result = allocateAll(config, state.services, { loadBalancerClass: c.lbClass });
      })
    : null;
  const speakers = new Map<string, SpeakerDryRun>();
  for (const node of areas.has('speaker') ? c.nodes : []) {
    speakers.set(
      node,
      await speakerDryRun(state, {
        node,
        namespace: c.namespace,
        frrk8sNamespace: c.frrk8sNamespace,
        bgpType: 'frr-k8s',
        ignoreExcludeLB: c.ignoreExcludeLB,
        lbClass: c.lbClass,
        speakers: c.speakers === null ? null : [...c.speakers],
      }),
    );
  }
  return { parse, controller: { error, result }, speakers };
}

// ------------------------------------------------------------------------------------ comparison

const show = (v: unknown): string => JSON.stringify(v);

/** `{}`, `[]`, null and absent are the same to the API server: drop them. */
export function compact(v: unknown): unknown {
  if (Array.isArray(v)) {
    const a = v.map(compact).filter((x) => x !== undefined);
    return a.length === 0 ? undefined : a;
  }
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const c = compact(x);
      if (c !== undefined) out[k] = c;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return v === null ? undefined : v;
}

/** The first difference between two JSON values, as a path and both sides (for one-line summaries). */
function firstDiff(a: unknown, b: unknown, path = ''): string {
  if (isDeepStrictEqual(a, b)) return '';
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const d = firstDiff((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}${Array.isArray(a) ? `[${k}]` : `.${k}`}`);
      if (d) return d;
    }
  }
  return `${path || '.'}: MetalLB ${show(a)}, metallb-ts ${show(b)}`;
}

function classify(observed: readonly string[], ts: string, tsFlagged: boolean): Verdict {
  const set = new Set(observed);
  if (set.size === 1) return set.has(ts) ? 'agree' : tsFlagged ? 'undetermined' : 'disagree';
  return tsFlagged ? 'undetermined' : 'disagree';
}

function countRuns(observed: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const o of observed) counts.set(o, (counts.get(o) ?? 0) + 1);
  return [...counts].map(([o, n]) => `${o} (${n}/${observed.length} runs)`).join(' or ');
}

function compareParse(o: OracleSpeaker, t: TsAnswers): Item[] {
  const m = o.parse === null ? 'accepted' : 'rejected';
  const ts = t.parse === null ? 'accepted' : 'rejected';
  return [
    {
      area: 'parse',
      what: 'parse (config.For over the namespace, frr-k8s)',
      verdict: m === ts ? 'agree' : 'disagree',
      detail: `MetalLB ${m}${o.parse ? ` (${o.parse})` : ''}; metallb-ts ${ts}${t.parse ? ` (${t.parse})` : ''}`,
      metallb: o.parse,
      metallbTs: t.parse,
    },
  ];
}

const key = (s: { ips: readonly string[]; pool: string | null; oscillates?: readonly (readonly string[])[] | undefined }): string =>
  s.oscillates && s.oscillates.length > 0
    ? `never settles: ${s.oscillates
        .map((x) => show(x))
        .sort()
        .join(' / ')}`
    : `${show(s.ips)} from ${s.pool ?? '-'}`;

const eventsKey = (ev: ReadonlyArray<readonly [string, string, string] | { type: string; reason: string; message: string }>): string =>
  show(ev.map((e) => (Array.isArray(e) ? e.join(' ') : `${(e as { type: string }).type} ${(e as { reason: string }).reason} ${(e as { message: string }).message}`)).sort());

function compareController(o: OracleController, t: TsAnswers): Item[] {
  const items: Item[] = [];
  const runs = o.runs;
  const mErr = runs.map((r) => (r.configError === null ? 'accepted' : 'rejected'));
  const tErr = t.controller.error === null ? 'accepted' : 'rejected';
  const v = classify(mErr, tErr, false);
  items.push({
    area: 'controller',
    what: 'controller configuration',
    verdict: v,
    detail: `MetalLB ${countRuns(mErr)}${runs[0]?.configError ? ` (${runs[0].configError})` : ''}; metallb-ts ${tErr}${t.controller.error ? ` (${t.controller.error})` : ''}`,
    metallb: runs[0]?.configError ?? null,
    metallbTs: t.controller.error,
  });
  if (v !== 'agree' || t.controller.result === null || runs.some((r) => r.configError !== null)) return items;
  const result: AllocateAllResult = t.controller.result;
  const handled = new Set(result.services.map((s) => s.service));
  // Events depend on every Service's addresses (sharing, what is free): when any of them is random
  // in MetalLB or flagged by metallb-ts, so are the events.
  const caseRandom = result.services.some(
    (s) => s.nondeterministic !== undefined || s.oscillates !== undefined || new Set(runs.map((r) => (r.services[s.service] ? key(r.services[s.service]!) : 'absent'))).size > 1,
  );
  for (const s of result.services) {
    const flagged = s.nondeterministic !== undefined;
    const observed = runs.map((r) => {
      const m = r.services[s.service];
      return m ? key(m) : 'absent';
    });
    const mine = key(s);
    const va = classify(observed, mine, flagged);
    const unseen = (o: readonly string[], m: string): { unseen?: true } => (new Set(o).size === 1 && !o.includes(m) ? { unseen: true } : {});
    items.push({
      area: 'controller',
      what: `controller ${s.service} addresses`,
      verdict: va,
      detail: `MetalLB ${countRuns(observed)}; metallb-ts ${mine}${flagged ? ` (flagged nondeterministic: ${s.nondeterministic})` : ''}`,
      metallb: runs.map((r) => r.services[s.service]),
      metallbTs: s,
      ...unseen(observed, mine),
    });
    const evObserved = runs.map((r) => eventsKey(r.services[s.service]?.events ?? []));
    const evMine = eventsKey(s.events);
    const ve = classify(evObserved, evMine, caseRandom);
    items.push({
      area: 'controller',
      what: `controller ${s.service} events`,
      verdict: ve,
      detail: `MetalLB ${countRuns(evObserved)}; metallb-ts ${evMine}`,
      metallb: runs.map((r) => r.services[s.service]?.events),
      metallbTs: s.events,
      ...unseen(evObserved, evMine),
    });
  }
  // Services metallb-ts leaves out (not LoadBalancer, another class): MetalLB must not write them.
  const names = new Set(runs.flatMap((r) => Object.keys(r.services)));
  for (const name of names) {
    if (handled.has(name)) continue;
    const writes = runs.map((r) => r.services[name]?.writes ?? 0);
    if (writes.every((w) => w === 0)) continue;
    items.push({
      area: 'controller',
      what: `controller ${name} (left out by metallb-ts)`,
      verdict: 'disagree',
      detail: `MetalLB writes it (${countRuns(runs.map((r) => key(r.services[name]!)))}); metallb-ts does not handle it`,
      metallb: runs.map((r) => r.services[name]),
      metallbTs: null,
    });
  }
  return items;
}

function compareSpeakers(c: DifferentialCase, o: OracleSpeaker, t: TsAnswers): Item[] {
  const items: Item[] = [];
  for (const node of c.nodes) {
    const mRuns = o.nodes[node] ?? [];
    const ts = t.speakers.get(node)!;
    const m = mRuns[0];
    if (!m) {
      items.push({ area: 'speaker', what: `speaker ${node}`, verdict: 'disagree', detail: 'no MetalLB answer', metallb: null, metallbTs: null });
      continue;
    }
    const varied = mRuns.some((r) => !isDeepStrictEqual(r, m));
    const judge = (eq: boolean): Verdict => (eq ? (varied ? 'undetermined' : 'agree') : varied ? 'undetermined' : 'disagree');
    const mAcc = m.configError === null ? 'accepted' : 'rejected';
    const tAcc = ts.configuration.accepted ? 'accepted' : 'rejected';
    items.push({
      area: 'speaker',
      what: `speaker ${node} configuration`,
      verdict: judge(mAcc === tAcc),
      detail: `MetalLB ${mAcc}${m.configError ? ` (${m.configError})` : ''}; metallb-ts ${tAcc}${ts.configuration.accepted ? '' : ` (${(ts.configuration as { error: string }).error})`}`,
      metallb: m.configError,
      metallbTs: ts.configuration,
    });
    const mf = compact(m.frrConfiguration) ?? null;
    const tf = compact(ts.frrConfiguration) ?? null;
    items.push({
      area: 'speaker',
      what: `speaker ${node} FRRConfiguration`,
      verdict: judge(isDeepStrictEqual(mf, tf)),
      detail: firstDiff(mf, tf) || 'equal',
      metallb: m.frrConfiguration,
      metallbTs: ts.frrConfiguration,
    });
    for (const s of ts.services) {
      const ms = m.services[s.service];
      const mv = ms ? { bgp: ms.bgp, layer2: ms.layer2, peers: ms.peers } : null;
      const tv = { bgp: s.bgp, layer2: s.layer2, peers: [...s.peers] };
      items.push({
        area: 'speaker',
        what: `speaker ${node} ${s.service}`,
        verdict: judge(isDeepStrictEqual(mv, tv)),
        detail: `MetalLB ${show(mv)}; metallb-ts ${show(tv)}`,
        metallb: mv,
        metallbTs: tv,
      });
    }
  }
  return items;
}

function caseVerdict(items: readonly Item[]): Verdict {
  if (items.some((i) => i.verdict === 'disagree')) return 'disagree';
  if (items.some((i) => i.verdict === 'undetermined')) return 'undetermined';
  return 'agree';
}

// ------------------------------------------------------------------------------------ files

const OPTIONS_ANNOTATION = 'differential.metallb-ts/case';

/** The case as a `kind: List` (readable with -f), its run options in an annotation, summary lines on top. */
export function caseYaml(c: DifferentialCase, header: readonly string[] = []): string {
  const { resources, ...options } = c;
  const doc = { apiVersion: 'v1', kind: 'List', metadata: { annotations: { [OPTIONS_ANNOTATION]: JSON.stringify(options) } }, items: resources };
  const lines = header.flatMap((h) => h.split('\n')).map((h) => `# ${h}`.trimEnd());
  return `${lines.join('\n')}${lines.length ? '\n' : ''}${YAML.stringify(doc, { lineWidth: 0 })}`;
}

/** Reads a case written by caseYaml (or any List / multi-document file with that annotation). */
export function readCase(file: string): DifferentialCase {
  const docs = YAML.parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as KubeObject & { items?: KubeObject[] });
  const list = docs.find((d) => d?.kind === 'List' && d.metadata?.annotations?.[OPTIONS_ANNOTATION]);
  if (!list) throw new Error(`${file}: no kind: List with the ${OPTIONS_ANNOTATION} annotation`);
  const options = JSON.parse(list.metadata!.annotations![OPTIONS_ANNOTATION]!) as Omit<DifferentialCase, 'resources'>;
  return { ...options, resources: list.items ?? [] };
}

// ------------------------------------------------------------------------------------ run

function ensureOracle(dir: string, print: (l: string) => void): void {
  if (dir !== ORACLE_DIR) return;
  const r = spawnSync('bash', [join(REPO_ROOT, 'test/setup.d/50-metallb-differential.sh')], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) {
    print("differential: could not build MetalLB's oracle (test/setup.d/50-metallb-differential.sh failed; it needs Go and the module proxy)");
    throw Object.assign(new Error('no oracle'), { exitCode: 2 });
  }
}

export async function runDifferential(opts: RunOptions = {}): Promise<RunSummary> {
  const t0 = performance.now();
  const print = opts.print ?? ((l: string) => process.stdout.write(`${l}\n`));
  const dir = opts.oracleDir ?? ORACLE_DIR;
  ensureOracle(dir, print);
  const runs = opts.runs ?? 8;
  const speakerRuns = opts.speakerRuns ?? 1;
  const seed = opts.seed ?? 1;
  const all: DifferentialCase[] = opts.replay ? [...opts.replay] : opts.indexes ? opts.indexes.map((i) => generateCase(seed, i)) : Array.from({ length: opts.cases ?? 200 }, (_, i) => generateCase(seed, i));
  const out = opts.out === undefined ? join(REPO_ROOT, '.cache/differential') : opts.out;
  const batch = opts.batch ?? 100;
  const areas = new Set(opts.areas ?? AREAS);
  const which = { speaker: areas.has('parse') || areas.has('speaker'), controller: areas.has('controller') };
  const results: CaseResult[] = [];
  const itemCounts: Record<string, Record<Verdict, number>> = {};

  for (let b = 0; b < all.length; b += batch) {
    const cases = all.slice(b, b + batch);
    const oraclePromise = oracle(dir, cases, runs, speakerRuns, which);
    oraclePromise.catch(() => {}); // awaited below
    const ts = new Map<string, TsAnswers>();
    for (const c of cases) ts.set(c.id, await metallbTs(c, areas));
    const answers = await oraclePromise;
    let itemsById = new Map<string, Item[]>();
    for (const c of cases) {
      const sp = answers.speaker.get(c.id);
      const co = answers.controller.get(c.id);
      const items: Item[] = [];
      for (const [label, a, wanted] of [
        ['speaker oracle', sp, which.speaker],
        ['controller oracle', co, which.controller],
      ] as const) {
        if (wanted && (!a || a.panic))
          items.push({
            area: label.startsWith('speaker') ? 'speaker' : 'controller',
            what: label,
            verdict: 'disagree',
            detail: `no answer: ${a?.panic?.split('\n')[0] ?? 'missing'}`,
            metallb: a?.panic ?? null,
            metallbTs: null,
          });
      }
      if (sp && !sp.panic && areas.has('parse')) items.push(...compareParse(sp, ts.get(c.id)!));
      if (sp && !sp.panic && areas.has('speaker')) items.push(...compareSpeakers(c, sp, ts.get(c.id)!));
      if (co && !co.panic && areas.has('controller')) items.push(...compareController(co, ts.get(c.id)!));
      itemsById.set(c.id, items);
    }
    // metallb-ts flags an item nondeterministic and MetalLB answered otherwise every time:
    // give MetalLB 24 more runs on those cases before calling it undetermined.
    const again = cases.filter((c) => itemsById.get(c.id)!.some((i) => i.verdict === 'undetermined' && i.unseen));
    if (again.length > 0) {
      const more = await oracle(dir, again, 24, 1, { speaker: false, controller: true });
      for (const c of again) {
        const co = answers.controller.get(c.id)!;
        const extra = more.controller.get(c.id);
        if (!extra || extra.panic) continue;
        const merged: OracleController = { id: c.id, runs: [...co.runs, ...extra.runs] };
        const items = itemsById.get(c.id)!.filter((i) => i.area !== 'controller');
        items.push(...compareController(merged, ts.get(c.id)!));
        itemsById.set(c.id, items);
      }
    }
    for (const c of cases) {
      const items = itemsById.get(c.id)!;
      for (const i of items) {
        const k = i.area;
        itemCounts[k] ??= { agree: 0, disagree: 0, undetermined: 0 };
        itemCounts[k][i.verdict]++;
      }
      const verdict = caseVerdict(items);
      let file: string | undefined;
      if (verdict === 'disagree' && out) {
        mkdirSync(out, { recursive: true });
        file = join(out, `${c.id}.yaml`);
        const bad = items.filter((i) => i.verdict === 'disagree');
        writeFileSync(
          file,
          caseYaml(c, [
            `differential case ${c.id} (seed ${c.seed}, case ${c.index}): MetalLB v0.16.1 and metallb-ts disagree`,
            ...bad.map((i) => `${i.what}: ${i.detail}`),
            `replay: npm run differential -- --replay ${file}`,
          ]),
        );
        writeFileSync(
          join(out, `${c.id}.answers.json`),
          JSON.stringify(
            bad.map((i) => ({ what: i.what, metallb: i.metallb, metallbTs: i.metallbTs })),
            null,
            2,
          ) + '\n',
        );
      }
      for (const i of items) {
        if (i.verdict === 'agree') continue;
        const note = i.verdict === 'disagree' ? (file ? ` [${file}]` : '') : i.unseen ? " [unseen: MetalLB never gave metallb-ts's answer]" : '';
        print(`${i.verdict === 'disagree' ? 'DISAGREE' : 'UNDETERMINED'} ${c.id} ${i.what}: ${i.detail}${note}`);
      }
      results.push({ id: c.id, verdict, items, ...(file ? { file } : {}) });
    }
    itemsById = new Map();
  }
  const count = (v: Verdict): number => results.filter((r) => r.verdict === v).length;
  const summary: RunSummary = {
    agree: count('agree'),
    disagree: count('disagree'),
    undetermined: count('undetermined'),
    cases: results,
    seconds: (performance.now() - t0) / 1000,
    items: itemCounts,
  };
  const perArea = Object.entries(itemCounts)
    .map(([a, c]) => `${a} ${c.agree}/${c.disagree}/${c.undetermined}`)
    .join(', ');
  const unseen = results.reduce((n, r) => n + r.items.filter((i) => i.verdict === 'undetermined' && i.unseen).length, 0);
  print(
    `items (agree/disagree/undetermined): ${perArea}${unseen ? ` (${unseen} undetermined unseen)` : ''}; ${results.length} cases in ${summary.seconds.toFixed(1)} s (${(results.length / summary.seconds).toFixed(1)} cases/s)`,
  );
  print(`${summary.agree} agree, ${summary.disagree} disagree, ${summary.undetermined} undetermined`);
  return summary;
}

function usage(msg: string): never {
  process.stderr.write(
    `differential: ${msg}\nusage: npm run differential -- [--cases N] [--seed S] [--index I,J…] [--areas parse,controller,speaker] [--runs R] [--speaker-runs R] [--batch N] [--out DIR] [--replay FILE…]\n`,
  );
  process.exit(2);
}

async function main(argv: string[]): Promise<number> {
  const opts: { cases?: number; seed?: number; runs?: number; speakerRuns?: number; batch?: number; out?: string; replay?: DifferentialCase[]; areas?: Area[]; indexes?: number[] } = {};
  const num = (flag: string, v: string | undefined): number => {
    const n = Number(v);
    if (v === undefined || !Number.isInteger(n) || n < 0) usage(`${flag} needs a non-negative integer`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--cases') opts.cases = num(a, argv[++i]);
    else if (a === '--seed') opts.seed = num(a, argv[++i]);
    else if (a === '--runs') opts.runs = Math.max(1, num(a, argv[++i]));
    else if (a === '--speaker-runs') opts.speakerRuns = Math.max(1, num(a, argv[++i]));
    else if (a === '--batch') opts.batch = Math.max(1, num(a, argv[++i]));
    else if (a === '--out') opts.out = argv[++i] ?? usage('--out needs a directory');
    else if (a === '--index') opts.indexes = (argv[++i] ?? '').split(',').map((x) => num(a, x));
    else if (a === '--areas') {
      const list = (argv[++i] ?? '').split(',').filter(Boolean);
      if (list.length === 0 || list.some((x) => !(AREAS as readonly string[]).includes(x))) usage(`--areas takes a comma-separated list of ${AREAS.join(', ')}`);
      opts.areas = list as Area[];
    } else if (a === '--replay') {
      opts.replay ??= [];
      while (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) opts.replay.push(readCase(argv[++i]!));
    } else usage(`unknown argument ${a}`);
  }
  try {
    const s = await runDifferential(opts);
    return s.disagree > 0 ? 1 : 0;
  } catch (err) {
    if ((err as { exitCode?: number }).exitCode === 2) return 2;
    throw err;
  }
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2));
}
