import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSelector, checkDuplicateSelectors, checkDuplicateStrings, parseSelectorList } from '../../src/core/labels.ts';
import type { LabelSelector } from '../../src/core/kube.ts';

const textCases: Array<[string, LabelSelector, string]> = [
  ['empty', {}, ''],
  ['null lists', { matchLabels: null, matchExpressions: null }, ''],
  ['matchLabels sorted', { matchLabels: { z: '1', a: '2' } }, 'a=2,z=1'],
  ['README example', { matchLabels: { foo: 'bar' }, matchExpressions: [{ key: 'bar', operator: 'In', values: ['quux'] }] }, 'bar in (quux),foo=bar'],
  ['notin values sorted', { matchExpressions: [{ key: 'k', operator: 'NotIn', values: ['b', 'a'] }] }, 'k notin (a,b)'],
  [
    'exists / does not exist',
    {
      matchExpressions: [
        { key: 'y', operator: 'DoesNotExist' },
        { key: 'x', operator: 'Exists' },
      ],
    },
    'x,!y',
  ],
  ['prefixed key', { matchLabels: { 'example.com/role': 'edge' } }, 'example.com/role=edge'],
  ['empty value', { matchLabels: { k: '' } }, 'k='],
];
for (const [name, sel, text] of textCases) {
  test(`parseSelector text: ${name}`, () => assert.equal(parseSelector(sel).text, text));
}

const matchCases: Array<[string, LabelSelector, Record<string, string> | undefined, boolean]> = [
  ['empty matches everything', {}, { a: 'b' }, true],
  ['empty matches no labels', {}, undefined, true],
  ['matchLabels hit', { matchLabels: { a: 'b' } }, { a: 'b', c: 'd' }, true],
  ['matchLabels miss', { matchLabels: { a: 'b' } }, { a: 'c' }, false],
  ['In hit', { matchExpressions: [{ key: 'a', operator: 'In', values: ['x', 'y'] }] }, { a: 'y' }, true],
  ['In absent key', { matchExpressions: [{ key: 'a', operator: 'In', values: ['x'] }] }, {}, false],
  ['NotIn absent key matches', { matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['x'] }] }, {}, true],
  ['NotIn listed value', { matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['x'] }] }, { a: 'x' }, false],
  ['Exists', { matchExpressions: [{ key: 'a', operator: 'Exists' }] }, { a: '' }, true],
  ['DoesNotExist absent', { matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] }, { b: '1' }, true],
  ['DoesNotExist present', { matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] }, { a: '1' }, false],
  ['AND of labels and expressions', { matchLabels: { a: '1' }, matchExpressions: [{ key: 'b', operator: 'Exists' }] }, { a: '1' }, false],
];
for (const [name, sel, labels, want] of matchCases) {
  test(`parseSelector matches: ${name}`, () => assert.equal(parseSelector(sel).matches(labels), want));
}

const invalid: Array<[string, LabelSelector]> = [
  ['unknown operator', { matchExpressions: [{ key: 'a', operator: 'Equals', values: ['x'] }] }],
  ['missing operator', { matchExpressions: [{ key: 'a' } as never] }],
  ['In without values', { matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }],
  ['Exists with values', { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }],
  ['empty key', { matchLabels: { '': 'x' } }],
  ['two slashes', { matchLabels: { 'a/b/c': 'x' } }],
  ['empty prefix', { matchLabels: { '/b': 'x' } }],
  ['uppercase prefix', { matchLabels: { 'A.com/b': 'x' } }],
  ['name too long', { matchLabels: { ['a'.repeat(64)]: 'x' } }],
  ['bad value', { matchLabels: { a: '-x' } }],
  ['value too long', { matchLabels: { a: 'v'.repeat(64) } }],
  ['bad expression value', { matchExpressions: [{ key: 'a', operator: 'In', values: ['ok', 'not ok'] }] }],
];
for (const [name, sel] of invalid) {
  test(`parseSelector rejects: ${name}`, () => assert.throws(() => parseSelector(sel), Error));
}

test('duplicate rules', () => {
  assert.throws(() => checkDuplicateStrings(['a', 'b', 'a'], 'namespaces'), /duplicate definition of namespaces "a"/);
  assert.doesNotThrow(() => checkDuplicateStrings(['a', 'b'], 'x'));
  // a value repeated in one expression
  assert.throws(() => checkDuplicateSelectors([{ matchExpressions: [{ key: 'a', operator: 'In', values: ['x', 'x'] }] }], 'nodeSelectors'));
  // same expression twice in a selector (values compared sorted)
  assert.throws(() =>
    checkDuplicateSelectors(
      [
        {
          matchExpressions: [
            { key: 'a', operator: 'In', values: ['x', 'y'] },
            { key: 'a', operator: 'In', values: ['y', 'x'] },
          ],
        },
      ],
      'nodeSelectors',
    ),
  );
  // same selector twice in a list (matchLabels as maps)
  assert.throws(() => checkDuplicateSelectors([{ matchLabels: { a: '1', b: '2' } }, { matchLabels: { b: '2', a: '1' } }], 'nodeSelectors'), /nodeSelectors/);
  // same expressions in another order are not duplicates
  assert.doesNotThrow(() =>
    checkDuplicateSelectors(
      [
        {
          matchExpressions: [
            { key: 'a', operator: 'Exists' },
            { key: 'b', operator: 'Exists' },
          ],
        },
        {
          matchExpressions: [
            { key: 'b', operator: 'Exists' },
            { key: 'a', operator: 'Exists' },
          ],
        },
      ],
      'nodeSelectors',
    ),
  );
  // duplicates are reported even for invalid selectors; validity after duplicates
  assert.throws(() => parseSelectorList([{ matchLabels: { a: '-' } }], 'serviceSelectors'), /invalid serviceSelectors/);
});
