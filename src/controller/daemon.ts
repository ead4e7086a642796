/**
 * The controller daemon's composition root (`metallb-ts controller`; src/commands/controller.ts
 * parses its flags and calls runController): MetalLB v0.16.1's controller. Watches Services,
 * IPAddressPools, Communities and Namespaces; gives each LoadBalancer Service its addresses through
 * the core (status.loadBalancer.ingress via the status subresource, the
 * `metallb.io/ip-allocated-from-pool` annotation, MetalLB's Events), keeps the IPAddressPool status
 * counters, and serves `/metrics`, `/healthz` and `/readyz`. With a memberlist Secret name it first
 * creates the speakers' memberlist Secret, owned by its Deployment, unless it exists
 * (memberlist-secret.ts). Reports whether its configuration loaded in the ConfigurationState
 * `controller` (condition poolReconcilerValid), owned by its Pod. With webhook mode `enabled` or
 * `onlywebhook` it also serves MetalLB's admission webhooks and BGPPeer conversion over HTTPS
 * (webhook-server.ts) with a certificate it manages in a Secret (webhook-rotator.ts), or, with cert
 * rotation disabled, one mounted in a directory. Logs are JSON lines on stdout, as MetalLB's.
 */
import { UserError } from '../core/errors.ts';
import { jsonLogger, type LogLevel } from '../runtime/log.ts';
import type { ControllerLoop } from './loop.ts';
import type { KubeWriter } from './writer.ts';
import type { RunningHttpServer } from './metrics.ts';
import { VERSION } from '../runtime/version.ts';
import type { OwnerRef } from '../core/status.ts';

/** MetalLB's `--webhook-mode` values: serve the webhooks and allocate, allocate only, webhooks only. */
export type WebhookMode = 'enabled' | 'disabled' | 'onlywebhook';

/**
 * What the controller runs with: the `controller` command's flags (commander's camel-cased names),
 * the namespace already resolved (flag, METALLB_NAMESPACE, the pod's namespace, `metallb-system`).
 */
export interface ControllerOptions {
  kubeconfig?: string;
  context?: string;
  /** the namespace MetalLB runs in and reads its CRs from */
  namespace: string;
  lbClass: string;
  metricsBindAddress: string;
  metricsPort?: number;
  /** MetalLB's name for metricsPort (used when metricsPort is absent; default 7472) */
  port?: number;
  logLevel: LogLevel;
  /** this controller's Pod, owner of the ConfigurationState (default: METALLB_POD_NAME) */
  podName?: string;
  /** Service status writes in flight at once */
  writeConcurrency: number;
  /** the memberlist Secret to create (default: METALLB_ML_SECRET_NAME; none: no Secret) */
  mlSecretName?: string;
  /** the controller's Deployment, owner of the memberlist Secret (default: METALLB_DEPLOYMENT) */
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
  /** MetalLB's HTTPS metrics: refused (UserError) when set */
  metricsCertDir?: string;
  /** MetalLB's Go pprof endpoint: refused (UserError) when set */
  pprofBindAddress?: string;
}

/** Something started that shutdown stops (in reverse order), named for the log when it overruns. */
interface Cleanup {
  step: string;
  run: () => unknown;
}
/**
 * Requests of the controller's API client that may be in flight beside its Service status writes:
 * the Event recorder's one (it sends one at a time) and one more (an IPAddressPool status, the
 * ConfigurationState, a webhook's read); further ones wait for a free connection of the pool.
 */
const OTHER_REQUESTS_IN_FLIGHT = 2;

/** how long one shutdown step (a server's close, a watch's stop) may take before it is left (ms) */
const SHUTDOWN_STEP_MS = 3000;

/** The TLS options of the webhook server from the options; UserError (exit 2) with MetalLB's message. */
async function webhookTls(options: ControllerOptions) {
  const { webhookTlsOptions, TlsFlagError } = await import('./webhook-tls.ts');
  try {
    return webhookTlsOptions({ minVersion: options.tlsMinVersion, cipherSuites: options.tlsCipherSuites, curvePreferences: options.tlsCurvePreferences });
  } catch (err) {
    if (err instanceof TlsFlagError) throw new UserError(`failed to parse TLS configuration: ${err.message}`);
    throw err;
  }
}

