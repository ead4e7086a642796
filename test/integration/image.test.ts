/**
 * `npm run image` (image/build.ts) end to end: it builds the OCI archive from a snapshot of the
 * project (the production install, stripped Node and compressed layers are cached in .cache/image,
 * shared with `npm run image`), and then:
 * - the layout: index.json names docker.io/library/metallb-ts:<version>, the config is the
 *   Dockerfile's (Entrypoint, Cmd, Env, WorkingDir, no User), the layers hold bin/metallb-ts,
 *   src/cli.ts, Node, node_modules/commander, @kubernetes/client-node, l2.node, /etc/passwd with
 *   nobody, /tmp 1777 — and not npm, the devDependencies, type declarations or npm's .bin; every
 *   entry owned 0/0 with mtime 0;
 * - reproducibility: a second build from a copy of the snapshot (new mtimes, other modes), every
 *   layer compressed again, gives the same archive bytes and manifest digest;
 * - the image's filesystem runs without a container runtime, the layers extracted into a temp
 *   directory: (a) with the extracted paths on the host's loader (`<dir>/usr/local/bin/node
 *   <dir>/opt/metallb-ts/src/cli.ts`: --version, `explain -f examples/cluster.yaml` answering as
 *   the repository's CLI does, and a live command that loads @kubernetes/client-node from the
 *   pruned tree); (b) as root, chrooted into it (its own loader, glibc, libstdc++, dash) in a
 *   private mount namespace with /dev and /proc bound in: the entrypoint's --version, `explain`
 *   and `controller` as nobody (65534, as deploy/controller.yaml), `speaker` as root loading the
 *   raw-socket addon (both run until they retry the unreachable API server, then stop on SIGTERM),
 *   each from its own bundle (its /proc/PID/cmdline: dist/metallb-ts-speaker.cjs or -controller.cjs, built by
 *   image/build.ts from the snapshot's src/); and the image's compile cache (image/compile-cache.ts)
 *   serves every module's stripped code to explain as nobody and, with METALLB_TS_NO_BUNDLE=1, to
 *   the speaker as root and the controller as nobody (no TypeScript stripped at start);
 * - containerd (Debian's 1.6, with runc; runs when containerd, ctr and runc are installed and we
 *   are root; METALLB_TS_IMAGE_CONTAINERD=0 skips it, =1 makes a missing tool a failure): a
 *   throwaway containerd with its own root, state and socket in a temp directory (in a private
 *   mount namespace; a host containerd is never touched) imports the archive in namespace k8s.io
 *   and runs it with read-only root and a tmpfs /tmp: --version, `explain`, and `speaker` with
 *   every capability dropped but NET_RAW, as deploy/speaker.yaml, from the daemons' bundle, its
 *   code cache unwritable and nothing said of it (and without NET_RAW: exit 2).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, rmdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ROOT } from '../helpers/cli.ts';
import { readTar, type ReadEntry } from '../../image/tar.ts';
import { DAEMON_DIST_FILES, DAEMONS } from '../../scripts/bundle.ts';
import { APP_DIR, CMD, ENTRYPOINT, ENV, NODE_PATH, imageName } from '../../image/layout.ts';
import type { BuildResult } from '../../image/build.ts';

const TMP = mkdtempSync(join(tmpdir(), 'metallb-ts-image-'));
after(() => rmSync(TMP, { recursive: true, force: true }));
const CACHE = join(ROOT, '.cache/image');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const NAME = imageName(VERSION);
const IS_ROOT = process.getuid?.() === 0;
const EXAMPLE = join(ROOT, 'examples/cluster.yaml');
const EXPLAIN = ['explain', 'svc/frontend', '-n', 'shop'];
/** A kubeconfig whose API server refuses connections (loopback port 1): live commands fail fast with exit 3. */
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`;

const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const sha256File = (p: string): string => createHash('sha256').update(readFileSync(p)).digest('hex');

/** A copy of what the image is built from: package files, bin/, src/, the addon; node_modules is the repository's (for node@24). */
function snapshot(dst: string): void {
  mkdirSync(join(dst, 'native/build'), { recursive: true });
  for (const f of ['package.json', 'package-lock.json']) cpSync(join(ROOT, f), join(dst, f));
  cpSync(join(ROOT, 'bin'), join(dst, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'src'), join(dst, 'src'), { recursive: true });
  cpSync(join(ROOT, 'native/build/l2.node'), join(dst, 'native/build/l2.node'));
  symlinkSync(join(ROOT, 'node_modules'), join(dst, 'node_modules'));
}

/** Runs image/build.ts (as `npm run image` does) and returns its JSON result. */
function build(root: string, out: string, extra: string[] = []): BuildResult {
  const env = { ...process.env };
  delete env.SOURCE_DATE_EPOCH; // the layout test expects mtime 0
  const r = spawnSync(process.execPath, [join(ROOT, 'image/build.ts'), '--root', root, '-o', out, '--cache-dir', CACHE, '--json', ...extra], {
    encoding: 'utf8',
    timeout: 600_000,
    maxBuffer: 64 << 20,
    env,
  });
  assert.equal(r.status, 0, `image/build.ts failed (${r.error?.message ?? r.status}):\n${r.stderr}`);
  return JSON.parse(r.stdout) as BuildResult;
}

interface Image {
  index: { manifests: { digest: string; platform: { architecture: string; os: string }; annotations: Record<string, string> }[] };
  manifest: { config: { digest: string }; layers: { digest: string; mediaType: string }[] };
  config: { architecture: string; os: string; config: { Entrypoint: string[]; Cmd: string[]; Env: string[]; WorkingDir: string; User?: string }; rootfs: { diff_ids: string[] } };
  /** Each layer's entries, in order. */
  layers: ReadEntry[][];
  /** The gzip blobs, in order. */
  blobs: Buffer[];
  /** The outer archive's entry names. */
  names: string[];
}

function readImage(archive: string): Image {
  const outer = readTar(readFileSync(archive));
  const file = (path: string): Buffer => {
    const e = outer.find((x) => x.path === path);
    assert.ok(e, `${path} in the archive`);
    return e.data;
  };
  const blob = (digest: string): Buffer => {
    const data = file(`blobs/sha256/${digest.slice('sha256:'.length)}`);
    assert.equal(`sha256:${createHash('sha256').update(data).digest('hex')}`, digest, `blob ${digest} matches its digest`);
    return data;
  };
  const index = JSON.parse(file('index.json').toString()) as Image['index'];
  const manifest = JSON.parse(blob(index.manifests[0]!.digest).toString()) as Image['manifest'];
  const config = JSON.parse(blob(manifest.config.digest).toString()) as Image['config'];
  const blobs = manifest.layers.map((l) => blob(l.digest));
  const layers = blobs.map((b, i) => {
    const tar = gunzipSync(b);
    assert.equal(`sha256:${createHash('sha256').update(tar).digest('hex')}`, config.rootfs.diff_ids[i], `layer ${i}'s diff_id`);
    return readTar(tar);
  });
  return { index, manifest, config, layers, blobs, names: outer.map((e) => e.path) };
}

