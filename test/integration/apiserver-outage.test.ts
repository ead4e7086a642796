// Issue #15 item 4: an API server outage is visible, and so is its end. A `metallb-ts controller`
// and a `metallb-ts speaker` run against the test kube-apiserver, which is stopped for 8 s and
// started again (same port, certificates and etcd). What an operator would observe: each daemon
// logs its failed list/watches, then one line "list/watch recovered after an outage of N s" with
// outageMs; metallb_k8s_client_sync_age_seconds grows during the outage and is 0 again after.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { REPO_ROOT, startTestCluster, type TestCluster } from './setup/cluster.ts';
import { sleep, waitFor } from './setup/wait.ts';
import { spawnSpeaker, type SpeakerProc } from './setup/speaker.ts';

const BIN = join(REPO_ROOT, 'bin/metallb-ts');
const DOWN_MS = 8000;

interface Daemon {
  name: string;
  lines: () => Array<Record<string, unknown>>;
  metrics: () => Promise<string>;
  stop: () => Promise<number | null>;
}

function sample(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

describe('an API server outage (issue #15)', () => {
  let cluster: TestCluster;
  let controller: ChildProcess | undefined;
  let speaker: SpeakerProc | undefined;

  before(async () => {
    cluster = await startTestCluster();
    await cluster.kubeConfig.makeApiClient(CoreV1Api).createNode({ body: { metadata: { name: 'outage-a', labels: { 'kubernetes.io/hostname': 'outage-a' } } } });
  });

  after(async () => {
    if (controller && controller.exitCode === null) controller.kill('SIGKILL');
    if (speaker && speaker.proc.exitCode === null) speaker.proc.kill('SIGKILL');
    await cluster?.stop();
  });

  async function startController(): Promise<Daemon> {
    const proc = spawn(BIN, ['controller', '--kubeconfig', cluster.kubeconfigPath, '--metrics-bind-address', '127.0.0.1', '--metrics-port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, KUBECONFIG: '', METALLB_NAMESPACE: '' },
    });
    controller = proc;
    const lines: Array<Record<string, unknown>> = [];
    let buf = '';
    let port = 0;
    const onData = (d: Buffer): void => {
      buf += d.toString('utf8');
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try {
          lines.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          lines.push({ raw: line });
        }
        const m = /"address":"127\.0\.0\.1:(\d+)"/.exec(line);
        if (m) port = Number(m[1]);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    const exited = new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
    await waitFor(
      'the controller to serve /metrics',
      async () => (port ? true : undefined),
      () => lines.map((l) => JSON.stringify(l)).join('\n'),
    );
    return {
      name: 'controller',
      lines: () => lines,
      metrics: async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text(),
      stop: async () => {
        proc.kill('SIGTERM');
        return exited;
      },
    };
  }

  function startSpeaker(): Daemon {
    const s = spawnSpeaker(cluster.kubeconfigPath, 'outage-a', ['--log-level', 'info']);
    speaker = s;
    return {
      name: 'speaker',
      lines: () => s.lines,
      metrics: async () => (await fetch(`http://${s.metrics}/metrics`)).text(),
      stop: async () => {
        s.proc.kill('SIGTERM');
        return s.exit;
      },
    };
  }

  test('both daemons log the failed list/watches, then the recovery with the outage length; metallb_k8s_client_sync_age_seconds follows', async () => {
    const daemons = [await startController(), startSpeaker()];
    const detail = (d: Daemon) => (): string =>
      `${d.name}:\n${d
        .lines()
        .slice(-30)
        .map((l) => JSON.stringify(l))
        .join('\n')}`;
    for (const d of daemons) {
      await waitFor(`${d.name} synced (sync age 0 exported)`, async () => (sample(await d.metrics(), 'metallb_k8s_client_sync_age_seconds') === 0 ? true : undefined), detail(d), 60_000);
    }
    const failedBefore = daemons.map((d) => d.lines().filter((l) => l.msg === 'list/watch failed, retrying').length);

    let restarted = false;
    const restart = cluster.restartApiserver(DOWN_MS).finally(() => {
      restarted = true;
    });
    // the largest sync age each daemon exports while the API server is away
    const during = [0, 0];
    while (!restarted) {
      await sleep(1000);
      await Promise.all(
        daemons.map(async (d, i) => {
          during[i] = Math.max(during[i]!, sample(await d.metrics(), 'metallb_k8s_client_sync_age_seconds') ?? 0);
        }),
      );
    }
    const unreachableMs = await restart;

    const recovered: Array<Record<string, unknown>> = [];
    for (const d of daemons) {
      recovered.push(await waitFor(`${d.name} logs the recovery`, async () => d.lines().find((l) => typeof l.msg === 'string' && l.msg.startsWith('list/watch recovered')), detail(d), 120_000));
    }
    const afterAges = await Promise.all(daemons.map(async (d) => sample(await d.metrics(), 'metallb_k8s_client_sync_age_seconds')!));
    console.log(
      `API server unreachable ${unreachableMs} ms; ${daemons
        .map(
          (d, i) =>
            `${d.name}: ${d.lines().filter((l) => l.msg === 'list/watch failed, retrying').length - failedBefore[i]!} failed list/watch lines, `
            + `largest sync age ${during[i]} s during the outage, then "${String(recovered[i]!.msg)}" (outageMs ${String(recovered[i]!.outageMs)}), sync age ${afterAges[i]} s`,
        )
        .join('; ')}`,
    );

    daemons.forEach((d, i) => {
      const failures = d.lines().filter((l) => l.msg === 'list/watch failed, retrying');
      assert.ok(failures.length > failedBefore[i]!, `${d.name} logs each failed list/watch\n${detail(d)()}`);
      assert.equal(typeof failures.at(-1)!.resource, 'string');
      assert.ok(during[i]! >= 1, `${d.name}: sync age ${during[i]} s during the outage`);
      const r = recovered[i]!;
      assert.equal(r.level ?? 'info', 'info');
      assert.equal(r.server, cluster.server);
      assert.ok(Array.isArray(r.resources) && r.resources.length > 0, JSON.stringify(r));
      const outageMs = Number(r.outageMs);
      // from the first failed watch (the stop) to the last one working again: ready, plus the retry
      // backoffs (ours, 1 s doubling to 30 s, and client-node's reconnect delay on top)
      assert.ok(outageMs >= DOWN_MS - 1000 && outageMs <= unreachableMs + 75_000, `${d.name}: outageMs ${outageMs}, the API server was unreachable ${unreachableMs} ms`);
      assert.match(String(r.msg), /^list\/watch recovered after an outage of \d+\.\d s$/);
      assert.equal(afterAges[i], 0, `${d.name}: sync age 0 after the recovery`);
    });
    // one recovery line per outage
    for (const d of daemons) assert.equal(d.lines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('list/watch recovered')).length, 1, detail(d)());
    for (const d of daemons) assert.equal(await d.stop(), 0, detail(d)());
  });
});
