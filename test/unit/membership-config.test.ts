// MetalLB v0.16.1's optional memberlist config file (src/core/membership/config.ts): Go's
// time.ParseDuration, the strict parser, and what the file replaces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LAN_CONFIG, MEMBERLIST_FILE_FIELDS, WAN_CONFIG, DurationError, parseGoDuration, parseGoDurationNs, parseMemberlistConfigFile, type MemberlistConfig } from '../../src/core/membership/config.ts';
import { InputError } from '../../src/core/errors.ts';

// Expected values printed by Go 1.22's time.ParseDuration (int64 nanoseconds, or the error kind).
const DURATIONS: [string, bigint | 'invalid' | 'missing unit' | 'unknown unit'][] = [
  ['0', 0n],
  ['-0', 0n],
  ['+0', 0n],
  ['', 'invalid'],
  ['+', 'invalid'],
  ['5', 'missing unit'],
  ['5x', 'unknown unit'],
  ['1m30s', 90000000000n],
  ['1.5h', 5400000000000n],
  ['.5s', 500000000n],
  ['5.s', 5000000000n],
  ['1µs', 1000n],
  ['1μs', 1000n],
  ['1us', 1000n],
  ['300ms', 300000000n],
  ['-1.5h', -5400000000000n],
  ['2h45m0.5s', 9900500000000n],
  ['1.0000000001s', 1000000000n],
  ['9223372036854775807ns', 9223372036854775807n],
  ['9223372036854775808ns', 'invalid'],
  ['-9223372036854775808ns', -9223372036854775808n],
  ['2562047h', 9223369200000000000n],
  ['2562048h', 'invalid'],
  ['0.3333333333333333333333s', 333333333n],
  ['1.000000000000000000000000001h', 3600000000000n],
  ['.s', 'invalid'],
  ['1..5s', 'missing unit'],
  ['3s4', 'missing unit'],
  ['1e3s', 'unknown unit'],
  ['1h1h', 7200000000000n],
  ['123456789.123456789ms', 123456789123456n],
  ['0.1ns', 0n],
];

test('durations parse exactly as Go time.ParseDuration', () => {
  for (const [text, want] of DURATIONS) {
    if (typeof want === 'bigint') assert.equal(parseGoDurationNs(text), want, JSON.stringify(text));
    else {
      assert.throws(
        () => parseGoDurationNs(text),
        (e: unknown) => {
          assert.ok(e instanceof DurationError, JSON.stringify(text));
          const kind = /^(missing unit|unknown unit)/.exec(e.message)?.[1] ?? 'invalid';
          assert.equal(kind, want, `${JSON.stringify(text)}: ${e.message}`);
          return true;
        },
      );
    }
  }
  assert.equal(parseGoDuration('1m30s'), 90_000);
  assert.equal(parseGoDuration('1500us'), 1.5);
});

/** A complete file with the DefaultLANConfig values, as MetalLB's docs show it. */
const LAN_FILE = {
  TCPTimeout: '10s',
  IndirectChecks: 3,
  RetransmitMult: 4,
  SuspicionMult: 4,
  SuspicionMaxTimeoutMult: 6,
  PushPullInterval: '30s',
  ProbeTimeout: '500ms',
  ProbeInterval: '1s',
  DisableTcpPings: false,
  AwarenessMaxMultiplier: 8,
  GossipNodes: 3,
  GossipInterval: '200ms',
  GossipToTheDeadTime: '30s',
  GossipVerifyIncoming: true,
  GossipVerifyOutgoing: true,
  EnableCompression: true,
  HandoffQueueDepth: 1024,
  UDPBufferSize: 1400,
  QueueCheckInterval: '30s',
};
const PATH = '/etc/metallb/memberlist/config.json';
const parseFile = (doc: unknown): ReturnType<typeof parseMemberlistConfigFile> => parseMemberlistConfigFile(typeof doc === 'string' ? doc : JSON.stringify(doc), PATH);
/** The config of a file that must parse without warnings. */
const parse = (doc: unknown): MemberlistConfig => {
  const r = parseFile(doc);
  assert.deepEqual(r.warnings, []);
  return r.config;
};

