/**
 * `metallb-ts controller`: MetalLB v0.16.1's controller. Watches Services, IPAddressPools,
 * Communities and Namespaces; gives each LoadBalancer Service its addresses through the core
 * (status.loadBalancer.ingress via the status subresource, the `metallb.io/ip-allocated-from-pool`
 * annotation, MetalLB's Events), keeps the IPAddressPool status counters, and serves `/metrics`,
 * `/healthz` and `/readyz`. With `--ml-secret-name` (env METALLB_ML_SECRET_NAME) it first creates
 * the speakers' memberlist Secret, owned by its `--deployment` (env METALLB_DEPLOYMENT), unless it
 * exists (src/controller/memberlist-secret.ts). Reports whether its configuration loaded in the
 * ConfigurationState `controller` (condition poolReconcilerValid), owned by its Pod (`--pod-name`).
 * With `--webhook-mode enabled|onlywebhook` it also serves MetalLB's admission webhooks and BGPPeer
 * conversion over HTTPS (src/controller/webhook-server.ts) with a certificate it manages in the
 * Secret `--webhook-secret` (src/controller/webhook-rotator.ts), or, with `--disable-cert-rotation`,
 * one mounted at `--cert-dir`. Logs are JSON lines on stdout, as MetalLB's. Runs until
 * SIGINT/SIGTERM, then finishes the writes in flight and exits 0. Exit 2 for bad flags or
 * kubeconfig, a missing Deployment or webhook certificate files, 3 when the cluster cannot be
 * reached or refuses the watches, the memberlist Secret or the webhook certificate Secret.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { UserError } from '../core/errors.ts';
import { metallbNamespaceOf, portNumber } from './runtime-options.ts';
import { DEFAULT_METALLB_NAMESPACE } from '../core/kube.ts';
import { jsonLogger, LOG_LEVELS, type LogLevel } from '../runtime/log.ts';
import type { ControllerLoop } from '../controller/loop.ts';
import type { KubeWriter } from '../controller/writer.ts';
import type { RunningHttpServer } from '../controller/metrics.ts';
import { VERSION } from '../runtime/version.ts';
import type { OwnerRef } from '../core/status.ts';

/** Parsed flags (commander's camel-cased names). */
interface ControllerFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  lbClass: string;
  metricsBindAddress: string;
  metricsPort?: number;
  port?: number;
  logLevel: LogLevel;
  podName?: string;
  writeConcurrency: number;
  mlSecretName?: string;
  deployment?: string;
  webhookMode: WebhookMode;
  webhookSecret: string;
  certServiceName: string;
  disableCertRotation?: boolean;
  certDir: string;
  webhookHttp2?: boolean;
  webhookPort: number;
  webhookBindAddress: string;
  tlsMinVersion: string;
  tlsCipherSuites: string;
  tlsCurvePreferences: string;
  metricsCertDir?: string;
  pprofBindAddress?: string;
}

/** MetalLB's `--webhook-mode` values. */
const WEBHOOK_MODES = ['enabled', 'disabled', 'onlywebhook'] as const;
/** Something started that shutdown stops (in reverse order), named for the log when it overruns. */
interface Cleanup {
  step: string;
  run: () => unknown;
}
/** how long one shutdown step (a server's close, a watch's stop) may take before it is left (ms) */
const SHUTDOWN_STEP_MS = 3000;
type WebhookMode = (typeof WEBHOOK_MODES)[number];

function positive(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1) throw new InvalidArgumentError('expected a positive integer.');
  return n;
}

