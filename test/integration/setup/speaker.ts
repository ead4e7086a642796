// One `metallb-ts speaker` subprocess for the integration tests, with its JSON log lines collected.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT, type TestCluster } from './cluster.ts';

const BIN = join(REPO_ROOT, 'bin/metallb-ts');

/** A running speaker: its node, process, parsed stdout lines, stderr chunks and exit status. */
export interface SpeakerProc {
  node: string;
  proc: ChildProcess;
  /** stdout JSON lines, parsed; a line that is not JSON is `{ raw }` */
  lines: Array<Record<string, unknown>>;
  stderr: string[];
  /** HOST:PORT of /metrics, from the start-up line */
  metrics?: string;
  /** HOST:PORT of /healthz and /readyz, from the start-up line */
  health?: string;
  /** resolves with the exit code (null after a signal) */
  exit: Promise<number | null>;
}

/**
 * Starts `metallb-ts speaker` for `node` against `kubeconfig` with `args` added, metrics and health
 * on free ports of 127.0.0.1, and `env` over a process environment without METALLB_NAMESPACE and
 * METALLB_NODE_NAME. Always `--l2-data-plane log`: these speakers run in the machine's own network
 * namespace and must not answer ARP or send gratuitous ARPs on its interfaces
 * (test/integration/l2-netns.test.ts does, in namespaces it creates).
 */
export function spawnSpeaker(kubeconfig: string, node: string, args: string[], env: NodeJS.ProcessEnv = {}): SpeakerProc {
  const proc = spawn(BIN, ['speaker', '--node-name', node, '--kubeconfig', kubeconfig, '--l2-data-plane', 'log', '--metrics-bind-address', '127.0.0.1', '--port', '0', '--health-probe-port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, METALLB_NAMESPACE: '', METALLB_NODE_NAME: '', ...env },
  });
  const s: SpeakerProc = { node, proc, lines: [], stderr: [], exit: new Promise((r) => proc.on('exit', (code) => r(code))) };
  let buf = '';
  proc.stdout!.on('data', (chunk: Buffer) => {
    buf += chunk.toString('utf8');
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        const obj = JSON.parse(line) as Record<string, unknown>;
        s.lines.push(obj);
        if (typeof obj.metrics === 'string') s.metrics = obj.metrics;
        if (typeof obj.health === 'string') s.health = obj.health;
      } catch {
        s.lines.push({ raw: line });
      }
    }
  });
  proc.stderr!.on('data', (c: Buffer) => s.stderr.push(c.toString('utf8')));
  return s;
}

/** The last log lines and stderr of each speaker and of the API server, for assertion messages. */
export function speakerLogs(speakers: readonly SpeakerProc[], cluster: TestCluster | undefined): string {
  return (
    speakers
      .map(
        (s) =>
          `--- ${s.node}\n${s.lines
            .slice(-15)
            .map((l) => JSON.stringify(l))
            .join('\n')}\n${s.stderr.join('').slice(-800)}`,
      )
      .join('\n') + `\n${cluster?.logTail(20) ?? ''}`
  );
}
