/**
 * `metallb-ts controller`: parses the flags and makes one call, runController of
 * src/controller/daemon.ts (MetalLB v0.16.1's controller: allocation, Service status, Events, pool
 * status, `/metrics`, the memberlist Secret with `--ml-secret-name`, the ConfigurationState owned by
 * `--pod-name`, the admission webhooks with `--webhook-mode enabled|onlywebhook`). Runs until
 * SIGINT/SIGTERM, then finishes the writes in flight and exits 0. Exit 2 for bad flags or
 * kubeconfig, a missing Deployment or webhook certificate files, 3 when the cluster cannot be
 * reached or refuses the watches, the memberlist Secret or the webhook certificate Secret.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { metallbNamespaceOf, portNumber } from './runtime-options.ts';
import { DEFAULT_METALLB_NAMESPACE } from '../core/kube.ts';
import { LOG_LEVELS } from '../runtime/log.ts';
import type { ControllerOptions, WebhookMode } from '../controller/daemon.ts';

/** Parsed flags (commander's camel-cased names): the daemon's options, the namespace not resolved yet. */
type ControllerFlags = Omit<ControllerOptions, 'namespace'> & { namespace?: string };

/** MetalLB's `--webhook-mode` values. */
const WEBHOOK_MODES = ['enabled', 'disabled', 'onlywebhook'] as const satisfies readonly WebhookMode[];

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
    .option('--metrics-bind-address <addr>', 'address of the /metrics, /healthz and /readyz server; 0.0.0.0 and :: mean every IPv4 and IPv6 address, as in MetalLB', '0.0.0.0')
    .option('--metrics-port <port>', 'port of the /metrics, /healthz and /readyz server (default 7472; 0 picks a free one)', portNumber)
    .addOption(new Option('--port <port>', "MetalLB's name for --metrics-port").argParser(portNumber).hideHelp())
    .addOption(new Option('--log-level <level>', 'log level').choices(LOG_LEVELS).default('info'))
    .option('--pod-name <name>', "this controller's pod (default: METALLB_POD_NAME): owner of the ConfigurationState `controller` (events carry no reporting instance, as MetalLB's)")
    .option('--ml-secret-name <name>', 'create the memberlist Secret of this name in --namespace at start-up unless it exists (default: METALLB_ML_SECRET_NAME; none: no Secret)')
    .option('--deployment <name>', "the controller's Deployment in --namespace, owner of the memberlist Secret (default: METALLB_DEPLOYMENT)")
    .addOption(new Option('--write-concurrency <n>', 'most Service status writes in flight at once (from 2, one more per 16 done)').argParser(positive).default(16))
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
      // The daemon (src/controller/daemon.ts) loads here, not at start-up: `--help` and the other
      // commands never pay for it.
      const { runController } = await import('../controller/daemon.ts');
      process.exitCode = await runController({ ...flags, namespace: metallbNamespaceOf(flags.namespace) });
      // Shut down: a request still waiting on the API server (a watch, a list) must not keep the
      // process alive past the pod's grace period. stdout/stderr are synchronous here (files, pipes).
      process.exit();
    });
}
