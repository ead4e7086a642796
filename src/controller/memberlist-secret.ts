/**
 * The memberlist Secret, created by the controller at start-up as MetalLB v0.16.1's controller does
 * (`internal/k8s/k8s.go` CreateMlSecret, called from `controller/main.go` when `--ml-secret-name`
 * is set): the speakers mount it and encrypt their gossip with its key `secretkey`.
 */
import { randomBytes as cryptoRandomBytes } from 'node:crypto';
import { ClusterUnreachableError, UserError } from '../core/errors.ts';
import { apiError, httpStatusOf, type KubeClient } from '../kube/client.ts';
import type { Logger } from '../runtime/log.ts';
import { corePath } from './api.ts';

/** The key of the memberlist Secret's data (MetalLB's `k8s.MLSecretKeyName`). */
export const ML_SECRET_KEY_NAME = 'secretkey';

/** What createMlSecret needs. */
export interface MlSecretOptions {
  /** namespace of the Secret and of the controller's Deployment (`--namespace`) */
  namespace: string;
  /** name of the Secret (`--ml-secret-name`, env METALLB_ML_SECRET_NAME) */
  secretName: string;
  /** name of the controller's Deployment, owner of the Secret (`--deployment`, env METALLB_DEPLOYMENT) */
  deploymentName: string;
  /** logger for MetalLB's `op: CreateMlSecret` lines (none: silent) */
  logger?: Logger;
  /** source of the 16 key bytes (default crypto.randomBytes), for tests */
  randomBytes?: (n: number) => Uint8Array;
}

/** What createMlSecret did: `created` the Secret, or found it already there (`exists`). */
export type MlSecretOutcome = 'created' | 'exists';

/**
 * The Secret's key as MetalLB makes it: 16 random bytes (128 bits), base64 *without* padding
 * (Go's base64.RawStdEncoding), so always 22 characters. Returns that text, which is what the
 * speakers read from the mounted file `secretkey`.
 */
export function newMlSecretKey(randomBytes: (n: number) => Uint8Array = cryptoRandomBytes): string {
  const bytes = randomBytes(16);
  if (bytes.length !== 16) throw new Error(`randomBytes(16) returned ${bytes.length} bytes`);
  return Buffer.from(bytes).toString('base64').replace(/=+$/, '');
}

interface ObjectMeta {
  name?: string;
  uid?: string;
}

/**
 * Makes sure the memberlist Secret `namespace/secretName` exists, as MetalLB v0.16.1's
 * CreateMlSecret: lists Secrets with the field selector `metadata.name=<secretName>` (a list, not a
 * get, so that "not there" and "cannot read" stay apart) and does nothing when one is there
 * (debug line "secret already exists, nothing to do"); otherwise gets the Deployment
 * `namespace/deploymentName` and creates the Secret with an ownerReference to it (apiVersion
 * apps/v1, kind Deployment, name, uid; deleting the Deployment lets the garbage collector delete
 * the Secret) and `data.secretkey` = newMlSecretKey() (info line "secret successfully created").
 * The Secret's contents are never read nor logged.
 *
 * Resolves to the outcome. Throws a UserError naming the Secret (and the Deployment when that is
 * what is missing), one line, where MetalLB logs "failed to create memberlist secret" and exits 1:
 * ClusterUnreachableError (exit 3) when the API server is unreachable or RBAC forbids the list,
 * the get or the create; UserError (exit 2) when the Deployment does not exist or the API server
 * rejects the Secret. One difference: a 409 on create (another controller created it in between)
 * counts as `exists`, where MetalLB exits and finds it on its restart.
 */
export async function createMlSecret(api: KubeClient, opts: MlSecretOptions): Promise<MlSecretOutcome> {
  const { namespace, secretName, deploymentName } = opts;
  const log = opts.logger?.with({ caller: 'k8s.go', op: 'CreateMlSecret' });
  const secretRef = `memberlist Secret ${namespace}/${secretName}`;
  const deploymentRef = `Deployment ${namespace}/${deploymentName}`;
  if (!secretName) throw new UserError('--ml-secret-name: empty Secret name');
  if (!deploymentName) {
    throw new UserError(`cannot create the ${secretRef}: no owner Deployment (set --deployment or METALLB_DEPLOYMENT to the controller's Deployment)`);
  }
  const fail = (err: unknown, verb: string, resource: string): unknown => {
    const mapped = apiError(err, { verb, resource, server: api.server });
    if (!(mapped instanceof UserError)) return mapped;
    const message = `cannot create the ${secretRef}: ${mapped.message}`;
    return mapped instanceof ClusterUnreachableError ? new ClusterUnreachableError(message) : new UserError(message, mapped.exitCode);
  };

  let list: { items?: unknown[] };
  try {
    list = await api.request<{ items?: unknown[] }>({
      method: 'GET',
      path: corePath(namespace, 'secrets'),
      query: { fieldSelector: `metadata.name=${secretName}` },
    });
  } catch (err) {
    throw fail(err, 'list', `v1 secrets (metadata.name=${secretName}) in ${namespace}`);
  }
  if ((list.items ?? []).length > 0) {
    log?.debug({ msg: 'secret already exists, nothing to do' });
    return 'exists';
  }

  let deployment: { metadata?: ObjectMeta };
  try {
    deployment = await api.request<{ metadata?: ObjectMeta }>({
      method: 'GET',
      path: `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/deployments/${encodeURIComponent(deploymentName)}`,
    });
  } catch (err) {
    if (httpStatusOf(err) === 404) {
      throw new UserError(`cannot create the ${secretRef}: its owner, the controller's ${deploymentRef}, does not exist (--deployment / METALLB_DEPLOYMENT must name the Deployment this controller runs in)`);
    }
    throw fail(err, 'get', `apps/v1 deployments ${deploymentName} in ${namespace} (the owner of the Secret)`);
  }
  const uid = deployment.metadata?.uid;
  const name = deployment.metadata?.name ?? deploymentName;
  if (!uid) throw new UserError(`cannot create the ${secretRef}: the ${deploymentRef} has no metadata.uid`);

  const key = newMlSecretKey(opts.randomBytes);
  try {
    await api.request({
      method: 'POST',
      path: corePath(namespace, 'secrets'),
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: secretName, namespace, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name, uid }] },
        data: { [ML_SECRET_KEY_NAME]: Buffer.from(key, 'utf8').toString('base64') },
      },
    });
  } catch (err) {
    if (httpStatusOf(err) === 409) {
      log?.debug({ msg: 'secret already exists, nothing to do' });
      return 'exists';
    }
    throw fail(err, 'create', `v1 secrets in ${namespace}`);
  }
  log?.info({ msg: 'secret successfully created' });
  return 'created';
}
