// The BGP test bed: the real frr-k8s v0.0.25 controller (the version MetalLB v0.16.1 requires) drives
// Debian's FRR 8.4.4 on a "node", which peers over eBGP (or iBGP) with a second FRR, the "router".
//
//   host netns:   kube-apiserver + etcd on 127.0.0.1 (cluster.ts), frr-k8s-controller (a client of it)
//   node netns:   zebra, bgpd, bfdd, staticd + frr-k8s's reloader script (frr-reload.py, vtysh)
//   router netns: zebra, bgpd, bfdd with a static configuration peering with the node
//   node eth0 <-> router eth0 (one veth): 198.51.100.2/24 + 2001:db8:100::2/64 on the node,
//                                         198.51.100.1/24 + 2001:db8:100::1/64 on the router
//
//   const cluster = await startTestCluster();
//   const bed = await startBGPTestBed({ cluster, node: 'node-a', nodeASN: 64500, routerASN: 64512 });
//   ... write FRRConfiguration metallb-node-a in bed.namespace ...
//   await bed.waitForRoute('192.0.2.10/32');
//   await bed.stop(); await cluster.stop();
//
// Nothing of the host's FRR installation is used but the binaries: every daemon gets its config file,
// pid file, zebra socket and vty socket directory on its command line (`-f`, `-i`, `-z`,
// `--vty_socket`, `-P 0` = no TCP vty), under a scratch directory. frr-k8s's reloader script calls
// frr-reload.py and vtysh with their default paths (/etc/frr, /var/run/frr), so it runs in a private
// mount namespace (`unshare -m`) of the node netns where the scratch directories are bind-mounted on
// /etc/frr and /run/frr (a private tmpfs on /run and on /tmp: the script's /tmp/current.conf stays
// there too). frr-k8s itself reads its reloader's status from the fixed /etc/frr_reloader: it runs in a
// private mount namespace with an overlay on /etc holding that directory (a bind of the scratch
// directory); where overlayfs is not available it runs without it and only logs that it cannot read
// the status (FRRNodeState then has no running config).
//
// What frr-k8s-controller v0.0.25 needs, and gets here: its four CRDs (FRRConfiguration,
// FRRK8sConfiguration and FRRNodeState are watched: the manager does not start without them), its
// namespace, and its Node (a reconcile with FRRConfigurations present fails without it). It serves no
// webhook (v0.0.25 validates FRRConfigurations in the separate statuscleaner binary, not run here, so
// nothing is rejected at admission; a bad object shows as `lastConversionResult` in FRRNodeState).
// Metrics and health probes are off (`0`); it polls the reloader status every 30 s, so FRRNodeState's
// `lastReloadResult` / `runningConfig` lag up to 30 s behind lastReload().
//
// Every process gets MLBTS_BGP_OWNER=<pid of this process> in its environment, every netns and the
// scratch directory carry that pid in their names: stop() ends and deletes them, so does an exit or
// SIGINT/SIGTERM/SIGHUP of this process, and the next test bed reaps what a killed run left behind.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiextensionsV1Api, CoreV1Api, type V1Node } from '@kubernetes/client-node';
import ipaddr from 'ipaddr.js';
import { installCrds, REPO_ROOT, type TestCluster } from './cluster.ts';
import { onProcessExit, sleep } from './wait.ts';

/** Where test/setup.d/45-frr-k8s.sh puts frr-k8s-controller, frr-reloader.sh and crds/; `METALLB_TS_FRRK8S_DIR` overrides. */
export const FRRK8S_DIR: string = process.env.METALLB_TS_FRRK8S_DIR ?? join(REPO_ROOT, '.cache/frr-k8s');
/** Debian's FRR daemons and frr-reload.py (package frr, frr-pythontools). */
export const FRR_LIBEXEC = '/usr/lib/frr';
/** Names of this harness's network namespaces, scratch directories start with it: `mlbts-bgp-…-<pid>-<n>`. */
export const BGP_NAME_PREFIX = 'mlbts-bgp-';

const SETUP_HINT = 'Run `bash test/setup.sh` (test/setup.d/40-frr.sh, 45-frr-k8s.sh) as root first, and the BGP tests as root.';
const OWNER_ENV = 'MLBTS_BGP_OWNER';

/** The addresses of the node–router link. */
export const BGP_LINK = {
  nodeIPv4: '198.51.100.2',
  routerIPv4: '198.51.100.1',
  ipv4PrefixLength: 24,
  nodeIPv6: '2001:db8:100::2',
  routerIPv6: '2001:db8:100::1',
  ipv6PrefixLength: 64,
} as const;

