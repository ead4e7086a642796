/** Runs the CLI (src/cli.ts on this Node) as a subprocess from the repository root, for tests. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const CLI = join(ROOT, 'src/cli.ts');

/** Exit status and output of one run. */
export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `metallb-ts ARGS` without blocking the event loop, `input` on stdin. */
export function runCliAsync(args: string[], input = ''): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(input);
  });
}
