/**
 * Where the webhook server's certificate comes from, as MetalLB v0.16.1's controller has it:
 *
 * - CertRotator (default): open-policy-agent cert-controller's rotator as MetalLB configures it
 *   (`internal/k8s/webhook.go` enableCertRotation). The CA and serving certificate live in the
 *   Secret `--webhook-secret` (`metallb-webhook-cert`; keys `ca.crt`, `ca.key`, `tls.crt`,
 *   `tls.key`) of MetalLB's namespace. At start, every 12 hours and whenever the Secret, the
 *   ValidatingWebhookConfiguration `metallb-webhook-configuration` or the BGPPeer CRD change
 *   (watched), it renews what is no longer valid 90 days ahead — a new CA (and with it a new
 *   serving certificate) or a new serving certificate from the stored CA — writes the Secret,
 *   and puts the CA into `clientConfig.caBundle` of every webhook of the configuration and into
 *   the BGPPeer CRD's conversion webhook (field manager `MetalLB`). The serving certificate is
 *   handed to the server from memory (MetalLB reads the Secret back through its kubelet mount at
 *   `--cert-dir`, which takes up to a minute; no mount is needed here).
 * - CertDirSource (`--disable-cert-rotation`): `tls.crt` and `tls.key` of `--cert-dir` (for
 *   instance cert-manager's Secret, mounted), re-read every 10 seconds as controller-runtime's
 *   certwatcher does; the CA bundle is then someone else's business (cert-manager's CA injector).
 *
 * Differences from cert-controller, each for robustness: a missing Secret is created (MetalLB's
 * manifests ship it empty; cert-controller fails without it); a BGPPeer CRD without a conversion
 * webhook (the plain CRDs deploy/ installs) is left alone with a debug line, where cert-controller
 * counts it as a failed injection and, after ~17 minutes of retries, stops MetalLB's controller;
 * a ValidatingWebhookConfiguration that does not exist (yet) is logged and injected as soon as it
 * appears, never fatal.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import type { ClusterAccess as KubeConfig } from '../kube/access.ts';
import { ListWatch } from '../kube/list-watch.ts';
import type { KubeObject as KubernetesObject } from '../core/kube.ts';
import { ClusterUnreachableError, UserError } from '../core/errors.ts';
import { apiError, httpStatusOf, type KubeClient } from '../kube/client.ts';
import { silentLogger, type Logger } from '../runtime/log.ts';
import { corePath } from './api.ts';
import { CA_NAME, certProblem, createCA, createServingCert, LOOKAHEAD_MS, ROTATION_CHECK_MS, type KeyPairPem } from './webhook-cert.ts';
import { rfc3339Utc } from '../runtime/utc-time.ts';

// MetalLB's names (internal/k8s/k8s.go, controller/main.go defaults):
/** the ValidatingWebhookConfiguration whose webhooks get the CA (k8s.go validatingWebhookName) */
export const WEBHOOK_CONFIGURATION_NAME = 'metallb-webhook-configuration';
/** the CRD whose conversion webhook gets the CA (k8s.go bgppeerConvertingWebhookCRD) */
export const BGPPEER_CRD_NAME = 'bgppeers.metallb.io';
/** `--webhook-secret` default */
export const DEFAULT_WEBHOOK_SECRET = 'metallb-webhook-cert';
/** `--cert-service-name` default */
export const DEFAULT_CERT_SERVICE_NAME = 'metallb-webhook-service';
/** `--cert-dir` default */
export const DEFAULT_CERT_DIR = '/tmp/k8s-webhook-server/serving-certs';
/** cert-controller's FieldOwner as MetalLB sets it */
export const FIELD_MANAGER = 'MetalLB';

const VWC_BASE = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
const CRD_BASE = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** A webhook's client configuration as the API serves it: the CA bundle (base64 PEM) is the field inject writes. */
interface ClientConfig {
  caBundle?: string;
  [k: string]: unknown;
}

/**
 * What inject reads and writes of a ValidatingWebhookConfiguration (every webhook's clientConfig)
 * and of a CustomResourceDefinition (its conversion webhook's); the rest is sent back as it came.
 */
interface CABundleHolder {
  metadata?: { deletionTimestamp?: string; [k: string]: unknown };
  webhooks?: Array<{ clientConfig?: ClientConfig; [k: string]: unknown }>;
  spec?: { conversion?: { webhook?: { clientConfig?: ClientConfig } } };
  [k: string]: unknown;
}

interface SecretObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [k: string]: unknown };
  data?: Record<string, string> | null;
  [k: string]: unknown;
}

