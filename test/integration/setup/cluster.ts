// A real Kubernetes control plane for integration tests: etcd + kube-apiserver, built from their Go
// modules by test/integration/setup/build-apiserver.sh, started here on 127.0.0.1 only, with
// MetalLB's CRDs (test/reference/crds, the repository's copy) installed and Established.
//
//   const cluster = await startTestCluster();
//   const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
//   ...
//   await cluster.stop();
//
// Authentication: the kubeconfig uses a client certificate for `metallb-ts-admin` in group
// `system:masters` (superuser, bypasses RBAC). Authorization mode is RBAC only, so least-privilege
// tests can use the static tokens passed in `opts.users` (see `kubeConfigForUser`) or service
// account tokens (TokenRequest works: the service-account signing key is generated at start).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync, openSync, closeSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { KubeClient } from '../../../src/kube/client.ts';
import { freePort } from '../../helpers/net.ts';
import { onProcessExit, sleep } from './wait.ts';

/** Repository root (this file is test/integration/setup/cluster.ts). */
export const REPO_ROOT: string = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** Where build-apiserver.sh puts kube-apiserver and etcd; `METALLB_TS_K8S_BIN` overrides. */
export const DEFAULT_BIN_DIR: string = process.env.METALLB_TS_K8S_BIN ?? join(REPO_ROOT, '.cache/k8s-bin');
/** MetalLB v0.16.1's CRDs: the repository's copy in test/reference/crds; `METALLB_TS_CRDS` overrides. */
export const DEFAULT_CRD_DIR: string = process.env.METALLB_TS_CRDS ?? resolve(REPO_ROOT, 'test/reference/crds');

/** A log line that reports an RBAC refusal: "forbidden" or a 403 status (not a 403 inside a port number). */
export const RBAC_REFUSAL = /forbidden|\b403\b/i;

const BUILD_HINT = 'run test/integration/setup/build-apiserver.sh';

/** A static-token user for RBAC tests (no rights until a test binds a Role to it). */
export interface TestUser {
  /** user name as RBAC sees it */
  name: string;
  /** bearer token; default: a generated one */
  token?: string;
  groups?: string[];
}

export interface TestClusterOptions {
  /** directory holding `kube-apiserver` and `etcd` (default DEFAULT_BIN_DIR) */
  binDir?: string;
  /** directory of CRD YAML files to install (default DEFAULT_CRD_DIR); `null` installs none */
  crdDir?: string | null;
  /** namespaces to create, each with a `default` ServiceAccount (default ['metallb-system']) */
  namespaces?: string[];
  /** static-token users, in addition to the admin */
  users?: TestUser[];
  /** extra kube-apiserver flags, appended last (later flags win) */
  extraApiserverArgs?: string[];
  /** overall start-up limit in milliseconds (default 120000; a cold start on 2 busy cores takes ~10 s) */
  startTimeoutMs?: number;
  /** keep the temporary directory (logs, etcd data, certs) after stop(); also env METALLB_TS_KEEP_CLUSTER=1 */
  keep?: boolean;
}

export interface TestCluster {
  /** kubeconfig file for the admin (client certificate, system:masters), context `metallb-ts-test` */
  kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  server: string;
  /** the admin kubeconfig, loaded */
  kubeConfig: KubeConfig;
  /** bearer token of the admin (also system:masters) */
  adminToken: string;
  /** tokens of `opts.users` by user name */
  userTokens: Record<string, string>;
  /** PEM of the CA that signed the serving certificate */
  caPem: string;
  /** http://127.0.0.1:<port> of etcd */
  etcdUrl: string;
  /** temporary directory: etcd.log, kube-apiserver.log, pki/, etcd-data/ */
  dir: string;
  /** A KubeConfig authenticating with `token` (e.g. a static user's or a TokenRequest's). */
  kubeConfigForToken(token: string, user?: string): KubeConfig;
  /** Last `lines` lines (default 60) of both logs, labelled, for failure messages. */
  logTail(lines?: number): string;
  /** Stops kube-apiserver then etcd (SIGTERM, SIGKILL after 10 s) and deletes `dir` unless kept. Idempotent. */
  stop(): Promise<void>;
  /**
   * An API server outage: stops kube-apiserver (SIGTERM, SIGKILL after 10 s; etcd keeps running),
   * waits `downMs`, starts it again with the same flags, port and certificates and resolves once
   * it is ready. Resolves with how long it was unreachable (ms, from the stop to ready).
   */
  restartApiserver(downMs: number): Promise<number>;
}

