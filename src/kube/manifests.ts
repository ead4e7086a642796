/**
 * The manifests `whatif --apply` / `--delete` read: every object of a kind MetalLB reads from the
 * files (snapshot.ts's reader), or one error line naming the flag and files.
 */
import { UserError } from '../core/errors.ts';
import { KIND_TO_LIST, type ClusterState, type KubeObject } from '../core/kube.ts';
import { loadSnapshot } from './snapshot.ts';

/**
 * The objects of the `--apply` / `--delete` files, in file order (kinds metallb-ts does not read are
 * dropped, as with `-f`).
 * @throws InputError naming the file:line for unreadable or broken input; UserError naming the flag
 *   when the files hold no object.
 */
export async function loadManifests(flag: '--apply' | '--delete', paths: readonly string[]): Promise<KubeObject[]> {
  let state: ClusterState;
  try {
    state = await loadSnapshot(paths);
  } catch (err) {
    if (err instanceof UserError && /^empty snapshot/.test(err.message)) {
      throw new UserError(`${flag} ${paths.join(', ')}: no Kubernetes object found`);
    }
    throw err;
  }
  const objects = Object.values(KIND_TO_LIST).flatMap((list) => state[list] as KubeObject[]);
  if (objects.length === 0) throw new UserError(`${flag} ${paths.join(', ')}: no object of a kind MetalLB reads (Service, EndpointSlice, Node, Namespace, Pod, Secret, ConfigMap, metallb.io kinds)`);
  return objects;
}
