/**
 * memberlist failure detection and cost (`npm run bench memberlist`):
 * - kill → dead on every other member, 5-member clusters, median over MEMBERLIST_BENCH_RUNS runs
 *   (default 10): a cluster of 5 HashiCorp memberlist v0.5.1 members (test/memberlist/peer) next
 *   to a cluster of 5 metallb-ts members, default LAN timing, on 127.0.0.0/8;
 * - CPU (% of one core) and RSS (MB) of one metallb-ts member and of one Go member in a
 *   50-member cluster (48 Go members + the two measured), over 20 s after convergence;
 * - in-process SWIM state machine: one push/pull merge of 5k/20k/65k alive states, and the
 *   per-event cost of 10,200 indirect pings afterwards.
 * Needs the Go peer: `bash test/setup.d/30-memberlist-peer.sh`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { MemberlistMember } from '../src/speaker/membership-memberlist.ts';
import { LAN_CONFIG } from '../src/core/membership/config.ts';
import { METALLB_VSN } from '../src/core/membership/messages.ts';
import { createSwimState, step } from '../src/core/membership/swim.ts';

const ROOT = join(import.meta.dirname, '..');
const PEER = join(ROOT, '.cache/memberlist-peer/memberlist-peer');
const PORT = 37946;

if (process.argv[2] === 'member') {
  // child mode: one metallb-ts member, for CPU/RSS measurement
  const m = new MemberlistMember({ name: process.argv[3]!, bindAddr: process.argv[4]!, bindPort: PORT });
  await m.start();
  await m.join([{ host: process.argv[5]!, port: PORT }]);
  setInterval(() => console.log(`alive ${m.alive().length}`), 500);
  await new Promise(() => {});
}

interface Proc {
  proc: ChildProcess;
  http: string;
}
async function goPeer(name: string, ip: string, joinIp?: string): Promise<Proc> {
  const args = ['-name', name, '-bind', ip, '-port', String(PORT), '-http', '127.0.0.1:0'];
  if (joinIp) args.push('-join', `${joinIp}:${PORT}`);
  const proc = spawn(PEER, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  const http = await new Promise<string>((resolve) => createInterface({ input: proc.stdout! }).on('line', (l) => /^http (\S+)/.test(l) && resolve(l.split(' ')[1]!)));
  return { proc, http };
}
async function goState(p: Proc, name: string): Promise<string | undefined> {
  const all = (await (await fetch(`http://${p.http}/all`)).json()) as { name: string; state: string }[];
  return all.find((v) => v.name === name)?.state;
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function until(fn: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await fn()) return true;
    await sleep(50);
  }
  return false;
}

async function goRun(run: number): Promise<number> {
  const ips = [1, 2, 3, 4, 5].map((i) => `127.0.${60 + (run % 50)}.${i}`);
  const ps: Proc[] = [];
  for (const [i, ip] of ips.entries()) ps.push(await goPeer(`m${i}`, ip, i ? ips[0] : undefined));
  await until(async () => (await Promise.all(ps.map(async (p) => ((await (await fetch(`http://${p.http}/members`)).json()) as unknown[]).length))).every((n: number) => n === 5), 10_000);
  const t0 = Date.now();
  ps[4]!.proc.kill('SIGKILL');
  await until(async () => (await Promise.all(ps.slice(0, 4).map((p) => goState(p, 'm4')))).every((s) => s === 'dead'), 60_000);
  const took = Date.now() - t0;
  for (const p of ps) p.proc.kill('SIGKILL');
  return took;
}

async function tsRun(run: number): Promise<number> {
  const ips = [1, 2, 3, 4, 5].map((i) => `127.0.${120 + (run % 50)}.${i}`);
  const ms: MemberlistMember[] = [];
  for (const [i, ip] of ips.entries()) {
    const m = new MemberlistMember({ name: `m${i}`, bindAddr: ip, bindPort: PORT });
    await m.start();
    if (i) await m.join([{ host: ips[0]!, port: PORT }]);
    ms.push(m);
  }
  await until(async () => ms.every((m) => m.alive().length === 5), 10_000);
  const t0 = Date.now();
  ms[4]!.kill();
  await until(async () => ms.slice(0, 4).every((m) => m.members().find((v) => v.name === 'm4')?.state === 'dead'), 60_000);
  const took = Date.now() - t0;
  for (const m of ms) m.kill();
  return took;
}

function procStat(pid: number): { cpuTicks: number; rssMB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;
  return { cpuTicks: Number(stat[11]) + Number(stat[12]), rssMB: Number(rss) / 1024 };
}

// In-process SWIM state machine cost (no sockets): one push/pull merge of N alive states, then
// per-event cost of indirect pings (not touching the member table) in the N-member state.
for (const N of [5_000, 20_000, 65_000]) {
  const s0 = createSwimState(LAN_CONFIG, { name: 'bench', addr: Uint8Array.from([127, 0, 0, 1]), port: 7946 }, 0, 1);
  const nodes = Array.from({ length: N }, (_, i) => ({
    name: `fake-${i}`,
    addr: Uint8Array.from([10, (i >> 16) & 255, (i >> 8) & 255, i & 255]),
    port: 7946,
    meta: null,
    incarnation: 1,
    state: 0,
    vsn: Uint8Array.from(METALLB_VSN),
  }));
  const q = s0.broadcasts;
  let t = performance.now();
  let s = step(s0, { type: 'merge', nodes }, 1).state;
  const mergeMs = performance.now() - t;
  const mergeOps = q.ops;
  const K = 10_200;
  t = performance.now();
  for (let i = 0; i < K; i++)
    s = step(
      s,
      { type: 'message', msg: { type: 'indirectPing', seqNo: i, target: Uint8Array.from([127, 5, i >> 8, i & 255]), port: 9, node: 'x', nack: true }, from: { host: '127.0.0.9', port: 7946 } },
      2,
    ).state;
  const perEventUs = ((performance.now() - t) * 1000) / K;
  console.log(`memberlist swim, ${N} members: merge of ${N} alive states ${mergeMs.toFixed(0)} ms (${mergeOps} broadcast-queue operations); ${K} indirect pings afterwards ${perEventUs.toFixed(1)} µs/event`);
}

const runs = Number(process.env.MEMBERLIST_BENCH_RUNS ?? 10);
const go: number[] = [];
const ts: number[] = [];
for (let r = 0; r < runs; r++) {
  go.push(await goRun(r));
  ts.push(await tsRun(r));
}
console.log(`memberlist kill→dead on all 4 others, 5 members, Go v0.5.1: median ${median(go)} ms (min ${Math.min(...go)}, max ${Math.max(...go)}, ${runs} runs)`);
console.log(`memberlist kill→dead on all 4 others, 5 members, metallb-ts: median ${median(ts)} ms (min ${Math.min(...ts)}, max ${Math.max(...ts)}, ${runs} runs)`);

// 50 members: 48 Go + one measured Go + one measured metallb-ts (in its own process)
const big: Proc[] = [];
for (let i = 0; i < 49; i++) big.push(await goPeer(`g${i}`, `127.0.200.${i + 1}`, i ? '127.0.200.1' : undefined));
const child = spawn(process.execPath, [import.meta.filename, 'member', 'ts-50', '127.0.200.100', '127.0.200.1'], { stdio: ['ignore', 'pipe', 'inherit'] });
let seen = 0;
createInterface({ input: child.stdout! }).on('line', (l) => (seen = Number(l.split(' ')[1])));
const converged = await until(async () => seen === 50, 60_000);
const measured = big[25]!;
const a = { ts: procStat(child.pid!), go: procStat(measured.proc.pid!) };
const windowMs = 20_000;
await sleep(windowMs);
const b = { ts: procStat(child.pid!), go: procStat(measured.proc.pid!) };
const pct = (x: number, y: number): string => (((y - x) / 100 / (windowMs / 1000)) * 100).toFixed(1);
console.log(
  `memberlist 50 members (${converged ? 'converged' : 'NOT converged'}): metallb-ts member CPU ${pct(a.ts.cpuTicks, b.ts.cpuTicks)}% of a core, RSS ${b.ts.rssMB.toFixed(0)} MB; Go member CPU ${pct(a.go.cpuTicks, b.go.cpuTicks)}%, RSS ${b.go.rssMB.toFixed(0)} MB`,
);
child.kill('SIGKILL');
for (const p of big) p.proc.kill('SIGKILL');
process.exit(0);