export interface BGPTestBedOptions {
  /** the running test cluster (cluster.ts) frr-k8s connects to */
  cluster: TestCluster;
  /** node name: frr-k8s's `--node-name`; the Node object is created if absent and gets the label `kubernetes.io/hostname: <node>` */
  node: string;
  /** the node's AS number (what the FRRConfiguration's router `asn` will say); the router's neighbors use it as `remote-as` */
  nodeASN: number;
  /** the router's AS number; equal to nodeASN makes the sessions iBGP (LOCAL_PREF is then visible at the router) */
  routerASN: number;
  /** frr-k8s's `--namespace`, where it reads FRRConfigurations and Secrets (default `metallb-system`; created if absent) */
  namespace?: string;
  /** the router's BGP password for both neighbors (TCP MD5), for tests of `password` / `passwordSecret` */
  routerPassword?: string;
  /** `neighbor X bfd` on the router for both neighbors (bfdd runs on both sides anyway) */
  routerBFD?: boolean;
  /** more lines for the router's bgpd configuration, appended inside `router bgp <routerASN>` */
  routerExtraBGPConfig?: string[];
  /** frr-k8s's debounce (FRR_K8S_BGP_DEBOUNCE_TIMEOUT) in milliseconds; default: frr-k8s's own 3000 */
  frrk8sDebounceMs?: number;
  /** frr-k8s `--log-level` (default `info`; `debug` also makes FRR log at debugging level) */
  frrk8sLogLevel?: 'all' | 'debug' | 'info' | 'warn' | 'error' | 'none';
  /** limit in milliseconds for the whole start, including frr-k8s's first successful reload (default 60000) */
  startTimeoutMs?: number;
  /** keep the scratch directory (configs, logs) after stop(); also env METALLB_TS_KEEP_BGP=1 */
  keep?: boolean;
}

/** One route of the router's kernel table that bgp installed (`ip -j route show proto bgp`). */
export interface RouterRoute {
  family: 'ipv4' | 'ipv6';
  /** prefix with its length, IPv6 in RFC 5952 form: `192.0.2.10/32`, `2001:db8:1::10/128` */
  prefix: string;
  /** next-hop address (an IPv6 route has the node's link-local address), absent for multipath routes */
  gateway?: string;
  /** next hops of a multipath route */
  nexthops?: string[];
  dev?: string;
  /** always `bgp` */
  protocol: string;
  metric?: number;
}

/** What the router's bgpd says about one prefix: the best path (`show bgp <afi> unicast PREFIX json`). */
export interface RouterBGPPath {
  prefix: string;
  /** standard communities as `a:b` (well-known ones as FRR names them, e.g. `no-export`) */
  communities: string[];
  /** large communities as `a:b:c` */
  largeCommunities: string[];
  /** LOCAL_PREF; FRR only shows it for iBGP paths */
  localPref?: number;
  /** AS path as FRR prints it, e.g. `64500` */
  asPath: string;
  /** next-hop addresses of the path */
  nexthops: string[];
  /** how many paths the router has for the prefix */
  pathCount: number;
  /** the whole JSON answer */
  raw: unknown;
}

