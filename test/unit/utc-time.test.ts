// UTC timestamps without V8's Date string methods (src/runtime/utc-time.ts): the same text as
// toISOString and toUTCString for every time they are given, and the Date header of the daemons'
// HTTP servers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, get, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpDate, rfc3339Utc, setDateHeader } from '../../src/runtime/utc-time.ts';
import { eventTime } from '../../src/kube/events.ts';
import { rfc3339 } from '../../src/runtime/log.ts';

/** Times to compare at: edges (the epoch, before it, leap days, ends of years and of 0–9999) and 5,000 spread over years 0–9999. */
function times(): number[] {
  const out = [
    0,
    -1,
    1,
    999,
    -86_400_000 - 1,
    Date.UTC(2024, 1, 29, 23, 59, 59, 999),
    Date.UTC(1900, 1, 28, 12, 0, 0, 5),
    Date.UTC(2000, 1, 29),
    Date.UTC(1999, 11, 31, 23, 59, 59, 999),
    Date.UTC(2026, 11, 2, 14, 19, 39, 123),
    Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    Date.UTC(0, 0, 1), // 1900: Date.UTC reads years 0-99 as 1900-1999; the next is year 0
    new Date('0000-01-01T00:00:00.000Z').getTime(),
    new Date('0005-07-04T01:02:03.040Z').getTime(),
    new Date('0999-12-31T23:59:59.999Z').getTime(),
  ];
  const first = new Date('0000-01-01T00:00:00.000Z').getTime();
  const last = new Date('9999-12-31T23:59:59.999Z').getTime();
  let seed = 42;
  for (let i = 0; i < 5_000; i++) {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    out.push(first + Math.floor((seed / 2 ** 32) * (last - first)));
  }
  return out;
}

test('rfc3339Utc prints what toISOString prints, and whole seconds cut (not rounded) without the fraction', () => {
  for (const ms of times()) {
    const iso = new Date(ms).toISOString();
    assert.equal(rfc3339Utc(ms), iso, String(ms));
    assert.equal(rfc3339Utc(ms, false), iso.replace(/\.\d{3}Z$/, 'Z'), String(ms));
  }
  assert.equal(rfc3339Utc(Date.UTC(2026, 0, 1, 0, 0, 59, 999), false), '2026-01-01T00:00:59Z');
  // The daemons' log lines and Events (metav1.Time) use it.
  assert.equal(rfc3339(Date.UTC(2026, 11, 2, 14, 19, 39, 999)), '2026-12-02T14:19:39Z');
  assert.equal(eventTime(Date.UTC(2026, 11, 2, 14, 19, 39, 999)), '2026-12-02T14:19:39Z');
});

test('httpDate prints what toUTCString prints (RFC 9110 IMF-fixdate)', () => {
  for (const ms of times()) assert.equal(httpDate(ms), new Date(ms).toUTCString(), String(ms));
  assert.equal(httpDate(Date.UTC(1994, 10, 6, 8, 49, 37)), 'Sun, 06 Nov 1994 08:49:37 GMT');
});

test('outside years 0-9999 both leave the text to V8; an invalid time is a RangeError, as with toISOString', () => {
  for (const iso of ['+010000-01-01T00:00:00.000Z', '-000001-12-31T23:59:59.999Z', '+275760-09-13T00:00:00.000Z']) {
    const ms = new Date(iso).getTime();
    assert.equal(rfc3339Utc(ms), iso);
    assert.equal(rfc3339Utc(ms, false), iso.replace('.000Z', 'Z').replace('.999Z', 'Z'));
    assert.equal(httpDate(ms), new Date(ms).toUTCString());
  }
  for (const bad of [Number.NaN, 8.64e15 + 1, Number.POSITIVE_INFINITY]) {
    assert.throws(() => rfc3339Utc(bad), RangeError);
    assert.throws(() => httpDate(bad), RangeError);
  }
});

test('setDateHeader: one Date header, in HTTP-date form, instead of the one Node would add', async () => {
  const at = Date.UTC(2026, 11, 2, 14, 19, 39);
  const server = createServer((_req, res) => {
    setDateHeader(res, at);
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await new Promise<IncomingMessage>((resolve, reject) => get({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/' }, resolve).on('error', reject));
    res.resume();
    assert.equal(res.statusCode, 200);
    const dates = res.rawHeaders.filter((_, i) => i % 2 === 0 && res.rawHeaders[i]!.toLowerCase() === 'date');
    assert.equal(dates.length, 1, res.rawHeaders.join(' | '));
    assert.equal(res.headers.date, 'Wed, 02 Dec 2026 14:19:39 GMT');
  } finally {
    server.close();
  }
});
