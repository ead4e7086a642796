/**
 * StatusWriter (the speaker's ServiceL2Status / ServiceBGPStatus writes): an object deleted behind
 * the watch's back (the garbage collector removing a replaced speaker Pod's objects) is replaced
 * on the retry, with an info line and no error line; a failure that is not "gone" is still logged and retried.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/core/kube.ts';
import type { StatusPlan } from '../../src/core/status.ts';
import { jsonLogger } from '../../src/runtime/log.ts';
import { StatusWriter, type StatusApi } from '../../src/speaker/status-writer.ts';

type Obj = KubeObject & { status?: { node: string } };

/** An API over a map of objects by name; `failPatch` decides a patchStatus error per call. */
function fakeApi(objects: Map<string, Obj>, failPatch: (name: string) => Error | undefined): StatusApi<Obj, { node: string }> & { calls: string[] } {
  const calls: string[] = [];
  let n = 0;
  return {
    calls,
    async create(_ns, obj) {
      const name = `l2-new${n++}`;
      calls.push(`create ${name}`);
      const made = { ...obj, metadata: { ...obj.metadata, name } };
      objects.set(name, made);
      return made;
    },
    async patchStatus(_ns, name, status) {
      calls.push(`patchStatus ${name}`);
      const err = failPatch(name);
      if (err) throw err;
      objects.set(name, { ...objects.get(name)!, status });
    },
    async delete(_ns, name) {
      calls.push(`delete ${name}`);
      objects.delete(name);
    },
  };
}

const labels = { 'metallb.io/service-name': 'web', 'metallb.io/service-namespace': 'e2e' };

/** MetalLB's plan in small: keep the first object of the Service and write node-2 on it, else create one. */
function plan(_key: string, _ns: string, _name: string, existing: readonly Obj[]): StatusPlan<Obj, { node: string }> {
  const first = existing[0];
  if (first) return { deletes: [], create: null, patch: first.status?.node === 'node-2' ? null : { name: first.metadata!.name!, status: { node: 'node-2' } } };
  return { deletes: [], create: { apiVersion: 'metallb.io/v1beta1', kind: 'ServiceL2Status', metadata: { namespace: 'metallb-system', labels } }, patch: { name: null, status: { node: 'node-2' } } };
}

function writer(api: StatusApi<Obj, { node: string }>, known: () => Obj[], lines: string[]): StatusWriter<Obj, { node: string }> {
  return new StatusWriter<Obj, { node: string }>({
    namespace: 'metallb-system',
    api,
    log: jsonLogger({ level: 'debug', write: (l) => lines.push(l) }),
    controller: 'Layer2StatusReconciler',
    what: 'ServiceL2Status',
    plan,
    known,
    backoffMs: 5,
  });
}

test('an object deleted before the watch showed it is replaced on the retry, with an info line and no error', async () => {
  const stale: Obj = { apiVersion: 'metallb.io/v1beta1', kind: 'ServiceL2Status', metadata: { name: 'l2-frc5s', namespace: 'metallb-system', labels }, status: { node: 'node-1' } };
  const objects = new Map<string, Obj>(); // the garbage collector already deleted l2-frc5s
  const api = fakeApi(objects, (name) => (objects.has(name) ? undefined : Object.assign(new Error(`servicel2statuses.metallb.io "${name}" not found`), { statusCode: 404 })));
  const lines: string[] = [];
  let known: Obj[] = [stale]; // the watch still shows it, then shows it gone
  const w = writer(api, () => known, lines);
  w.enqueue('e2e/web');
  await w.idle();
  known = [];
  await new Promise((r) => setTimeout(r, 50)); // the retry after 5 ms
  await w.idle();
  assert.deepEqual(api.calls, ['patchStatus l2-frc5s', 'create l2-new0', 'patchStatus l2-new0']);
  assert.equal(objects.get('l2-new0')?.status?.node, 'node-2');
  const logged = lines.map((l) => JSON.parse(l) as { level: string; msg: string });
  assert.deepEqual(
    logged.filter((l) => l.level === 'error'),
    [],
  );
  assert.ok(
    logged.some((l) => l.level === 'info' && l.msg === 'failed to update ServiceL2Status'),
    lines.join(''),
  );
});

test('another failure is logged as an error and retried with backoff', async () => {
  const objects = new Map<string, Obj>();
  let failures = 1;
  const api = fakeApi(objects, () => (failures-- > 0 ? Object.assign(new Error('etcdserver: request timed out'), { statusCode: 500 }) : undefined));
  const lines: string[] = [];
  const w = writer(api, () => [...objects.values()], lines);
  w.enqueue('e2e/web');
  await w.idle();
  await new Promise((r) => setTimeout(r, 50)); // the retry after 5 ms
  await w.idle();
  const errors = lines.map((l) => JSON.parse(l) as { level: string; msg: string; error?: string }).filter((l) => l.level === 'error');
  assert.deepEqual(
    errors.map((e) => [e.msg, e.error]),
    [['failed to update ServiceL2Status', 'etcdserver: request timed out']],
  );
  assert.equal([...objects.values()].find((o) => o.status?.node === 'node-2')?.metadata?.name, 'l2-new0');
});
