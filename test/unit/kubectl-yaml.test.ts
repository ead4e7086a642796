import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import jsyaml from 'js-yaml';
import { stringify } from 'yaml';
import { parseKubectlYaml } from '../../src/kube/kubectl-yaml.ts';
import { parseSnapshotText } from '../../src/kube/snapshot.ts';
import { originOf } from '../../src/core/kube.ts';
import { mulberry32 as rng } from '../helpers/rng.ts';

const root = join(import.meta.dirname, '../..');

/** js-yaml's documents (CORE_SCHEMA, as the snapshot reader's general path), empty ones left out; undefined when it throws. */
function reference(text: string): unknown[] | undefined {
  const docs: unknown[] = [];
  try {
    jsyaml.loadAll(text, (d) => docs.push(d), { schema: jsyaml.CORE_SCHEMA });
  } catch {
    return undefined;
  }
  return docs.filter((d) => d !== null && d !== undefined);
}

/** Asserts that the fast parser gives js-yaml's values for `text`, or gives up; returns whether it read it. */
function sameAsJsYaml(text: string, what: string): boolean {
  const fast = parseKubectlYaml(text);
  if (fast === undefined) return false;
  const ref = reference(text);
  assert.ok(ref !== undefined, `${what}: js-yaml rejects a text the fast parser read`);
  const values = fast.map((d) => d.value);
  assert.deepStrictEqual(values, ref, what);
  assert.equal(JSON.stringify(values), JSON.stringify(ref), `${what}: key order`);
  return true;
}

function yamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...yamlFiles(p));
    else if (/\.ya?ml$/.test(name)) out.push(p);
  }
  return out;
}

test('every YAML file under examples/ and test/ reads as js-yaml reads it, or is left to js-yaml', () => {
  let read = 0;
  const files = [...yamlFiles(join(root, 'examples')), ...yamlFiles(join(root, 'test'))];
  for (const f of files) if (sameAsJsYaml(readFileSync(f, 'utf8'), f)) read++;
  assert.ok(files.length > 50, `only ${files.length} files found`);
  // The kubectl-style dumps at least (examples/cluster*.yaml and the fixtures written like them).
  assert.ok(read >= 30, `only ${read} of ${files.length} files read by the fast parser`);
  assert.ok(parseKubectlYaml(readFileSync(join(root, 'examples/cluster.yaml'), 'utf8')), 'examples/cluster.yaml');
});

/** Strings that YAML writers must quote, fold or escape, and that resolve to other types when plain. */
const TRICKY = [
  '',
  ' ',
  'a',
  'null',
  'Null',
  'NULL',
  '~',
  'true',
  'True',
  'FALSE',
  'yes',
  'no',
  'on',
  '0',
  '-0',
  '+1',
  '012',
  '0x1F',
  '0o17',
  '0b101',
  '1e3',
  '1.5',
  '.5',
  '-.inf',
  '.NaN',
  '1_000',
  '10.100.0.0/16',
  '2025-01-01T00:00:00Z',
  '2025-01-01',
  'a: b',
  'a:b',
  'a #b',
  '#a',
  'a#b',
  '- a',
  '-a',
  '--port=7472',
  '? a',
  '?a',
  ':a',
  'a:',
  '[x]',
  '{x}',
  '{}',
  '[]',
  '*a',
  '&a',
  '!a',
  '|',
  '>',
  '%a',
  '@a',
  '`a',
  "'a'",
  '"a"',
  "it's",
  'say "hi"',
  'back\\slash',
  'tab\there',
  'line\nbreak',
  'two\n\nbreaks',
  'trailing\n',
  '  lead',
  'trail  ',
  'ü ∑ 🚀',
  'k:{"type":"Ready"}',
  'containers with unready status: [speaker] and a long message that a writer folds over several lines of its output, at least eighty columns wide',
  'a long plain message without any indicator that a writer folds over several lines of its output when it is more than eighty columns wide',
  '{"apiVersion":"v1","kind":"Service","metadata":{"annotations":{},"name":"web","namespace":"shop"},"spec":{"type":"LoadBalancer"}}\n',
  '1\n2\n',
  'x\n  indented\n',
  '\nleading newline',
  'ends with spaces   \n',
];

function randomValue(r: () => number, depth: number): unknown {
  const k = r();
  if (depth > 3 || k < 0.45) {
    const s = r();
    if (s < 0.6) return TRICKY[Math.floor(r() * TRICKY.length)];
    if (s < 0.75) return Math.floor(r() * 100000) - 50;
    if (s < 0.8) return r() * 100;
    if (s < 0.9) return r() < 0.5;
    return null;
  }
  if (k < 0.7) return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(r() * 5); i > 0; i--) o[r() < 0.3 ? TRICKY[Math.floor(r() * TRICKY.length)]! : `key${Math.floor(r() * 20)}`] = randomValue(r, depth + 1);
  return o;
}

