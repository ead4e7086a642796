// Issue #15 items 1, 2 and 5: a hostile source floods a `metallb-ts speaker`'s memberlist port
// (UDP and TCP, on 127.0.0.0/8) with the decompression amplification packet (~65 KB, 150 compressed
// parts each unpacking ~64 KB then failing) and random garbage, 40+40 datagrams a second and 10
// streams a second for 8 s, while a real HashiCorp memberlist v0.5.1 peer (MetalLB's) is a member.
// What an operator would observe: the speaker's event loop never stalls 100 ms
// (nodejs_eventloop_lag_max_seconds, measured inside the speaker with perf_hooks), /healthz answers
// every probe within 1 s, the Go peer stays a member on both sides, and the drops show in /metrics
// as metallb_speaker_memberlist_dropped_total by reason. The figures are printed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { REPO_ROOT, startTestCluster, type TestCluster } from './setup/cluster.ts';
import { sleep, waitFor } from './setup/wait.ts';
import { spawnSpeaker, type SpeakerProc } from './setup/speaker.ts';
import { amplificationPacket, garbagePacket } from './setup/hostile-memberlist.ts';
import { encodePushPull, encodeStreamMessage } from '../../src/core/membership/messages.ts';

const NS = 'metallb-system';
const PEER = join(REPO_ROOT, '.cache/memberlist-peer/memberlist-peer');
const SPEAKER = { node: 'flood-a', ip: '127.0.41.1' };
const GO_PEER = { node: 'flood-b', ip: '127.0.41.2' };
const ATTACKER = '127.0.41.3';
const FLOOD_MS = 8000;

