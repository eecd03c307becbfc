// The helpers' own edge cases: what the real manifests never exercise.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import {
  listYamlFiles,
  loadCrdSchema,
  loadManifests,
  metacontrollerCrdsFile,
  readEnvFile,
  readYamlDocuments,
  repoRoot,
  toAjvSchema,
  validateAgainstCrd,
} from '../helpers/manifests.js'

t.test('readYamlDocuments skips empty documents and reports YAML errors with the file', async (t) => {
  const dir = t.testdir({
    'multi.yaml': 'a: 1\n---\n---\nb: 2\n',
    'broken.yaml': 'a: [1, 2\n',
    nested: { 'deep.yml': 'c: 3\n', 'notes.txt': 'not yaml', 'kustomization.yaml': 'resources: []\n' },
  })
  t.strictSame(readYamlDocuments(join(dir, 'multi.yaml')), [{ a: 1 }, { b: 2 }])
  t.throws(() => readYamlDocuments(join(dir, 'broken.yaml')), /broken\.yaml: /)
  t.strictSame(listYamlFiles(join(dir, 'nested')), [
    join(dir, 'nested', 'deep.yml'),
    join(dir, 'nested', 'kustomization.yaml'),
  ])
  t.strictSame(loadManifests(join(dir, 'nested')), [{ file: join(dir, 'nested', 'deep.yml'), object: { c: 3 } }])
})

t.test('readEnvFile reads KEY=VALUE lines only', async (t) => {
  const dir = t.testdir({ 'x.env': '# comment\n\nA=1\n  B=two=2  \n#C=3\n' })
  t.strictSame(
    [...readEnvFile(join(dir, 'x.env'))],
    [
      ['A', '1'],
      ['B', 'two=2'],
    ],
  )
})

t.test('metacontrollerCrdsFile honours METACONTROLLER_CRDS and reports a missing file as undefined', async (t) => {
  const saved = process.env.METACONTROLLER_CRDS
  t.teardown(() => {
    if (saved === undefined) delete process.env.METACONTROLLER_CRDS
    else process.env.METACONTROLLER_CRDS = saved
  })
  const dir = t.testdir({ 'crds.yaml': 'kind: CustomResourceDefinition\n' })
  process.env.METACONTROLLER_CRDS = join(dir, 'crds.yaml')
  t.equal(metacontrollerCrdsFile(), join(dir, 'crds.yaml'))
  process.env.METACONTROLLER_CRDS = join(dir, 'absent.yaml')
  t.equal(metacontrollerCrdsFile(), undefined)
  delete process.env.METACONTROLLER_CRDS
  const vendored = join(repoRoot, 'test', 'data', 'metacontroller-crds-v1.yaml')
  t.equal(
    metacontrollerCrdsFile(),
    existsSync(vendored) ? vendored : undefined,
    'default: the copy vendored in test/data/',
  )
})

t.test('toAjvSchema', async (t) => {
  t.strictSame(
    toAjvSchema({
      type: 'object',
      'x-kubernetes-validations': [{ rule: 'self.a > 0' }],
      properties: {
        port: { 'x-kubernetes-int-or-string': true, nullable: true },
        name: { type: 'string', nullable: true },
        loose: { 'x-kubernetes-preserve-unknown-fields': true, nullable: true },
        open: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: true },
        labels: { type: 'object', additionalProperties: { type: 'string', 'x-kubernetes-list-type': 'atomic' } },
        list: { type: 'array', items: { type: 'object', properties: {} } },
        either: { anyOf: [{ type: 'object', properties: {} }], not: { type: 'object', properties: {} } },
        kept: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { b: { type: 'integer' } } },
      },
    }),
    {
      type: 'object',
      additionalProperties: false,
      properties: {
        port: { type: ['integer', 'string', 'null'] },
        name: { type: ['string', 'null'] },
        loose: {},
        open: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: true },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        list: { type: 'array', items: { type: 'object', properties: {}, additionalProperties: false } },
        either: {
          anyOf: [{ type: 'object', properties: {}, additionalProperties: false }],
          not: { type: 'object', properties: {}, additionalProperties: false },
        },
        kept: { type: 'object', properties: { b: { type: 'integer' } } },
      },
    },
  )
})

t.test('loadCrdSchema and validateAgainstCrd fail loudly on what does not exist', async (t) => {
  t.throws(() => loadCrdSchema('Nope'), /no CustomResourceDefinition for kind Nope/)
  t.throws(() => validateAgainstCrd('Challenge', {}, { at: 'nope' }), /has no top-level field nope/)
})

t.test('formats: date-time, duration, int32, int64', async (t) => {
  const dir = t.testdir({
    'crd.yaml': `
kind: CustomResourceDefinition
spec:
  names: {kind: Formats}
  versions:
    - schema:
        openAPIV3Schema:
          type: object
          properties:
            at: {type: string, format: date-time}
            timeout: {type: string, format: duration}
            small: {type: integer, format: int32}
            big: {type: integer, format: int64}
            other: {type: string, format: byte}
`,
  })
  const file = join(dir, 'crd.yaml')
  const valid = {
    at: '2026-11-22T10:00:00.5+01:00',
    timeout: '1m30s',
    small: -(2 ** 31),
    big: 2 ** 40,
    other: 'anything',
  }
  t.strictSame(validateAgainstCrd('Formats', valid, { file }), [])
  t.strictSame(
    validateAgainstCrd('Formats', { at: '2026-11-22', timeout: 'ten seconds', small: 2 ** 31, big: 1.5 }, { file }),
    [
      '/at must match format "date-time"',
      '/timeout must match format "duration"',
      '/small must match format "int32"',
      '/big must be integer',
      '/big must match format "int64"',
    ],
  )
  t.strictSame(validateAgainstCrd('Formats', { at: '2026-13-45T99:00:00Z' }, { file }), [
    '/at must match format "date-time"',
  ])
})