/** Registers `controller`. */
export function registerController(program: Command): void {
  program
    .command('controller')
    .description("run MetalLB's controller against the cluster: allocate LoadBalancer addresses, write Service status, events, pool status")
    .option('--kubeconfig <path>', 'kubeconfig file (default: KUBECONFIG, ~/.kube/config, in-cluster service account)')
    .option('--context <name>', 'kubeconfig context to use (default: its current-context)')
    .option('--namespace <ns>', `namespace of MetalLB's CRs (default: METALLB_NAMESPACE, the pod's namespace, "${DEFAULT_METALLB_NAMESPACE}")`)
    .option('--lb-class <class>', 'handle only Services with this spec.loadBalancerClass (default: only Services without one)', '')
    .option('--metrics-bind-address <addr>', 'address of the /metrics, /healthz and /readyz server', '0.0.0.0')
    .option('--metrics-port <port>', 'port of the /metrics, /healthz and /readyz server (default 7472; 0 picks a free one)', portNumber)
    .addOption(new Option('--port <port>', "MetalLB's name for --metrics-port").argParser(portNumber).hideHelp())
    .addOption(new Option('--log-level <level>', 'log level').choices(LOG_LEVELS).default('info'))
    .option('--pod-name <name>', "this controller's pod (default: METALLB_POD_NAME): owner of the ConfigurationState `controller` (events carry no reporting instance, as MetalLB's)")
    .option('--ml-secret-name <name>', 'create the memberlist Secret of this name in --namespace at start-up unless it exists (default: METALLB_ML_SECRET_NAME; none: no Secret)')
    .option('--deployment <name>', "the controller's Deployment in --namespace, owner of the memberlist Secret (default: METALLB_DEPLOYMENT)")
    .addOption(new Option('--write-concurrency <n>', 'Service status writes in flight at once').argParser(positive).default(16))
    .addOption(
      new Option('--webhook-mode <mode>', "serve MetalLB's admission webhooks: enabled, disabled, or onlywebhook (webhooks only, no allocation); MetalLB's default is enabled, deploy/controller.yaml sets it")
        .choices(WEBHOOK_MODES)
        .default('disabled'),
    )
    .option('--webhook-secret <name>', 'Secret of --namespace holding the webhook CA and serving certificate (the rotator writes it)', 'metallb-webhook-cert')
    .option('--cert-service-name <name>', "the webhook Service's name: the certificate is for <name>.<namespace>.svc", 'metallb-webhook-service')
    .option('--disable-cert-rotation', 'do not generate and rotate the webhook certificate: serve tls.crt and tls.key of --cert-dir (e.g. from cert-manager)')
    .option('--cert-dir <dir>', 'where the webhook certificate is mounted (read with --disable-cert-rotation only)', '/tmp/k8s-webhook-server/serving-certs')
    .option('--webhook-port <port>', 'port of the webhook server (MetalLB: 9443, fixed; 0 picks a free one)', portNumber, 9443)
    .option('--webhook-bind-address <addr>', 'address of the webhook server (default: every address)', '')
    .option('--tls-min-version <version>', 'minimum TLS version of the webhook server: VersionTLS12 or VersionTLS13 (default VersionTLS13)', '')
    .option('--tls-cipher-suites <list>', 'comma-separated TLS 1.2 cipher suites of the webhook server, Go names (default: Node.js defaults)', '')
    .option('--tls-curve-preferences <list>', 'comma-separated numeric Go CurveIDs of the webhook server (23 P-256, 24 P-384, 25 P-521, 29 X25519, 4588 X25519MLKEM768)', '')
    .option('--webhook-http2', "accepted for MetalLB's manifests: the webhook server speaks HTTP/1.1 only (MetalLB's default)")
    .addOption(new Option('--metrics-cert-dir <dir>', "MetalLB's HTTPS metrics: not supported (metallb-ts serves /metrics over plain HTTP)").hideHelp())
    .addOption(new Option('--pprof-bind-address <addr>', "MetalLB's Go pprof endpoint: not supported").hideHelp())
    .action(async (flags: ControllerFlags) => {
      process.exitCode = await runController(flags);
      // Shut down: a request still waiting on the API server (a watch, a list) must not keep the
      // process alive past the pod's grace period. stdout/stderr are synchronous here (files, pipes).
      process.exit();
    });
}

/** The TLS options of the webhook server from the flags; UserError (exit 2) with MetalLB's message. */
async function webhookTls(flags: ControllerFlags) {
  const { webhookTlsOptions, TlsFlagError } = await import('../controller/webhook-tls.ts');
  try {
    return webhookTlsOptions({ minVersion: flags.tlsMinVersion, cipherSuites: flags.tlsCipherSuites, curvePreferences: flags.tlsCurvePreferences });
  } catch (err) {
    if (err instanceof TlsFlagError) throw new UserError(`failed to parse TLS configuration: ${err.message}`);
    throw err;
  }
}