/** One sample of a Prometheus text exposition: the value of `name{labels}` (labels as written), or undefined. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const re = new RegExp(`^${name}${labels ? `\\{${labels.replace(/[{}]/g, '')}\\}` : ''} (\\S+)$`, 'm');
  const m = re.exec(text);
  return m ? Number(m[1]) : undefined;
}

function dropped(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^metallb_speaker_memberlist_dropped_total\{reason="([^"]+)"\} (\S+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

describe('a speaker under a memberlist flood (issue #15)', () => {
  let cluster: TestCluster;
  let speaker: SpeakerProc;
  let peer: ChildProcess | null = null;
  let peerHttp = '';
  let port = 0;
  let reniced = false;

  before(async () => {
    cluster = await startTestCluster();
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    for (const { node, ip } of [SPEAKER, GO_PEER]) {
      await core.createNode({ body: { metadata: { name: node, labels: { 'kubernetes.io/hostname': node } } } });
      await core.createNamespacedPod({
        namespace: NS,
        body: {
          metadata: { name: `speaker-${node}`, labels: { app: 'metallb', component: 'speaker' } },
          spec: { nodeName: node, automountServiceAccountToken: false, containers: [{ name: 'speaker', image: 'metallb-ts:0.1.0' }] },
        },
      });
      await core.patchNamespacedPodStatus(
        { namespace: NS, name: `speaker-${node}`, body: { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    port = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer();
      srv.once('error', reject);
      srv.listen(0, SPEAKER.ip, () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    // MetalLB's memberlist (v0.5.1, no key) on the other "node"; the speaker joins it through its pod IP
    const proc = spawn(PEER, ['-name', GO_PEER.node, '-bind', GO_PEER.ip, '-port', String(port), '-http', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    peer = proc;
    peerHttp = await new Promise<string>((resolve, reject) => {
      createInterface({ input: proc.stdout! }).on('line', (l) => {
        const m = /^http (\S+)/.exec(l);
        if (m) resolve(m[1]!);
      });
      proc.once('exit', (c) => reject(new Error(`go peer exited ${c}`)));
    });
    speaker = spawnSpeaker(cluster.kubeconfigPath, SPEAKER.node, ['--ml-bindaddr', SPEAKER.ip, '--ml-bindport', String(port), '--ml-labels', 'app=metallb,component=speaker'], {
      METALLB_ML_SECRET_KEY_PATH: '',
    });
    // The stall measured must be the speaker's own: on a test machine shared by many busy processes
    // the scheduler alone parks an idle process for 50-100 ms. A speaker pod's CPU request gives it
    // its share on a node; here a higher priority (as root) does. Printed either way.
    reniced = speaker.proc.pid !== undefined && spawnSync('renice', ['-n', '-10', '-p', String(speaker.proc.pid)]).status === 0;
  });

  after(async () => {
    if (speaker && speaker.proc.exitCode === null) speaker.proc.kill('SIGKILL');
    if (peer && peer.exitCode === null) peer.kill('SIGKILL');
    await cluster?.stop();
  });

  const logs = (): string =>
    `${speaker.lines
      .slice(-25)
      .map((l) => JSON.stringify(l))
      .join('\n')}\n${speaker.stderr.join('').slice(-1000)}`;
  const speakerAlive = async (): Promise<string[]> => {
    const v = (await (await fetch(`http://${speaker.metrics}/debug/members`)).json()) as { members: Array<{ name: string; state: string }> };
    return v.members
      .filter((m) => m.state === 'alive')
      .map((m) => m.name)
      .sort();
  };
  const peerAlive = async (): Promise<string[]> => ((await (await fetch(`http://${peerHttp}/members`)).json()) as Array<{ name: string }>).map((m) => m.name).sort();
  const both = [SPEAKER.node, GO_PEER.node].sort();

  test('amplification packets, garbage datagrams and streams: no stall over 100 ms, /healthz within 1 s, the Go peer stays, drops in /metrics', async () => {
    await waitFor(
      'the speaker and the Go peer to see each other',
      async () => {
        if (!speaker.metrics) return undefined;
        return JSON.stringify(await speakerAlive()) === JSON.stringify(both) && JSON.stringify(await peerAlive()) === JSON.stringify(both) ? true : undefined;
      },
      logs,
      60_000,
    );
    const scrape = async (): Promise<string> => (await fetch(`http://${speaker.metrics}/metrics`)).text();
    const health = `http://${speaker.health}/healthz`;

    // a quiet period of the same length first: the machine's own scheduling noise, for the printout
    await scrape(); // resets the lag histogram (start-up is not measured)
    let quietWorst = 0;
    for (const end = Date.now() + 3000; Date.now() < end; ) {
      await sleep(1000);
      quietWorst = Math.max(quietWorst, sample(await scrape(), 'nodejs_eventloop_lag_max_seconds') ?? 0);
    }
    const before = await scrape();
    const cpuBefore = sample(before, 'process_cpu_seconds_total')!;
    assert.ok(Number.isFinite(cpuBefore), 'process_cpu_seconds_total is exported');

    const udp = dgram.createSocket('udp4');
    await new Promise<void>((r) => udp.bind(0, ATTACKER, () => r()));
    const { packet: amp, parts } = amplificationPacket();
    const bomb = encodeStreamMessage(encodePushPull({ join: true, nodes: [], userState: new Uint8Array(4 << 20) }), {
      keyring: null,
      label: '',
      enableCompression: true,
      gossipVerifyIncoming: true,
      gossipVerifyOutgoing: true,
    });
    let sent = 0;
    let streams = 0;
    let sendErrors = 0;
    const flood = setInterval(() => {
      for (const p of [amp, garbagePacket(1, 65_000)]) {
        udp.send(p, port, SPEAKER.ip, (err) => {
          if (err) sendErrors++;
        });
        sent++;
      }
    }, 25);
    const streamFlood = setInterval(() => {
      const sock = net.connect({ host: SPEAKER.ip, port, localAddress: ATTACKER });
      sock.on('error', () => {});
      sock.on('connect', () => {
        sock.end(streams % 2 === 0 ? garbagePacket(1, 200_000) : bomb);
        streams++;
      });
      setTimeout(() => sock.destroy(), 2000).unref();
    }, 100);

    const healthMs: number[] = [];
    const healthFailures: string[] = [];
    let worstStall = 0;
    let worstHandlerCpu = 0;
    let peerLost = '';
    const floodEnd = Date.now() + FLOOD_MS;
    const probes = (async () => {
      while (Date.now() < floodEnd) {
        const t0 = performance.now();
        try {
          const r = await fetch(health, { signal: AbortSignal.timeout(1000) });
          if (r.status !== 200) healthFailures.push(`status ${r.status}`);
          await r.text();
        } catch (e) {
          healthFailures.push((e as Error).message);
        }
        healthMs.push(performance.now() - t0);
        await sleep(200);
      }
    })();
    const watch = (async () => {
      while (Date.now() < floodEnd) {
        await sleep(1000);
        const text = await scrape();
        worstStall = Math.max(worstStall, sample(text, 'nodejs_eventloop_lag_max_seconds') ?? 0);
        worstHandlerCpu = Math.max(worstHandlerCpu, sample(text, 'metallb_speaker_memberlist_handler_cpu_max_seconds') ?? 0);
        const a = await speakerAlive();
        const b = await peerAlive();
        if (JSON.stringify(a) !== JSON.stringify(both) || JSON.stringify(b) !== JSON.stringify(both)) peerLost ||= `speaker sees ${a.join(',')}, Go peer sees ${b.join(',')}`;
      }
    })();
    await Promise.all([probes, watch]);
    clearInterval(flood);
    clearInterval(streamFlood);
    await sleep(500);
    udp.close();
    const afterText = await scrape();
    worstStall = Math.max(worstStall, sample(afterText, 'nodejs_eventloop_lag_max_seconds') ?? 0);
    worstHandlerCpu = Math.max(worstHandlerCpu, sample(afterText, 'metallb_speaker_memberlist_handler_cpu_max_seconds') ?? 0);
    const cpu = sample(afterText, 'process_cpu_seconds_total')! - cpuBefore;
    const drops = dropped(afterText);
    const worstHealth = Math.max(...healthMs);
    console.log(
      `flood: ${sent} datagrams (${sent / 2} amplification packets of ${amp.length} bytes / ${parts} parts, ${sent / 2} garbage), ${streams} streams, ${(FLOOD_MS / 1000).toFixed(0)} s; `
        + `worst event-loop stall ${(worstStall * 1000).toFixed(1)} ms (quiet: ${(quietWorst * 1000).toFixed(1)} ms), worst memberlist handler ${(worstHandlerCpu * 1000).toFixed(1)} ms of CPU; speaker CPU ${cpu.toFixed(2)} s; `
        + `/healthz ${healthMs.length} probes, worst ${worstHealth.toFixed(0)} ms; drops ${JSON.stringify(drops)}; speaker reniced -10: ${reniced}`,
    );

    assert.equal(sendErrors, 0, 'every datagram was sent');
    assert.deepEqual(healthFailures, [], `every /healthz probe answered 200 within 1 s\n${logs()}`);
    assert.ok(worstHealth < 1000, `worst /healthz ${worstHealth} ms`);
    assert.ok(worstHandlerCpu > 0 && worstHandlerCpu < 0.05, `worst memberlist handler ${(worstHandlerCpu * 1000).toFixed(1)} ms of CPU`);
    assert.ok(worstStall < 0.1, `worst event-loop stall ${(worstStall * 1000).toFixed(1)} ms (quiet period: ${(quietWorst * 1000).toFixed(1)} ms)`);
    assert.equal(peerLost, '', 'the Go peer stayed a member on both sides throughout');
    assert.deepEqual(await speakerAlive(), both);
    assert.deepEqual(await peerAlive(), both);
    assert.ok((drops.rateLimited ?? 0) > 0, `rateLimited drops exported: ${JSON.stringify(drops)}`);
    assert.ok((drops.amplification ?? 0) > 0, `amplification drops exported: ${JSON.stringify(drops)}`);
    const malformedish = (drops.malformed ?? 0) + (drops.unknownType ?? 0) + (drops.truncated ?? 0);
    assert.ok(malformedish > 0, `garbage counted: ${JSON.stringify(drops)}`);
    // the drop log: one line per reason at most in this minute
    const dropLines = speaker.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('memberlist: dropped'));
    const reasons = dropLines.map((l) => /\(reason (\w+)/.exec(String(l.msg))?.[1]);
    assert.ok(reasons.includes('rateLimited'), `a rateLimited line is logged\n${dropLines.map((l) => l.msg).join('\n')}`);
    assert.equal(new Set(reasons).size, reasons.length, `one line per reason per minute\n${dropLines.map((l) => l.msg).join('\n')}`);
    speaker.proc.kill('SIGTERM');
    assert.equal(await speaker.exit, 0, logs());
  });
});
