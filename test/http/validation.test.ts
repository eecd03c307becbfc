import { Value } from '@sinclair/typebox/value'
import t from 'tap'
import { Ajv, type ValidateFunction } from 'ajv'
import { DefinitionSpecSchema } from '../../src/contract/api.js'
import {
  CustomizeRequestSchema,
  CustomizeResponseSchema,
  PoolCustomizeRequestSchema,
  PoolSyncRequestSchema,
  SyncRequestSchema,
  SyncResponseSchema,
} from '../../src/contract/protocol.js'
import { PRECOMPILABLE, sharedValidatorCompiler, VALIDATION_OPTIONS } from '../../src/http/validation.js'
import { buildTestApp } from '../helpers/app.js'
import { customizeRequest, finalizingRequest, newRequest, runningRequest } from '../helpers/hook-requests.js'

t.test('one compiled validator per schema: /sync and /finalize share theirs', async (t) => {
  const compile = sharedValidatorCompiler()
  const route = { method: 'POST', url: '/sync', httpPart: 'body' }
  const first = compile({ schema: SyncRequestSchema, ...route })
  t.equal(compile({ schema: SyncRequestSchema, ...route, url: '/finalize' }), first)
  t.equal(first(newRequest()), true)
  t.equal(first({ parent: { metadata: { name: 'x' } } }), false, 'it validates')
  t.equal(first({ ...newRequest(), finalizing: 'yes' }), false, 'no coercion')
})

t.test(
  "validators compiled ahead of time (the bundle's) are used as they are; others are compiled at first use",
  async (t) => {
    const ahead = Object.assign((data: unknown) => data === 'ahead', { errors: null }) as unknown as ValidateFunction
    const compile = sharedValidatorCompiler({ sync: ahead })
    const route = { method: 'POST', url: '/sync', httpPart: 'body' }
    t.equal(compile({ schema: SyncRequestSchema, ...route }), ahead, 'the precompiled validator of the sync request')
    const customize = compile({ schema: CustomizeRequestSchema, ...route, url: '/customize' })
    t.not(customize, ahead)
    t.equal(customize(customizeRequest()), true, 'the other compiled by ajv')
    t.equal(compile({ schema: CustomizeRequestSchema, ...route, url: '/customize' }), customize, 'once')
    t.strictSame(
      Object.keys(PRECOMPILABLE),
      ['sync', 'customize', 'poolSync', 'poolCustomize'],
      'the names the build compiles',
    )
  },
)

t.test(
  "the request schemas, and the definition's, are valid JSON Schema (the server skips that check to start faster)",
  async (t) => {
    const checking = new Ajv({ ...VALIDATION_OPTIONS, validateSchema: true })
    for (const [name, schema] of [
      ['SyncRequestSchema', SyncRequestSchema],
      ['CustomizeRequestSchema', CustomizeRequestSchema],
      ['PoolSyncRequestSchema', PoolSyncRequestSchema],
      ['PoolCustomizeRequestSchema', PoolCustomizeRequestSchema],
      // Not a request's, but compiled by the same validator (src/contract/validator.ts) for every definition.
      ['DefinitionSpecSchema', DefinitionSpecSchema],
    ] as const) {
      t.equal(
        checking.validateSchema(schema),
        true,
        `${name} against the meta-schema ${JSON.stringify(checking.errors ?? [])}`,
      )
      const strict = new Ajv({ ...VALIDATION_OPTIONS, strict: true, allowUnionTypes: true })
      t.doesNotThrow(() => strict.compile(schema), `${name} compiles in ajv's strict mode too`)
    }
    t.equal(
      checking.validateSchema({ type: 'object', properties: { a: { type: 'nonsense' } } }),
      false,
      'the check can fail',
    )
  },
)

t.test('the answers match the protocol schemas: four top-level fields at most, every child typed', async (t) => {
  const app = await buildTestApp(t)
  for (const [url, payload] of [
    ['/sync', newRequest()],
    ['/sync', runningRequest()],
    ['/finalize', finalizingRequest()],
  ] as const) {
    const body = (await app.inject({ method: 'POST', url, payload })).json()
    t.ok(
      Value.Check(SyncResponseSchema, body),
      `${url}: ${JSON.stringify([...Value.Errors(SyncResponseSchema, body)][0] ?? '')}`,
    )
  }
  const customize = (await app.inject({ method: 'POST', url: '/customize', payload: customizeRequest() })).json()
  t.ok(Value.Check(CustomizeResponseSchema, customize))
  t.notOk(
    Value.Check(SyncResponseSchema, { status: {}, children: [], Children: [] }),
    'an unknown top-level field is refused, as in strict mode',
  )
})