export interface BGPTestBed {
  node: string;
  /** frr-k8s's namespace */
  namespace: string;
  nodeASN: number;
  routerASN: number;
  /** network namespace names */
  nodeNetns: string;
  routerNetns: string;
  /** link addresses (BGP_LINK): the FRRConfiguration's neighbors are routerIPv4 / routerIPv6 */
  nodeIPv4: string;
  nodeIPv6: string;
  routerIPv4: string;
  routerIPv6: string;
  /** scratch directory: node/, router/, reloader/, logs/ */
  dir: string;
  /** The router's kernel routes with `proto bgp`, IPv4 then IPv6. Throws when `ip` fails. */
  routerRoutes(): RouterRoute[];
  /**
   * Polls the router's kernel table every 200 ms until `prefix` (e.g. `192.0.2.10/32`; a bare address
   * means /32 or /128) is there with proto bgp (`present: true`, the default) or gone (`present:
   * false`). Resolves to the route (or undefined when waiting for absence); rejects after
   * `timeoutMs` (default 30000) with the router's table, BGP summary, frr-k8s's rendered frr.conf and
   * every log's tail.
   */
  waitForRoute(prefix: string, opts?: { present?: boolean; timeoutMs?: number }): Promise<RouterRoute | undefined>;
  /** The router bgpd's best path for `prefix` (its family picks ipv4/ipv6 unicast), or null when it has none. */
  routerBGP(prefix: string): RouterBGPPath | null;
  /** BGP state of the router's neighbors by address (`Established`, `Active`, …). */
  routerSessions(): Record<string, string>;
  /** Runs vtysh commands (one `-c` each) against the router's FRR; returns stdout. Throws on a non-zero exit. */
  routerVtysh(...commands: string[]): string;
  /** Runs vtysh commands (one `-c` each) against the node's FRR (the one frr-k8s drives); returns stdout. Throws on a non-zero exit. */
  nodeVtysh(...commands: string[]): string;
  /** The frr.conf frr-k8s last rendered, or '' before its first render. */
  renderedConfig(): string;
  /** The reloader's last result: `{ time (unix s), result: 'success' | 'failure' }` or null before the first reload. */
  lastReload(): { time: number; result: string } | null;
  /** How many reloads finished (successful or not) since the bed started. */
  reloadCount(): number;
  /** Last `lines` lines (default 40) of every process log, labelled, for assertion messages. */
  logTail(lines?: number): string;
  /** logTail plus the router's routes and BGP summary, the rendered frr.conf and the reloader's last error. */
  diagnostics(lines?: number): string;
  /**
   * Stops frr-k8s, the reloader and both FRRs (SIGTERM, SIGKILL after 5 s, whole process groups),
   * deletes both network namespaces and the scratch directory (unless kept). Idempotent, never
   * rejects. The Node object and namespace stay in the cluster.
   */
  stop(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// process bookkeeping

interface Proc {
  name: string;
  proc: ChildProcess;
  log: string;
  exited: Promise<void>;
}
interface LiveBed {
  procs: Proc[];
  netns: string[];
  dir: string;
  keep: boolean;
}

const live = new Set<LiveBed>();
let reaped = false;
let counter = 0;

function alive(p: ChildProcess): boolean {
  return p.exitCode === null && p.signalCode === null;
}

function killGroup(p: ChildProcess, sig: NodeJS.Signals): void {
  if (p.pid === undefined) return;
  try {
    process.kill(-p.pid, sig);
  } catch {
    try {
      p.kill(sig);
    } catch {
      /* gone */
    }
  }
}

function deleteNetns(ns: string): void {
  // processes still inside (a daemon that ignored SIGTERM) would keep its interfaces busy
  const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? '';
  for (const pid of pids.split(/\s+/).filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  spawnSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
}

function removeDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    /* best effort */
  }
}

function killAllSync(): void {
  for (const bed of live) {
    for (const p of bed.procs) if (alive(p.proc)) killGroup(p.proc, 'SIGKILL');
    for (const ns of bed.netns) deleteNetns(ns);
    if (!bed.keep) removeDir(bed.dir);
  }
  live.clear();
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Ends what test beds of dead processes left behind: processes whose environment names a dead
 * owner, network namespaces and scratch directories `mlbts-bgp-…-<pid>-…` of a dead pid.
 */
function reapStale(): void {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let env: string;
    try {
      env = readFileSync(`/proc/${entry}/environ`, 'latin1');
    } catch {
      continue;
    }
    const m = new RegExp(`(?:^|\\0)${OWNER_ENV}=(\\d+)(?:\\0|$)`).exec(env);
    if (!m) continue;
    const owner = Number(m[1]);
    if (owner === process.pid || pidAlive(owner)) continue;
    try {
      process.kill(Number(entry), 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  const list = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '';
  for (const m of list.matchAll(/^(mlbts-bgp-(?:node|rtr)-(\d+)-\d+)\b/gm)) {
    const pid = Number(m[2]);
    if (pid !== process.pid && !pidAlive(pid)) deleteNetns(m[1]!);
  }
  for (const name of readdirSync(tmpdir())) {
    const m = /^mlbts-bgp-(\d+)-/.exec(name);
    if (m && Number(m[1]) !== process.pid && !pidAlive(Number(m[1]))) removeDir(join(tmpdir(), name));
  }
}

// ---------------------------------------------------------------------------------------------
// helpers

function run(cmd: string, args: string[], what = `${cmd} ${args.join(' ')}`): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 20_000 });
  if (r.error) throw new Error(`${what}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${what}: exit ${r.status ?? r.signal}: ${(r.stderr || r.stdout).trim()}`);
  return r.stdout;
}

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return '(no log)';
  const all = readFileSync(file, 'utf8').split('\n');
  return all.slice(Math.max(0, all.length - lines - 1)).join('\n');
}

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Throws one message listing everything the test bed lacks: root, Debian's FRR and frr-pythontools,
 * iproute2, util-linux (unshare, mount, flock), python3, and frr-k8s's binary, reloader script and
 * CRDs in FRRK8S_DIR. The test bed calls it first; tests may call it to fail early.
 */