/**
 * Runs the controller until SIGINT/SIGTERM, then finishes the writes in flight (each shutdown step
 * bounded to 3 s) and resolves to the exit status 0. In MetalLB's order: the memberlist Secret, the
 * own Pod, the webhooks, then the watches and the reconcilers.
 * @throws UserError (exit 2) for unsupported options, bad TLS options, a missing Deployment or
 *   webhook certificate files, a port that cannot be served; UserError/ClusterUnreachableError
 *   (exit 3) when the cluster cannot be reached or refuses the watches, the memberlist Secret or the
 *   webhook certificate Secret.
 */
export async function runController(options: ControllerOptions): Promise<number> {
  if (options.metricsCertDir) {
    throw new UserError('--metrics-cert-dir: not supported: metallb-ts serves /metrics over plain HTTP (MetalLB serves it over HTTPS with authentication); put a TLS proxy in front if you need it');
  }
  if (options.pprofBindAddress) throw new UserError('--pprof-bind-address: not supported: metallb-ts is no Go program (profile it with node --cpu-prof or --inspect)');
  const webhooks = options.webhookMode !== 'disabled';
  const webhookOnly = options.webhookMode === 'onlywebhook';
  const tls = webhooks ? await webhookTls(options) : null;
  // The Kubernetes client and the runtime load here, not at start-up: every other command
  // (explain, validate, completion...) would otherwise pay about a second for them.
  const [
    { KubeClient, loadClusterAccess, serverOf, apiError },
    { ClusterStateWatcher },
    { ControllerLoop, writesAllowed },
    { ControllerMetrics, startHttpServer },
    { KubeWriter },
    { createMlSecret },
    { ConfigurationStateWriter },
  ] = await Promise.all([
    import('../kube/client.ts'),
    import('../kube/live.ts'),
    import('./loop.ts'),
    import('./metrics.ts'),
    import('./writer.ts'),
    import('./memberlist-secret.ts'),
    import('../kube/configuration-state.ts'),
  ]);
  const log = jsonLogger({ level: options.logLevel });
  const main = log.with({ caller: 'main.go' });
  const namespace = options.namespace;
  // Without client-node for a service account or a plain kubeconfig (src/kube/access.ts).
  const kc = loadClusterAccess({
    ...(options.kubeconfig !== undefined ? { kubeconfig: options.kubeconfig } : {}),
    ...(options.context !== undefined ? { context: options.context } : {}),
  });
  const server = serverOf(kc);
  main.info({ version: VERSION, msg: `MetalLB controller starting (metallb-ts ${VERSION})` });
  if (webhooks) main.info({ op: 'startup', 'tls-min-version': options.tlsMinVersion, 'tls-cipher-suites': options.tlsCipherSuites, 'tls-curve-preferences': options.tlsCurvePreferences });
  main.info({ op: 'startup', namespace, server, lbClass: options.lbClass, webhookMode: options.webhookMode, msg: 'watching the cluster' });
  if (options.webhookHttp2) main.warn({ op: 'startup', msg: '--webhook-http2 has no effect: the webhook server speaks HTTP/1.1 only' });

  const metrics = new ControllerMetrics();
  let loop: ControllerLoop | undefined;
  let writer: KubeWriter | undefined;
  let webhookServing = false;
  const host = options.metricsBindAddress;
  const port = options.metricsPort ?? options.port ?? 7472;
  let http: RunningHttpServer;
  try {
    http = await startHttpServer(metrics, { host, port, ready: () => (webhookOnly ? webhookServing : (loop?.ready ?? false)) });
  } catch (err) {
    throw new UserError(`cannot serve metrics on ${host}:${port}: ${(err as Error).message}`);
  }
  main.info({ op: 'startup', address: `${host}:${http.port}`, msg: 'serving /metrics, /healthz, /readyz' });

  // Its pool follows the Service writes allowed in flight (loop.ts writesAllowed, growing to
  // --write-concurrency) plus OTHER_REQUESTS_IN_FLIGHT, so that a small cluster opens
  // no more TLS connections than it uses at once (issue #14). The watches have their own.
  const api = new KubeClient(kc, { maxSockets: writesAllowed(0, options.writeConcurrency) + OTHER_REQUESTS_IN_FLIGHT, userAgent: 'metallb-ts-controller' });
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
    const mlSecretName = options.mlSecretName ?? process.env.METALLB_ML_SECRET_NAME ?? '';
    if (mlSecretName) {
      const deploymentName = options.deployment ?? process.env.METALLB_DEPLOYMENT ?? '';
      try {
        await createMlSecret(api, { namespace, secretName: mlSecretName, deploymentName, logger: log });
      } catch (err) {
        main.error({ op: 'startup', error: err instanceof Error ? err.message : String(err), msg: 'failed to create memberlist secret' });
        throw err;
      }
    } else if (options.deployment) {
      main.warn({ op: 'startup', msg: '--deployment only names the owner of the memberlist Secret: ignored without --ml-secret-name', deployment: options.deployment });
    }

    // MetalLB's k8s.New: its own Pod, the owner of the ConfigurationState; failing exits.
    const podName = options.podName ?? process.env.METALLB_POD_NAME ?? '';
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
      await startWebhooks(options, {
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
        loadBalancerClass: options.lbClass,
        logger: log,
        metrics,
        writeConcurrency: options.writeConcurrency,
        onConfigResult: (error) => configState.report(error),
        onWriteLimit: (limit) => api.setMaxSockets(limit + OTHER_REQUESTS_IN_FLIGHT),
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

/** What startWebhooks needs from runController. */
interface WebhookContext {
  api: import('../kube/client.ts').KubeClient;
  kc: import('../kube/access.ts').ClusterAccess;
  namespace: string;
  log: import('../runtime/log.ts').Logger;
  tls: import('./webhook-tls.ts').WebhookTlsOptions;
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
async function startWebhooks(options: ControllerOptions, ctx: WebhookContext): Promise<void> {
  const [{ WebhookServer, kubeStoredLister }, { CertRotator, CertDirSource, WEBHOOK_CONFIGURATION_NAME, BGPPEER_CRD_NAME }, { clusterValidation }] = await Promise.all([
    import('./webhook-server.ts'),
    import('./webhook-rotator.ts'),
    import('../core/config/webhook.ts'),
  ]);
  const { api, kc, namespace, log, tls } = ctx;
  const main = log.with({ caller: 'main.go' });
  const bgpType = process.env.METALLB_BGP_TYPE || 'native';
  let server: InstanceType<typeof WebhookServer> | undefined;
  let keyPair: import('./webhook-cert.ts').KeyPairPem;
  const onKeyPair = (kp: typeof keyPair): void => {
    keyPair = kp;
    server?.setKeyPair(kp);
  };
  if (options.disableCertRotation) {
    const source = new CertDirSource({ dir: options.certDir, onKeyPair, log: log.with({ caller: 'certwatcher.go' }) });
    keyPair = source.start();
    ctx.cleanups.push({ step: 'certificate directory watch', run: () => source.stop() });
    main.info({ op: 'startup', certDir: options.certDir, msg: 'cert rotation disabled: serving the certificate of --cert-dir' });
  } else {
    const rotator = new CertRotator({
      api,
      kubeConfig: kc,
      namespace,
      secretName: options.webhookSecret,
      dnsName: `${options.certServiceName}.${namespace}.svc`,
      webhookConfigurationName: WEBHOOK_CONFIGURATION_NAME,
      conversionCRDName: BGPPEER_CRD_NAME,
      onKeyPair,
      log: log.with({ caller: 'rotator.go' }),
    });
    ctx.cleanups.push({ step: 'certificate rotator', run: () => rotator.stop() });
    keyPair = await rotator.start();
  }
  server = new WebhookServer({
    host: options.webhookBindAddress,
    port: options.webhookPort,
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
    throw new UserError(`cannot serve the webhooks on ${options.webhookBindAddress || '*'}:${options.webhookPort}: ${(err as Error).message}`);
  }
  ctx.cleanups.push({ step: 'webhook server', run: () => server!.close() });
  ctx.serving();
  main.info({ op: 'startup', action: 'webhooks enabled', address: `${options.webhookBindAddress || '*'}:${port}`, bgpType, msg: 'serving the admission webhooks and /convert over HTTPS' });
}
