/**
 * `metallb-ts controller`: MetalLB v0.16.1's controller. Watches Services, IPAddressPools,
 * Communities and Namespaces; gives each LoadBalancer Service its addresses through the core
 * (status.loadBalancer.ingress via the status subresource, the `metallb.io/ip-allocated-from-pool`
 * annotation, MetalLB's Events), keeps the IPAddressPool status counters, and serves `/metrics`,
 * `/healthz` and `/readyz`. With `--ml-secret-name` (env METALLB_ML_SECRET_NAME) it first creates
 * the speakers' memberlist Secret, owned by its `--deployment` (env METALLB_DEPLOYMENT), unless it
 * exists (src/controller/memberlist-secret.ts). Logs are JSON lines on stdout, as MetalLB's. Runs
 * until SIGINT/SIGTERM, then finishes the writes in flight and exits 0. Exit 2 for bad flags or
 * kubeconfig or a missing Deployment, 3 when the cluster cannot be reached or refuses the watches
 * or the memberlist Secret.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { UserError } from '../core/errors.ts';
import { metallbNamespaceOf, portNumber } from './runtime-options.ts';
import { DEFAULT_METALLB_NAMESPACE } from '../core/kube.ts';
import { jsonLogger, LOG_LEVELS, type LogLevel } from '../log.ts';
import type { ControllerLoop } from '../controller/loop.ts';
import type { KubeWriter } from '../controller/writer.ts';
import { VERSION } from './index.ts';


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
}


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
    .option('--pod-name <name>', "this controller's pod (default: METALLB_POD_NAME); accepted as MetalLB's flag: events carry no reporting instance, as MetalLB's")
    .option('--ml-secret-name <name>', 'create the memberlist Secret of this name in --namespace at start-up unless it exists (default: METALLB_ML_SECRET_NAME; none: no Secret)')
    .option('--deployment <name>', "the controller's Deployment in --namespace, owner of the memberlist Secret (default: METALLB_DEPLOYMENT)")
    .addOption(new Option('--write-concurrency <n>', 'Service status writes in flight at once').argParser(positive).default(16))
    .action(async (flags: ControllerFlags) => {
      process.exitCode = await runController(flags);
      // Shut down: a request still waiting on the API server (a watch, a list) must not keep the
      // process alive past the pod's grace period. stdout/stderr are synchronous here (files, pipes).
      process.exit();
    });
}

/** Runs the controller until SIGINT/SIGTERM; resolves to the exit status (0), throws UserError for 2/3. */
async function runController(flags: ControllerFlags): Promise<number> {
  // The Kubernetes client and the runtime load here, not at start-up: every other command
  // (explain, validate, completion...) would otherwise pay about a second for them.
  const [{ KubeClient, loadKubeConfig, serverOf }, { ClusterStateWatcher }, { ControllerLoop }, { ControllerMetrics, startHttpServer }, { KubeWriter }, { createMlSecret }] =
    await Promise.all([import('../kube/client.ts'), import('../kube/live.ts'), import('../controller/loop.ts'),
      import('../controller/metrics.ts'), import('../controller/writer.ts'), import('../controller/memberlist-secret.ts')]);
  const log = jsonLogger({ level: flags.logLevel });
  const main = log.with({ caller: 'main.go' });
  const namespace = metallbNamespaceOf(flags.namespace);
  const kc = loadKubeConfig({
    ...(flags.kubeconfig !== undefined ? { kubeconfig: flags.kubeconfig } : {}),
    ...(flags.context !== undefined ? { context: flags.context } : {}),
  });
  const server = serverOf(kc);
  main.info({ version: VERSION, msg: `MetalLB controller starting (metallb-ts ${VERSION})` });
  main.info({ op: 'startup', namespace, server, lbClass: flags.lbClass, msg: 'watching the cluster' });

  const metrics = new ControllerMetrics();
  let loop: ControllerLoop | undefined;
  let writer: KubeWriter | undefined;
  const host = flags.metricsBindAddress;
  const port = flags.metricsPort ?? flags.port ?? 7472;
  let http;
  try {
    http = await startHttpServer(metrics, { host, port, ready: () => loop?.ready ?? false });
  } catch (err) {
    throw new UserError(`cannot serve metrics on ${host}:${port}: ${(err as Error).message}`);
  }
  main.info({ op: 'startup', address: `${host}:${http.port}`, msg: 'serving /metrics, /healthz, /readyz' });

  const watcher = new ClusterStateWatcher(kc, {
    metallbNamespace: namespace,
    kinds: ['services', 'namespaces', 'ipAddressPools', 'communities'],
    log: (e) => {
      const { level, ...rest } = e;
      (level === 'error' ? main.error : main.info)(rest);
    },
  });
  const api = new KubeClient(kc, { maxSockets: flags.writeConcurrency + 4, userAgent: 'metallb-ts-controller' });

  // MetalLB's main.go: the memberlist Secret before anything is watched; failing exits.
  const mlSecretName = flags.mlSecretName ?? process.env.METALLB_ML_SECRET_NAME ?? '';
  if (mlSecretName) {
    const deploymentName = flags.deployment ?? process.env.METALLB_DEPLOYMENT ?? '';
    try {
      await createMlSecret(api, { namespace, secretName: mlSecretName, deploymentName, logger: log });
    } catch (err) {
      main.error({ op: 'startup', error: err instanceof Error ? err.message : String(err), msg: 'failed to create memberlist secret' });
      await http.close();
      api.close();
      throw err;
    }
  } else if (flags.deployment) {
    main.warn({ op: 'startup', msg: '--deployment only names the owner of the memberlist Secret: ignored without --ml-secret-name', deployment: flags.deployment });
  }

  let stopping: Promise<void> | undefined;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => { resolveDone = r; });
  const shutdown = (signal: string): void => {
    if (stopping) return;
    main.info({ op: 'shutdown', signal, msg: 'stopping: finishing the writes in flight' });
    stopping = (async () => {
      watcher.stop();
      await loop?.stop();
      await writer?.closeEvents();
      await http.close();
      api.close();
      main.info({ op: 'shutdown', msg: 'controller stopped' });
      resolveDone();
    })();
  };
  const onSignal = (sig: NodeJS.Signals): void => shutdown(sig);
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    try {
      await watcher.start();
    } catch (err) {
      if (stopping) {
        await stopping;
        return 0;
      }
      await http.close();
      api.close();
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
      onEventError: (err, ev, what) => main.error({
        op: 'recordEvent', reason: ev.reason, service: `${ev.involvedObject.namespace}/${ev.involvedObject.name}`,
        error: err instanceof Error ? err.message : String(err), msg: what === 'queue' ? 'unable to record event: too many queued events, dropped event' : 'unable to write event',
      }),
    });
    loop = new ControllerLoop(watcher, writer, {
      metallbNamespace: namespace,
      loadBalancerClass: flags.lbClass,
      logger: log,
      metrics,
      writeConcurrency: flags.writeConcurrency,
    });
    loop.start();
    await done;
    return 0;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}
