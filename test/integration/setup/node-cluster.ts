// A Kubernetes cluster with real nodes for the end-to-end tests (test/integration/e2e): etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler, and per node a kubelet on its own
// containerd (Debian's 1.6) + runc, all built or installed by test/setup.d/60-real-node.sh.
// What a real node needs on these machines, and why: test/setup.d/60-real-node.sh and the comments below.
//
//   const c = await startNodeCluster({ nodes: 2, images: [metallbArchive] });
//   await c.kubectl(['apply', '-k', 'deploy']);
//   c.nodes[0].mac; await c.nodes[0].stop();     // the node "loses power"
//   await c.stop();                              // everything gone, also on a failed test
//
// Topology: network namespaces made here only, joined by a bridge in a "lan" namespace:
//
//   lan:     br0 ── cp ── client ── n1 ── n2 …   (veth pairs created inside the namespaces)
//   cp:      192.0.2.2  etcd (127.0.0.1), kube-apiserver on 0.0.0.0:443, kcm, scheduler;
//            10.96.0.1/32 on lo (the `kubernetes` Service's ClusterIP: no kube-proxy runs, so the
//            address itself is where the API server is), a route to each node's pod CIDR
//   client:  192.0.2.100, for arping and the neighbour table
//   nK:      192.0.2.(10+K) on eth0, 10.96.0.1 via 192.0.2.2; containerd + kubelet; CNI bridge
//            cni0 with host-local 10.244.K.0/24 (the controller pod); the speaker is hostNetwork
//
// Each node also has its own mount namespace (`unshare --mount --propagation slave`, held by a
// `sleep` process), where tmpfs hide and collect what kubelet, containerd 1.6 and libcni write to
// fixed paths whatever their configuration says: /var/lib/kubelet (device-plugins/kubelet.sock),
// /run/containerd (the shims' sockets, runc's state, FIFOs), /var/lib/cni (libcni's cache), /run/netns
// (the pods' network namespaces) and /var/log (/var/log/containers). Plain files are bind-mounted over
// the global sysctls kubelet sets (kernel.panic, vm.overcommit_memory, …), so the host keeps its own.
// Each kubelet has its own cgroupRoot (/mlbe2e-<id>-nK in every cgroup hierarchy), made here and
// removed afterwards. Two kubelets therefore never share a file, socket, cgroup or port.
//
// Everything runs as root (namespaces, mounts, cgroups): realNodeSkipReason() says what is missing.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, readdirSync, readlinkSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_BIN_DIR, REPO_ROOT } from './cluster.ts';
import { onProcessExit, sleep } from './wait.ts';

export { REPO_ROOT };

/** The pause image 60-real-node.sh writes (registry.k8s.io/pause:3.10, containerd's sandbox_image). */
export const PAUSE_ARCHIVE: string = join(REPO_ROOT, '.cache/real-node/pause-3.10.oci.tar');
/** The binaries a real-node cluster runs (build-apiserver.sh with WITH_NODE=1). */
export const NODE_BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet', 'kubectl'] as const;
/** The subnet of the lan namespace (inside the test's namespaces only). */
export const LAN_PREFIX = '192.0.2';
export const CP_IP = `${LAN_PREFIX}.2`;
export const CLIENT_IP = `${LAN_PREFIX}.100`;
/** The ClusterIP of the `kubernetes` Service, which in-cluster clients dial. */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';

/** The global sysctls kubelet's setupKernelTunables writes when they differ (pkg/kubelet/cm). */
const KUBELET_SYSCTLS = ['vm/overcommit_memory', 'vm/panic_on_oom', 'kernel/panic', 'kernel/panic_on_oops', 'kernel/keys/root_maxkeys', 'kernel/keys/root_maxbytes'];
/** Fixed paths kubelet, containerd 1.6 and libcni write to, whatever their configuration: a tmpfs each, per node. */
const PRIVATE_TMPFS = ['/var/lib/kubelet', '/run/containerd', '/var/lib/cni', '/run/netns', '/var/log'];

export interface NodeClusterOptions {
  /** number of nodes (default 2) */
  nodes?: number;
  /** where etcd, kube-apiserver, kubelet, … are (default .cache/k8s-bin, METALLB_TS_K8S_BIN) */
  binDir?: string;
  /** OCI archives imported into every node's containerd (namespace k8s.io) before its kubelet starts; the pause image is always imported */
  images?: string[];
  /** keep the work directory (logs, configs) after stop(); also METALLB_TS_KEEP_CLUSTER=1 */
  keep?: boolean;
  /** progress lines (default: none) */
  log?: (line: string) => void;
  /** the whole start-up, nodes Ready included (default 240 s) */
  startTimeoutMs?: number;
}

export interface RealNode {
  /** Node name: e2e-node-1, e2e-node-2, … */
  readonly name: string;
  /** the node's address on the lan (its InternalIP, and the hostNetwork pods' IP) */
  readonly ip: string;
  /** MAC of the node's eth0: what an ARP answer for an address it announces carries */
  readonly mac: string;
  /** its network namespace (/run/netns/<netns>) */
  readonly netns: string;
  /** 10.244.K.0/24 */
  readonly podCidr: string;
  /** kubelet's cgroupRoot */
  readonly cgroupRoot: string;
  /** kubelet's podLogsDir (on disk: readable after the node stopped): <namespace>_<pod>_<uid>/<container>/<n>.log */
  readonly podLogsDir: string;
  /** true once stop() ran */
  readonly stopped: boolean;
  /**
   * The node "loses power": SIGKILL to its kubelet, containerd, their shims and every container
   * process of its pods (its cgroupRoot), all at once. The network namespace stays (the interface
   * is up, nothing answers); the API still shows the node Ready until the node controller notices.
   * Resolves when no process of the node is left. Idempotent.
   */
  stop(): Promise<void>;
  /** the pids of the containers' processes (the cgroups under cgroupRoot) */
  containerPids(): number[];
  /**
   * SIGSTOP / SIGCONT to its kubelet: while paused, the node's pods keep running but nothing is
   * started, stopped or reported (a test holds a DaemonSet's replacement pod back this way).
   */
  pauseKubelet(): void;
  resumeKubelet(): void;
  /** last lines of its kubelet and containerd logs */
  logTail(lines?: number): string;
}