/** Runs the controller until SIGINT/SIGTERM; resolves to the exit status (0), throws UserError for 2/3. */
async function runController(flags: ControllerFlags): Promise<number> {
  if (flags.metricsCertDir) {
    throw new UserError('--metrics-cert-dir: not supported: metallb-ts serves /metrics over plain HTTP (MetalLB serves it over HTTPS with authentication); put a TLS proxy in front if you need it');
  }
  if (flags.pprofBindAddress) throw new UserError('--pprof-bind-address: not supported: metallb-ts is no Go program (profile it with node --cpu-prof or --inspect)');
  const webhooks = flags.webhookMode !== 'disabled';
  const webhookOnly = flags.webhookMode === 'onlywebhook';
  const tls = webhooks ? await webhookTls(flags) : null;
  // The Kubernetes client and the runtime load here, not at start-up: every other command
  // (explain, validate, completion...) would otherwise pay about a second for them.
  const [
    { KubeClient, loadClusterAccess, serverOf, apiError },
    { ClusterStateWatcher },
    { ControllerLoop },
    { ControllerMetrics, startHttpServer },
    { KubeWriter },
    { createMlSecret },
    { ConfigurationStateWriter },
  ] = await Promise.all([
    import('../kube/client.ts'),
    import('../kube/live.ts'),
    import('../controller/loop.ts'),
    import('../controller/metrics.ts'),
    import('../controller/writer.ts'),
    import('../controller/memberlist-secret.ts'),
    import('../kube/configuration-state.ts'),
  ]);
  const log = jsonLogger({ level: flags.logLevel });
  const main = log.with({ caller: 'main.go' });
  const namespace = metallbNamespaceOf(flags.namespace);
  // Without client-node for a service account or a plain kubeconfig (src/kube/access.ts).
  const kc = loadClusterAccess({
    ...(flags.kubeconfig !== undefined ? { kubeconfig: flags.kubeconfig } : {}),
    ...(flags.context !== undefined ? { context: flags.context } : {}),
  });
  const server = serverOf(kc);
  main.info({ version: VERSION, msg: `MetalLB controller starting (metallb-ts ${VERSION})` });
  if (webhooks) main.info({ op: 'startup', 'tls-min-version': flags.tlsMinVersion, 'tls-cipher-suites': flags.tlsCipherSuites, 'tls-curve-preferences': flags.tlsCurvePreferences });
  main.info({ op: 'startup', namespace, server, lbClass: flags.lbClass, webhookMode: flags.webhookMode, msg: 'watching the cluster' });
  if (flags.webhookHttp2) main.warn({ op: 'startup', msg: '--webhook-http2 has no effect: the webhook server speaks HTTP/1.1 only' });

  const metrics = new ControllerMetrics();
  let loop: ControllerLoop | undefined;
  let writer: KubeWriter | undefined;
  let webhookServing = false;
  const host = flags.metricsBindAddress;
  const port = flags.metricsPort ?? flags.port ?? 7472;
  let http: RunningHttpServer;
  try {
    http = await startHttpServer(metrics, { host, port, ready: () => (webhookOnly ? webhookServing : (loop?.ready ?? false)) });
  } catch (err) {
    throw new UserError(`cannot serve metrics on ${host}:${port}: ${(err as Error).message}`);
  }
  main.info({ op: 'startup', address: `${host}:${http.port}`, msg: 'serving /metrics, /healthz, /readyz' });

  const api = new KubeClient(kc, { maxSockets: flags.writeConcurrency + 4, userAgent: 'metallb-ts-controller' });
  // Everything started so far, stopped in reverse order on a failed start-up and at shutdown.
  const cleanups: Cleanup[] = [
    { step: 'API client', run: () => api.close() },
    { step: 'metrics server', run: () => http.close() },
  ];
  // Each shutdown step gets SHUTDOWN_STEP_MS: a step that hangs (a connection the API server
  // keeps open, a request stuck on a loaded server) is logged and left, so SIGTERM always ends the
  // process well inside a kubelet's 30 s grace period.
  const bounded = async (step: string, fn: () => unknown): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => {
      timer = setTimeout(() => r('late'), SHUTDOWN_STEP_MS);
    });
    const r = await Promise.race([
      Promise.resolve()
        .then(fn)
        .then(
          () => 'done' as const,
          () => 'done' as const,
        ),
      late,
    ]);
    clearTimeout(timer);
    if (r === 'late') main.warn({ op: 'shutdown', step, ms: SHUTDOWN_STEP_MS, msg: 'a shutdown step did not finish in time, going on' });
  };
  const cleanUp = async (): Promise<void> => {
    for (const c of cleanups.splice(0).reverse()) await bounded(c.step, c.run);
  };

  try {
    // MetalLB's main.go: the memberlist Secret before anything is watched; failing exits.
    const mlSecretName = flags.mlSecretName ?? process.env.METALLB_ML_SECRET_NAME ?? '';
    if (mlSecretName) {
      const deploymentName = flags.deployment ?? process.env.METALLB_DEPLOYMENT ?? '';
      try {
        await createMlSecret(api, { namespace, secretName: mlSecretName, deploymentName, logger: log });
      } catch (err) {
        main.error({ op: 'startup', error: err instanceof Error ? err.message : String(err), msg: 'failed to create memberlist secret' });
        throw err;
      }
    } else if (flags.deployment) {
      main.warn({ op: 'startup', msg: '--deployment only names the owner of the memberlist Secret: ignored without --ml-secret-name', deployment: flags.deployment });
    }

    // MetalLB's k8s.New: its own Pod, the owner of the ConfigurationState; failing exits.
    const podName = flags.podName ?? process.env.METALLB_POD_NAME ?? '';
    let owner: OwnerRef | null = null;
    if (podName) {
      let pod: { metadata?: { uid?: string } };
      try {
        pod = await api.request({ path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(podName)}`, timeoutMs: 30_000 });
      } catch (err) {
        main.error({ op: 'startup', error: err instanceof Error ? err.message : String(err), msg: 'unable to get own pod for owner references' });
        throw apiError(err, { verb: 'get', resource: `v1 pods ${namespace}/${podName} (this controller's Pod, --pod-name)`, server });
      }
      owner = { apiVersion: 'v1', kind: 'Pod', name: podName, uid: String(pod.metadata?.uid ?? '') };
    } else if (!webhookOnly) {
      main.info({ op: 'startup', msg: 'no --pod-name: the ConfigurationState controller gets no owner reference' });
    }

    if (webhooks)
      await startWebhooks(flags, {
        api,
        kc,
        namespace,
        log,
        tls: tls!,
        cleanups,
        serving: () => {
          webhookServing = true;
        },
      });

    let stopping: Promise<void> | undefined;
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => {
      resolveDone = r;
    });
    let watcher: InstanceType<typeof ClusterStateWatcher> | undefined;
    const shutdown = (signal: string): void => {
      if (stopping) return;
      main.info({ op: 'shutdown', signal, msg: 'stopping: finishing the writes in flight' });
      stopping = (async () => {
        watcher?.stop();
        await bounded('reconcilers', () => loop?.stop());
        await bounded('events', () => writer?.closeEvents());
        await cleanUp();
        main.info({ op: 'shutdown', msg: 'controller stopped' });
        resolveDone();
      })();
    };
    const onSignal = (sig: NodeJS.Signals): void => shutdown(sig);
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    try {
      if (webhookOnly) {
        // MetalLB's onlywebhook: no listeners (no Service or pool reconcilers), only the webhooks.
        main.info({ op: 'startup', msg: 'webhook mode onlywebhook: serving the webhooks only, no allocation' });
        await done;
        return 0;
      }
      watcher = new ClusterStateWatcher(kc, {
        metallbNamespace: namespace,
        kinds: ['services', 'namespaces', 'ipAddressPools', 'communities'],
        trim: true, // no managedFields in the caches (issue #14)
        log: (e) => {
          const { level, ...rest } = e;
          (level === 'error' ? main.error : main.info)(rest);
        },
      });
      // metallb_k8s_client_sync_age_seconds: how long the current API server outage has lasted (0: none)
      (await import('../kube/watch-metrics.ts')).registerSyncMetrics(metrics.registry, watcher);
      try {
        await watcher.start();
      } catch (err) {
        if (stopping) {
          await stopping;
          return 0;
        }
        throw err;
      }
      if (stopping) {
        await stopping;
        return 0;
      }
      main.info({ op: 'startup', msg: 'caches synced, starting the reconcilers' });
      // As MetalLB's: controller-runtime's recorder for "metallb-controller", no source host, so
      // reportingComponent metallb-controller and an empty reportingInstance.
      writer = new KubeWriter(api, {
        component: 'metallb-controller',
        onEventError: (err, ev, what) =>
          main.error({
            op: 'recordEvent',
            reason: ev.reason,
            service: `${ev.involvedObject.namespace}/${ev.involvedObject.name}`,
            error: err instanceof Error ? err.message : String(err),
            msg: what === 'queue' ? 'unable to record event: too many queued events, dropped event' : 'unable to write event',
          }),
      });
      // MetalLB's PoolReconciler reportCondition + ConfigurationStateReconciler: ConfigurationState `controller`.
      const configState = new ConfigurationStateWriter({ api, namespace, component: 'controller', type: 'poolReconcilerValid', owner, log });
      cleanups.push({ step: 'ConfigurationState writer', run: () => configState.stop() });
      loop = new ControllerLoop(watcher, writer, {
        metallbNamespace: namespace,
        loadBalancerClass: flags.lbClass,
        logger: log,
        metrics,
        writeConcurrency: flags.writeConcurrency,
        onConfigResult: (error) => configState.report(error),
      });
      loop.start();
      await done;
      return 0;
    } finally {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    }
  } catch (err) {
    await cleanUp();
    throw err;
  }
}

