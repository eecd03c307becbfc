import t from 'tap'
import { resolveDefinition } from '../../src/challenge/definition.js'

const minimal = { pod: { containers: [{ name: 'web', image: 'ghcr.io/example/web:1' }] }, expose: { port: 8080 } }
const perInstance = { ...minimal, flag: { mode: 'PerInstance' } }

function poolOf(spec: unknown, poolMaxPods?: number): unknown {
  const policy = { extendedResources: [], runtimeClasses: [], ...(poolMaxPods === undefined ? {} : { poolMaxPods }) }
  const result = resolveDefinition('web', spec, policy)
  return result.found ? result.definition.pool : { reason: result.reason, message: result.message }
}

t.test('no pool unless a size above 0 asks for one', async (t) => {
  t.strictSame(poolOf(minimal), undefined)
  t.strictSame(poolOf({ ...perInstance, pool: {} }), undefined)
  t.strictSame(poolOf({ ...perInstance, pool: { size: 0, maxPods: 3 } }), undefined)
})

t.test("a pool's ceiling is its own maxPods, else the operator's POOL_MAX_PODS (100 by default)", async (t) => {
  t.strictSame(poolOf({ ...perInstance, pool: { size: 10 } }), { size: 10, maxPods: 100 })
  t.strictSame(poolOf({ ...perInstance, pool: { size: 10 } }, 40), { size: 10, maxPods: 40 })
  t.strictSame(poolOf({ ...perInstance, pool: { size: 10, maxPods: 10 } }, 40), { size: 10, maxPods: 10 })
  t.strictSame(
    poolOf({ ...minimal, flag: { mode: 'Static', staticSecretRef: { name: 's', key: 'k' } }, pool: { size: 1 } }),
    {
      size: 1,
      maxPods: 100,
    },
  )
})

t.test('a pool is refused with PerOwner flags, stated or by default, naming why', async (t) => {
  const message =
    'ChallengeDefinition "web" is invalid: spec.pool: a pool needs flag.mode PerInstance or Static (a PerOwner flag is made from the player, whom a pooled pod does not know when it starts).'
  t.strictSame(poolOf({ ...minimal, pool: { size: 1 } }), { reason: 'DefinitionInvalid', message })
  t.strictSame(poolOf({ ...minimal, flag: { mode: 'PerOwner' }, pool: { size: 1 } }), {
    reason: 'DefinitionInvalid',
    message,
  })
})

t.test('a ceiling below the size, or above the operator’s, is refused', async (t) => {
  t.strictSame(poolOf({ ...perInstance, pool: { size: 5, maxPods: 4 } }), {
    reason: 'DefinitionInvalid',
    message: 'ChallengeDefinition "web" is invalid: spec.pool.maxPods: 4 is below pool.size (5).',
  })
  t.strictSame(poolOf({ ...perInstance, pool: { size: 5, maxPods: 41 } }, 40), {
    reason: 'DefinitionInvalid',
    message:
      'ChallengeDefinition "web" is invalid: spec.pool: at most 40 pods (the operator\'s POOL_MAX_PODS), asked for 41.',
  })
  t.strictSame(poolOf({ ...perInstance, pool: { size: 50 } }, 40), {
    reason: 'DefinitionInvalid',
    message:
      'ChallengeDefinition "web" is invalid: spec.pool: at most 40 pods (the operator\'s POOL_MAX_PODS), asked for 50.',
  })
  t.strictSame(poolOf({ ...perInstance, pool: { size: 40, maxPods: 40 } }, 40), { size: 40, maxPods: 40 })
})

t.test('the schema bounds the size and the ceiling and refuses other keys', async (t) => {
  const refused = (pool: unknown) => (poolOf({ ...perInstance, pool }) as { reason?: string }).reason
  t.strictSame(
    [
      { size: 101 },
      { size: -1 },
      { size: 1, maxPods: 0 },
      { size: 1, maxPods: 1001 },
      { size: 1.5 },
      { size: 1, warm: true },
    ].map(refused),
    Array(6).fill('DefinitionInvalid'),
  )
})
