/**
 * The daemons' /metrics endpoints (issue #14): every metallb_* family MetalLB v0.16.1's speaker and
 * controller export, and the process_* families of Go's process collector (through prom-client's
 * own collectors, src/runtime/metrics-client.ts); the speaker also the event loop's lag (issue
 * #15's stall bound), and neither any other of prom-client's nodejs_* families; prom-client's
 * index, its gc and heap-space collectors and node:v8 are never loaded for them, the event-loop
 * monitor not for the controller. Real HTTP servers on 127.0.0.1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { ControllerMetrics, startHttpServer } from '../../src/controller/metrics.ts';
import { EVENT_LOOP_METRIC_NAMES } from '../../src/runtime/event-loop-metrics.ts';
import { PROCESS_METRIC_NAMES } from '../../src/runtime/metrics-client.ts';
import { serveEndpoints } from '../../src/speaker/http.ts';
import { speakerMetrics } from '../../src/speaker/metrics.ts';

const ROOT = join(import.meta.dirname, '../..');

/** The process_* families MetalLB's daemons export (Go's process collector), each a number. */
const GO_PROCESS = ['process_cpu_seconds_total', 'process_start_time_seconds', 'process_resident_memory_bytes', 'process_virtual_memory_bytes', 'process_open_fds', 'process_max_fds'];

/** MetalLB v0.16.1's speaker families (speaker/main.go, internal/k8s/controllers/stats.go, internal/layer2/stats.go) and their types. */
const SPEAKER_FAMILIES: Record<string, string> = {
  metallb_speaker_announced: 'gauge',
  metallb_k8s_client_updates_total: 'counter',
  metallb_k8s_client_update_errors_total: 'counter',
  metallb_k8s_client_config_loaded_bool: 'gauge',
  metallb_k8s_client_config_stale_bool: 'gauge',
  metallb_layer2_requests_received: 'counter',
  metallb_layer2_responses_sent: 'counter',
  metallb_layer2_gratuitous_sent: 'counter',
};

/** MetalLB v0.16.1's controller families (internal/allocator/stats.go, internal/k8s/controllers/stats.go). */
const CONTROLLER_FAMILIES: Record<string, string> = {
  metallb_allocator_addresses_total: 'gauge',
  metallb_allocator_ipv4_addresses_total: 'gauge',
  metallb_allocator_ipv6_addresses_total: 'gauge',
  metallb_allocator_addresses_in_use_total: 'gauge',
  metallb_allocator_ipv4_addresses_in_use_total: 'gauge',
  metallb_allocator_ipv6_addresses_in_use_total: 'gauge',
  metallb_allocator_services_allocated_total: 'gauge',
  metallb_k8s_client_updates_total: 'counter',
  metallb_k8s_client_update_errors_total: 'counter',
  metallb_k8s_client_config_loaded_bool: 'gauge',
  metallb_k8s_client_config_stale_bool: 'gauge',
};