/** Extracts the layers, in order, into `dir` (GNU tar: symlinks, modes). */
function extract(img: Image, dir: string): void {
  mkdirSync(dir, { recursive: true });
  img.blobs.forEach((b, i) => {
    const f = join(TMP, `layer-${i}.tar.gz`);
    writeFileSync(f, b);
    const r = spawnSync('tar', ['-xzf', f, '-C', dir], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    rmSync(f);
  });
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}
function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Run {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 120_000 });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Starts a long-running command, waits until its output matches `ready`, then calls `stop` (which
 * signals it) and returns its exit status and output. Fails when it exits first or takes over a minute.
 */
async function runUntil(cmd: string, args: string[], ready: RegExp, stop: (child: ChildProcess) => void, env?: NodeJS.ProcessEnv): Promise<Run & { sawReady: boolean }> {
  const child = spawn(cmd, args, { env: env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let sawReady = false;
  let timer: NodeJS.Timeout | undefined;
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (sawReady || !ready.test(stdout + stderr)) return;
      sawReady = true;
      stop(child);
    };
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      check();
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      check();
    });
    child.on('error', reject);
    timer = setTimeout(() => {
      child.kill('SIGKILL');
    }, 60_000);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr, sawReady });
    });
  });
}

/** A daemon's command line (/proc/PID/cmdline): the image's Node on the daemon's own bundle, not src/cli.ts. */
function assertRunsDaemonBundle(cmdline: string[], daemon: string): void {
  const i = cmdline.indexOf(`${APP_DIR}/dist/metallb-ts-${daemon}.cjs`);
  assert.ok(i > 0 && cmdline[0] === NODE_PATH && cmdline[i + 1] === daemon, `the ${daemon} runs ${cmdline.join(' ')}`);
  assert.ok(!cmdline.some((a) => a.endsWith('src/cli.ts')), cmdline.join(' '));
}