export function checkBGPTestBedPrerequisites(): void {
  const problems: string[] = [];
  if (process.getuid?.() !== 0) problems.push('not root (network namespaces, mounts and FRR need root)');
  for (const d of ['zebra', 'bgpd', 'bfdd', 'staticd']) {
    if (!existsSync(join(FRR_LIBEXEC, d))) problems.push(`${FRR_LIBEXEC}/${d} missing (Debian package frr)`);
  }
  if (!existsSync(join(FRR_LIBEXEC, 'frr-reload.py'))) problems.push(`${FRR_LIBEXEC}/frr-reload.py missing (Debian package frr-pythontools)`);
  if (!existsSync('/etc/frr')) problems.push("/etc/frr missing (Debian package frr; the reloader's mount point)");
  for (const c of ['vtysh', 'ip', 'unshare', 'mount', 'flock', 'python3', 'bash']) {
    if (!onPath(c)) problems.push(`${c} not on PATH`);
  }
  if (spawnSync('id', ['-u', 'frr'], { stdio: 'ignore' }).status !== 0) problems.push('user frr missing (Debian package frr creates it; the daemons run as frr)');
  for (const f of ['frr-k8s-controller', 'frr-reloader.sh', 'crds/frrk8s.metallb.io_frrconfigurations.yaml']) {
    if (!existsSync(join(FRRK8S_DIR, f))) problems.push(`${join(FRRK8S_DIR, f)} missing`);
  }
  if (problems.length) {
    const onlyRoot = problems.length === 1 && process.getuid?.() !== 0;
    throw new Error(`BGP test bed prerequisites missing: ${problems.join('; ')}. ${onlyRoot ? 'Run the BGP tests as root (CI does).' : SETUP_HINT}`);
  }
}

function idOf(flag: '-u' | '-g', name: string): number {
  return Number(run('id', [flag, name]).trim());
}

/** Normalizes `192.0.2.10`, `192.0.2.10/32`, `2001:DB8::0:10/128` to `ADDR/LEN` (IPv6 in RFC 5952 form). */
function normalizePrefix(p: string): string {
  const [addr, len] = p.includes('/') ? (p.split('/') as [string, string]) : [p, undefined];
  const ip = ipaddr.parse(addr);
  const bits = len ?? (ip.kind() === 'ipv6' ? '128' : '32');
  return `${ip.kind() === 'ipv6' ? (ip as ipaddr.IPv6).toRFC5952String() : ip.toString()}/${bits}`;
}

const FRR_DAEMONS_NODE = ['zebra', 'bgpd', 'bfdd', 'staticd'] as const;
const FRR_DAEMONS_ROUTER = ['zebra', 'bgpd', 'bfdd'] as const;

// ---------------------------------------------------------------------------------------------

/**
 * Starts the test bed for `opts.node` against `opts.cluster` (see the file comment): creates the two
 * network namespaces and the veth, starts both FRRs, installs frr-k8s's CRDs (unless present),
 * creates the namespace and the Node (or labels an existing Node `kubernetes.io/hostname: <node>`),
 * starts the reloader and frr-k8s-controller, and resolves once frr-k8s's first reload (its empty
 * configuration) succeeded, i.e. the whole path works. Takes ~5 s (3 s of it is frr-k8s's debounce).
 *
 * Rejects (after stopping everything it started) when a prerequisite is missing (naming the setup
 * script), when a process dies, or after `startTimeoutMs` with the logs' tails.
 */