export interface NodeCluster {
  /** the work directory (logs: etcd.log, kube-apiserver.log, …, nK/kubelet.log, nK/containerd.log) */
  readonly dir: string;
  /** admin kubeconfig (system:masters) for https://192.0.2.2:443; usable from the cp and client namespaces */
  readonly kubeconfig: string;
  /** https://192.0.2.2:443 */
  readonly server: string;
  readonly nodes: RealNode[];
  /** the namespaces: lan (the bridge), cp (control plane), client */
  readonly netns: { lan: string; cp: string; client: string };
  /** the client's interface on the lan and its address */
  readonly client: { iface: 'eth0'; ip: string };
  /** how long each start-up step took (ms) */
  readonly timings: Record<string, number>;
  /** Runs `cmd args` in namespace `netns` (nsenter --net; the mount namespace stays the host's). */
  exec(netns: string, cmd: string, args: string[], opts?: ExecOptions): Promise<ExecResult>;
  /** kubectl with the admin kubeconfig, from the cp namespace; rejects on a non-zero exit */
  kubectl(args: string[], opts?: ExecOptions): Promise<string>;
  /** kubectl … -o json, parsed */
  kubectlJson<T = any>(args: string[], opts?: ExecOptions): Promise<T>;
  /** `bin/metallb-ts args` from the cp namespace (KUBECONFIG set); never rejects on an exit code */
  metallbTs(args: string[], opts?: ExecOptions): Promise<ExecResult>;
  /** the last lines of every log, labelled, for failure messages */
  logTail(lines?: number): string;
  /** Stops everything, deletes the namespaces, cgroups and (unless kept) the work directory. Idempotent. */
  stop(): Promise<void>;
}

export interface ExecOptions {
  input?: string;
  timeoutMs?: number;
  env?: Record<string, string>;
}
export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Why the real-node tests cannot run here, or null. */
export function realNodeSkipReason(binDir = DEFAULT_BIN_DIR): string | null {
  if (process.platform !== 'linux') return 'real nodes need Linux';
  if (process.getuid?.() !== 0) return 'real nodes need root (network and mount namespaces, cgroups)';
  const missingBins = NODE_BINARIES.filter((b) => !existsSync(join(binDir, b)));
  if (missingBins.length) return `${missingBins.join(', ')} not built in ${binDir}: run bash test/setup.d/60-real-node.sh (needs Go)`;
  if (!existsSync(PAUSE_ARCHIVE)) return `no pause image ${PAUSE_ARCHIVE}: run bash test/setup.d/60-real-node.sh`;
  const tools: [string, string][] = [
    ['containerd', 'containerd'],
    ['ctr', 'containerd'],
    ['runc', 'runc'],
    ['containerd-shim-runc-v2', 'containerd'],
    ['unshare', 'util-linux'],
    ['nsenter', 'util-linux'],
    ['ip', 'iproute2'],
    ['arping', 'iputils-arping'],
    ['openssl', 'openssl'],
  ];
  const missing = tools.filter(([t]) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0);
  if (missing.length) return `${missing.map(([t]) => t).join(', ')} not installed (apt-get install ${[...new Set(missing.map(([, p]) => p))].join(' ')}; test/setup.d/60-real-node.sh does)`;
  for (const p of ['bridge', 'host-local', 'loopback']) {
    if (!existsSync(`/usr/lib/cni/${p}`)) return `/usr/lib/cni/${p} missing (apt-get install containernetworking-plugins)`;
  }
  if (!readFileSync('/proc/filesystems', 'utf8').includes('overlay')) return "no overlayfs (containerd's snapshotter)";
  return null;
}

/** The names of a run's namespaces and cgroups derive from its work directory /tmp/mlbe2e-XXXXXX. */
function runPrefix(dir: string): string {
  return `mlbe2e-${dir
    .slice(-6)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, 'x')}`;
}

/** The work directories of the runs whose owner process is alive (this one's included). */
function liveRuns(): string[] {
  let dirs: string[] = [];
  try {
    dirs = readdirSync(tmpdir())
      .filter((d) => /^mlbe2e-[A-Za-z0-9]{6}$/.test(d))
      .map((d) => join(tmpdir(), d));
  } catch {
    return [];
  }
  return dirs.filter((d) => {
    try {
      return alive(Number(readFileSync(join(d, 'owner'), 'utf8')));
    } catch {
      return false;
    }
  });
}

/**
 * The empty mount points a run made on the host (/var/lib/kubelet, /var/lib/cni) go with it, but
 * not while another run lives: removing a directory another mount namespace mounts on would
 * detach that mount there.
 */
function removeHostDirs(dirs: string[], self: string | null): void {
  if (liveRuns().some((d) => d !== self)) return;
  for (const d of dirs)
    if (PRIVATE_TMPFS.includes(d)) {
      try {
        rmdirSync(d);
      } catch {
        /* not empty */
      }
    }
}

/**
 * What a run killed without its exit hook (SIGKILL, a CI timeout) left behind: its processes (any
 * whose command line names its work directory, the mount-namespace holders in its node namespaces,
 * the containers in its cgroups), cgroups, network namespaces and work directory (unless it was
 * kept). A run is stale when the pid in its `owner` file is gone. Returns what it did, one line each.
 */