test('generated documents written by the yaml package and by js-yaml read as js-yaml reads them', () => {
  const r = rng(12);
  let read = 0;
  let total = 0;
  for (let i = 0; i < 400; i++) {
    const items = Array.from({ length: 1 + Math.floor(r() * 4) }, () => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: `s${i}` }, data: randomValue(r, 0) }));
    const doc = { apiVersion: 'v1', kind: 'List', items };
    const texts = [
      stringify(doc),
      stringify(doc, { version: '1.1', lineWidth: 0, aliasDuplicateObjects: false, indentSeq: false }),
      stringify(doc, { lineWidth: 40, minContentWidth: 10 }),
      jsyaml.dump(doc, { schema: jsyaml.CORE_SCHEMA }),
      jsyaml.dump(doc, { lineWidth: 30, noCompatMode: true }),
      `# a comment\n---\n${jsyaml.dump(items[0])}---\n${stringify(items.at(-1))}`,
    ];
    for (const text of texts) {
      total++;
      if (sameAsJsYaml(text, `case ${i}:\n${text}`)) read++;
    }
  }
  assert.ok(read > total / 3, `only ${read} of ${total} generated texts read by the fast parser`);
});

test('what the fast parser does not read is left to js-yaml', () => {
  for (const text of [
    'a: &x 1\nb: *x\n',
    'a: !!str 1\n',
    'a: {b: c}\n',
    'a: [1, 2]\n',
    'a: >\n  folded\n',
    'a: |+\n  kept\n\n',
    'a: |2\n   x\n',
    'a: 1 # comment\n',
    'a:\tb\n',
    'a: b\r\n',
    '\ufeffa: b\n',
    '%YAML 1.2\n---\na: b\n',
    'a: 1\na: 2\n',
    '__proto__: x\n',
    '<<: {}\n',
    '? a\n: b\n',
    'a: "line\\\n  folded"\n',
    'a: 1\n\n  b\n',
    '--- a: b\n',
    'a: b\n...\n',
    'a\n',
    '1: x\n',
    'null: x\n',
    'a: "\\x41"\n',
  ]) {
    assert.equal(parseKubectlYaml(text), undefined, JSON.stringify(text));
  }
});

test('block scalars, folded lines and quoting read as js-yaml reads them', () => {
  const cases = [
    'a: |\n  one\n  two\nb: x\n',
    'a: |-\n  one\n\n  two\n\nb: x\n',
    'a: |\n  x\n    deeper\n  less\n',
    'a: |\n\n  after blank\n',
    'a: |\nb: 1\n',
    '- |\n  in a sequence\n- x\n',
    'a: |\n  # not a comment\n  ---\n',
    'a: |-\n  last',
    'a: plain\n  continued\n  again\nb: 1\n',
    "a: 'quoted\n  and ''continued'''\n",
    'a: "double\n  continued \\u00e9"\n',
    'k:{"type":"Ready"}:\n  f:x: {}\n',
    '".": {}\n',
    'items:\n- a: 1\n  b:\n  - x\n  - y\n  c: 2\n- -\n  - z\n',
    'a:\n- 1\n-\n- 3\nb: -1\n',
  ];
  const unread = cases.filter((text) => !sameAsJsYaml(text, JSON.stringify(text)));
  assert.deepEqual(unread, []);
});

test('parseSnapshotText gives the same objects and lines through the fast parser as through js-yaml', () => {
  const text = readFileSync(join(root, 'examples/cluster.yaml'), 'utf8');
  const fast = parseSnapshotText(text, 'cluster.yaml');
  // A tag the fast parser does not read sends the same text down js-yaml's path.
  const slow = parseSnapshotText(text.replace('apiVersion: v1\nitems:', 'apiVersion: !!str v1\nitems:'), 'cluster.yaml');
  assert.deepStrictEqual(fast, slow);
  assert.deepStrictEqual(
    fast.map((o) => originOf(o)),
    slow.map((o) => originOf(o)),
  );
  assert.ok(fast.length > 50);
});

test('differences found by a differential fuzz against js-yaml are read as js-yaml reads them, or left to it', () => {
  // An empty entry (`-` alone, or with a comment) followed by a less indented entry: js-yaml
  // goes on with the inner sequence ([[null, "x"]]), not the outer one.
  for (const text of ['- -\n- x\n', 'a:\n  - -\n  - x\n', '- - # c\n- x\n', '- -\n  -\n- x\n', '- a:\n  -\n- b\n', '-\n  -  # c\n- fd:00::/64 \n']) {
    sameAsJsYaml(text, JSON.stringify(text));
  }
});

test('a long sequence of scalars without a colon reads in linear time (the key search stays on its line)', () => {
  const time = (n: number): number => {
    const text = `a:\n${'- x\n'.repeat(n)}`;
    let best = Infinity;
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      assert.ok(parseKubectlYaml(text));
      best = Math.min(best, performance.now() - t);
    }
    return best;
  };
  time(20_000); // warm-up
  const small = time(40_000);
  const large = time(160_000);
  // Four times the lines: about four times the time when linear, sixteen when quadratic.
  assert.ok(large < small * 9, `40k lines: ${small.toFixed(1)} ms, 160k lines: ${large.toFixed(1)} ms`);
});

test('a text with `&` after a space (an anchor for the snapshot reader) is left to the general path, which reads it as before', () => {
  // The snapshot reader sends such text past js-yaml to the `yaml` package (YAML 1.2 core: no
  // `0b`, no signed hex or octal); reading it here gave js-yaml's values instead (a: 5, not "0b101").
  const text = 'kind: Widget\nmetadata:\n  name: x\n  annotations:\n    note: "R&D &co"\nspec:\n  a: 0b101\n  b: -0o7\n  c: +.5\n';
  assert.equal(parseKubectlYaml(text), undefined);
  assert.deepEqual(parseSnapshotText(text, 'f.yaml')[0]?.['spec'], { a: '0b101', b: '-0o7', c: 0.5 });
});
