import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePool, blocksOverlap, parseAddressEntry } from '../../src/core/config/index.ts';
import { ConfigError } from '../../src/core/errors.ts';
import { formatCIDR } from '../../src/core/ip.ts';
import type { IPAddressPool, Namespace } from '../../src/core/kube.ts';

function pool(spec: IPAddressPool['spec'], name: string | null = 'p'): IPAddressPool {
  return { apiVersion: 'metallb.io/v1beta1', kind: 'IPAddressPool', metadata: { name: name ?? undefined, namespace: 'metallb-system' }, spec };
}
const nss: Namespace[] = [
  { kind: 'Namespace', metadata: { name: 'a', labels: { team: 'x' } } },
  { kind: 'Namespace', metadata: { name: 'b', labels: { team: 'y' } } },
];

const good: Array<[string, IPAddressPool['spec'], string[]]> = [
  ['cidr host bits cleared', { addresses: ['10.20.30.40/24'] }, ['10.20.30.0/24']],
  [
    'range to blocks',
    { addresses: ['3.3.3.2-3.3.3.254'] },
    ['3.3.3.2/31', '3.3.3.4/30', '3.3.3.8/29', '3.3.3.16/28', '3.3.3.32/27', '3.3.3.64/26', '3.3.3.128/26', '3.3.3.192/27', '3.3.3.224/28', '3.3.3.240/29', '3.3.3.248/30', '3.3.3.252/31', '3.3.3.254/32'],
  ],
  ['range trimmed', { addresses: ['1.2.3.4 - 1.2.3.5'] }, ['1.2.3.4/31']],
  ['ipv6', { addresses: ['2001:db8::1/64'] }, ['2001:db8::/64']],
  ['mapped cidr', { addresses: ['::ffff:10.0.0.0/104'] }, ['10.0.0.0/8']],
  ['mixed family range yields nothing', { addresses: ['1.2.3.4-2001:db8::1'] }, []],
];
for (const [name, spec, cidrs] of good) {
  test(`parsePool accepts: ${name}`, () => {
    const p = parsePool(pool(spec), nss);
    assert.deepEqual(p.cidrs.map(formatCIDR), cidrs);
    assert.equal(p.autoAssign, true);
    assert.equal(p.serviceAllocation, undefined);
  });
}

const bad: Array<[string, IPAddressPool['spec'], string | null, RegExp]> = [
  ['no name', { addresses: ['1.2.3.0/24'] }, null, /missing pool name/],
  ['no addresses', { addresses: [] }, 'p', /no prefixes/],
  ['bare address', { addresses: ['1.2.3.4'] }, 'p', /invalid CIDR/],
  ['leading space', { addresses: [' 10.0.0.0/8'] }, 'p', /invalid CIDR/],
  ['leading zero', { addresses: ['10.0.0.01/32'] }, 'p', /invalid CIDR/],
  ['prefix too long', { addresses: ['10.0.0.0/33'] }, 'p', /invalid CIDR/],
  ['reversed range', { addresses: ['1.2.3.10-1.2.3.1'] }, 'p', /after the end IP/],
  ['bad range end', { addresses: ['1.2.3.1-foo'] }, 'p', /invalid end IP/],
  ['dup namespace', { addresses: ['1.2.3.0/24'], serviceAllocation: { namespaces: ['a', 'a'] } }, 'p', /duplicate/],
  ['bad ns selector', { addresses: ['1.2.3.0/24'], serviceAllocation: { namespaceSelectors: [{ matchLabels: { '-x': 'y' } }] } }, 'p', /invalid namespaceSelectors/],
];
for (const [name, spec, poolName, re] of bad) {
  test(`parsePool rejects: ${name}`, () => {
    assert.throws(
      () => parsePool(pool(spec, poolName), nss),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, re);
        assert.match(err.message, /^metallb-system\/IPAddressPool\//);
        return true;
      },
    );
  });
}

test('parsePool serviceAllocation', () => {
  const p = parsePool(pool({ addresses: ['1.2.3.0/24'], autoAssign: false, serviceAllocation: { priority: 5, namespaces: ['z'], namespaceSelectors: [{ matchLabels: { team: 'x' } }] } }), nss);
  assert.equal(p.autoAssign, false);
  assert.equal(p.serviceAllocation?.priority, 5);
  assert.deepEqual([...p.serviceAllocation!.namespaces].sort(), ['a', 'z']);
  assert.deepEqual(p.serviceAllocation!.serviceSelectors, []);
  const all = parsePool(pool({ addresses: ['1.2.3.0/24'], serviceAllocation: { priority: 1 } }), nss);
  assert.deepEqual(
    all.serviceAllocation!.serviceSelectors.map((s) => s.text),
    [''],
  );
});

test('blocksOverlap follows Go net.IPNet semantics', () => {
  const b = (s: string) => parseAddressEntry(s)[0];
  assert.equal(blocksOverlap(b('10.0.0.0/8'), b('10.1.0.0/16')), true);
  assert.equal(blocksOverlap(b('10.0.0.0/24'), b('10.0.1.0/24')), false);
  assert.equal(blocksOverlap(b('10.0.0.0/8'), b('::ffff:10.0.0.0/104')), true);
  assert.equal(blocksOverlap(b('10.5.0.0/16'), b('::ffff:10.0.0.0/104')), false);
  assert.equal(blocksOverlap(b('2001:db8::/32'), b('2001:db8:1::/48')), true);
  assert.equal(blocksOverlap(b('10.0.0.0/8'), b('2001:db8::/32')), false);
});