export function reapStaleRuns(): string[] {
  const done: string[] = [];
  let dirs: string[] = [];
  try {
    dirs = readdirSync(tmpdir())
      .filter((d) => /^mlbe2e-[A-Za-z0-9]{6}$/.test(d))
      .map((d) => join(tmpdir(), d));
  } catch {
    return done;
  }
  const netns = existsSync('/run/netns') ? readdirSync('/run/netns') : [];
  for (const dir of dirs) {
    let owner = NaN;
    try {
      owner = Number(readFileSync(join(dir, 'owner'), 'utf8'));
    } catch {
      continue;
    }
    if (!Number.isInteger(owner) || alive(owner)) continue;
    const prefix = runPrefix(dir);
    const mine = netns.filter((n) => n.startsWith(`${prefix}-`));
    const nsInodes = new Set(
      mine.map((n) => {
        try {
          return `net:[${statSync(`/run/netns/${n}`).ino}]`;
        } catch {
          return '';
        }
      }),
    );
    const pids = new Set<number>();
    for (const pid of allPids()) {
      if (pid === process.pid) continue;
      const cl = cmdline(pid);
      if (cl.includes(dir) || (cl.startsWith('sleep infinity') && nsInodes.has(readLinkOr(`/proc/${pid}/ns/net`) ?? ''))) pids.add(pid);
    }
    const roots = cgroupMounts().flatMap((m) => {
      try {
        return readdirSync(m)
          .filter((d) => d.startsWith(`${prefix}-`))
          .map((d) => join(m, d));
      } catch {
        return [];
      }
    });
    for (const r of roots) {
      for (const d of dirsDeepestFirst(r)) {
        try {
          for (const l of readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n')) if (l) pids.add(Number(l));
        } catch {
          /* gone */
        }
      }
    }
    for (const pid of pids) killPid(pid);
    for (let i = 0; i < 50 && [...pids].some(alive); i++) spawnSync('sleep', ['0.1']);
    for (const r of roots)
      for (const d of dirsDeepestFirst(r)) {
        try {
          rmdirSync(d);
        } catch {
          /* busy: left */
        }
      }
    for (const n of mine) spawnSync('ip', ['netns', 'del', n]);
    try {
      removeHostDirs(readFileSync(join(dir, 'host-dirs'), 'utf8').split('\n'), null);
    } catch {
      /* none made */
    }
    const kept = existsSync(join(dir, 'keep'));
    if (!kept) rmSync(dir, { recursive: true, force: true });
    if (pids.size || roots.length || mine.length || !kept) {
      done.push(`reaped a stale run (${dir}, owner ${owner} gone): ${pids.size} processes, ${roots.length} cgroups, ${mine.length} network namespaces${kept ? '; its kept directory stays' : ''}`);
    }
  }
  return done;
}

// ---------------------------------------------------------------------------------------------
// small process helpers

function sh(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

function run(cmd: string, args: string[], opts: ExecOptions = {}): Promise<ExecResult> {
  const t0 = Date.now();
  return new Promise((res) => {
    const p = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } });
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    p.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${opts.timeoutMs} ms)`;
      p.kill('SIGKILL');
    }, opts.timeoutMs ?? 60_000);
    p.on('error', (e) => {
      stderr += e.message;
    });
    p.on('close', (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr, ms: Date.now() - t0 });
    });
    p.stdin.end(opts.input ?? '');
  });
}

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return '(no log)';
  const all = readFileSync(file, 'utf8').split('\n');
  return all.slice(Math.max(0, all.length - lines - 1)).join('\n');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function killPid(pid: number, sig: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* gone */
  }
}

function allPids(): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
}

function readLinkOr(p: string): string | null {
  try {
    return readlinkSync(p);
  } catch {
    return null;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** The mount points of the v1 cgroup hierarchies and of cgroup2 (hybrid machines have both). */
function cgroupMounts(): string[] {
  const out: string[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [pre, post] = line.split(' - ');
    if (!pre || !post) continue;
    const fstype = post.split(' ')[0];
    if (fstype === 'cgroup' || fstype === 'cgroup2') out.push(pre.split(' ')[4]!);
  }
  return [...new Set(out)];
}

/** Every directory under `root`, deepest first. */
function dirsDeepestFirst(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let entries: string[] = [];
    try {
      entries = readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const e of entries) walk(join(d, e));
    out.push(d);
  };
  walk(root);
  return out;
}

// ---------------------------------------------------------------------------------------------
// PKI (openssl, as cluster.ts)

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (r.error) throw new Error(`openssl not runnable (${r.error.message})`);
  if (r.status !== 0) throw new Error(`openssl ${args.slice(0, 2).join(' ')} failed: ${r.stderr.trim()}`);
}

function makePki(pki: string, nodeNames: string[], nodeIps: string[]): void {
  mkdirSync(pki, { recursive: true });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    [
      'req',
      '-x509',
      ...ec,
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=metallb-ts-e2e-ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    ],
    pki,
  );
  let serial = Date.now() % 1e9;
  const leaf = (name: string, subj: string, ext: string): void => {
    writeFileSync(join(pki, `${name}.ext`), ext);
    openssl(['req', '-new', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subj], pki);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', String(serial++), '-days', '2', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`], pki);
  };
  const client = 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n';
  leaf(
    'apiserver',
    '/CN=kube-apiserver',
    'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n'
      + `subjectAltName=IP:${CP_IP},IP:${KUBERNETES_SERVICE_IP},IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n`,
  );
  leaf('admin', '/O=system:masters/CN=metallb-ts-e2e-admin', client);
  nodeNames.forEach((n, i) => {
    leaf(`node-${i + 1}`, `/O=system:nodes/CN=system:node:${n}`, client);
    // the kubelet's serving certificate (the API server's logs/exec and its pod proxy do not verify it)
    leaf(`kubelet-${i + 1}`, `/CN=${n}`, `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:${nodeIps[i]},DNS:${n}\n`);
  });
  const sa = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  writeFileSync(join(pki, 'sa.key'), sa.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(join(pki, 'sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));
}

function kubeconfigYaml(server: string, pki: string, user: string, certName: string): string {
  const b64 = (f: string): string => readFileSync(join(pki, f)).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: e2e',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64('ca.crt')}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    client-certificate-data: ${b64(`${certName}.crt`)}`,
    `    client-key-data: ${b64(`${certName}.key`)}`,
    'contexts:',
    '- name: e2e',
    '  context:',
    '    cluster: e2e',
    `    user: ${user}`,
    'current-context: e2e',
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// bookkeeping for the process-exit hook: whatever a test forgot (or a crash left) is torn down

interface Teardown {
  sync(): void;
}
const live = new Set<Teardown>();
onProcessExit(() => {
  for (const t of live) {
    try {
      t.sync();
    } catch {
      /* best effort */
    }
  }
  live.clear();
});

// ---------------------------------------------------------------------------------------------

/**
 * Starts the cluster and waits until every node is Ready: 17–30 s on 2 busy cores (kube-apiserver's
 * start, then the image imports). Stale runs are reaped first. On failure everything started is
 * torn down and the error carries the logs' tails.
 */
export async function startNodeCluster(opts: NodeClusterOptions = {}): Promise<NodeCluster> {
  const skip = realNodeSkipReason(opts.binDir);
  if (skip) throw new Error(skip);
  const binDir = opts.binDir ?? DEFAULT_BIN_DIR;
  const bin = (b: string): string => join(binDir, b);
  const nNodes = opts.nodes ?? 2;
  const log = opts.log ?? (() => {});
  const keep = opts.keep ?? process.env.METALLB_TS_KEEP_CLUSTER === '1';
  const deadline = Date.now() + (opts.startTimeoutMs ?? 240_000);
  const timings: Record<string, number> = {};
  const t0 = Date.now();
  let tStep = t0;
  const step = (name: string): void => {
    const now = Date.now();
    timings[name] = now - tStep;
    tStep = now;
    log(`${name}: ${((now - t0) / 1000).toFixed(1)} s`);
  };

  for (const line of reapStaleRuns()) log(line);
  const dir = mkdtempSync(join(tmpdir(), 'mlbe2e-'));
  writeFileSync(join(dir, 'owner'), `${process.pid}\n`);
  if (keep) writeFileSync(join(dir, 'keep'), '');
  const prefix = runPrefix(dir);
  const ns = { lan: `${prefix}-lan`, cp: `${prefix}-cp`, client: `${prefix}-client` };
  const server = `https://${CP_IP}:443`;
  const pki = join(dir, 'pki');
  const kubeconfig = join(dir, 'admin.kubeconfig');

  // --- what there is to tear down, filled as things are made
  const netnsMade: string[] = [];
  const cgroupDirsMade: string[] = [];
  const hostDirsMade: string[] = [];
  const cpProcs: { name: string; proc: ChildProcess }[] = [];
  const nodeState: NodeInternal[] = [];
  let stopped = false;

  const teardownTimes: Record<string, number> = {};
  const teardownSync = (): void => {
    let t = Date.now();
    const lap = (what: string): void => {
      teardownTimes[what] = Date.now() - t;
      t = Date.now();
    };
    for (const n of nodeState) n.killAllSync();
    for (const p of cpProcs) if (p.proc.pid && alive(p.proc.pid)) killPid(p.proc.pid);
    for (const n of nodeState) n.killHolderSync();
    lap('processes');
    removeCgroups();
    lap('cgroups');
    for (const n of [...netnsMade].reverse()) spawnSync('ip', ['netns', 'del', n]);
    netnsMade.length = 0;
    lap('netns');
    removeHostDirs(hostDirsMade, dir);
    hostDirsMade.length = 0;
    if (!keep) rmSync(dir, { recursive: true, force: true });
    lap('files');
  };
  const removeCgroups = (): void => {
    for (const root of cgroupDirsMade) {
      for (let attempt = 0; attempt < 50; attempt++) {
        let left = 0;
        for (const d of dirsDeepestFirst(root)) {
          try {
            rmdirSync(d);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'ENOENT') left++;
          }
        }
        if (left === 0) break;
        // tasks leave a cgroup a moment after they die
        spawnSync('sleep', ['0.1']);
      }
    }
    cgroupDirsMade.length = 0;
  };
  const entry: Teardown = { sync: teardownSync };
  live.add(entry);

  const execIn = (netns: string, cmd: string, args: string[], o?: ExecOptions): Promise<ExecResult> => run('nsenter', [`--net=/run/netns/${netns}`, '--', cmd, ...args], o);
  const kubectl = async (args: string[], o?: ExecOptions): Promise<string> => {
    const r = await execIn(ns.cp, bin('kubectl'), [`--kubeconfig=${kubeconfig}`, ...args], o);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: exit ${r.code}: ${r.stderr.trim()}`);
    return r.stdout;
  };
  const kubectlJson = async <T>(args: string[], o?: ExecOptions): Promise<T> => JSON.parse(await kubectl([...args, '-o', 'json'], o)) as T;

  const startDaemon = (name: string, logFile: string, argv: string[]): ChildProcess => {
    const fd = openSync(logFile, 'a');
    const proc = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', fd, fd], env: { ...process.env, KUBECONFIG: '' } });
    closeSync(fd);
    proc.unref();
    proc.on('error', () => {
      /* seen as an exit */
    });
    log(`started ${name} (pid ${proc.pid})`);
    return proc;
  };
  const died = (p: ChildProcess): boolean => p.exitCode !== null || p.signalCode !== null;
  const waitUntil = async (what: string, probe: () => Promise<boolean>, check: () => string | null = () => null): Promise<void> => {
    let last = '';
    for (;;) {
      const d = check();
      if (d) throw new Error(`${what}: ${d}`);
      try {
        if (await probe()) return;
      } catch (e) {
        last = (e as Error).message;
      }
      if (Date.now() > deadline) throw new Error(`${what}: timed out${last ? ` (last error: ${last.slice(0, 500)})` : ''}`);
      await sleep(250);
    }
  };

  const logFiles = (): string[] => [...['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'].map((n) => join(dir, `${n}.log`)), ...nodeState.flatMap((n) => [n.containerdLog, n.kubeletLog])];
  const logTail = (lines = 40): string =>
    logFiles()
      .map((f) => `--- ${f} ---\n${tail(f, lines)}`)
      .join('\n');

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    const t = Date.now();
    // the nodes first (every process at once: a throwaway cluster needs no graceful shutdown),
    // then the control plane (SIGTERM, SIGKILL after 2 s: kube-apiserver drains for long otherwise)
    for (const n of nodeState) await n.stop().catch((e: Error) => log(e.message));
    const tNodes = Date.now();
    // (polled, not awaited on 'exit': the children are unref'd, an 'exit' alone keeps no process alive)
    for (const p of cpProcs) if (!died(p.proc)) p.proc.kill('SIGTERM');
    for (let waited = 0; cpProcs.some((p) => !died(p.proc) && alive(p.proc.pid!)); waited += 50) {
      if (waited === 2_000) for (const p of cpProcs) if (!died(p.proc)) p.proc.kill('SIGKILL');
      await sleep(50);
    }
    const tCp = Date.now();
    teardownSync();
    live.delete(entry);
    log(
      `stopped: nodes ${tNodes - t} ms, control plane ${tCp - tNodes} ms, then ${Object.entries(teardownTimes)
        .map(([k, v]) => `${k} ${v} ms`)
        .join(', ')}`,
    );
  };

  try {
    // --- network
    const nodeNames = Array.from({ length: nNodes }, (_, i) => `e2e-node-${i + 1}`);
    const nodeIps = nodeNames.map((_, i) => `${LAN_PREFIX}.${11 + i}`);
    const nodeNetns = nodeNames.map((_, i) => `${prefix}-n${i + 1}`);
    for (const n of [ns.lan, ns.cp, ns.client, ...nodeNetns]) {
      sh('ip', ['netns', 'add', n]);
      netnsMade.push(n);
      sh('ip', ['-n', n, 'link', 'set', 'lo', 'up']);
    }
    sh('ip', ['-n', ns.lan, 'link', 'add', 'br0', 'type', 'bridge']);
    sh('ip', ['-n', ns.lan, 'link', 'set', 'br0', 'up']);
    const attach = (member: string, port: string, ip: string): void => {
      sh('ip', ['-n', ns.lan, 'link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', member]);
      sh('ip', ['-n', ns.lan, 'link', 'set', port, 'master', 'br0', 'up']);
      sh('ip', ['-n', member, 'addr', 'add', `${ip}/24`, 'dev', 'eth0']);
      sh('ip', ['-n', member, 'link', 'set', 'eth0', 'up']);
    };
    attach(ns.cp, 'cp', CP_IP);
    attach(ns.client, 'client', CLIENT_IP);
    sh('ip', ['-n', ns.cp, 'addr', 'add', `${KUBERNETES_SERVICE_IP}/32`, 'dev', 'lo']);
    nodeNames.forEach((_, i) => {
      attach(nodeNetns[i]!, `n${i + 1}`, nodeIps[i]!);
      sh('ip', ['-n', nodeNetns[i]!, 'route', 'add', 'default', 'via', CP_IP]);
      // the controller pod (on cni0) reaches the API server through the node: routed, no NAT
      sh('ip', ['-n', ns.cp, 'route', 'add', `10.244.${i + 1}.0/24`, 'via', nodeIps[i]!]);
    });
    step('network');

    // --- PKI, kubeconfigs
    makePki(pki, nodeNames, nodeIps);
    writeFileSync(kubeconfig, kubeconfigYaml(server, pki, 'admin', 'admin'), { mode: 0o600 });
    step('pki');

    // --- nodes' mount namespaces and containerd, then the image imports (they overlap the control plane's start)
    for (const d of PRIVATE_TMPFS) {
      if (!existsSync(d)) {
        mkdirSync(d, { recursive: true });
        hostDirsMade.push(d);
      }
    }
    // for reapStaleRuns, should this process die without its exit hook
    writeFileSync(join(dir, 'host-dirs'), hostDirsMade.join('\n'));
    const mounts = cgroupMounts();
    for (let i = 0; i < nNodes; i++) {
      const node = new NodeInternal({
        index: i + 1,
        name: nodeNames[i]!,
        ip: nodeIps[i]!,
        netns: nodeNetns[i]!,
        dir: join(dir, `n${i + 1}`),
        cgroupRoot: `/${prefix}-n${i + 1}`,
        cgroupMounts: mounts,
        server,
        pki,
        bin,
        startDaemon,
        log,
      });
      nodeState.push(node);
      cgroupDirsMade.push(...node.makeCgroupRoot());
      await node.startHolder();
      node.startContainerd();
    }
    for (const n of nodeState)
      await waitUntil(
        `containerd on ${n.name}`,
        async () => existsSync(n.sock),
        () => n.diedContainerd(),
      );
    step('containerd');
    const images = [PAUSE_ARCHIVE, ...(opts.images ?? [])];
    const imports = Promise.all(nodeState.map((n) => n.importImages(images)));

    // --- control plane in the cp namespace
    const cpIn = (b: string): string[] => ['nsenter', `--net=/run/netns/${ns.cp}`, '--', bin(b)];
    const etcd = startDaemon('etcd', join(dir, 'etcd.log'), [
      ...cpIn('etcd'),
      '--name=e2e',
      `--data-dir=${join(dir, 'etcd-data')}`,
      '--listen-client-urls=http://127.0.0.1:2379',
      '--advertise-client-urls=http://127.0.0.1:2379',
      '--listen-peer-urls=http://127.0.0.1:2380',
      '--initial-advertise-peer-urls=http://127.0.0.1:2380',
      '--initial-cluster=e2e=http://127.0.0.1:2380',
      '--initial-cluster-state=new',
      '--unsafe-no-fsync',
      '--log-level=warn',
    ]);
    cpProcs.push({ name: 'etcd', proc: etcd });
    const api = startDaemon('kube-apiserver', join(dir, 'kube-apiserver.log'), [
      ...cpIn('kube-apiserver'),
      '--etcd-servers=http://127.0.0.1:2379',
      '--bind-address=0.0.0.0',
      '--secure-port=443',
      `--advertise-address=${CP_IP}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${join(pki, 'apiserver.crt')}`,
      `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
      `--client-ca-file=${join(pki, 'ca.crt')}`,
      `--kubelet-client-certificate=${join(pki, 'admin.crt')}`,
      `--kubelet-client-key=${join(pki, 'admin.key')}`,
      `--service-account-issuer=${server}`,
      `--service-account-key-file=${join(pki, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      '--service-cluster-ip-range=10.96.0.0/16',
      // no kube-proxy: webhooks and aggregated APIs are called on their endpoints, not the ClusterIP
      '--enable-aggregator-routing=true',
      // kubectl logs/exec: the nodes' names resolve nowhere (no DNS), their InternalIP does
      '--kubelet-preferred-address-types=InternalIP',
      '--allow-privileged=true',
      '--profiling=false',
      '--v=1',
    ]);
    cpProcs.push({ name: 'kube-apiserver', proc: api });
    const cpDied = (): string | null => {
      const d = cpProcs.find((p) => died(p.proc));
      return d ? `${d.name} exited (${d.proc.exitCode ?? d.proc.signalCode})` : null;
    };
    await waitUntil('kube-apiserver ready', async () => (await kubectl(['get', '--raw', '/readyz'], { timeoutMs: 10_000 })).trim() === 'ok', cpDied);
    step('apiserver');
    const ctlArgs = [`--kubeconfig=${kubeconfig}`, `--authentication-kubeconfig=${kubeconfig}`, `--authorization-kubeconfig=${kubeconfig}`, '--leader-elect=false', '--v=1'];
    cpProcs.push({
      name: 'kube-controller-manager',
      proc: startDaemon('kube-controller-manager', join(dir, 'kube-controller-manager.log'), [
        ...cpIn('kube-controller-manager'),
        ...ctlArgs,
        `--root-ca-file=${join(pki, 'ca.crt')}`,
        `--service-account-private-key-file=${join(pki, 'sa.key')}`,
        '--use-service-account-credentials=true',
        '--bind-address=127.0.0.1',
        `--cert-dir=${join(dir, 'kcm-certs')}`,
      ]),
    });
    cpProcs.push({
      name: 'kube-scheduler',
      proc: startDaemon('kube-scheduler', join(dir, 'kube-scheduler.log'), [...cpIn('kube-scheduler'), ...ctlArgs, '--bind-address=127.0.0.1', `--cert-dir=${join(dir, 'scheduler-certs')}`]),
    });

    await imports;
    step('images');
    for (const n of nodeState) n.startKubelet();
    const nodesDied = (): string | null => cpDied() ?? nodeState.map((n) => n.diedContainerd() ?? n.diedKubelet()).find((d) => d) ?? null;
    await waitUntil(
      'nodes Ready',
      async () => {
        const list = await kubectlJson<{ items: any[] }>(['get', 'nodes'], { timeoutMs: 10_000 });
        const ready = new Set(list.items.filter((n) => n.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True')).map((n) => n.metadata.name));
        return nodeNames.every((n) => ready.has(n));
      },
      nodesDied,
    );
    // the default ServiceAccount, which pods need, comes from the controller-manager
    await waitUntil(
      'default ServiceAccount',
      async () => {
        await kubectl(['get', 'serviceaccount', 'default', '-n', 'default'], { timeoutMs: 10_000 });
        return true;
      },
      nodesDied,
    );
    step('nodes Ready');
    timings.total = Date.now() - t0;

    return {
      dir,
      kubeconfig,
      server,
      nodes: nodeState,
      netns: ns,
      client: { iface: 'eth0', ip: CLIENT_IP },
      timings,
      exec: execIn,
      kubectl,
      kubectlJson: kubectlJson as NodeCluster['kubectlJson'],
      metallbTs: (args, o) => execIn(ns.cp, join(REPO_ROOT, 'bin/metallb-ts'), args, { ...o, env: { ...o?.env, KUBECONFIG: kubeconfig } }),
      logTail,
      stop,
    };
  } catch (e) {
    const logs = logTail(30);
    await stop().catch(() => {
      teardownSync();
    });
    throw new Error(`real-node cluster failed to start: ${(e as Error).message}\n${logs}`, { cause: e });
  }
}

// ---------------------------------------------------------------------------------------------
// one node: its mount namespace, containerd, kubelet

interface NodeInit {
  index: number;
  name: string;
  ip: string;
  netns: string;
  dir: string;
  cgroupRoot: string;
  cgroupMounts: string[];
  server: string;
  pki: string;
  bin: (b: string) => string;
  startDaemon: (name: string, logFile: string, argv: string[]) => ChildProcess;
  log: (line: string) => void;
}

class NodeInternal implements RealNode {
  readonly name: string;
  readonly ip: string;
  readonly netns: string;
  readonly podCidr: string;
  readonly cgroupRoot: string;
  readonly podLogsDir: string;
  readonly sock: string;
  readonly containerdLog: string;
  readonly kubeletLog: string;
  stopped = false;
  private holder: ChildProcess | null = null;
  private containerd: ChildProcess | null = null;
  private kubelet: ChildProcess | null = null;
  private mntNs = '';
  private readonly o: NodeInit;

  constructor(o: NodeInit) {
    this.o = o;
    this.name = o.name;
    this.ip = o.ip;
    this.netns = o.netns;
    this.podCidr = `10.244.${o.index}.0/24`;
    this.cgroupRoot = o.cgroupRoot;
    mkdirSync(o.dir, { recursive: true });
    this.podLogsDir = join(o.dir, 'pod-logs');
    this.sock = join(o.dir, 'containerd.sock');
    this.containerdLog = join(o.dir, 'containerd.log');
    this.kubeletLog = join(o.dir, 'kubelet.log');
  }

  get mac(): string {
    return sh('ip', ['-n', this.netns, '-j', 'link', 'show', 'eth0']).match(/"address":"([0-9a-f:]{17})"/)![1]!;
  }

  /** kubelet requires its cgroupRoot to exist in every hierarchy; cpuset needs cpus and mems before tasks can join. */
  makeCgroupRoot(): string[] {
    const made: string[] = [];
    for (const m of this.o.cgroupMounts) {
      const d = join(m, this.cgroupRoot);
      try {
        mkdirSync(d);
        made.push(d);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        if (existsSync(join(d, f)) && readFileSync(join(d, f), 'utf8').trim() === '') writeFileSync(join(d, f), readFileSync(join(m, f), 'utf8'));
      }
    }
    return made;
  }

  /** The private mount namespace: tmpfs on the fixed paths, fake sysctl files; held by a sleep. */
  async startHolder(): Promise<void> {
    const fake = join(this.o.dir, 'sysctl');
    mkdirSync(fake, { recursive: true });
    const lines = ['set -e'];
    for (const d of PRIVATE_TMPFS) lines.push(`mount -t tmpfs -o mode=0755 e2e-${this.name} ${d}`);
    for (const s of KUBELET_SYSCTLS) {
      const host = `/proc/sys/${s}`;
      if (!existsSync(host)) continue;
      const f = join(fake, s.replace(/\//g, '.'));
      writeFileSync(f, readFileSync(host, 'utf8'));
      lines.push(`mount --bind ${f} ${host}`);
    }
    lines.push('echo ready', 'exec sleep infinity');
    const p = spawn('nsenter', [`--net=/run/netns/${this.netns}`, '--', 'unshare', '--mount', '--propagation', 'slave', '--', 'sh', '-c', lines.join('\n')], { stdio: ['ignore', 'pipe', 'pipe'] });
    p.unref();
    this.holder = p;
    let out = '';
    p.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    p.stderr!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    const t0 = Date.now();
    while (!out.includes('ready')) {
      if (p.exitCode !== null || Date.now() - t0 > 15_000) throw new Error(`mount namespace of ${this.name}: ${out.trim() || 'no answer'}`);
      await sleep(50);
    }
    (p.stdout as any).unref?.();
    (p.stderr as any).unref?.();
    this.mntNs = readlinkSync(`/proc/${p.pid}/ns/mnt`);
  }

  /** argv prefix entering this node's network and mount namespaces */
  private enter(): string[] {
    return ['nsenter', `--target=${this.holder!.pid}`, '--mount', '--net', '--'];
  }

  startContainerd(): void {
    const d = this.o.dir;
    const cni = join(d, 'cni');
    mkdirSync(cni, { recursive: true });
    writeFileSync(
      join(cni, '10-e2e.conflist'),
      JSON.stringify(
        {
          cniVersion: '0.4.0',
          name: 'e2e',
          plugins: [
            {
              type: 'bridge',
              bridge: 'cni0',
              isGateway: true,
              ipMasq: false,
              hairpinMode: true,
              ipam: { type: 'host-local', ranges: [[{ subnet: this.podCidr }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: join(d, 'cni-ipam') },
            },
          ],
        },
        null,
        2,
      ),
    );
    const q = JSON.stringify;
    writeFileSync(
      join(d, 'containerd.toml'),
      `version = 2
root = ${q(join(d, 'containerd'))}
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = ${q(this.sock)}
[ttrpc]
  address = ${q(`${this.sock}.ttrpc`)}
[plugins."io.containerd.internal.v1.opt"]
  path = ${q(join(d, 'opt'))}
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = ${q(cni)}
`,
    );
    this.containerd = this.o.startDaemon(`containerd (${this.name})`, this.containerdLog, [...this.enter(), 'containerd', '--config', join(d, 'containerd.toml')]);
  }

  async importImages(archives: string[]): Promise<void> {
    for (const a of archives) {
      const r = await run('ctr', ['--address', this.sock, '--namespace', 'k8s.io', 'images', 'import', '--no-unpack=false', a], { timeoutMs: 300_000 });
      if (r.code !== 0) throw new Error(`ctr images import ${a} on ${this.name}: ${r.stderr.trim()}`);
      this.o.log(`${this.name}: imported ${a} in ${(r.ms / 1000).toFixed(1)} s`);
    }
  }

  startKubelet(): void {
    const d = this.o.dir;
    const pki = this.o.pki;
    writeFileSync(join(d, 'kubelet.kubeconfig'), kubeconfigYaml(this.o.server, pki, `system:node:${this.name}`, `node-${this.o.index}`), { mode: 0o600 });
    writeFileSync(join(d, 'resolv.conf'), 'nameserver 127.0.0.1\n');
    writeFileSync(
      join(d, 'kubelet.yaml'),
      JSON.stringify(
        {
          apiVersion: 'kubelet.config.k8s.io/v1beta1',
          kind: 'KubeletConfiguration',
          authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: join(pki, 'ca.crt') } },
          authorization: { mode: 'Webhook' },
          tlsCertFile: join(pki, `kubelet-${this.o.index}.crt`),
          tlsPrivateKeyFile: join(pki, `kubelet-${this.o.index}.key`),
          containerRuntimeEndpoint: `unix://${this.sock}`,
          // cgroup v1 (this machine's hybrid layout), containerd 1.6 without the CRI RuntimeConfig call
          failCgroupV1: false,
          cgroupDriver: 'cgroupfs',
          cgroupRoot: this.cgroupRoot,
          // no CAP_SYS_RESOURCE in this sandbox: ask for no negative oom_score_adj
          oomScoreAdj: 0,
          failSwapOn: false,
          // paths kubelet would otherwise create on the host
          podLogsDir: this.podLogsDir,
          volumePluginDir: join(d, 'volume-plugins'),
          resolvConf: join(d, 'resolv.conf'),
          // a shared test machine: never garbage-collect the imported images, never evict for its disk
          imageGCHighThresholdPercent: 100,
          imageGCLowThresholdPercent: 99,
          evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
          readOnlyPort: 0,
          healthzBindAddress: '127.0.0.1',
          clusterDomain: 'cluster.local',
          serializeImagePulls: false,
          registerNode: true,
        },
        null,
        2,
      ),
    );
    this.kubelet = this.o.startDaemon(`kubelet (${this.name})`, this.kubeletLog, [
      ...this.enter(),
      this.o.bin('kubelet'),
      `--config=${join(d, 'kubelet.yaml')}`,
      `--kubeconfig=${join(d, 'kubelet.kubeconfig')}`,
      `--hostname-override=${this.name}`,
      `--node-ip=${this.ip}`,
      '--root-dir=/var/lib/kubelet',
      '--v=1',
    ]);
  }

  diedContainerd(): string | null {
    const p = this.containerd;
    return p && (p.exitCode !== null || p.signalCode !== null) && !this.stopped ? `containerd of ${this.name} exited (${p.exitCode ?? p.signalCode})` : null;
  }

  diedKubelet(): string | null {
    const p = this.kubelet;
    return p && (p.exitCode !== null || p.signalCode !== null) && !this.stopped ? `kubelet of ${this.name} exited (${p.exitCode ?? p.signalCode})` : null;
  }

  containerPids(): number[] {
    const pids = new Set<number>();
    for (const m of this.o.cgroupMounts) {
      for (const d of dirsDeepestFirst(join(m, this.cgroupRoot))) {
        try {
          for (const l of readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n')) if (l) pids.add(Number(l));
        } catch {
          /* gone */
        }
      }
    }
    return [...pids];
  }

  /** Every process of this node but the holder: kubelet, containerd, shims (same mount ns, or naming our socket), containers (our cgroups). */
  private nodePids(): number[] {
    const pids = new Set<number>();
    for (const p of [this.kubelet, this.containerd]) if (p?.pid && alive(p.pid)) pids.add(p.pid);
    for (const pid of this.containerPids()) pids.add(pid);
    if (this.mntNs) {
      for (const pid of allPids()) {
        if (pid === this.holder?.pid) continue;
        if (readLinkOr(`/proc/${pid}/ns/mnt`) === this.mntNs || cmdline(pid).includes(this.sock)) pids.add(pid);
      }
    }
    pids.delete(process.pid);
    return [...pids];
  }

  killAllSync(): void {
    for (let round = 0; round < 20; round++) {
      const pids = this.nodePids();
      if (pids.length === 0) return;
      for (const pid of pids) killPid(pid);
      spawnSync('sleep', ['0.1']);
    }
  }

  pauseKubelet(): void {
    if (this.kubelet?.pid && !this.stopped) killPid(this.kubelet.pid, 'SIGSTOP');
  }

  resumeKubelet(): void {
    if (this.kubelet?.pid && !this.stopped) killPid(this.kubelet.pid, 'SIGCONT');
  }

  killHolderSync(): void {
    if (this.holder?.pid && alive(this.holder.pid)) killPid(this.holder.pid);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const t0 = Date.now();
    for (;;) {
      const pids = this.nodePids();
      if (pids.length === 0) break;
      for (const pid of pids) killPid(pid);
      if (Date.now() - t0 > 20_000) throw new Error(`${this.name}: processes ${pids.join(', ')} survive SIGKILL`);
      await sleep(50);
    }
    this.o.log(`${this.name} stopped (every process killed) in ${Date.now() - t0} ms`);
  }

  logTail(lines = 40): string {
    return `--- ${this.containerdLog} ---\n${tail(this.containerdLog, lines)}\n--- ${this.kubeletLog} ---\n${tail(this.kubeletLog, lines)}`;
  }
}

/** For the host checks of the tests: the values of the sysctls kubelet would write. */
export function hostSysctls(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of KUBELET_SYSCTLS) {
    try {
      out[s] = readFileSync(`/proc/sys/${s}`, 'utf8').trim();
    } catch {
      /* absent */
    }
  }
  return out;
}

/** For the host checks: the host's mount points (this process's mount namespace). */
export function hostMountPoints(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(' ')[4]!)
    .sort();
}

/** For the host checks: whether a path still exists (a cgroup, a directory this harness made). */
export function pathExists(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}
