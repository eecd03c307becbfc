// A warm pool's children (src/challenge/pool-children.ts): its internet policy and the rendering its pods carry.
import t from 'tap'
import { poolInternetPolicy, poolNames, poolRendering } from '../../src/challenge/pool-children.js'
import { definitionPolicy, resolveDefinition, type ResolvedDefinition } from '../../src/challenge/definition.js'
import { config, type Json } from '../helpers/pool-world.js'
import { NON_PUBLIC_IPV4, NON_PUBLIC_IPV6 } from '../helpers/contract.js'

function resolved(spec: Json): ResolvedDefinition {
  const lookup = resolveDefinition(
    'web',
    {
      pod: { containers: [{ name: 'app', image: 'registry.example.org/web:1' }] },
      expose: { type: 'HTTP', port: 8080 },
      flag: { mode: 'PerInstance' },
      pool: { size: 2 },
      ...spec,
    },
    definitionPolicy(config),
  )
  if (!lookup.found) throw new Error(lookup.message)
  return lookup.definition
}

t.test('the pool’s internet policy: every pool pod of the definition may reach public addresses only', async (t) => {
  t.strictSame(poolInternetPolicy(poolNames('web'), { ...config, clusterCidrs: ['203.0.113.0/24'] }), {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: 'web.pool-internet',
      labels: { 'app.kubernetes.io/managed-by': 'challenge-hooks', 'challenge-hooks.dev/definition': 'web' },
    },
    spec: {
      podSelector: {
        matchLabels: { 'app.kubernetes.io/managed-by': 'challenge-hooks', 'challenge-hooks.dev/definition': 'web' },
        matchExpressions: [{ key: 'challenge-hooks.dev/pool-slot', operator: 'Exists' }],
      },
      policyTypes: ['Egress'],
      egress: [
        {
          to: [
            {
              ipBlock: {
                cidr: '0.0.0.0/0',
                except: [...NON_PUBLIC_IPV4, '203.0.113.0/24'],
              },
            },
            {
              ipBlock: {
                cidr: '::/0',
                except: [...NON_PUBLIC_IPV6],
              },
            },
          ],
        },
      ],
    },
  })
})

t.test('the rendering is 10 hex, the same for the same pod and flag', async (t) => {
  const rendering = poolRendering(resolved({}), config, undefined)
  t.match(rendering, /^[0-9a-f]{10}$/)
  t.strictSame(poolRendering(resolved({}), config, undefined), rendering)
  const statics = resolved({ flag: { mode: 'Static', staticSecretRef: { name: 'web-static', key: 'value' } } })
  t.strictSame(poolRendering(statics, config, 'flag{same}'), poolRendering(statics, config, 'flag{same}'))
})

t.test('the rendering changes with the flag’s mode, prefix and suffix', async (t) => {
  const renderings = [
    poolRendering(resolved({}), config, undefined),
    poolRendering(resolved({ flag: { mode: 'PerInstance', prefix: 'ctf{' } }), config, undefined),
    poolRendering(resolved({ flag: { mode: 'PerInstance', suffix: ']' } }), config, undefined),
    poolRendering(
      resolved({ flag: { mode: 'Static', staticSecretRef: { name: 'web-static', key: 'value' } } }),
      config,
      undefined,
    ),
  ]
  t.strictSame(new Set(renderings).size, 4, renderings.join(' '))
})

t.test('a changed Static flag makes another rendering, so no pod made with the old one is handed out', async (t) => {
  const statics = resolved({ flag: { mode: 'Static', staticSecretRef: { name: 'web-static', key: 'value' } } })
  const before = poolRendering(statics, config, 'flag{before}')
  const after = poolRendering(statics, config, 'flag{after}')
  t.strictSame(before === after, false, `${before} ${after}`)
  t.strictSame(before === poolRendering(statics, config, undefined), false, 'the flag’s value, not only its shape')
})
