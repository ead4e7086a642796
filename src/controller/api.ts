/**
 * Paths of the objects the controller writes. The requests themselves go through the one client to
 * the API server, src/kube/client.ts KubeClient (the controller's with a keep-alive pool, see
 * src/commands/controller.ts), and its errors map with apiError there.
 */

/** Path of a namespaced core/v1 object: `/api/v1/namespaces/<ns>/<plural>/<name>`. */
export function corePath(namespace: string, plural: string, name?: string): string {
  const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/${plural}`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}

/** Path of a namespaced metallb.io/v1beta1 object. */
export function metallbPath(namespace: string, plural: string, name?: string): string {
  const base = `/apis/metallb.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/${plural}`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}