export async function startBGPTestBed(opts: BGPTestBedOptions): Promise<BGPTestBed> {
  checkBGPTestBedPrerequisites();
  onProcessExit(killAllSync);
  if (!reaped) {
    reaped = true;
    reapStale();
  }
  const n = ++counter;
  const namespace = opts.namespace ?? 'metallb-system';
  const keep = opts.keep ?? process.env.METALLB_TS_KEEP_BGP === '1';
  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  const nodeNetns = `${BGP_NAME_PREFIX}node-${process.pid}-${n}`;
  const routerNetns = `${BGP_NAME_PREFIX}rtr-${process.pid}-${n}`;

  const dir = mkdtempSync(join(tmpdir(), `${BGP_NAME_PREFIX}${process.pid}-${n}-`));
  if (/^\/(?:var\/)?run(?:\/|$)/.test(dir)) throw new Error(`scratch directory ${dir} is under /run, which the reloader's mount namespace hides: set TMPDIR elsewhere`);
  chmodSync(dir, 0o755); // the daemons run as user frr and must reach their files
  const bed: LiveBed = { procs: [], netns: [], dir, keep };
  live.add(bed);

  const frrUid = idOf('-u', 'frr');
  const frrGid = idOf('-g', 'frr');
  const logs = join(dir, 'logs');
  const reloaderDir = join(dir, 'reloader');
  const sideDir = (side: 'node' | 'router', sub: 'etc' | 'run'): string => join(dir, side, sub);
  for (const d of [logs, reloaderDir, sideDir('node', 'etc'), sideDir('node', 'run'), sideDir('router', 'etc'), sideDir('router', 'run'), join(dir, 'frrk8s-etc')]) {
    mkdirSync(d, { recursive: true, mode: 0o755 });
  }
  for (const side of ['node', 'router'] as const) {
    chmodSync(join(dir, side), 0o755);
    for (const sub of ['etc', 'run'] as const) chownSync(sideDir(side, sub), frrUid, frrGid);
  }

  const childEnv = { ...process.env, [OWNER_ENV]: String(process.pid), KUBECONFIG: '' };
  const start = (name: string, cmd: string, args: string[], extraEnv: Record<string, string> = {}): Proc => {
    const log = join(logs, `${name}.log`);
    const fd = openSync(log, 'a');
    // cwd '/': the reloader's private mount namespace puts a tmpfs over /tmp, which would hide a
    // working directory below /tmp (a clone in /tmp: pyenv's python3 shim then refuses to start).
    const proc = spawn(cmd, args, { stdio: ['ignore', fd, fd], detached: true, cwd: '/', env: { ...childEnv, ...extraEnv } });
    closeSync(fd);
    proc.unref();
    proc.once('error', () => {
      /* seen as an exit */
    });
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    const p = { name, proc, log, exited };
    bed.procs.push(p);
    return p;
  };

  const logTail = (lines = 40): string => bed.procs.map((p) => `--- ${p.name} (${p.log})${alive(p.proc) ? '' : ` exited ${p.proc.exitCode ?? p.proc.signalCode}`} ---\n${tail(p.log, lines)}`).join('\n');

  const vtysh = (side: 'node' | 'router', commands: string[]): string =>
    run('vtysh', ['--config_dir', sideDir(side, 'etc'), '--vty_socket', sideDir(side, 'run'), ...commands.flatMap((c) => ['-c', c])], `vtysh (${side}) ${commands.join('; ')}`);

  const renderedConfig = (): string => {
    try {
      return readFileSync(join(reloaderDir, 'frr.conf'), 'utf8');
    } catch {
      return '';
    }
  };
  const lastReload = (): { time: number; result: string } | null => {
    let s: string;
    try {
      s = readFileSync(join(reloaderDir, '.status'), 'utf8');
    } catch {
      return null;
    }
    const [time, result] = s.trim().split(/\s+/);
    return time && result ? { time: Number(time), result } : null;
  };
  const reloadCount = (): number => {
    try {
      return (readFileSync(join(logs, 'reloader.log'), 'utf8').match(/^(FRR reloaded successfully|Failed to fully apply|Syntax error spotted)/gm) ?? []).length;
    } catch {
      return 0;
    }
  };

  const routerRoutes = (): RouterRoute[] => {
    const out: RouterRoute[] = [];
    for (const fam of ['-4', '-6'] as const) {
      const json = run('ip', ['-n', routerNetns, '-j', fam, 'route', 'show', 'proto', 'bgp']).trim();
      const rows = (json ? JSON.parse(json) : []) as Array<{ dst: string; gateway?: string; dev?: string; protocol?: string; metric?: number; nexthops?: Array<{ gateway?: string }> }>;
      for (const r of rows) {
        const route: RouterRoute = { family: fam === '-4' ? 'ipv4' : 'ipv6', prefix: normalizePrefix(r.dst), protocol: r.protocol ?? 'bgp' };
        if (r.gateway) route.gateway = r.gateway;
        if (r.nexthops) route.nexthops = r.nexthops.map((h) => h.gateway ?? '').filter(Boolean);
        if (r.dev) route.dev = r.dev;
        if (r.metric !== undefined) route.metric = r.metric;
        out.push(route);
      }
    }
    return out;
  };

  const routerBGP = (prefix: string): RouterBGPPath | null => {
    const p = normalizePrefix(prefix);
    const afi = p.includes(':') ? 'ipv6' : 'ipv4';
    const raw = JSON.parse(vtysh('router', [`show bgp ${afi} unicast ${p} json`]) || '{}') as {
      prefix?: string;
      paths?: Array<{
        community?: { string?: string };
        largeCommunity?: { string?: string };
        locPrf?: number;
        aspath?: { string?: string };
        nexthops?: Array<{ ip?: string }>;
        bestpath?: { overall?: boolean };
      }>;
    };
    const paths = raw.paths ?? [];
    if (paths.length === 0) return null;
    const best = paths.find((x) => x.bestpath?.overall) ?? paths[0]!;
    const words = (s: string | undefined): string[] => (s ? s.split(/\s+/).filter(Boolean) : []);
    const res: RouterBGPPath = {
      prefix: raw.prefix ?? p,
      communities: words(best.community?.string),
      largeCommunities: words(best.largeCommunity?.string),
      asPath: best.aspath?.string ?? '',
      nexthops: (best.nexthops ?? []).map((h) => h.ip ?? '').filter(Boolean),
      pathCount: paths.length,
      raw,
    };
    if (best.locPrf !== undefined) res.localPref = best.locPrf;
    return res;
  };

  const routerSessions = (): Record<string, string> => {
    const raw = JSON.parse(vtysh('router', ['show bgp neighbors json']) || '{}') as Record<string, { bgpState?: string }>;
    return Object.fromEntries(Object.entries(raw).map(([addr, v]) => [addr, v.bgpState ?? 'unknown']));
  };

  const diagnostics = (lines = 40): string => {
    const safe = (f: () => string): string => {
      try {
        return f();
      } catch (e) {
        return `(${(e as Error).message})`;
      }
    };
    let lastError = '';
    try {
      lastError = readFileSync(join(reloaderDir, 'last-error'), 'utf8').trim();
    } catch {
      /* none */
    }
    return [
      `--- router kernel routes (proto bgp) ---\n${safe(() => JSON.stringify(routerRoutes()))}`,
      `--- router: show bgp summary ---\n${safe(() => vtysh('router', ['show bgp summary']))}`,
      `--- frr.conf rendered by frr-k8s ---\n${renderedConfig() || '(none yet)'}`,
      `--- last reload: ${JSON.stringify(lastReload())}; last error: ${lastError || '(none)'} ---`,
      logTail(lines),
    ].join('\n');
  };

  const waitForRoute = async (prefix: string, o: { present?: boolean; timeoutMs?: number } = {}): Promise<RouterRoute | undefined> => {
    const want = normalizePrefix(prefix);
    const present = o.present ?? true;
    const end = Date.now() + (o.timeoutMs ?? 30_000);
    let lastErr = '';
    for (;;) {
      try {
        const r = routerRoutes().find((x) => x.prefix === want);
        if (present && r) return r;
        if (!present && !r) return undefined;
      } catch (e) {
        lastErr = (e as Error).message;
      }
      const dead = bed.procs.find((p) => !alive(p.proc));
      if (dead) throw new Error(`waiting for ${want} ${present ? 'at' : 'gone from'} the router: ${dead.name} exited (${dead.proc.exitCode ?? dead.proc.signalCode})\n${diagnostics()}`);
      if (Date.now() > end) {
        throw new Error(
          `timed out after ${o.timeoutMs ?? 30_000} ms waiting for ${want} ${present ? 'to reach' : 'to leave'} the router's kernel table${lastErr ? ` (last error: ${lastErr})` : ''}\n${diagnostics()}`,
        );
      }
      await sleep(200);
    }
  };

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    // frr-k8s first (it would signal a gone reloader), then the reloader, then both FRRs
    const order = ['frr-k8s', 'reloader'];
    const groups = [bed.procs.filter((p) => p.name === 'frr-k8s'), bed.procs.filter((p) => p.name === 'reloader'), bed.procs.filter((p) => !order.includes(p.name))];
    for (const group of groups) {
      await Promise.all(
        group.map(async (p) => {
          if (!alive(p.proc)) return;
          killGroup(p.proc, 'SIGTERM');
          const t = setTimeout(() => killGroup(p.proc, 'SIGKILL'), 5000);
          await p.exited;
          clearTimeout(t);
          killGroup(p.proc, 'SIGKILL'); // what the leader left in its group (the reloader's sleep, a reload in progress)
        }),
      );
    }
    for (const ns of bed.netns) deleteNetns(ns);
    live.delete(bed);
    if (!keep) removeDir(dir);
  };

  const waitUntil = async (what: string, probe: () => boolean): Promise<void> => {
    for (;;) {
      const dead = bed.procs.find((p) => !alive(p.proc));
      if (dead) throw new Error(`${what}: ${dead.name} exited (${dead.proc.exitCode ?? dead.proc.signalCode})`);
      if (probe()) return;
      if (Date.now() > deadline) throw new Error(`${what}: timed out`);
      await sleep(100);
    }
  };

  try {
    // --- network: two namespaces, one veth, IPv4 + IPv6 on both ends
    for (const ns of [nodeNetns, routerNetns]) {
      run('ip', ['netns', 'add', ns]);
      bed.netns.push(ns);
      run('ip', ['netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv6.conf.all.accept_dad=0', 'net.ipv6.conf.default.accept_dad=0']);
      run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    }
    run('ip', ['-n', nodeNetns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', routerNetns]);
    const L = BGP_LINK;
    for (const [ns, v4, v6] of [
      [nodeNetns, L.nodeIPv4, L.nodeIPv6],
      [routerNetns, L.routerIPv4, L.routerIPv6],
    ] as const) {
      run('ip', ['-n', ns, 'addr', 'add', `${v4}/${L.ipv4PrefixLength}`, 'dev', 'eth0']);
      run('ip', ['-n', ns, 'addr', 'add', `${v6}/${L.ipv6PrefixLength}`, 'dev', 'eth0', 'nodad']);
      run('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    }

    // --- configuration files
    const integrated = 'service integrated-vtysh-config\n';
    writeFileSync(join(sideDir('node', 'etc'), 'vtysh.conf'), integrated);
    writeFileSync(join(sideDir('router', 'etc'), 'vtysh.conf'), integrated);
    const base = (host: string): string => `hostname ${host}\nlog stdout informational\n`;
    // the node's daemons start empty: frr-k8s's first reload brings its whole configuration (hostname included)
    for (const d of FRR_DAEMONS_NODE) writeFileSync(join(sideDir('node', 'etc'), `${d}.conf`), 'log stdout informational\n');
    for (const d of FRR_DAEMONS_ROUTER) writeFileSync(join(sideDir('router', 'etc'), `${d}.conf`), base('router'));
    const neighborLines = (addr: string): string[] => [
      `neighbor ${addr} remote-as ${opts.nodeASN}`,
      `neighbor ${addr} timers connect 5`,
      ...(opts.routerPassword ? [`neighbor ${addr} password ${opts.routerPassword}`] : []),
      ...(opts.routerBFD ? [`neighbor ${addr} bfd`] : []),
    ];
    const routerBgpd = [
      base('router').trimEnd(),
      `router bgp ${opts.routerASN}`,
      ` bgp router-id ${L.routerIPv4}`,
      ' no bgp ebgp-requires-policy',
      ' no bgp default ipv4-unicast',
      ' no bgp network import-check',
      ...neighborLines(L.nodeIPv4).map((l) => ` ${l}`),
      ...neighborLines(L.nodeIPv6).map((l) => ` ${l}`),
      ...(opts.routerExtraBGPConfig ?? []).map((l) => ` ${l}`),
      ' address-family ipv4 unicast',
      `  neighbor ${L.nodeIPv4} activate`,
      ' exit-address-family',
      ' address-family ipv6 unicast',
      `  neighbor ${L.nodeIPv6} activate`,
      ' exit-address-family',
      'exit',
      '',
    ].join('\n');
    writeFileSync(join(sideDir('router', 'etc'), 'bgpd.conf'), routerBgpd);

    // --- FRR daemons, zebra first in each namespace
    const startDaemon = (side: 'node' | 'router', ns: string, d: string): Proc => {
      const run_ = sideDir(side, 'run');
      return start(`${side}-${d}`, 'ip', [
        'netns',
        'exec',
        ns,
        join(FRR_LIBEXEC, d),
        '-f',
        join(sideDir(side, 'etc'), `${d}.conf`),
        '-i',
        join(run_, `${d}.pid`),
        '-z',
        join(run_, 'zserv.api'),
        '--vty_socket',
        run_,
        '-P',
        '0',
        '--log',
        'stdout',
        ...(d === 'bfdd' ? ['--bfdctl', join(run_, 'bfdd.sock')] : []),
        ...(d === 'zebra' ? ['-s', '16777216'] : []),
      ]);
    };
    const vtyUp = (side: 'node' | 'router', d: string): boolean => existsSync(join(sideDir(side, 'run'), `${d}.vty`));
    for (const [side, ns, daemons] of [
      ['node', nodeNetns, FRR_DAEMONS_NODE],
      ['router', routerNetns, FRR_DAEMONS_ROUTER],
    ] as const) {
      startDaemon(side, ns, 'zebra');
      await waitUntil(`${side} zebra did not start`, () => vtyUp(side, 'zebra'));
      for (const d of daemons.slice(1)) startDaemon(side, ns, d);
    }
    for (const [side, daemons] of [
      ['node', FRR_DAEMONS_NODE],
      ['router', FRR_DAEMONS_ROUTER],
    ] as const) {
      for (const d of daemons) await waitUntil(`${side} ${d} did not start`, () => vtyUp(side, d));
    }

    // --- cluster: frr-k8s's CRDs, its namespace, the Node
    const kc = opts.cluster.kubeConfig;
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    let crdsPresent = true;
    try {
      await ext.readCustomResourceDefinition({ name: 'frrconfigurations.frrk8s.metallb.io' });
    } catch {
      crdsPresent = false;
    }
    if (!crdsPresent) await installCrds(kc, join(FRRK8S_DIR, 'crds'), deadline);
    const core = kc.makeApiClient(CoreV1Api);
    try {
      await core.createNamespace({ body: { metadata: { name: namespace } } });
    } catch (e) {
      if ((e as { code?: number }).code !== 409) throw e;
    }
    await ensureNode(core, opts.node);

    // --- the reloader in the node netns, with the scratch dirs on FRR's default paths
    const reloaderScript = [
      'set -e',
      'mount -t tmpfs -o mode=0755,size=16m mlbts-run /run',
      'mkdir -p /run/frr /run/frr_reloader',
      'mount --bind "$MLBTS_NODE_RUN" /run/frr',
      'mount --bind "$MLBTS_RELOADER_DIR" /run/frr_reloader',
      'mount --bind "$MLBTS_NODE_ETC" /etc/frr',
      'cp "$MLBTS_RELOADER_SCRIPT" /run/frr-reloader.sh',
      // the script keeps /tmp/current.conf: a private /tmp (this hides the scratch dir if under /tmp: all binds are done)
      'mount -t tmpfs -o mode=1777,size=16m mlbts-tmp /tmp',
      'export SHARED_VOLUME=/run/frr_reloader',
      'exec bash /run/frr-reloader.sh',
    ].join('\n');
    start('reloader', 'ip', ['netns', 'exec', nodeNetns, 'unshare', '-m', '--propagation', 'private', 'sh', '-c', reloaderScript], {
      MLBTS_NODE_RUN: sideDir('node', 'run'),
      MLBTS_NODE_ETC: sideDir('node', 'etc'),
      MLBTS_RELOADER_DIR: reloaderDir,
      MLBTS_RELOADER_SCRIPT: join(FRRK8S_DIR, 'frr-reloader.sh'),
    });
    await waitUntil('frr-k8s reloader did not write its pid file', () => existsSync(join(reloaderDir, 'reloader.pid')));

    // --- frr-k8s-controller in the host netns (it only talks to the loopback apiserver and writes files)
    const frrk8sScript = [
      'up="$MLBTS_FRRK8S_ETC/upper"; work="$MLBTS_FRRK8S_ETC/work"',
      'mkdir -p "$up" "$work"',
      'if mount -t overlay mlbts-etc -o "lowerdir=/etc,upperdir=$up,workdir=$work" /etc 2>/dev/null; then',
      '  mkdir -p /etc/frr_reloader && mount --bind "$MLBTS_RELOADER_DIR" /etc/frr_reloader',
      'else',
      '  echo "metallb-ts test bed: no overlayfs on /etc, frr-k8s cannot read the reloader status in /etc/frr_reloader" >&2',
      'fi',
      'exec "$@"',
    ].join('\n');
    start(
      'frr-k8s',
      'unshare',
      [
        '-m',
        '--propagation',
        'private',
        'sh',
        '-c',
        frrk8sScript,
        'sh',
        join(FRRK8S_DIR, 'frr-k8s-controller'),
        '--node-name',
        opts.node,
        '--namespace',
        namespace,
        '--metrics-bind-address',
        '0',
        '--health-probe-bind-address',
        '0',
        '--log-level',
        opts.frrk8sLogLevel ?? 'info',
        '--kubeconfig',
        opts.cluster.kubeconfigPath,
      ],
      {
        MLBTS_FRRK8S_ETC: join(dir, 'frrk8s-etc'),
        MLBTS_RELOADER_DIR: reloaderDir,
        FRR_CONFIG_FILE: join(reloaderDir, 'frr.conf'),
        FRR_RELOADER_PID_FILE: join(reloaderDir, 'reloader.pid'),
        ...(opts.frrk8sDebounceMs !== undefined ? { FRR_K8S_BGP_DEBOUNCE_TIMEOUT: String(opts.frrk8sDebounceMs) } : {}),
      },
    );
    // ready: frr-k8s rendered its first (empty) configuration and the reloader applied it
    await waitUntil("frr-k8s's first reload did not succeed", () => {
      const r = lastReload();
      if (r?.result === 'failure') throw new Error(`frr-k8s's first reload failed: ${readFileSync(join(reloaderDir, 'last-error'), 'utf8')}`);
      return r?.result === 'success';
    });
  } catch (e) {
    const msg = `BGP test bed failed to start: ${(e as Error).message}\n${diagnostics(30)}`;
    await stop();
    throw new Error(msg, { cause: e });
  }

  return {
    node: opts.node,
    namespace,
    nodeASN: opts.nodeASN,
    routerASN: opts.routerASN,
    nodeNetns,
    routerNetns,
    nodeIPv4: BGP_LINK.nodeIPv4,
    nodeIPv6: BGP_LINK.nodeIPv6,
    routerIPv4: BGP_LINK.routerIPv4,
    routerIPv6: BGP_LINK.routerIPv6,
    dir,
    routerRoutes,
    waitForRoute,
    routerBGP,
    routerSessions,
    routerVtysh: (...c: string[]) => vtysh('router', c),
    nodeVtysh: (...c: string[]) => vtysh('node', c),
    renderedConfig,
    lastReload,
    reloadCount,
    logTail,
    diagnostics,
    stop,
  };
}

/** Creates Node `name` labelled `kubernetes.io/hostname: name`, or adds that label to an existing one. */
async function ensureNode(core: CoreV1Api, name: string): Promise<void> {
  const label = 'kubernetes.io/hostname';
  try {
    await core.createNode({ body: { metadata: { name, labels: { [label]: name } } } });
    return;
  } catch (e) {
    if ((e as { code?: number }).code !== 409) throw e;
  }
  for (let attempt = 0; ; attempt++) {
    const node: V1Node = await core.readNode({ name });
    if (node.metadata?.labels?.[label] === name) return;
    node.metadata = { ...node.metadata, labels: { ...node.metadata?.labels, [label]: name } };
    try {
      await core.replaceNode({ name, body: node });
      return;
    } catch (e) {
      if ((e as { code?: number }).code !== 409 || attempt >= 5) throw e;
    }
  }
}