/** The snapshot the image is built from (so that edits to the tree during the test change nothing). */
const SNAP = join(TMP, 'snap');

/** The repository's own answer to `explain` on the example, from the snapshot's src/ (what the image's copy must print too). */
function hostExplain(file: string): Run {
  return run(process.execPath, [join(SNAP, 'src/cli.ts'), ...EXPLAIN, '-f', file]);
}

const haveAddon = existsSync(join(ROOT, 'native/build/l2.node'));
const haveNode = existsSync(join(ROOT, 'node_modules/.bin/node'));

describe('npm run image', { skip: !haveAddon ? 'native/build/l2.node is not built (no C compiler?): the image needs it' : !haveNode ? 'no node_modules/.bin/node (npm ci)' : false }, () => {
  let result: BuildResult;
  let img: Image;
  const snap = SNAP;
  const archive = join(TMP, 'a.oci.tar');
  const rootfs = join(TMP, 'rootfs');

  before(() => {
    snapshot(snap);
    result = build(snap, archive);
    img = readImage(archive);
    extract(img, rootfs);
    writeFileSync(join(TMP, 'kubeconfig'), KUBECONFIG);
  });

  test("the archive: OCI layout, index named for deploy/, the Dockerfile's configuration", () => {
    assert.deepEqual(
      img.names.filter((n) => !/^blobs\/sha256\/[0-9a-f]{64}$/.test(n)),
      ['blobs/', 'blobs/sha256/', 'index.json', 'oci-layout'],
    );
    assert.equal(img.names.length, 4 + 2 + img.blobs.length, 'the layers, the config and the manifest');
    const m = img.index.manifests;
    assert.equal(m.length, 1);
    assert.equal(m[0]!.digest, result.manifestDigest);
    assert.equal(m[0]!.annotations['io.containerd.image.name'], NAME);
    assert.equal(m[0]!.annotations['org.opencontainers.image.ref.name'], VERSION);
    assert.deepEqual(m[0]!.platform, { architecture: result.architecture, os: 'linux' });
    assert.equal(img.config.architecture, result.architecture);
    const c = img.config.config;
    assert.deepEqual(c.Entrypoint, ENTRYPOINT);
    assert.deepEqual(c.Cmd, CMD);
    assert.deepEqual(
      c.Env,
      Object.entries(ENV).map(([k, v]) => `${k}=${v}`),
    );
    assert.equal(c.WorkingDir, APP_DIR);
    assert.equal(c.User, undefined, 'root by default, as the Dockerfile');
    assert.deepEqual(
      img.manifest.layers.map((l) => l.mediaType),
      Array(4).fill('application/vnd.oci.image.layer.v1.tar+gzip'),
    );
    assert.deepEqual(
      result.layers.map((l) => l.name),
      ['base', 'node', 'deps', 'app'],
    );
  });

  test('the layers: the runtime and nothing else, owned by root, mtime 0', () => {
    const all = img.layers.flat();
    for (const e of all) {
      assert.equal(e.uid, 0, e.path);
      assert.equal(e.gid, 0, e.path);
      assert.equal(e.mtime, 0, e.path);
    }
    const paths = new Map(all.map((e) => [e.path.replace(/\/$/, ''), e]));
    const app = APP_DIR.slice(1);
    const want: [string, ReadEntry['type'], number?][] = [
      [`${app}/bin/metallb-ts`, 'file', 0o755],
      [`${app}/src/cli.ts`, 'file', 0o644],
      ...DAEMON_DIST_FILES.map((f): [string, ReadEntry['type'], number] => [`${app}/dist/${f}`, 'file', 0o644]),
      [`${app}/package.json`, 'file', 0o644],
      [`${app}/package-lock.json`, 'file', 0o644],
      [NODE_PATH.slice(1), 'file', 0o755],
      [`${app}/native/build/l2.node`, 'file', 0o755],
      [`${app}/node_modules/commander/package.json`, 'file'],
      [`${app}/node_modules/@kubernetes/client-node/dist/index.js`, 'file'],
      [`${app}/node_modules/yaml/dist/doc/Document.js`, 'file'],
      ['etc/passwd', 'file', 0o644],
      ['usr/bin/dash', 'file', 0o755],
      ['bin', 'symlink'],
      ['tmp', 'dir', 0o1777],
    ];
    for (const [p, type, mode] of want) {
      const e = paths.get(p);
      assert.ok(e, `${p} is in the image`);
      assert.equal(e.type, type, p);
      if (mode !== undefined) assert.equal(e.mode, mode, `${p} mode`);
    }
    assert.match(paths.get('etc/passwd')!.data.toString(), /^nobody:x:65534:65534:/m);
    const forbidden = [...paths.keys()].filter(
      // type declarations of packages (src/types/ ships as the tree has it: src/ is copied whole)
      (p) => /\/node_modules\/(npm|node|typescript|\.bin)(\/|$)/.test(p) || (/\/node_modules\//.test(p) && /\.d\.[mc]?ts$/.test(p)) || /\.js\.map$/.test(p) || p.startsWith('usr/local/lib/node_modules'),
    );
    assert.deepEqual(forbidden, [], 'no npm, devDependencies, declarations, maps or .bin');
    // The daemons' bundles only, built from the snapshot's src/ (not the tree's dist/, which the snapshot has not).
    assert.deepEqual([...paths.keys()].filter((p) => p.startsWith(`${app}/dist/`)).sort(), DAEMON_DIST_FILES.map((f) => `${app}/dist/${f}`).sort());
    for (const d of DAEMONS) assert.match(paths.get(`${app}/dist/metallb-ts-${d}.cjs`)!.data.toString(), new RegExp(`path\\.join\\(__dirname, "${d}\\.cjs"\\)`));
    // Node is the pinned node@24's, stripped.
    assert.match(result.node.version, /^v24\./);
    assert.ok(result.node.strippedBytes! < result.node.bytes);
    assert.equal(paths.get(NODE_PATH.slice(1))!.size, result.node.strippedBytes);
  });

  test('reproducible: the same tree, copied with new mtimes and modes and compressed again, gives the same digest', () => {
    const snap2 = join(TMP, 'snap2');
    cpSync(snap, snap2, { recursive: true, dereference: false, preserveTimestamps: false });
    chmodSync(join(snap2, 'src/cli.ts'), 0o600);
    chmodSync(join(snap2, 'bin/metallb-ts'), 0o700);
    const archive2 = join(TMP, 'b.oci.tar');
    const second = build(snap2, archive2, ['--no-layer-cache']);
    assert.ok(
      second.layers.every((l) => !l.cached),
      'every layer compressed again',
    );
    assert.equal(second.manifestDigest, result.manifestDigest);
    assert.equal(sha256File(archive2), sha256File(archive));
    rmSync(archive2);
  });

  test('runs from the extracted layers with their own paths (host loader): --version, explain, a live command', () => {
    const node = join(rootfs, NODE_PATH);
    const cli = join(rootfs, APP_DIR, 'src/cli.ts');
    const env = { PATH: process.env.PATH, NODE_COMPILE_CACHE: join(TMP, 'compile-cache') };
    const v = run(node, [cli, '--version'], { env });
    assert.equal(v.status, 0, v.stderr);
    assert.match(v.stdout, new RegExp(`^${VERSION.replace(/\./g, '\\.')} `));
    const e = run(node, [cli, ...EXPLAIN, '-f', EXAMPLE], { env });
    const want = hostExplain(EXAMPLE);
    assert.equal(e.status, want.status, e.stderr);
    assert.equal(e.stdout, want.stdout, 'the image answers as the repository does');
    // snapshot loads @kubernetes/client-node (from the pruned tree) and fails to connect: exit 3, one line.
    const live = run(node, [cli, 'snapshot', '--kubeconfig', join(TMP, 'kubeconfig'), '-o', 'yaml'], { env });
    assert.equal(live.status, 3, live.stderr);
    assert.match(live.stderr, /^metallb-ts: cannot list .* connection refused\n$/);
  });

  describe('chrooted into the extracted image (root)', { skip: !IS_ROOT ? 'needs root (chroot, mount)' : !has('unshare') || !has('chroot') ? 'needs unshare and chroot (util-linux, coreutils)' : false }, () => {
    const env = { ...ENV };
    /** `unshare --mount`: /dev and /proc bound into the rootfs (private to that namespace), then chroot as `user`. */
    const inChroot = (user: string, args: string[], extraEnv: Record<string, string> = {}): [string, string[]] => {
      mkdirSync(join(rootfs, 'dev'), { recursive: true });
      mkdirSync(join(rootfs, 'proc'), { recursive: true });
      return [
        'unshare',
        [
          '--mount',
          '--propagation',
          'private',
          '--fork',
          '--',
          'sh',
          '-c',
          'mount --bind /dev "$1/dev" && mount --bind /proc "$1/proc" && shift && exec env -i "$@"',
          'sh',
          rootfs,
          ...Object.entries({ ...env, ...extraEnv }).map(([k, v]) => `${k}=${v}`),
          'chroot',
          `--userspec=${user}`,
          rootfs,
          ...ENTRYPOINT,
          ...args,
        ],
      ];
    };
    before(() => {
      cpSync(EXAMPLE, join(rootfs, 'tmp/cluster.yaml'));
      cpSync(join(TMP, 'kubeconfig'), join(rootfs, 'tmp/kubeconfig'));
      chmodSync(join(rootfs, 'tmp/kubeconfig'), 0o644);
    });

    test('the entrypoint prints the version (its own loader, glibc, libstdc++ and /bin/sh)', () => {
      const [cmd, args] = inChroot('0:0', ['--version']);
      const r = run(cmd, args);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^${VERSION.replace(/\./g, '\\.')} `));
      assert.equal(r.stderr, '');
    });

    test('explain as nobody answers as the repository does', () => {
      const [cmd, args] = inChroot('65534:65534', [...EXPLAIN, '-f', '/tmp/cluster.yaml']);
      const r = run(cmd, args);
      const want = hostExplain(EXAMPLE);
      assert.equal(r.status, want.status, r.stderr);
      assert.equal(r.stdout, want.stdout.replaceAll(EXAMPLE, '/tmp/cluster.yaml'));
    });

    test('controller as nobody starts, serves its metrics and retries the API server; SIGTERM stops it', async () => {
      const [cmd, args] = inChroot('65534:65534', ['controller', '--kubeconfig', '/tmp/kubeconfig', '--metrics-port', '0']);
      let uid = '';
      let cmdline: string[] = [];
      const r = await runUntil(cmd, args, /list\/watch failed, retrying/, (child) => {
        // unshare's child is the controller's Node (sh, env, chroot and bin/metallb-ts each exec the next).
        const pid = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
        uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '';
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
        process.kill(Number(pid), 'SIGTERM');
      });
      assert.ok(r.sawReady, r.stdout + r.stderr);
      assert.equal(uid, '65534', 'runs as nobody');
      // The daemons' bundle (METALLB_TS_BUNDLE=1 of the image's ENV: no find in the image), not src/cli.ts.
      assertRunsDaemonBundle(cmdline, 'controller');
      assert.doesNotMatch(r.stderr, /EACCES|EROFS|metallb-ts-bundle/, 'an unwritable code cache only means no cache');
      assert.match(r.stdout + r.stderr, /serving \/metrics/);
      assert.equal(r.status, 0, r.stderr);
    });

    test("the image's compile cache: explain (nobody), --version and, with METALLB_TS_NO_BUNDLE=1, the daemons strip no TypeScript at start", () => {
      for (const [user, args, extra] of [
        ['0:0', ['speaker', '--help'], { METALLB_TS_NO_BUNDLE: '1' }],
        ['65534:65534', ['controller', '--help'], { METALLB_TS_NO_BUNDLE: '1' }],
        ['65534:65534', [...EXPLAIN, '--help'], {}],
        ['0:0', ['--version'], {}],
      ] as const) {
        const [cmd, a] = inChroot(user, [...args], { NODE_DEBUG_NATIVE: 'COMPILE_CACHE', ...extra });
        const r = run(cmd, a);
        assert.equal(r.status, 0, r.stderr);
        const what = `${args.join(' ')} as ${user}`;
        assert.match(r.stderr, /retrieving transpile cache for StrippedTypeScript file:\/\/\/opt\/metallb-ts\/src\/cli\.ts\.\.\.success/, what);
        assert.doesNotMatch(r.stderr, /no transpile cache for StrippedTypeScript/, what);
      }
      // By default the daemons run their bundle: no TypeScript module at all, and the starter's
      // unwritable code cache (nobody; the root file system read-only in a Pod) prints nothing.
      for (const [user, daemon] of [
        ['0:0', 'speaker'],
        ['65534:65534', 'controller'],
      ] as const) {
        const [cmd, a] = inChroot(user, [daemon, '--help'], { NODE_DEBUG_NATIVE: 'COMPILE_CACHE' });
        const r = run(cmd, a);
        assert.equal(r.status, 0, r.stderr);
        assert.doesNotMatch(r.stderr, /StrippedTypeScript|EACCES|EROFS/, `${daemon} as ${user}`);
        const plain = run(...inChroot(user, [daemon, '--help']));
        assert.equal(plain.stderr, '', `${daemon} as ${user}`);
        assert.match(plain.stdout, new RegExp(`^Usage: metallb-ts ${daemon}`, 'm'));
      }
    });

    test('speaker as root loads the raw-socket addon, then retries the API server; SIGTERM stops it', async () => {
      const [cmd, args] = inChroot('0:0', ['speaker', '--node-name', 'n1', '--kubeconfig', '/tmp/kubeconfig', '--port', '0', '--health-probe-port', '0']);
      let cmdline: string[] = [];
      const r = await runUntil(cmd, args, /list\/watch failed, retrying/, (child) => {
        const pid = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
        process.kill(Number(pid), 'SIGTERM');
      });
      assert.ok(r.sawReady, r.stdout + r.stderr);
      assertRunsDaemonBundle(cmdline, 'speaker');
      assert.doesNotMatch(r.stdout + r.stderr, /addon|CAP_NET_RAW/);
      assert.equal(r.status, 0, r.stderr);
    });
  });

  const ctrWanted = process.env.METALLB_TS_IMAGE_CONTAINERD;
  const ctrMissing = ['containerd', 'ctr', 'runc', 'unshare'].filter((c) => !has(c));
  const ctrSkip =
    ctrWanted === '0'
      ? 'METALLB_TS_IMAGE_CONTAINERD=0'
      : ctrWanted !== '1' && !IS_ROOT
        ? 'needs root'
        : ctrWanted !== '1' && ctrMissing.length
          ? `${ctrMissing.join(', ')} not installed (apt-get install containerd runc)`
          : false;

  describe("in a throwaway containerd (Debian's containerd 1.6 + runc)", { skip: ctrSkip }, () => {
    // A short path: unix socket paths are limited to 107 bytes.
    let dir = '';
    let sock = '';
    const ns = 'k8s.io';
    let containerd: ChildProcess | undefined;
    const runDirExisted = existsSync('/run/containerd/s');
    let seq = 0;
    const ctr = (args: string[], timeoutMs = 180_000): Run => run('ctr', ['--address', sock, '--namespace', ns, ...args], { timeoutMs });
    /** `ctr run` options for one container: its runc root and FIFOs in our dir, no cgroup of its own, read-only root, tmpfs /tmp, /kc bound read-only. */
    const runArgs = (id: string, caps: string[]): string[] => [
      'run',
      '--rm',
      '--runc-root',
      join(dir, 'runc'),
      '--fifo-dir',
      join(dir, 'fifo'),
      '--cgroup',
      '',
      '--read-only',
      '--mount',
      'type=tmpfs,src=tmpfs,dst=/tmp,options=rw:nosuid:nodev:mode=1777',
      '--mount',
      `type=bind,src=${join(dir, 'kc')},dst=/kc,options=rbind:ro`,
      ...caps,
      NAME,
      id,
    ];
    // containerd's default capabilities for a container (oci.defaultUnixCaps); ctr 1.6 takes no ALL.
    const DEFAULT_CAPS = [
      'CAP_CHOWN',
      'CAP_DAC_OVERRIDE',
      'CAP_FSETID',
      'CAP_FOWNER',
      'CAP_MKNOD',
      'CAP_NET_RAW',
      'CAP_SETGID',
      'CAP_SETUID',
      'CAP_SETFCAP',
      'CAP_SETPCAP',
      'CAP_NET_BIND_SERVICE',
      'CAP_SYS_CHROOT',
      'CAP_KILL',
      'CAP_AUDIT_WRITE',
    ];
    const dropAllBut = (keep: string[]): string[] => DEFAULT_CAPS.filter((c) => !keep.includes(c)).flatMap((c) => ['--cap-drop', c]);

    before(async () => {
      if (ctrMissing.length) throw new Error(`METALLB_TS_IMAGE_CONTAINERD=1 but ${ctrMissing.join(', ')} not installed`);
      dir = mkdtempSync('/tmp/mts-ctr-');
      sock = join(dir, 'containerd.sock');
      mkdirSync(join(dir, 'kc'));
      cpSync(EXAMPLE, join(dir, 'kc/cluster.yaml'));
      cpSync(join(TMP, 'kubeconfig'), join(dir, 'kc/kubeconfig'));
      writeFileSync(
        join(dir, 'config.toml'),
        `version = 2
root = "${dir}/root"
state = "${dir}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "${sock}"
[ttrpc]
  address = "${sock}.ttrpc"
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "${dir}/opt"
`,
      );
      // Its own mount namespace: the snapshots it mounts are private to it and vanish with it.
      containerd = spawn('unshare', ['--mount', '--propagation', 'private', 'containerd', '--config', join(dir, 'config.toml')], { stdio: ['ignore', 'ignore', 'pipe'] });
      let log = '';
      containerd.stderr!.setEncoding('utf8').on('data', (d: string) => {
        log += d;
      });
      const t0 = Date.now();
      while (!/containerd successfully booted/.test(log)) {
        if (containerd.exitCode !== null || Date.now() - t0 > 30_000) throw new Error(`containerd did not start:\n${log.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    });

    after(async () => {
      if (!dir) return;
      for (const id of ctr(['tasks', 'ls', '-q']).stdout.split('\n').filter(Boolean)) {
        ctr(['tasks', 'kill', '-s', 'SIGKILL', id]);
        ctr(['tasks', 'delete', '-f', id]);
      }
      for (const id of ctr(['containers', 'ls', '-q']).stdout.split('\n').filter(Boolean)) ctr(['containers', 'delete', id]);
      if (containerd && containerd.exitCode === null) {
        const exited = new Promise((r) => containerd!.once('exit', r));
        containerd.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (containerd.exitCode === null) containerd.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
      // containerd 1.6's shims put their sockets in /run/containerd/s whatever the config says: leave no empty directory we made.
      if (!runDirExisted) {
        for (const d of ['/run/containerd/s', '/run/containerd']) {
          try {
            if (readdirSync(d).length === 0) rmdirSync(d);
          } catch {
            // not there, or not empty (someone else's containerd): leave it
          }
        }
      }
    });

    test('ctr images import accepts the archive and names it for deploy/', () => {
      const r = ctr(['images', 'import', archive]);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`unpacking ${NAME.replace(/[.]/g, '\\.')} \\(${result.manifestDigest}\\)\\.\\.\\.done`));
      assert.ok(ctr(['images', 'ls', '-q']).stdout.split('\n').includes(NAME));
    });

    test('ctr run: --version and explain, read-only root, no capabilities', () => {
      const v = ctr([...runArgs(`mts-image-${process.pid}-${++seq}`, dropAllBut([])), ...ENTRYPOINT, '--version']);
      assert.equal(v.status, 0, v.stderr);
      assert.match(v.stdout, new RegExp(`^${VERSION.replace(/\./g, '\\.')} `));
      const e = ctr([...runArgs(`mts-image-${process.pid}-${++seq}`, dropAllBut([])), ...ENTRYPOINT, ...EXPLAIN, '-f', '/kc/cluster.yaml']);
      const want = hostExplain(EXAMPLE);
      assert.equal(e.status, want.status, e.stderr);
      assert.equal(e.stdout, want.stdout.replaceAll(EXAMPLE, '/kc/cluster.yaml'));
    });

    test("ctr run: the speaker with NET_RAW only (deploy/speaker.yaml) runs the daemons' bundle, opens its raw sockets and retries the API server", async () => {
      const id = `mts-image-${process.pid}-${++seq}`;
      let cmdline: string[] = [];
      const r = await runUntil(
        'ctr',
        [
          '--address',
          sock,
          '--namespace',
          ns,
          ...runArgs(id, dropAllBut(['CAP_NET_RAW'])),
          ...ENTRYPOINT,
          'speaker',
          '--node-name',
          'n1',
          '--kubeconfig',
          '/kc/kubeconfig',
          '--port',
          '0',
          '--health-probe-port',
          '0',
        ],
        /list\/watch failed, retrying/,
        () => {
          // The task's PID as the host sees it (`ctr tasks ls`: TASK PID STATUS).
          const pid = ctr(['tasks', 'ls'])
            .stdout.split('\n')
            .map((l) => l.trim().split(/\s+/))
            .find((f) => f[0] === id)?.[1];
          if (pid) cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
          ctr(['tasks', 'kill', '-s', 'SIGTERM', id]);
        },
      );
      assert.ok(r.sawReady, r.stdout + r.stderr);
      assertRunsDaemonBundle(cmdline, 'speaker');
      // The read-only root: the starter cannot write the bundle's code cache, and says nothing of it.
      assert.doesNotMatch(r.stdout + r.stderr, /EROFS|read-only file system|metallb-ts-bundle/i);
      assert.equal(r.status, 0, r.stderr);
    });

    test('ctr run: the speaker without NET_RAW says so in one line, exit 2', () => {
      const r = ctr([
        ...runArgs(`mts-image-${process.pid}-${++seq}`, dropAllBut([])),
        ...ENTRYPOINT,
        'speaker',
        '--node-name',
        'n1',
        '--kubeconfig',
        '/kc/kubeconfig',
        '--port',
        '0',
        '--health-probe-port',
        '0',
      ]);
      assert.equal(r.status, 2, r.stdout + r.stderr);
      assert.match(r.stderr, /^metallb-ts: speaker: the L2 data plane needs CAP_NET_RAW/m);
    });
  });
});
