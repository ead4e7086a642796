// Issue #15 item 3: a huge value in a snapshot is quoted as a short, clearly cut excerpt in the
// one-line error and in `validate`'s findings; the exit codes are those of a short bad value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCliAsync } from '../helpers/cli.ts';
import { ConfigError, MAX_QUOTED_CHARS, UserError, boundQuotes, quote } from '../../src/core/errors.ts';

const TEN_MB = 10 * 1024 * 1024;

test('quote: short values as JSON, long ones cut to MAX_QUOTED_CHARS with their size', () => {
  assert.equal(quote('10.0.0.0/24'), '"10.0.0.0/24"');
  assert.equal(quote({ matchLabels: { a: 'b' } }), '{"matchLabels":{"a":"b"}}');
  const q = quote('A'.repeat(TEN_MB));
  assert.equal(q, `"${'A'.repeat(MAX_QUOTED_CHARS)}…"(${TEN_MB} bytes)`);
  assert.equal(quote('é'.repeat(100)), `"${'é'.repeat(MAX_QUOTED_CHARS)}…"(200 bytes)`, 'the size in UTF-8 bytes');
  assert.ok(quote({ k: 'x'.repeat(TEN_MB) }).length < 400);
});

test('boundQuotes (every UserError): long quoted runs and huge unquoted stretches cut, cut excerpts kept, short messages untouched', () => {
  const big = 'B'.repeat(TEN_MB);
  const msg = new ConfigError(`invalid CIDR "${big}": expected <address>/<prefix length>`, 'metallb-system/IPAddressPool/p').message;
  assert.equal(msg, `metallb-system/IPAddressPool/p: invalid CIDR "${'B'.repeat(MAX_QUOTED_CHARS)}…"(${TEN_MB} bytes): expected <address>/<prefix length>`);
  // wrapped again: not cut twice
  assert.equal(new UserError(`rejected: ${msg}`).message, `rejected: ${msg}`);
  assert.ok(new UserError(`unquoted ${big} value`).message.length < 200);
  const plain = 'CIDR "10.0.0.0/24" in pool "a" overlaps with already defined CIDR "10.0.0.0/16" of pool "b"';
  assert.equal(boundQuotes(plain), plain);
  assert.equal(boundQuotes('a "b\\"c" d'), 'a "b\\"c" d');
});

function snapshot(address: string, annotation = ''): string {
  return [
    'apiVersion: v1',
    'kind: List',
    'items:',
    '- apiVersion: metallb.io/v1beta1',
    '  kind: IPAddressPool',
    '  metadata: {name: pool, namespace: metallb-system}',
    `  spec: {addresses: ["${address}"]}`,
    '- apiVersion: metallb.io/v1beta1',
    '  kind: L2Advertisement',
    '  metadata: {name: l2, namespace: metallb-system}',
    '- apiVersion: v1',
    '  kind: Service',
    '  metadata:',
    '    name: web',
    '    namespace: shop',
    `    annotations: {${annotation}}`,
    '  spec: {type: LoadBalancer, ports: [{port: 80}]}',
    '',
  ].join('\n');
}

test('a 10 MB value in a generated snapshot: explain/allocate one short stderr line, validate short findings; exit codes as for a short bad value', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'metallb-ts-huge-'));
  const huge = join(dir, 'huge.yaml');
  const short = join(dir, 'short.yaml');
  writeFileSync(huge, snapshot('A'.repeat(TEN_MB)));
  writeFileSync(short, snapshot('notacidr'));
  for (const args of [['explain', 'svc/web', '-n', 'shop'], ['allocate', '--dry-run'], ['validate']]) {
    const [h, s] = await Promise.all([runCliAsync([...args, '-f', huge]), runCliAsync([...args, '-f', short])]);
    assert.equal(h.status, s.status, `${args[0]}: the exit code of a short bad value (${s.status}), got ${h.status}\n${h.stderr.slice(0, 500)}`);
    const out = h.stdout + h.stderr;
    assert.ok(out.length < 4000, `${args[0]}: ${out.length} bytes of output`);
    assert.match(out, new RegExp(`"A{${MAX_QUOTED_CHARS}}…"\\(${TEN_MB} bytes\\)`), `${args[0]}: the excerpt and the size`);
    if (h.stderr) {
      const lines = h.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, `${args[0]}: one line`);
      // the line with a short value, plus the excerpt's ~100 characters
      assert.ok(lines[0]!.length <= s.stderr.trimEnd().length + 120, `${args[0]}: ${lines[0]!.length} characters`);
    }
    for (const line of out.split('\n')) assert.ok(line.length < 1000, `${args[0]}: a line of ${line.length} characters`);
  }
  // an annotation MetalLB reads (deprecated name shadowed by the stable one, both 10 MB): warnings quote excerpts too
  const ann = join(dir, 'ann.yaml');
  const big = 'C'.repeat(TEN_MB);
  writeFileSync(ann, snapshot('10.0.0.0/24', `metallb.universe.tf/address-pool: "${big}", metallb.io/address-pool: "D${big}"`));
  const v = await runCliAsync(['validate', '-f', ann]);
  assert.ok(v.stdout.length + v.stderr.length < 4000, `validate: ${v.stdout.length + v.stderr.length} bytes of output`);
});