/** What startWebhooks needs from the command. */
interface WebhookContext {
  api: import('../kube/client.ts').KubeClient;
  kc: import('../kube/access.ts').ClusterAccess;
  namespace: string;
  log: import('../runtime/log.ts').Logger;
  tls: import('../controller/webhook-tls.ts').WebhookTlsOptions;
  /** where to register what must be stopped at shutdown */
  cleanups: Cleanup[];
  /** called once the server listens */
  serving: () => void;
}

/**
 * MetalLB's enableCertRotation + enableWebhook: the certificate first (the rotator's first
 * refresh, or the files of --cert-dir), then the HTTPS server with every webhook and /convert.
 * The whole-cluster validation runs in the BGP mode of METALLB_BGP_TYPE (default native, as
 * MetalLB's controller).
 */
async function startWebhooks(flags: ControllerFlags, ctx: WebhookContext): Promise<void> {
  const [{ WebhookServer, kubeStoredLister }, { CertRotator, CertDirSource, WEBHOOK_CONFIGURATION_NAME, BGPPEER_CRD_NAME }, { clusterValidation }] = await Promise.all([
    import('../controller/webhook-server.ts'),
    import('../controller/webhook-rotator.ts'),
    import('../core/config/webhook.ts'),
  ]);
  const { api, kc, namespace, log, tls } = ctx;
  const main = log.with({ caller: 'main.go' });
  const bgpType = process.env.METALLB_BGP_TYPE || 'native';
  let server: InstanceType<typeof WebhookServer> | undefined;
  let keyPair: import('../controller/webhook-cert.ts').KeyPairPem;
  const onKeyPair = (kp: typeof keyPair): void => {
    keyPair = kp;
    server?.setKeyPair(kp);
  };
  if (flags.disableCertRotation) {
    const source = new CertDirSource({ dir: flags.certDir, onKeyPair, log: log.with({ caller: 'certwatcher.go' }) });
    keyPair = source.start();
    ctx.cleanups.push({ step: 'certificate directory watch', run: () => source.stop() });
    main.info({ op: 'startup', certDir: flags.certDir, msg: 'cert rotation disabled: serving the certificate of --cert-dir' });
  } else {
    const rotator = new CertRotator({
      api,
      kubeConfig: kc,
      namespace,
      secretName: flags.webhookSecret,
      dnsName: `${flags.certServiceName}.${namespace}.svc`,
      webhookConfigurationName: WEBHOOK_CONFIGURATION_NAME,
      conversionCRDName: BGPPEER_CRD_NAME,
      onKeyPair,
      log: log.with({ caller: 'rotator.go' }),
    });
    ctx.cleanups.push({ step: 'certificate rotator', run: () => rotator.stop() });
    keyPair = await rotator.start();
  }
  server = new WebhookServer({
    host: flags.webhookBindAddress,
    port: flags.webhookPort,
    tls,
    keyPair: keyPair!,
    namespace,
    validation: clusterValidation(bgpType),
    list: kubeStoredLister(api, namespace),
    log,
  });
  let port: number;
  try {
    port = await server.listen();
  } catch (err) {
    throw new UserError(`cannot serve the webhooks on ${flags.webhookBindAddress || '*'}:${flags.webhookPort}: ${(err as Error).message}`);
  }
  ctx.cleanups.push({ step: 'webhook server', run: () => server!.close() });
  ctx.serving();
  main.info({ op: 'startup', action: 'webhooks enabled', address: `${flags.webhookBindAddress || '*'}:${port}`, bgpType, msg: 'serving the admission webhooks and /convert over HTTPS' });
}
