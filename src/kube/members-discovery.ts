/**
 * `members` without `--speaker`: a running speaker's memberlist view found through the API server
 * (discoverSpeakerView over the kubeconfig's credentials: a Running speaker pod, read through the
 * pod proxy). The Kubernetes client is loaded here only, when discovery runs.
 */
import { EXIT_UNREACHABLE, UserError } from '../core/errors.ts';
import { discoverSpeakerView, type ApiGet, type MembersView, type SpeakerViewOrigin } from './speaker-view.ts';

/** Where and how to look (the `members` flags). */
export interface MembersDiscoveryOptions {
  readonly kubeconfig?: string;
  readonly context?: string;
  /** MetalLB's namespace (`--metallb-namespace`). */
  readonly namespace: string;
  /** `--speaker-selector`; default `component=speaker`. */
  readonly selector?: string;
  /** `--node`: that node's speaker. */
  readonly node?: string;
  /** Told when discovery takes long (one line for stderr). */
  readonly onSlow?: (message: string) => void;
}

/**
 * The view of the first speaker pod that answers, and which pod it was.
 * @throws UserError (exit 2) for a bad kubeconfig or selector; UserError (exit 3) when no speaker
 *   answers (the reason names the pods tried, grouped by error); ClusterUnreachableError (exit 3)
 *   when the API server cannot be reached or forbids listing pods (`cannot list v1 pods at SERVER: ...`).
 */
export async function discoverMembers(opts: MembersDiscoveryOptions): Promise<{ view: MembersView; from: SpeakerViewOrigin }> {
  const { loadKubeConfig, kubeGet, apiError, serverOf } = await import('./client.ts');
  const kc = loadKubeConfig({
    ...(opts.kubeconfig !== undefined ? { kubeconfig: opts.kubeconfig } : {}),
    ...(opts.context !== undefined ? { context: opts.context } : {}),
  });
  // The pod list is the one request that tells whether the API server is there at all: its errors
  // are the usual one-line cluster errors (exit 3 unreachable/forbidden).
  const get: ApiGet = async (path, o) => {
    try {
      return await kubeGet(kc, path, o);
    } catch (err) {
      if (!path.includes('/proxy/') && (err as { statusCode?: unknown }).statusCode !== 400) {
        throw apiError(err, { verb: 'list', resource: 'v1 pods', server: serverOf(kc) });
      }
      throw err;
    }
  };
  const found = await discoverSpeakerView(get, {
    namespace: opts.namespace,
    ...(opts.selector !== undefined ? { selector: opts.selector } : {}),
    ...(opts.node !== undefined ? { node: opts.node } : {}),
    ...(opts.onSlow ? { onSlow: opts.onSlow } : {}),
  });
  if (!found.ok) throw new UserError(found.reason, EXIT_UNREACHABLE);
  return { view: found.view, from: found.from };
}