test('a file with the LAN values gives DefaultLANConfig; every field lands in its place', () => {
  assert.deepEqual(MEMBERLIST_FILE_FIELDS, Object.keys(LAN_FILE));
  assert.deepEqual(parse(LAN_FILE), LAN_CONFIG);
  const c = parse({
    ...LAN_FILE,
    TCPTimeout: '1m30s',
    IndirectChecks: 5,
    RetransmitMult: 2,
    SuspicionMult: 7,
    SuspicionMaxTimeoutMult: 3,
    PushPullInterval: '45s',
    ProbeTimeout: '250ms',
    ProbeInterval: '2s',
    DisableTcpPings: true,
    AwarenessMaxMultiplier: 4,
    GossipNodes: 6,
    GossipInterval: '1.5s',
    GossipToTheDeadTime: '1h',
    GossipVerifyIncoming: false,
    GossipVerifyOutgoing: false,
    EnableCompression: false,
    HandoffQueueDepth: 64,
    UDPBufferSize: 9000,
    QueueCheckInterval: '10s',
  });
  assert.deepEqual(c, {
    ...LAN_CONFIG,
    tcpTimeoutMs: 90_000,
    indirectChecks: 5,
    retransmitMult: 2,
    suspicionMult: 7,
    suspicionMaxTimeoutMult: 3,
    pushPullIntervalMs: 45_000,
    probeTimeoutMs: 250,
    probeIntervalMs: 2000,
    disableTcpPings: true,
    awarenessMaxMultiplier: 4,
    gossipNodes: 6,
    gossipIntervalMs: 1500,
    gossipToTheDeadTimeMs: 3_600_000,
    gossipVerifyIncoming: false,
    gossipVerifyOutgoing: false,
    enableCompression: false,
    handoffQueueDepth: 64,
    udpBufferSize: 9000,
    queueCheckIntervalMs: 10_000,
  });
});

test('the file replaces the defaults from DefaultLANConfig, not the WAN ones (as MetalLB)', () => {
  const c = parse(LAN_FILE);
  assert.notEqual(c.probeIntervalMs, WAN_CONFIG.probeIntervalMs);
  assert.equal(c.deadNodeReclaimTimeMs, LAN_CONFIG.deadNodeReclaimTimeMs);
});

test('names match case-insensitively as Go encoding/json does; intervals of 0 switch timers off', () => {
  const lower = Object.fromEntries(Object.entries(LAN_FILE).map(([k, v]) => [k.toLowerCase(), v]));
  assert.deepEqual(parse(lower), LAN_CONFIG);
  const off = parse({ ...LAN_FILE, ProbeInterval: '0', GossipInterval: '0s', PushPullInterval: '0ms', GossipNodes: 0 });
  assert.deepEqual([off.probeIntervalMs, off.gossipIntervalMs, off.pushPullIntervalMs, off.gossipNodes], [0, 0, 0, 0]);
  // with probing off, ProbeTimeout 0 is harmless
  assert.equal(parse({ ...LAN_FILE, ProbeInterval: '0', ProbeTimeout: '0' }).probeTimeoutMs, 0);
});

