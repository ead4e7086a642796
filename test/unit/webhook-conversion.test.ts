// MetalLB's BGPPeer conversion (api/v1beta1/bgppeer_conversion.go, v1beta2 the hub) as Go's JSON
// encoding of the converted object shows it: durations re-encoded, omitempty zero values left
// out, v1beta2-only fields dropped on the way to v1beta1, node selectors reshaped both ways.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { convertBGPPeer } from '../../src/core/config/webhook.ts';
import type { KubeObject } from '../../src/core/kube.ts';

const meta = { name: 'router', namespace: 'metallb-system', uid: 'u', resourceVersion: '7' };
const peer = (version: 'v1beta1' | 'v1beta2', spec: Record<string, unknown>): KubeObject => ({ apiVersion: `metallb.io/${version}`, kind: 'BGPPeer', metadata: meta, spec });

const cases: Array<{ name: string; from: KubeObject; to: string; spec: Record<string, unknown> }> = [
  {
    name: 'v1beta1 → v1beta2: timers always present ("0s" when unset), an empty passwordSecret, zero values dropped',
    from: peer('v1beta1', { myASN: 64500, peerASN: 64501, peerAddress: '10.0.0.1', peerPort: 0, ebgpMultiHop: false }),
    to: 'metallb.io/v1beta2',
    spec: { myASN: 64500, peerASN: 64501, peerAddress: '10.0.0.1', holdTime: '0s', keepaliveTime: '0s', passwordSecret: {} },
  },
  {
    name: 'v1beta1 → v1beta2: every field, durations as Go prints them, selectors to label selectors',
    from: peer('v1beta1', {
      myASN: 64500,
      peerASN: 64501,
      peerAddress: '10.0.0.1',
      sourceAddress: '10.0.0.2',
      peerPort: 1179,
      holdTime: '90s',
      keepaliveTime: '30000ms',
      routerID: '10.0.0.3',
      password: 'secret',
      bfdProfile: 'fast',
      ebgpMultiHop: true,
      nodeSelectors: [
        {
          matchLabels: { rack: 'a' },
          matchExpressions: [
            { key: 'zone', operator: 'In', values: ['x'] },
            { key: 'gpu', operator: 'Exists', values: [] },
          ],
        },
        {},
      ],
    }),
    to: 'metallb.io/v1beta2',
    spec: {
      myASN: 64500,
      peerASN: 64501,
      peerAddress: '10.0.0.1',
      sourceAddress: '10.0.0.2',
      peerPort: 1179,
      holdTime: '1m30s',
      keepaliveTime: '30s',
      routerID: '10.0.0.3',
      nodeSelectors: [
        {
          matchLabels: { rack: 'a' },
          matchExpressions: [
            { key: 'zone', operator: 'In', values: ['x'] },
            { key: 'gpu', operator: 'Exists' },
          ],
        },
        {},
      ],
      password: 'secret',
      passwordSecret: {},
      bfdProfile: 'fast',
      ebgpMultiHop: true,
    },
  },
  {
    name: 'v1beta2 → v1beta1: peerASN, peerAddress and timers always present; v1beta2-only fields dropped; selectors to legacy ones',
    from: peer('v1beta2', {
      myASN: 64500,
      dynamicASN: 'external',
      interface: 'eth1',
      vrf: 'red',
      passwordSecret: { name: 'pw' },
      disableMP: true,
      dualStackAddressFamily: true,
      connectTime: '5s',
      enableGracefulRestart: true,
      holdTime: '3m',
      nodeSelectors: [{ matchLabels: { rack: 'a' } }, { matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }, {}],
    }),
    to: 'metallb.io/v1beta1',
    spec: {
      myASN: 64500,
      peerASN: 0,
      peerAddress: '',
      holdTime: '3m0s',
      keepaliveTime: '0s',
      nodeSelectors: [{ matchLabels: { rack: 'a' } }, { matchExpressions: [{ key: 'gpu', operator: 'Exists', values: [] }] }, {}],
    },
  },
];
for (const c of cases) {
  test(`convertBGPPeer: ${c.name}`, () => {
    const out = convertBGPPeer(c.from, c.to);
    assert.deepEqual(out, { apiVersion: c.to, kind: 'BGPPeer', metadata: meta, spec: c.spec, status: {} });
  });
}

test('convertBGPPeer: a round trip v1beta1 → v1beta2 → v1beta1 keeps what v1beta1 can say', () => {
  const v1 = peer('v1beta1', { myASN: 1, peerASN: 2, peerAddress: '10.0.0.1', holdTime: '1m30s', keepaliveTime: '30s', nodeSelectors: [{ matchLabels: { a: 'b' } }] });
  assert.deepEqual(convertBGPPeer(convertBGPPeer(v1, 'metallb.io/v1beta2'), 'metallb.io/v1beta1'), { ...v1, status: {} });
});

test('convertBGPPeer: errors name what cannot be converted', () => {
  assert.throws(() => convertBGPPeer(peer('v1beta1', { holdTime: '90' }), 'metallb.io/v1beta2'), /spec.holdTime: time: invalid duration "90"/);
  assert.throws(() => convertBGPPeer(peer('v1beta1', {}), 'metallb.io/v1beta1'), /conversion is not allowed between same type/);
  assert.throws(() => convertBGPPeer({ ...peer('v1beta1', {}), kind: 'IPAddressPool' }, 'metallb.io/v1beta2'), /IPAddressPool is not convertible/);
  assert.throws(() => convertBGPPeer(peer('v1beta1', {}), 'metallb.io/v1'), /unsupported target version/);
});