// ---------------------------------------------------------------------------------------------
// process bookkeeping: children are killed on process exit / SIGINT / SIGTERM

const live = new Set<{ procs: ChildProcess[]; dir: string; keep: boolean }>();

function killAllSync(): void {
  for (const c of live) {
    for (const p of c.procs) {
      if (p.exitCode === null && p.signalCode === null) {
        try {
          p.kill('SIGKILL');
        } catch {
          /* already gone */
        }
      }
    }
    if (!c.keep) {
      try {
        rmSync(c.dir, { recursive: true, force: true });
      } catch {
        /* best effort */
      }
    }
  }
  live.clear();
}

// ---------------------------------------------------------------------------------------------
// helpers

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (r.error) throw new Error(`openssl not runnable (${r.error.message}); it is needed to make test certificates`);
  if (r.status !== 0) throw new Error(`openssl ${args.slice(0, 2).join(' ')} failed: ${r.stderr.trim()}`);
}

/** CA, serving cert (127.0.0.1/localhost), admin client cert, service-account key pair: files in `pki`. */
function makePki(pki: string): void {
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
      '/CN=metallb-ts-test-ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    ],
    pki,
  );
  const leaf = (name: string, subj: string, ext: string): void => {
    writeFileSync(join(pki, `${name}.ext`), ext);
    openssl(['req', '-new', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subj], pki);
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-set_serial',
        String((Date.now() % 1e9) + name.length),
        '-days',
        '2',
        '-sha256',
        '-extfile',
        `${name}.ext`,
        '-out',
        `${name}.crt`,
      ],
      pki,
    );
  };
  leaf(
    'apiserver',
    '/CN=kube-apiserver',
    'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n'
      + 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n',
  );
  leaf('admin', '/O=system:masters/CN=metallb-ts-admin', 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n');
  const sa = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  writeFileSync(join(pki, 'sa.key'), sa.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(join(pki, 'sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));
}

function randomToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('hex');
}

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return '(no log)';
  const all = readFileSync(file, 'utf8').split('\n');
  return all.slice(Math.max(0, all.length - lines - 1)).join('\n');
}

interface Started {
  proc: ChildProcess;
  exited: Promise<void>;
}

function startProcess(bin: string, args: string[], logFile: string): Started {
  const fd = openSync(logFile, 'a');
  const proc = spawn(bin, args, { stdio: ['ignore', fd, fd], env: { ...process.env, KUBECONFIG: '' } });
  closeSync(fd);
  // a test that forgets stop() must not hang its process: the 'exit' hook kills the child then
  proc.unref();
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  proc.once('error', () => {
    /* reported through exit / spawn failure below */
  });
  return { proc, exited };
}

/** GET `url` over TLS with the admin client cert; resolves to [status, body] or rejects on a socket error. */
function httpsGet(url: string, ca: string, cert: string, key: string): Promise<[number, string]> {
  return new Promise((res, rej) => {
    const req = https.get(url, { ca, cert, key, timeout: 5000 }, (resp) => {
      let body = '';
      resp.setEncoding('utf8');
      resp.on('data', (d: string) => {
        body += d;
      });
      resp.on('end', () => res([resp.statusCode ?? 0, body]));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', rej);
  });
}

async function waitFor(what: string, deadline: number, died: () => string | null, probe: () => Promise<boolean>): Promise<void> {
  let lastErr = '';
  for (;;) {
    const d = died();
    if (d !== null) throw new Error(`${what}: ${d}`);
    try {
      if (await probe()) return;
    } catch (e) {
      lastErr = (e as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`${what}: timed out${lastErr ? ` (last error: ${lastErr})` : ''}`);
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * Starts etcd and kube-apiserver on 127.0.0.1 (free ports), waits for /readyz, installs every CRD
 * of `opts.crdDir` and waits until each is Established, creates `opts.namespaces` (each with a
 * `default` ServiceAccount, which the ServiceAccount admission plugin needs for Pods since no
 * controller-manager runs) and writes an admin kubeconfig.
 *
 * Takes ~5-20 s. Rejects with a one-line message naming the build script when the binaries are
 * missing, and with the tails of both logs when a process dies or start-up times out. On rejection
 * everything started is stopped. Children are also killed when this process exits.
 */
export async function startTestCluster(opts: TestClusterOptions = {}): Promise<TestCluster> {
  // free ports are picked before the processes bind them: retry the rare lost race
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (e) {
      if (attempt >= 3 || !/address already in use/.test((e as Error).message)) throw e;
    }
  }
}

async function startOnce(opts: TestClusterOptions): Promise<TestCluster> {
  const binDir = opts.binDir ?? DEFAULT_BIN_DIR;
  const apiserverBin = join(binDir, 'kube-apiserver');
  const etcdBin = join(binDir, 'etcd');
  for (const b of [apiserverBin, etcdBin]) {
    if (!existsSync(b)) throw new Error(`${b} is missing: ${BUILD_HINT} first`);
  }
  const crdDir = opts.crdDir === undefined ? DEFAULT_CRD_DIR : opts.crdDir;
  if (crdDir !== null && !existsSync(crdDir)) throw new Error(`CRD directory ${crdDir} is missing (expected test/reference/crds in the repository)`);
  const keep = opts.keep ?? process.env.METALLB_TS_KEEP_CLUSTER === '1';
  const deadline = Date.now() + (opts.startTimeoutMs ?? 120_000);

  const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-apiserver-'));
  const entry = { procs: [] as ChildProcess[], dir, keep };
  onProcessExit(killAllSync);
  live.add(entry);

  const etcdLog = join(dir, 'etcd.log');
  const apiLog = join(dir, 'kube-apiserver.log');
  const logTail = (lines = 60): string => `--- etcd.log (${etcdLog}) ---\n${tail(etcdLog, lines)}\n--- kube-apiserver.log (${apiLog}) ---\n${tail(apiLog, lines)}`;

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    // apiserver first, so it does not log etcd errors on the way down
    for (const p of [...entry.procs].reverse()) {
      if (p.exitCode !== null || p.signalCode !== null) continue;
      const gone = new Promise<void>((r) => p.once('exit', () => r()));
      p.kill('SIGTERM');
      const t = setTimeout(() => p.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(t);
    }
    live.delete(entry);
    if (!keep) rmSync(dir, { recursive: true, force: true });
  };

  try {
    const pki = join(dir, 'pki');
    makePki(pki);
    const ca = readFileSync(join(pki, 'ca.crt'), 'utf8');
    const cert = readFileSync(join(pki, 'admin.crt'), 'utf8');
    const key = readFileSync(join(pki, 'admin.key'), 'utf8');

    const adminToken = randomToken();
    const userTokens: Record<string, string> = {};
    const tokenLines = [`${adminToken},metallb-ts-admin-token,uid-admin,"system:masters"`];
    (opts.users ?? []).forEach((u, i) => {
      const tok = u.token ?? randomToken();
      userTokens[u.name] = tok;
      tokenLines.push(`${tok},${u.name},uid-user-${i}` + (u.groups?.length ? `,"${u.groups.join(',')}"` : ''));
    });
    writeFileSync(join(pki, 'tokens.csv'), tokenLines.join('\n') + '\n', { mode: 0o600 });

    // --- etcd
    const [etcdClient, etcdPeer, securePort] = [await freePort(), await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    const peerUrl = `http://127.0.0.1:${etcdPeer}`;
    const etcd = startProcess(
      etcdBin,
      [
        '--name=test',
        `--data-dir=${join(dir, 'etcd-data')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=test=${peerUrl}`,
        '--initial-cluster-state=new',
        '--unsafe-no-fsync', // throwaway data: skip fsync, tests are I/O-bound otherwise
        '--log-level=warn',
      ],
      etcdLog,
    );
    entry.procs.push(etcd.proc);
    const diedMsg = (s: Started, name: string) => (): string | null => (s.proc.exitCode !== null || s.proc.signalCode !== null ? `${name} exited (${s.proc.exitCode ?? s.proc.signalCode})` : null);
    await waitFor('etcd did not become healthy', deadline, diedMsg(etcd, 'etcd'), async () => {
      const r = await fetch(`${etcdUrl}/health`);
      return r.ok && ((await r.json()) as { health?: string }).health === 'true';
    });

    // --- kube-apiserver
    const server = `https://127.0.0.1:${securePort}`;
    const apiArgs = [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // the `kubernetes` Endpoints may not hold a loopback address: do not maintain them
      '--endpoint-reconciler-type=none',
      `--secure-port=${securePort}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${join(pki, 'apiserver.crt')}`,
      `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
      `--client-ca-file=${join(pki, 'ca.crt')}`,
      `--token-auth-file=${join(pki, 'tokens.csv')}`,
      `--service-account-issuer=${server}`,
      `--service-account-key-file=${join(pki, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      '--authorization-mode=RBAC',
      '--service-cluster-ip-range=10.96.0.0/16', // allocation only: no traffic goes there
      '--allow-privileged=true',
      '--profiling=false',
      '--v=1',
      ...(opts.extraApiserverArgs ?? []),
    ];
    const startApi = async (until: number): Promise<Started> => {
      const started = startProcess(apiserverBin, apiArgs, apiLog);
      entry.procs.push(started.proc);
      await waitFor(
        'kube-apiserver did not become ready',
        until,
        () => diedMsg(started, 'kube-apiserver')() ?? diedMsg(etcd, 'etcd')(),
        async () => {
          const [status] = await httpsGet(`${server}/readyz`, ca, cert, key);
          return status === 200;
        },
      );
      return started;
    };
    let api = await startApi(deadline);
    const restartApiserver = async (downMs: number): Promise<number> => {
      const t0 = Date.now();
      const gone = api.exited;
      api.proc.kill('SIGTERM');
      const kill = setTimeout(() => api.proc.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(kill);
      await new Promise((r) => setTimeout(r, downMs));
      api = await startApi(Date.now() + (opts.startTimeoutMs ?? 120_000));
      return Date.now() - t0;
    };

    // --- kubeconfig
    const b64 = (s: string): string => Buffer.from(s).toString('base64');
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfigPath,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: metallb-ts-test',
        '  cluster:',
        `    server: ${server}`,
        `    certificate-authority-data: ${b64(ca)}`,
        'users:',
        '- name: metallb-ts-admin',
        '  user:',
        `    client-certificate-data: ${b64(cert)}`,
        `    client-key-data: ${b64(key)}`,
        'contexts:',
        '- name: metallb-ts-test',
        '  context:',
        '    cluster: metallb-ts-test',
        '    user: metallb-ts-admin',
        'current-context: metallb-ts-test',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(kubeconfigPath);

    const kubeConfigForToken = (token: string, user = 'token-user'): KubeConfig => {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'metallb-ts-test', server, caData: b64(ca) }],
        users: [{ name: user, token }],
        contexts: [{ name: 'metallb-ts-test', cluster: 'metallb-ts-test', user }],
        currentContext: 'metallb-ts-test',
      });
      return kc;
    };

    // --- CRDs
    if (crdDir !== null) await installCrds(kubeConfig, crdDir, deadline);

    // --- namespaces
    const core = kubeConfig.makeApiClient(CoreV1Api);
    for (const ns of opts.namespaces ?? ['metallb-system']) {
      await core.createNamespace({ body: { metadata: { name: ns } } });
    }
    for (const ns of ['default', ...(opts.namespaces ?? ['metallb-system'])]) {
      // the default namespace appears shortly after /readyz (the system namespaces controller)
      await waitFor(
        `namespace ${ns} has no default ServiceAccount`,
        deadline,
        () => null,
        async () => {
          try {
            await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'default' } } });
            return true;
          } catch (e) {
            if ((e as { code?: number }).code === 409) return true;
            throw e;
          }
        },
      );
    }

    return {
      kubeconfigPath,
      server,
      kubeConfig,
      adminToken,
      userTokens,
      caPem: ca,
      etcdUrl,
      dir,
      kubeConfigForToken,
      logTail,
      stop,
      restartApiserver,
    };
  } catch (e) {
    const msg = (e as Error).message;
    const logs = existsSync(etcdLog) ? `\n${logTail(40)}` : '';
    await stop();
    if (msg.includes(BUILD_HINT)) throw e;
    throw new Error(`test cluster failed to start: ${msg}${logs}`, { cause: e });
  }
}

/**
 * Creates every CustomResourceDefinition found in the *.yaml files of `crdDir` and waits until each
 * reports the Established condition (NamesAccepted failures are thrown with the CRD's message) and
 * each served version can be listed. Resolves to the CRD names; rejects at `deadline` (ms since epoch).
 */
export async function installCrds(kc: KubeConfig, crdDir: string, deadline = Date.now() + 60_000): Promise<string[]> {
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  // The CRD is sent as written (raw JSON): client-node's typed serializer drops the schemas'
  // `default` fields, and the apiserver must apply MetalLB's defaults (peerPort 179, ...) as in a cluster.
  const raw = new KubeClient(kc, { timeoutMs: 30_000 });
  const names: string[] = [];
  const served: [name: string, group: string, plural: string, versions: string[]][] = [];
  for (const f of readdirSync(crdDir)
    .filter((n) => /\.ya?ml$/.test(n))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8'))) {
      const body = doc.toJS() as V1CustomResourceDefinition | null;
      if (body?.kind !== 'CustomResourceDefinition') continue;
      await raw.request({ method: 'POST', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', body });
      names.push(body.metadata!.name!);
      served.push([body.metadata!.name!, body.spec.group, body.spec.names.plural, body.spec.versions.filter((v) => v.served).map((v) => v.name)]);
    }
  }
  for (const name of names) {
    await waitFor(
      `CRD ${name} not Established`,
      deadline,
      () => null,
      async () => {
        const crd = await ext.readCustomResourceDefinition({ name });
        const conds = crd.status?.conditions ?? [];
        const na = conds.find((c) => c.type === 'NamesAccepted');
        if (na?.status === 'False') throw new Error(`CRD ${name}: ${na.message}`);
        return conds.some((c) => c.type === 'Established' && c.status === 'True');
      },
    );
  }
  // Established is not yet servable: the watch cache of a new resource answers lists with
  // 429 "storage is (re)initializing" for a moment, so wait until each served version lists.
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const [name, group, plural, versions] of served) {
    for (const version of versions) {
      await waitFor(
        `CRD ${name} ${version} not listable`,
        deadline,
        () => null,
        async () => {
          await custom.listClusterCustomObject({ group, version, plural, limit: 1 });
          return true;
        },
      );
    }
  }
  return names;
}