test('bad files: one line naming the file and the field', () => {
  const { ProbeInterval: _p, ...noProbe } = LAN_FILE;
  const { ProbeInterval: _q, GossipNodes: _g, ...noTwo } = LAN_FILE;
  const cases: { name: string; doc: unknown; want: RegExp }[] = [
    { name: 'not JSON', doc: '{"TCPTimeout": "10s",', want: /^\/etc\/metallb\/memberlist\/config\.json: not valid JSON: / },
    { name: 'an array', doc: [LAN_FILE], want: /: want a JSON object of memberlist settings, got an array$/ },
    { name: 'a missing field', doc: noProbe, want: /^\/etc\/metallb\/memberlist\/config\.json: ProbeInterval: missing/ },
    { name: 'two missing fields', doc: noTwo, want: /: ProbeInterval, GossipNodes: missing/ },
    {
      name: 'a typo instead of the field',
      doc: { ...noProbe, ProbeIntervall: '1s' },
      want: /: ProbeInterval: missing \(every field of the file is required, as MetalLB documents; "ProbeIntervall": did you mean ProbeInterval\?\)$/,
    },
    { name: 'a field twice (case)', doc: { ...LAN_FILE, probeinterval: '2s' }, want: /: ProbeInterval: given twice \("ProbeInterval" and "probeinterval"\)$/ },
    { name: 'a bad duration', doc: { ...LAN_FILE, ProbeInterval: '5x' }, want: /: ProbeInterval: not a duration "5x" \(unknown unit "x"; units ns, us, ms, s, m, h/ },
    { name: 'a duration without unit', doc: { ...LAN_FILE, GossipInterval: '200' }, want: /: GossipInterval: not a duration "200" \(missing unit; / },
    { name: 'a duration as a number', doc: { ...LAN_FILE, TCPTimeout: 10 }, want: /: TCPTimeout: want a Go duration string such as "500ms" or "1m30s", got 10$/ },
    { name: 'a negative duration', doc: { ...LAN_FILE, PushPullInterval: '-30s' }, want: /: PushPullInterval: must not be negative, got "-30s"$/ },
    { name: 'a negative count', doc: { ...LAN_FILE, IndirectChecks: -1 }, want: /: IndirectChecks: must not be negative, got -1$/ },
    { name: 'a fraction', doc: { ...LAN_FILE, GossipNodes: 1.5 }, want: /: GossipNodes: want a whole number written as an integer, got 1.5 / },
    {
      name: 'a whole number with a fraction part',
      doc: JSON.stringify(LAN_FILE).replace('"IndirectChecks":3', '"IndirectChecks":3.0'),
      want: /: IndirectChecks: want a whole number written as an integer, got 3\.0 \(Go's encoding\/json refuses it for an int field, and so does MetalLB\)$/,
    },
    { name: 'an exponent', doc: JSON.stringify(LAN_FILE).replace('"HandoffQueueDepth":1024', '"HandoffQueueDepth":1e3'), want: /: HandoffQueueDepth: want a whole number written as an integer, got 1e3 / },
    {
      name: 'an exponent, capital, with sign',
      doc: JSON.stringify(LAN_FILE).replace('"UDPBufferSize":1400', '"UDPBufferSize":14E+2'),
      want: /: UDPBufferSize: want a whole number written as an integer, got 14E\+2 /,
    },
    { name: 'beyond 2^53', doc: JSON.stringify(LAN_FILE).replace('"GossipNodes":3', '"GossipNodes":9007199254740993'), want: /: GossipNodes: want a whole number, got 9007199254740993$/ },
    { name: 'a count as a string', doc: { ...LAN_FILE, RetransmitMult: '4' }, want: /: RetransmitMult: want a whole number, got "4"$/ },
    { name: 'null', doc: { ...LAN_FILE, UDPBufferSize: null }, want: /: UDPBufferSize: want a whole number, got null$/ },
    { name: 'a flag as a string', doc: { ...LAN_FILE, DisableTcpPings: 'false' }, want: /: DisableTcpPings: want true or false, got "false"$/ },
    { name: 'TCPTimeout 0', doc: { ...LAN_FILE, TCPTimeout: '0s' }, want: /: TCPTimeout: must not be 0 \(every join, push\/pull and TCP ping would time out at once\)$/ },
    { name: 'HandoffQueueDepth 0', doc: { ...LAN_FILE, HandoffQueueDepth: 0 }, want: /: HandoffQueueDepth: must not be 0 / },
    { name: 'AwarenessMaxMultiplier 0', doc: { ...LAN_FILE, AwarenessMaxMultiplier: 0 }, want: /: AwarenessMaxMultiplier: must not be 0 / },
    { name: 'ProbeTimeout 0 while probing', doc: { ...LAN_FILE, ProbeTimeout: '0' }, want: /: ProbeTimeout: must not be 0 while ProbeInterval is set/ },
  ];
  for (const c of cases) {
    assert.throws(
      () => parse(c.doc),
      (e: unknown) => {
        assert.ok(e instanceof InputError, c.name);
        assert.equal(e.exitCode, 2, c.name);
        assert.match(e.message, c.want, c.name);
        assert.ok(!e.message.includes('\n'), `${c.name}: one line`);
        return true;
      },
      c.name,
    );
  }
});

test('unknown fields are ignored with a warning (as Go\'s encoding/json ignores them), a "did you mean" for a typo', () => {
  const r = parseFile({ ...LAN_FILE, ProbeIntervall: '1s', BindPort: 7946, nested: { a: 1.5 } });
  assert.deepEqual(r.config, LAN_CONFIG);
  assert.deepEqual(r.warnings, [
    `${PATH}: unknown field "ProbeIntervall" ignored (did you mean ProbeInterval?; MetalLB ignores unknown fields too)`,
    `${PATH}: unknown field "BindPort" ignored (fields: ${MEMBERLIST_FILE_FIELDS.join(', ')}; MetalLB ignores unknown fields too)`,
    `${PATH}: unknown field "nested" ignored (fields: ${MEMBERLIST_FILE_FIELDS.join(', ')}; MetalLB ignores unknown fields too)`,
  ]);
  for (const w of r.warnings) assert.ok(!w.includes('\n'));
});

test("counts: integer literals only, as Go's encoding/json for an int field; -0 is 0; whitespace and key case do not matter", () => {
  assert.equal(parse(JSON.stringify(LAN_FILE).replace('"IndirectChecks":3', '"IndirectChecks":-0')).indirectChecks, 0);
  assert.ok(Object.is(parse(JSON.stringify(LAN_FILE).replace('"IndirectChecks":3', '"IndirectChecks":-0')).indirectChecks, 0));
  const pretty = JSON.stringify(Object.fromEntries(Object.entries(LAN_FILE).map(([k, v]) => [k.toUpperCase(), v])), null, 4);
  assert.deepEqual(parse(pretty), LAN_CONFIG);
  assert.equal(parse({ ...LAN_FILE, HandoffQueueDepth: 1e3 }).handoffQueueDepth, 1000, 'JSON.stringify writes 1e3 as 1000');
  // an unknown field may hold any number: only the 8 count fields are checked
  assert.equal(parseFile(JSON.stringify(LAN_FILE).replace('{', '{"Extra":1.0e9,')).warnings.length, 1);
});

test('very long durations are accepted as Go accepts them (the member clamps its timers)', () => {
  assert.equal(parse({ ...LAN_FILE, TCPTimeout: '720h' }).tcpTimeoutMs, 720 * 3_600_000);
  assert.equal(parse({ ...LAN_FILE, PushPullInterval: '2562047h' }).pushPullIntervalMs, 2562047 * 3_600_000);
});

test("metallb-ts speaker: a bad --ml-config-path file stops it with one line naming file and field, exit 2; MetalLB's log line first", async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { runCliAsync } = await import('../helpers/cli.ts');
  const dir = mkdtempSync(join(tmpdir(), 'ml-config-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
  );
  const bad = join(dir, 'config.json');
  writeFileSync(bad, JSON.stringify({ ...LAN_FILE, ProbeInterval: '5x' }));
  const fifo = join(dir, 'fifo.json');
  (await import('node:child_process')).execFileSync('mkfifo', [fifo]);
  const big = join(dir, 'big.json');
  writeFileSync(big, JSON.stringify(LAN_FILE) + ' '.repeat(1024 * 1024));
  const args = (path: string) => [
    'speaker',
    '--node-name',
    'n1',
    '--kubeconfig',
    kubeconfig,
    '--port',
    '0',
    '--health-probe-port',
    '0',
    '--metrics-bind-address',
    '127.0.0.1',
    '--l2-data-plane',
    'log',
    '--ml-bindaddr',
    '127.0.0.1',
    '--ml-bindport',
    '0',
    '--ml-labels',
    'app=metallb',
    '--ml-config-path',
    path,
  ];
  const cases: { name: string; path: string; stderr: RegExp; logged: boolean }[] = [
    { name: 'invalid duration', path: bad, stderr: new RegExp(`^metallb-ts: ${bad.replace(/[.]/g, '\\.')}: ProbeInterval: not a duration "5x"`), logged: true },
    { name: 'a directory', path: dir, stderr: new RegExp(`^metallb-ts: ${dir.replace(/[.]/g, '\\.')}: cannot read the memberlist config file: a directory, not a regular file$`), logged: false },
    // /dev/zero would read gigabytes, a FIFO would block the speaker forever: refused before opening
    { name: '/dev/zero', path: '/dev/zero', stderr: /^metallb-ts: \/dev\/zero: cannot read the memberlist config file: a character device, not a regular file$/, logged: false },
    { name: 'a FIFO', path: fifo, stderr: new RegExp(`^metallb-ts: ${fifo.replace(/[.]/g, '\\.')}: cannot read the memberlist config file: a FIFO, not a regular file$`), logged: false },
    { name: 'over 1 MiB', path: big, stderr: new RegExp(`^metallb-ts: ${big.replace(/[.]/g, '\\.')}: cannot read the memberlist config file: larger than 1048576 bytes \\(1 MiB\\)$`), logged: false },
  ];
  for (const c of cases) {
    const r = await runCliAsync(args(c.path));
    assert.equal(r.status, 2, `${c.name}: ${r.stderr}`);
    assert.match(r.stderr.trim(), c.stderr, c.name);
    assert.equal(r.stderr.trim().split('\n').length, 1, `${c.name}: one line, no stack`);
    const loading = r.stdout
      .split('\n')
      .filter((l) => l.includes('loading memberlist config from file'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(loading.length, c.logged ? 1 : 0, c.name);
    if (c.logged) assert.deepEqual([loading[0]!.op, loading[0]!.path], ['startup', c.path]);
  }
});

/**
 * Runs `metallb-ts speaker ARGS` (cluster unreachable: it keeps retrying) until a stdout line
 * satisfies `until` or 20 s pass, then stops it with SIGTERM; resolves with its log lines.
 */
async function speakerLines(args: string[], until: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>[]> {
  const { spawn } = await import('node:child_process');
  const { CLI, ROOT } = await import('../helpers/cli.ts');
  const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  let rest = '';
  const timer = setTimeout(() => child.kill('SIGTERM'), 20_000);
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    rest += d;
    const parts = rest.split('\n');
    rest = parts.pop()!;
    for (const p of parts) {
      const line = JSON.parse(p) as Record<string, unknown>;
      lines.push(line);
      if (until(line)) child.kill('SIGTERM');
    }
  });
  await new Promise((r) => child.on('close', r));
  clearTimeout(timer);
  assert.equal(stderr, '', 'nothing on stderr');
  return lines;
}

test('metallb-ts speaker: a missing config file is logged with its path; unknown fields are warn lines; --ml-config-path with memberlist off is warned about', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'ml-config-log-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
  );
  const base = ['speaker', '--node-name', 'n1', '--kubeconfig', kubeconfig, '--port', '0', '--health-probe-port', '0', '--metrics-bind-address', '127.0.0.1', '--l2-data-plane', 'log'];
  const ml = ['--ml-bindaddr', '127.0.0.1', '--ml-bindport', '0', '--ml-labels', 'app=metallb'];
  const serving = (l: Record<string, unknown>) => typeof l.msg === 'string' && l.msg.startsWith('serving /metrics');
  const pick = (lines: Record<string, unknown>[], keys: string[]) => lines.map((l) => Object.fromEntries(keys.filter((k) => k in l).map((k) => [k, l[k]])));

  const absent = join(dir, 'conifg.json');
  for (const [extra, kind] of [
    [[], 'LAN'],
    [['--ml-wan-config'], 'WAN'],
  ] as const) {
    const lines = await speakerLines([...base, ...ml, ...extra, '--ml-config-path', absent], serving);
    const about = lines.filter((l) => l.path === absent);
    assert.deepEqual(pick(about, ['level', 'op', 'msg', 'path']), [{ level: 'info', op: 'startup', msg: `no memberlist config file, using memberlist's default ${kind} configuration`, path: absent }]);
  }

  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ ...LAN_FILE, ProbeIntervall: '2s', Comment: 'from MetalLB' }));
  const lines = await speakerLines([...base, ...ml, '--ml-config-path', file], serving);
  assert.deepEqual(
    pick(
      lines.filter((l) => l.path === file),
      ['level', 'op', 'msg', 'path', 'warning'],
    ),
    [
      { level: 'info', op: 'startup', msg: 'loading memberlist config from file', path: file },
      { level: 'warn', op: 'startup', path: file, warning: `${file}: unknown field "ProbeIntervall" ignored (did you mean ProbeInterval?; MetalLB ignores unknown fields too)` },
      { level: 'warn', op: 'startup', path: file, warning: `${file}: unknown field "Comment" ignored (fields: ${MEMBERLIST_FILE_FIELDS.join(', ')}; MetalLB ignores unknown fields too)` },
    ],
  );
  assert.ok(
    lines.some((l) => l.msg === 'memberlist on: joining the speaker pods'),
    'the speaker went on',
  );

  const off = await speakerLines([...base, '--ml-config-path', absent], serving);
  assert.deepEqual(
    pick(
      off.filter((l) => l.path === absent),
      ['level', 'op', 'path', 'warning'],
    ),
    [{ level: 'warn', op: 'startup', path: absent, warning: '--ml-config-path is ignored: memberlist is off (it needs --ml-bindaddr and --ml-labels)' }],
  );
  // not given: no warning about the default path
  const quiet = await speakerLines(base, serving);
  assert.equal(quiet.filter((l) => l.level === 'warn').length, 0);
});

test('readMemberlistConfigFile: a missing file means the defaults (null, nothing logged); a present one is announced, then parsed', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { readMemberlistConfigFile } = await import('../../src/speaker/membership-memberlist.ts');
  const dir = mkdtempSync(join(tmpdir(), 'ml-read-'));
  const seen: string[] = [];
  assert.equal(
    readMemberlistConfigFile(join(dir, 'absent.json'), (p) => seen.push(p)),
    null,
  );
  assert.equal(seen.length, 0);
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ ...LAN_FILE, ProbeInterval: '2s' }, null, 2));
  assert.equal(readMemberlistConfigFile(file, (p) => seen.push(p))!.config.probeIntervalMs, 2000);
  assert.deepEqual(seen, [file]);
  writeFileSync(file, '{}');
  assert.throws(() => readMemberlistConfigFile(file, (p) => seen.push(p)), /config\.json: TCPTimeout, IndirectChecks, .*: missing/);
  assert.deepEqual(seen, [file, file], 'announced before the parse fails, as MetalLB logs before unmarshalling');
});
