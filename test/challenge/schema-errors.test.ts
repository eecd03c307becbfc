// schemaError: what the hooks' validator (ajv, src/contract/validator.ts) reports, told to an author in the words the hook
// has always used (TypeBox's): each row breaks one rule, and the path and message are the ones TypeBox's own
// checker gives for it.
import { Type, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import t from 'tap'
import { DefinitionSpecSchema } from '../../src/contract/api.js'
import { describeSchemaError, schemaError } from '../../src/challenge/schema-errors.js'
import { SyncResponseSchema } from '../../src/contract/protocol.js'
import { compileSchema, DESCRIBED_OPTIONS } from '../../src/contract/validator.js'

type Json = Record<string, unknown>
const web = { name: 'web', image: 'web:1' }
const base = { pod: { containers: [web] }, expose: { port: 80 } }
const withContainer = (changes: Json) => ({ ...base, pod: { containers: [{ ...web, ...changes }] } })

/** What ajv reports for `value`, as schemaError tells it. */
function reported(schema: TSchema, value: unknown): { path: string; message: string } {
  const check = compileSchema(schema, DESCRIBED_OPTIONS)
  if (check(value)) throw new Error(`${JSON.stringify(value)} is valid`)
  const { path, message } = schemaError(check.errors ?? [])
  return { path, message }
}

/** What TypeBox reports first for `value`. */
function typebox(schema: TSchema, value: unknown): { path: string; message: string } {
  const { path, message } = [...Value.Errors(schema, value)][0] ?? { path: '', message: 'valid' }
  return { path, message }
}

t.test('a definition that breaks one rule: the path and words TypeBox gives', async (t) => {
  const rows: [string, unknown, string][] = [
    ['not an object', 'pod', 'Expected object'],
    ['a missing field', { pod: base.pod }, 'Expected required property'],
    [
      'a field the contract lacks in a closed object',
      { ...base, pod: { ...base.pod, hostNetwork: true } },
      'Unexpected property',
    ],
    ['a string where a number goes', { ...base, expose: { port: '80' } }, 'Expected integer'],
    ['above a maximum', { ...base, expose: { port: 70000 } }, 'Expected integer to be less or equal to 65535'],
    ['below a minimum', { ...base, lifetimeSeconds: 59 }, 'Expected integer to be greater or equal to 60'],
    ['a literal outside the union', { ...base, expose: { type: 'UDP', port: 80 } }, 'Expected union value'],
    ['a quantity that is neither', withContainer({ resources: { limits: { cpu: 'lots' } } }), 'Expected union value'],
    ['a pattern', withContainer({ name: 'Web' }), "Expected string to match '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'"],
    ['too short a string', withContainer({ image: '' }), 'Expected string length greater or equal to 1'],
    ['too long a string', { ...base, displayName: 'x'.repeat(129) }, 'Expected string length less or equal to 128'],
    ['too few items', { ...base, pod: { containers: [] } }, 'Expected array length to be greater or equal to 1'],
    [
      'too many items',
      withContainer({ ports: Array.from({ length: 17 }, (_, i) => ({ containerPort: 1000 + i })) }),
      'Expected array length to be less or equal to 16',
    ],
    ['too few properties', withContainer({ readinessProbe: {} }), 'Expected object to have at least 1 properties'],
    [
      'too many properties',
      withContainer({
        resources: { limits: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`r${i}`, '1'])) },
      }),
      'Expected object to have no more than 16 properties',
    ],
    ['a map key outside its pattern', withContainer({ resources: { limits: { CPU: '1' } } }), 'Unexpected property'],
    ['a key that needs escaping', withContainer({ resources: { 'a/b~c': {} } }), 'Unexpected property'],
  ]
  for (const [what, value, message] of rows) {
    const got = reported(DefinitionSpecSchema, value)
    t.strictSame(got, typebox(DefinitionSpecSchema, value), `${what}: as TypeBox says it`)
    t.equal(got.message, message, what)
  }
  t.equal(
    describeSchemaError('spec', schemaError(compileErrors(withContainer({ resources: { 'a b/~c': {} } })))),
    'spec.pod.containers[0].resources["a b/~c"]: is not allowed',
    'a path an author reads',
  )
})

function compileErrors(value: unknown) {
  const check = compileSchema(DefinitionSpecSchema, DESCRIBED_OPTIONS)
  check(value)
  return check.errors ?? []
}

t.test('the keywords no definition has: the same words', async (t) => {
  const rows: [string, TSchema, unknown, string][] = [
    ['a literal', Type.Literal('HTTP'), 'TLS', "Expected 'HTTP'"],
    ['a numeric literal', Type.Literal(1), 2, 'Expected 1'],
    ['an exclusive maximum', Type.Number({ exclusiveMaximum: 1 }), 1, 'Expected number to be less than 1'],
    [
      'an exclusive minimum of an integer',
      Type.Integer({ exclusiveMinimum: 0 }),
      0,
      'Expected integer to be greater than 0',
    ],
    ['a number below its minimum', Type.Number({ minimum: 0 }), -1, 'Expected number to be greater or equal to 0'],
  ]
  for (const [what, schema, value, message] of rows) {
    t.strictSame(reported(schema, value), typebox(schema, value), `${what}: as TypeBox says it`)
    t.equal(reported(schema, value).message, message, what)
  }
  t.strictSame(reported(SyncResponseSchema, { status: {}, children: [], resyncAfterSeconds: 0 }), {
    path: '/resyncAfterSeconds',
    message: 'Expected number to be greater than 0',
  })
  t.strictSame(
    reported(Type.Integer({ multipleOf: 2 }), 3),
    { path: '', message: 'must be multiple of 2' },
    "any other keyword: ajv's words",
  )
})
