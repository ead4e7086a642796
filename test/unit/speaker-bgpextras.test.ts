/**
 * A configuration refused for a non-empty `bgpextras` ConfigMap in frr-k8s mode (KNOWN.md K4):
 * MetalLB v0.16.1's BGP handler syncs the BFD profiles before it refuses the extras
 * (speaker/bgp_controller.go SetConfig), so `metallb-<node>` is written with the profiles and no
 * routers although the configuration is rejected. Without BFD profiles nothing is written.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { clusterStateFromObjects, type KubeObject } from '../../src/core/kube.ts';
import { speakerDryRun } from '../../src/speaker/dry-run.ts';
import { ROOT } from '../helpers/cli.ts';

const FILE = `${ROOT}test/differential/found/speaker-bgpextras-bfd-profiles-written.yaml`;
const objects = (): KubeObject[] => (parse(readFileSync(FILE, 'utf8')) as { items: KubeObject[] }).items;

test('bgpextras refused: the configuration is rejected, yet metallb-<node> carries the BFD profiles and no routers', async () => {
  const r = await speakerDryRun(clusterStateFromObjects(objects()), { node: 'n2' });
  assert.equal(r.configuration.accepted, false);
  assert.equal(r.configuration.accepted === false && r.configuration.stage, 'bgpExtras');
  assert.equal(r.frrConfiguration?.metadata.name, 'metallb-n2');
  assert.deepEqual(
    r.frrConfiguration?.spec.bgp.bfdProfiles?.map((p) => p.name),
    ['bfd-1'],
  );
  assert.equal((r.frrConfiguration?.spec.bgp.routers ?? []).length, 0);
  assert.ok(r.writes.some((w) => w.kind === 'FRRConfiguration' && w.verb === 'create'));
});

test('bgpextras refused without BFD profiles: nothing is written', async () => {
  const r = await speakerDryRun(clusterStateFromObjects(objects().filter((o) => o.kind !== 'BFDProfile')), { node: 'n2' });
  assert.equal(r.configuration.accepted, false);
  assert.equal(r.frrConfiguration, null);
  assert.equal(r.writes.filter((w) => w.kind === 'FRRConfiguration').length, 0);
});
