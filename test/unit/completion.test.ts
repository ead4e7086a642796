import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { buildProgram } from '../../src/commands/index.ts';
import { completionScript, SHELLS } from '../../src/commands/completion.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

test('committed completions/ equal the generated scripts (run `npm run completions` after changing the CLI)', () => {
  const program = buildProgram();
  for (const shell of SHELLS) {
    const committed = readFileSync(join(ROOT, `completions/metallb-ts.${shell}`), 'utf8');
    assert.equal(committed, completionScript(program, shell), `completions/metallb-ts.${shell} is stale`);
  }
});

test('scripts cover every command, every option and the -o choices', () => {
  const program = buildProgram();
  for (const shell of SHELLS) {
    const script = completionScript(program, shell);
    for (const cmd of program.commands) {
      assert.ok(script.includes(cmd.name()), `${shell}: ${cmd.name()}`);
      for (const o of cmd.options) assert.ok(script.includes(o.long!.replace(/^--/, '')), `${shell}: ${cmd.name()} ${o.long}`);
    }
    assert.ok(script.includes('table wide json yaml'), `${shell}: -o choices`);
    assert.ok(script.includes('bash zsh fish'), `${shell}: completion shells`);
  }
});

test('bash script is valid and completes commands, -o values and shells', () => {
  const script = completionScript(buildProgram(), 'bash');
  const probe = `${script}
t() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); COMPREPLY=(); _metallb_ts; echo "\${COMPREPLY[*]}"; }
t metallb-ts ex
t metallb-ts explain svc/x -o ""
t metallb-ts snapshot -o j
t metallb-ts completion ""
t metallb-ts validate --st
`;
  const r = spawnSync('bash', ['-c', probe], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.split('\n').slice(0, 5), ['explain', 'table wide json yaml', 'json', 'bash zsh fish', '--strict']);
});

test('`metallb-ts completion SHELL` prints the same script', () => {
  const r = spawnSync(process.execPath, [join(ROOT, 'src/cli.ts'), 'completion', 'fish'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, completionScript(buildProgram(), 'fish'));
});