/** Family name → type, from the exposition's `# TYPE` lines. */
function families(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** The value of the unlabelled sample `name`, or undefined. */
function sample(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

/** What a daemon's /metrics serves besides its metallb_* families (`eventLoopLag`: the speaker's). */
function checkProcessFamilies(text: string, fams: Map<string, string>, eventLoopLag: boolean): void {
  for (const name of GO_PROCESS) {
    const v = sample(text, name);
    assert.ok(v !== undefined && Number.isFinite(v), `${name} is served with a value`);
  }
  assert.ok(sample(text, 'process_resident_memory_bytes')! > 1 << 20, 'resident memory in bytes');
  assert.ok(Math.abs(sample(text, 'process_start_time_seconds')! - (Date.now() / 1000 - process.uptime())) < 5, 'start time in seconds since the epoch');
  assert.ok(sample(text, 'process_open_fds')! > 0 && sample(text, 'process_max_fds')! >= sample(text, 'process_open_fds')!);
  if (eventLoopLag) assert.ok(sample(text, 'nodejs_eventloop_lag_max_seconds')! >= 0, 'the event loop lag');
  const nodejs = [...fams.keys()].filter((n) => n.startsWith('nodejs_'));
  assert.deepEqual(
    nodejs.filter((n) => !eventLoopLag || !n.startsWith('nodejs_eventloop_lag_')),
    [],
    'no other nodejs_* family',
  );
  assert.deepEqual(
    [...fams.keys()].filter((n) => n.startsWith('process_') || n.startsWith('nodejs_')),
    [...PROCESS_METRIC_NAMES, ...(eventLoopLag ? EVENT_LOOP_METRIC_NAMES : [])],
  );
}

test("the speaker's /metrics: MetalLB's metallb_* families, the process_* ones and the event loop's lag only", async () => {
  const m = speakerMetrics({ processMetrics: true });
  m.announced.set({ service: 'shop/frontend', protocol: 'layer2', node: 'n1', ip: '192.0.2.10' }, 1);
  m.layer2.requestsReceived.inc({ ip: '192.0.2.10' });
  const server = await serveEndpoints('127.0.0.1', 0, { registry: m.registry });
  try {
    const res = await fetch(`http://${server.address}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const fams = families(text);
    for (const [name, type] of Object.entries(SPEAKER_FAMILIES)) assert.equal(fams.get(name), type, name);
    assert.match(text, /^metallb_speaker_announced\{service="shop\/frontend",protocol="layer2",node="n1",ip="192\.0\.2\.10"\} 1$/m);
    assert.match(text, /^metallb_layer2_requests_received\{ip="192\.0\.2\.10"\} 1$/m);
    checkProcessFamilies(text, fams, true);
  } finally {
    await server.close();
  }
});

test("the controller's /metrics: MetalLB's metallb_* families and the process_* ones only", async () => {
  const m = new ControllerMetrics();
  m.setPool('v4', { total: 256n, ipv4: 256n, ipv6: 0n, inUseIPv4: 2n, inUseIPv6: 0n, services: 2 });
  const server = await startHttpServer(m, { host: '127.0.0.1', port: 0, ready: () => true });
  try {
    const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    assert.equal(res.status, 200);
    const text = await res.text();
    const fams = families(text);
    for (const [name, type] of Object.entries(CONTROLLER_FAMILIES)) assert.equal(fams.get(name), type, name);
    assert.match(text, /^metallb_allocator_addresses_in_use_total\{pool="v4"\} 2$/m);
    checkProcessFamilies(text, fams, false);
  } finally {
    await server.close();
  }
});

/** Loopback addresses of this machine, in URL form (IPv6 only when `::1` is configured). */
function loopbacks(): string[] {
  const v6 = Object.values(networkInterfaces()).some((list) => (list ?? []).some((a) => a.address === '::1'));
  return v6 ? ['127.0.0.1', '[::1]'] : ['127.0.0.1'];
}

test("both daemons' servers on 0.0.0.0 (the default) listen on every address, IPv4 and IPv6, as Go's net.Listen does, without loading node:dns; answers carry an HTTP Date", async () => {
  const controller = await startHttpServer(new ControllerMetrics(), { host: '0.0.0.0', port: 0, ready: () => true });
  const speaker = await serveEndpoints('0.0.0.0', 0, {});
  try {
    for (const port of [controller.port, Number(speaker.address.split(':').pop())]) {
      for (const host of loopbacks()) {
        const res = await fetch(`http://${host}:${port}/healthz`);
        assert.equal(res.status, 200, `${host}:${port}`);
        const date = res.headers.get('date') ?? '';
        assert.match(date, /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$/);
        assert.ok(Math.abs(Date.parse(date) - Date.now()) < 5_000, date);
      }
    }
  } finally {
    await controller.close();
    await speaker.close();
  }
  // Given a host, even an IP literal, Node resolves it through node:dns (c-ares: 0.85 MiB resident).
  const { builtins } = loadedAfter(`
    const { ControllerMetrics, startHttpServer } = await import(${JSON.stringify(join(ROOT, 'src/controller/metrics.ts'))});
    const s = await startHttpServer(new ControllerMetrics(), { host: '0.0.0.0', port: 0, ready: () => true });
    await s.close();`);
  assert.ok(!builtins.includes('dns'), 'node:dns loaded');
  assert.ok(
    loadedAfter(`
    const { ControllerMetrics, startHttpServer } = await import(${JSON.stringify(join(ROOT, 'src/controller/metrics.ts'))});
    const s = await startHttpServer(new ControllerMetrics(), { host: '127.0.0.1', port: 0, ready: () => true });
    await s.close();`).builtins.includes('dns'),
    'a host given: node:dns (the check above would pass for nothing)',
  );
});

/** prom-client's CommonJS files and Node's built-in modules a fresh process has loaded after `code` (an ES module body). */
function loadedAfter(code: string): { cjs: string[]; builtins: string[] } {
  const script = `
    import { createRequire } from 'node:module';
    ${code}
    const cjs = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes('/prom-client/'));
    const builtins = process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13));
    process.stdout.write(JSON.stringify({ cjs, builtins }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { cjs: string[]; builtins: string[] };
}

test("the daemons' metrics load neither prom-client's index nor its gc and heap collectors nor node:v8; the controller not the event-loop monitor", () => {
  const speaker = loadedAfter(`const { speakerMetrics } = await import(${JSON.stringify(join(ROOT, 'src/speaker/metrics.ts'))}); speakerMetrics({ processMetrics: true });`);
  const controller = loadedAfter(`const { ControllerMetrics } = await import(${JSON.stringify(join(ROOT, 'src/controller/metrics.ts'))}); new ControllerMetrics();`);
  for (const [name, { cjs, builtins }] of Object.entries({ speaker, controller })) {
    assert.ok(
      cjs.some((f) => f.endsWith('/prom-client/lib/metrics/processCpuTotal.js')),
      `${name}: ${cjs.join(', ')}`,
    );
    assert.deepEqual(
      cjs.filter((f) => /\/prom-client\/(index\.js|lib\/(cluster|pushgateway|defaultMetrics|metrics\/(gc|heapSpacesSizeAndUsed|heapSizeAndUsed|version))\.js)$/.test(f)),
      [],
      name,
    );
    assert.deepEqual(
      builtins.filter((b) => b === 'v8' || b === 'cluster'),
      [],
      name,
    );
  }
  // The event-loop monitor (node:perf_hooks, which src/controller/metrics.ts's ESM import of
  // node:http loads here anyway; not in the daemons' bundle): the speaker's only.
  assert.ok(
    speaker.cjs.some((f) => f.endsWith('/prom-client/lib/metrics/eventLoopLag.js')),
    'the speaker monitors its event loop',
  );
  assert.deepEqual(
    controller.cjs.filter((f) => f.endsWith('/eventLoopLag.js')),
    [],
  );
});
