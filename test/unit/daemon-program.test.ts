// The one-command programs (src/commands/program.ts): the same command as in the full program,
// without the other commands loaded (the daemons without the diagnostics layer).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { join } from 'node:path';
import type { Command } from 'commander';
import { buildProgram, VERSION as FULL_VERSION } from '../../src/commands/index.ts';
import { buildCommandProgram, buildDaemonProgram, daemonOf, DAEMONS, SINGLE_COMMAND_NAMES, singleCommandOf, VERSION } from '../../src/commands/program.ts';

const ROOT = join(import.meta.dirname, '../..');

/** A command's flags, defaults, choices and help text, comparable with deepEqual. */
function shape(cmd: Command): unknown {
  return {
    description: cmd.description(),
    options: cmd.options.map((o) => ({ flags: o.flags, description: o.description, default: o.defaultValue, choices: o.argChoices, env: o.envVar, hidden: o.hidden })),
    help: cmd.helpInformation(),
  };
}

test("speaker and controller: the daemon program has the full program's command, flag for flag, and its version", async () => {
  assert.equal(VERSION, FULL_VERSION);
  const full = buildProgram();
  for (const d of DAEMONS) {
    const own = await buildDaemonProgram(d);
    assert.deepEqual(
      own.commands.map((c) => c.name()),
      [d],
    );
    assert.deepEqual(shape(own.commands[0]!), shape(full.commands.find((c) => c.name() === d)!), d);
  }
});

test("every command but completion: its own program has the full program's command, flag for flag", async () => {
  const full = buildProgram();
  assert.deepEqual([...SINGLE_COMMAND_NAMES, 'completion'].sort(), full.commands.map((c) => c.name()).sort());
  for (const name of SINGLE_COMMAND_NAMES) {
    const own = await buildCommandProgram(name);
    assert.deepEqual(
      own.commands.map((c) => c.name()),
      [name],
    );
    assert.deepEqual(shape(own.commands[0]!), shape(full.commands.find((c) => c.name() === name)!), name);
  }
});

test('singleCommandOf: only a first argument naming a command exactly, never completion or help', () => {
  assert.equal(singleCommandOf(['explain', 'svc/x']), 'explain');
  assert.equal(singleCommandOf(['speaker']), 'speaker');
  assert.equal(singleCommandOf(['completion', 'bash']), undefined);
  assert.equal(singleCommandOf(['help', 'explain']), undefined);
  assert.equal(singleCommandOf(['--help']), undefined);
  assert.equal(singleCommandOf(['explian']), undefined);
  assert.equal(singleCommandOf(['toString']), undefined);
  assert.equal(singleCommandOf([]), undefined);
});

test('daemonOf: only a first argument naming a daemon', () => {
  assert.equal(daemonOf(['speaker', '--node-name', 'x']), 'speaker');
  assert.equal(daemonOf(['controller']), 'controller');
  assert.equal(daemonOf(['explain', 'speaker']), undefined);
  assert.equal(daemonOf(['--help']), undefined);
  assert.equal(daemonOf([]), undefined);
});

/**
 * Runs the CLI with `args` in a child process that records every module it loads
 * (module.registerHooks). Returns the child's result and the loaded module URLs.
 */
function runRecordingModules(args: readonly string[]): { r: SpawnSyncReturns<string>; loaded: string[] } {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ load(url, ctx, next) { seen.push(url); return next(url, ctx); } });
    process.on('exit', () => { process.stderr.write('LOADED ' + JSON.stringify(seen) + '\\n'); });
    process.argv.splice(1, 0, 'cli');
    await import(${JSON.stringify(join(ROOT, 'src/cli.ts'))});`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, ...args], { encoding: 'utf8' });
  const m = /^LOADED (.*)$/m.exec(r.stderr);
  return { r, loaded: m ? (JSON.parse(m[1]!) as string[]) : [] };
}

test('metallb-ts speaker --help loads neither the diagnostics layer nor yaml, chalk, cli-table3 or client-node', () => {
  for (const d of DAEMONS) {
    const { r, loaded } = runRecordingModules([d, '--help']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^Usage: metallb-ts ${d} `));
    assert.ok(
      loaded.some((u) => u.endsWith(`/src/commands/${d}.ts`)),
      'the hooks saw the command',
    );
    const heavy = loaded.filter((u) => /\/src\/(core\/explain|render|commands\/(explain|whois|allocate|validate|whatif|index))[/.]|node_modules\/(yaml|js-yaml|chalk|cli-table3|@kubernetes)\//.test(u));
    assert.deepEqual(heavy, [], d);
  }
});

test('metallb-ts explain -f loads no other command, neither the yaml package nor client-node', () => {
  const { r, loaded } = runRecordingModules(['explain', 'svc/frontend', '-n', 'shop', '-f', join(ROOT, 'examples/cluster.yaml'), '-o', 'json']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).service, 'shop/frontend');
  assert.ok(
    loaded.some((u) => u.endsWith('/src/commands/explain.ts')),
    'the hooks saw the command',
  );
  const unneeded = loaded.filter((u) =>
    /\/src\/(commands\/(whois|allocate|validate|whatif|index|speaker|controller|members|snapshot|completion)|speaker|controller)[/.]|node_modules\/(yaml|@kubernetes)\//.test(u),
  );
  assert.deepEqual(unneeded, []);
});