const b64decode = (v: string | undefined): string | undefined => (v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8'));
const b64 = (v: string): string => Buffer.from(v, 'utf8').toString('base64');

/** The certificate artifacts of a Secret's data (PEM text), absent keys undefined. */
export interface SecretCerts {
  caCert?: string;
  caKey?: string;
  cert?: string;
  key?: string;
}

function certsOf(secret: SecretObject): SecretCerts {
  const d = secret.data ?? {};
  return { caCert: b64decode(d['ca.crt']), caKey: b64decode(d['ca.key']), cert: b64decode(d['tls.crt']), key: b64decode(d['tls.key']) };
}

/** What a refresh did. */
export type RefreshOutcome = 'none' | 'server' | 'ca';

/**
 * cert-controller's refreshCertIfNeeded on `certs`, as a pure decision: a new CA and serving
 * certificate when the CA is not valid `LOOKAHEAD_MS` ahead of `now` (or missing), a new
 * serving certificate from the stored CA when only it is not, else nothing. Returns the new
 * artifacts (null when nothing changes) and what was renewed, with the reason.
 */
export function renewCerts(certs: SecretCerts, dnsName: string, now: Date): { outcome: RefreshOutcome; reason: string | null; certs: Required<SecretCerts> | null } {
  const at = new Date(now.getTime() + LOOKAHEAD_MS);
  const caReason = certProblem(certs.caCert, certs.caCert, certs.caKey, CA_NAME, at);
  if (caReason !== null) {
    const ca = createCA({ now });
    const leaf = createServingCert(ca, dnsName, { now });
    return { outcome: 'ca', reason: caReason, certs: { caCert: ca.certPem, caKey: ca.keyPem, cert: leaf.certPem, key: leaf.keyPem } };
  }
  const serverReason = certProblem(certs.caCert, certs.cert, certs.key, dnsName, at);
  if (serverReason !== null) {
    const leaf = createServingCert({ certPem: certs.caCert!, keyPem: certs.caKey! }, dnsName, { now });
    return { outcome: 'server', reason: serverReason, certs: { caCert: certs.caCert!, caKey: certs.caKey!, cert: leaf.certPem, key: leaf.keyPem } };
  }
  return { outcome: 'none', reason: null, certs: null };
}

/** Options of CertRotator. */
export interface CertRotatorOptions {
  api: KubeClient;
  /** for the watches (src/kube/list-watch.ts); absent: no watches, only the periodic check */
  kubeConfig?: KubeConfig;
  /** MetalLB's namespace: the Secret's */
  namespace: string;
  /** `--webhook-secret` */
  secretName: string;
  /** `<--cert-service-name>.<namespace>.svc` */
  dnsName: string;
  /** the ValidatingWebhookConfiguration to inject the CA into (MetalLB: metallb-webhook-configuration) */
  webhookConfigurationName: string;
  /** the CRD whose conversion webhook gets the CA (MetalLB: bgppeers.metallb.io), or null */
  conversionCRDName: string | null;
  /** called with the serving certificate whenever it changes (first at start()) */
  onKeyPair: (kp: KeyPairPem) => void;
  log?: Logger;
  now?: () => Date;
  /** periodic check (default 12 h) */
  checkIntervalMs?: number;
  /** first retry delay after a failed reconcile (default 1000 ms), doubled up to 5 minutes */
  retryMs?: number;
}

/** See the module comment. */
export class CertRotator {
  private readonly o: CertRotatorOptions;
  private readonly log: Logger;
  private current: KeyPairPem | null = null;
  private caPem: string | null = null;
  private timer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = 0;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly watches: Array<{ lw: ListWatch; retry?: NodeJS.Timeout; backoffMs: number }> = [];
  /** reconciles run (tests) */
  reconciles = 0;
  /** whether the last injection put the CA into every existing target */
  injected = false;

  constructor(o: CertRotatorOptions) {
    this.o = o;
    this.log = (o.log ?? silentLogger).with({ controller: 'cert-rotator' });
  }

  private now(): Date {
    return this.o.now?.() ?? new Date();
  }

  /**
   * The first refresh (cert-controller fails MetalLB's start when it cannot): makes the Secret
   * hold valid certificates, hands the serving certificate to onKeyPair, injects the CA (a
   * failure there is logged and retried, not fatal), then starts the watches and the periodic
   * check. Resolves to the serving certificate.
   * @throws ClusterUnreachableError (exit 3) when the Secret cannot be read or written (RBAC, no
   *   server), UserError (exit 2) when the API server rejects it.
   */
  async start(): Promise<KeyPairPem> {
    this.log.info({ op: 'startup', action: 'setting up cert rotation', secret: `${this.o.namespace}/${this.o.secretName}`, dnsName: this.o.dnsName });
    try {
      await this.refresh();
    } catch (err) {
      const mapped = apiError(err, { verb: 'get, create or update', resource: `the webhook certificate Secret ${this.o.namespace}/${this.o.secretName}`, server: this.o.api.server });
      if (mapped instanceof UserError) {
        const message = `cannot set up the webhook certificate: ${mapped.message}`;
        throw mapped instanceof ClusterUnreachableError ? new ClusterUnreachableError(message) : new UserError(message, mapped.exitCode);
      }
      throw mapped;
    }
    const ok = await this.injectSafely();
    if (!ok) this.scheduleRetry();
    this.startWatches();
    this.timer = setInterval(() => this.trigger('periodic check'), this.o.checkIntervalMs ?? ROTATION_CHECK_MS);
    this.timer.unref?.();
    return this.current!;
  }

  /** Stops the watches and timers; a reconcile in flight finishes. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.retryTimer);
    for (const w of this.watches) {
      clearTimeout(w.retry);
      await w.lw.stop().catch(() => {});
    }
    while (this.running) await this.running;
  }

  /** Resolves when no reconcile is running or queued (tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Runs a reconcile soon (coalesced): refresh the certificates, then inject the CA. */
  trigger(why: string): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.log.debug({ op: 'reconcile', why });
    this.running = this.reconcile().finally(() => {
      this.running = null;
      if (this.again && !this.stopped) {
        this.again = false;
        this.trigger('changed while reconciling');
      }
    });
  }

  private async reconcile(): Promise<void> {
    this.reconciles++;
    let ok = true;
    try {
      await this.refresh();
    } catch (err) {
      ok = false;
      this.log.error({ op: 'refreshCerts', error: errorText(err), msg: 'error rotating certs' });
    }
    if (ok) ok = await this.injectSafely();
    if (ok) {
      this.retryDelay = 0;
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    } else {
      this.scheduleRetry();
    }
  }

  private scheduleRetry(): void {
    if (this.stopped || this.retryTimer) return;
    this.retryDelay = this.retryDelay === 0 ? (this.o.retryMs ?? 1000) : Math.min(this.retryDelay * 2, 300_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.trigger('retry');
    }, this.retryDelay);
    this.retryTimer.unref?.();
  }

  /**
   * cert-controller's refreshCertIfNeeded: reads the Secret (creates it when missing), renews
   * what is not valid 90 days ahead and writes it (a 409 conflict re-reads and decides again),
   * then serves the Secret's serving certificate.
   */
  private async refresh(): Promise<void> {
    const { api, namespace, secretName, dnsName } = this.o;
    const path = corePath(namespace, 'secrets', secretName);
    for (let attempt = 0; ; attempt++) {
      let secret: SecretObject | null = null;
      try {
        secret = await api.request<SecretObject>({ path });
      } catch (err) {
        if (httpStatusOf(err) !== 404) throw err;
      }
      const decision = renewCerts(secret ? certsOf(secret) : {}, dnsName, this.now());
      let stored = secret;
      if (decision.certs) {
        const c = decision.certs;
        this.log.info({
          op: 'refreshCerts',
          reason: decision.reason,
          msg: decision.outcome === 'ca' ? 'refreshing CA and server certs' : 'refreshing server certs',
        });
        const data = { ...(secret?.data ?? {}), 'ca.crt': b64(c.caCert), 'ca.key': b64(c.caKey), 'tls.crt': b64(c.cert), 'tls.key': b64(c.key) };
        try {
          stored = secret
            ? await api.request<SecretObject>({ method: 'PUT', path, body: { ...secret, apiVersion: 'v1', kind: 'Secret', data } })
            : await api.request<SecretObject>({
                method: 'POST',
                path: corePath(namespace, 'secrets'),
                body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: secretName, namespace }, data },
              });
        } catch (err) {
          const code = httpStatusOf(err);
          if ((code === 409 || (code === 404 && secret)) && attempt < 9) continue; // changed or deleted meanwhile: decide again
          throw err;
        }
        this.log.info({ op: 'refreshCerts', msg: 'server certs refreshed', created: secret === null });
      } else {
        this.log.debug({ op: 'refreshCerts', msg: 'no cert refresh needed' });
      }
      const certs = certsOf(stored ?? {});
      this.caPem = certs.caCert ?? null;
      const kp = { certPem: certs.cert ?? '', keyPem: certs.key ?? '' };
      if (!this.current || this.current.certPem !== kp.certPem || this.current.keyPem !== kp.keyPem) {
        this.current = kp;
        this.o.onKeyPair(kp);
        this.log.info({ op: 'refreshCerts', notAfter: rfc3339Utc(new X509Certificate(kp.certPem).validToDate.getTime()), msg: 'serving the webhook certificate' });
      }
      return;
    }
  }

  private async injectSafely(): Promise<boolean> {
    try {
      this.injected = await this.inject();
      return true;
    } catch (err) {
      this.injected = false;
      this.log.error({ op: 'ensureCerts', error: errorText(err), msg: 'error injecting the CA into the webhooks, retrying' });
      return false;
    }
  }

  /**
   * cert-controller's ensureCerts: the CA into every webhook's `clientConfig.caBundle` of the
   * ValidatingWebhookConfiguration and into the conversion webhook of the CRD, written only when
   * it differs. Resolves to whether every target existed; throws the first write/read error
   * (after trying the other targets).
   */
  private async inject(): Promise<boolean> {
    if (!this.caPem) return false;
    const bundle = b64(this.caPem);
    let allThere = true;
    let firstError: unknown;
    const targets: Array<{ what: string; path: string; apply: (obj: CABundleHolder) => boolean | null }> = [
      {
        what: `ValidatingWebhookConfiguration ${this.o.webhookConfigurationName}`,
        path: `${VWC_BASE}/${encodeURIComponent(this.o.webhookConfigurationName)}`,
        apply: (obj) => {
          let changed = false;
          for (const hook of Array.isArray(obj.webhooks) ? obj.webhooks : []) {
            hook.clientConfig ??= {};
            if (hook.clientConfig.caBundle !== bundle) {
              hook.clientConfig.caBundle = bundle;
              changed = true;
            }
          }
          return changed;
        },
      },
    ];
    if (this.o.conversionCRDName) {
      targets.push({
        what: `CustomResourceDefinition ${this.o.conversionCRDName}`,
        path: `${CRD_BASE}/${encodeURIComponent(this.o.conversionCRDName)}`,
        apply: (obj) => {
          const cc = obj.spec?.conversion?.webhook?.clientConfig;
          if (!cc) return null; // no conversion webhook configured: nothing to inject
          if (cc.caBundle === bundle) return false;
          cc.caBundle = bundle;
          return true;
        },
      });
    }
    for (const t of targets) {
      try {
        for (let attempt = 0; ; attempt++) {
          let obj: CABundleHolder;
          try {
            obj = await this.o.api.request<CABundleHolder>({ path: t.path });
          } catch (err) {
            if (httpStatusOf(err) === 404) {
              allThere = false;
              this.log.info({ op: 'ensureCerts', name: t.what, msg: 'Webhook not found. Unable to update certificate.' });
              break;
            }
            throw err;
          }
          if (obj.metadata?.deletionTimestamp) {
            this.log.info({ op: 'ensureCerts', name: t.what, msg: 'Webhook is being deleted. Unable to update certificate' });
            break;
          }
          const changed = t.apply(obj);
          if (changed === null) {
            this.log.debug({ op: 'ensureCerts', name: t.what, msg: 'no conversion webhook configured: no CA to inject' });
            break;
          }
          if (!changed) break;
          try {
            await this.o.api.request({ method: 'PUT', path: t.path, query: { fieldManager: FIELD_MANAGER }, body: obj });
            this.log.info({ op: 'ensureCerts', name: t.what, msg: 'Ensuring CA cert' });
            break;
          } catch (err) {
            if (httpStatusOf(err) === 409 && attempt < 5) continue;
            throw err;
          }
        }
      } catch (err) {
        this.log.error({ op: 'ensureCerts', name: t.what, error: errorText(err), msg: 'Error updating webhook with certificate' });
        firstError ??= err;
      }
    }
    if (firstError !== undefined) throw firstError;
    return allThere;
  }

  /** Watches the Secret, the webhook configuration and the CRD by name; any change triggers a reconcile. */
  private startWatches(): void {
    const kc = this.o.kubeConfig;
    if (!kc) return;
    const targets = [
      { path: corePath(this.o.namespace, 'secrets'), name: this.o.secretName, what: 'secret' },
      { path: VWC_BASE, name: this.o.webhookConfigurationName, what: 'validatingwebhookconfiguration' },
      ...(this.o.conversionCRDName ? [{ path: CRD_BASE, name: this.o.conversionCRDName, what: 'customresourcedefinition' }] : []),
    ];
    for (const t of targets) {
      const fieldSelector = `metadata.name=${t.name}`;
      const listFn = async () => {
        const list = await this.o.api.request<{ metadata?: { resourceVersion?: string }; items?: KubernetesObject[] }>({ path: t.path, query: { fieldSelector } });
        return { metadata: { resourceVersion: list.metadata?.resourceVersion ?? '' }, items: list.items ?? [] } as never;
      };
      const lw = new ListWatch(t.path, kc, listFn, undefined, fieldSelector);
      const w: { lw: ListWatch; retry?: NodeJS.Timeout; backoffMs: number } = { lw, backoffMs: 0 };
      let synced = false;
      const changed = (verb: string) => () => {
        // The initial list replays the objects as adds: the reconcile after it covers them.
        if (synced) this.trigger(`${t.what} ${verb}`);
      };
      lw.on('add', changed('added'));
      lw.on('update', changed('updated'));
      lw.on('delete', changed('deleted'));
      const failed = (err: unknown): void => {
        if (this.stopped) return;
        w.backoffMs = w.backoffMs === 0 ? 1000 : Math.min(w.backoffMs * 2, 30_000);
        this.log.error({ op: 'watch', resource: t.what, name: t.name, error: errorText(err), retryInMs: w.backoffMs, msg: 'watch failed, retrying' });
        clearTimeout(w.retry);
        w.retry = setTimeout(() => {
          if (this.stopped) return;
          lw.start().then(() => {
            w.backoffMs = 0;
            synced = true;
            this.trigger(`${t.what} watched again`); // whatever changed meanwhile
          }, failed);
        }, w.backoffMs);
        w.retry.unref?.();
      };
      lw.on('error', failed);
      this.watches.push(w);
      // A change between the start-up reconcile and this first list would be missed: look again once.
      lw.start().then(() => {
        synced = true;
        this.trigger(`${t.what} watch started`);
      }, failed);
    }
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Options of CertDirSource. */
export interface CertDirSourceOptions {
  /** `--cert-dir` */
  dir: string;
  onKeyPair: (kp: KeyPairPem) => void;
  log?: Logger;
  /** how often the files are re-read (default 10 s) */
  pollMs?: number;
}

/** Reads `tls.crt` and `tls.key` of `dir`; throws a one-line Error naming the file when they are unusable. */
export function readCertDir(dir: string): KeyPairPem {
  const read = (file: string): string => {
    try {
      return readFileSync(join(dir, file), 'utf8');
    } catch (err) {
      throw new Error(`${join(dir, file)}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
    }
  };
  const kp = { certPem: read('tls.crt'), keyPem: read('tls.key') };
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(kp.certPem);
  } catch (err) {
    throw new Error(`${join(dir, 'tls.crt')}: not a PEM certificate (${(err as Error).message})`);
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(kp.keyPem))) throw new Error('the key does not match the certificate');
  } catch (err) {
    throw new Error(`${join(dir, 'tls.key')}: ${(err as Error).message}`);
  }
  return kp;
}

/** `--disable-cert-rotation`: the key pair of `--cert-dir`, re-read while serving (see the module comment). */
export class CertDirSource {
  private readonly o: CertDirSourceOptions;
  private current: KeyPairPem | null = null;
  private timer: NodeJS.Timeout | undefined;
  private lastError = '';

  constructor(o: CertDirSourceOptions) {
    this.o = o;
  }

  /**
   * Reads the files (controller-runtime's webhook server does not start without them) and starts
   * polling. @throws UserError (exit 2) naming the file when they are missing or unusable.
   */
  start(): KeyPairPem {
    try {
      this.current = readCertDir(this.o.dir);
    } catch (err) {
      throw new UserError(`--cert-dir: cannot load the webhook certificate: ${(err as Error).message} (with --disable-cert-rotation the certificate must be mounted there, e.g. by cert-manager)`);
    }
    this.o.onKeyPair(this.current);
    this.timer = setInterval(() => this.poll(), this.o.pollMs ?? 10_000);
    this.timer.unref?.();
    return this.current;
  }

  /** Re-reads the files now; a change is handed to onKeyPair, an unusable pair logged (the old one stays). */
  poll(): void {
    let kp: KeyPairPem;
    try {
      kp = readCertDir(this.o.dir);
    } catch (err) {
      const text = (err as Error).message;
      if (text !== this.lastError) this.o.log?.error({ op: 'certwatcher', error: text, msg: 'error reloading the webhook certificate; keeping the previous one' });
      this.lastError = text;
      return;
    }
    this.lastError = '';
    if (this.current && kp.certPem === this.current.certPem && kp.keyPem === this.current.keyPem) return;
    this.current = kp;
    this.o.log?.info({ op: 'certwatcher', dir: this.o.dir, msg: 'webhook certificate reloaded' });
    this.o.onKeyPair(kp);
  }

  /** Stops polling. */
  stop(): void {
    clearInterval(this.timer);
  }
}
