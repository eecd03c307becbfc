// Rules of a definition's check (src/challenge/definition.ts, schema-errors.ts) that mutation testing found
// unchecked, one row each: the pod's totals at and one past their bounds with the exact message, the flag
// variable, port names, prototype keys anywhere in the spec, and how a schema error names its field.
import t from 'tap'
import { Bounds } from '../../src/contract/api.js'
import { prototypeKeyPath, resolveDefinition } from '../../src/challenge/definition.js'
import { describeSchemaError, fieldPath } from '../../src/challenge/schema-errors.js'

type Json = Record<string, unknown>
const container = (name: string, extra: Json = {}) => ({ name, image: `${name}:1`, ...extra })
const spec = (containers: Json[]) => ({ pod: { containers }, expose: { type: 'HTTP', port: 80, container: 'web' } })
/** The operator allows the extended resources `names` makes, so that a pod can hold many resource names. */
const POLICY = { extendedResources: Array.from({ length: 16 }, (_, i) => `example.com/r${i}`), runtimeClasses: [] }
const problem = (definitionSpec: unknown) => {
  const lookup = resolveDefinition('web-login', definitionSpec, POLICY)
  return lookup.found ? undefined : lookup.message.replace(/^ChallengeDefinition "web-login" is invalid: (.*)\.$/, '$1')
}
/** `count` strings that add up to `total` characters, none longer than a single string may be. */
const texts = (total: number, count: number) =>
  Array.from({ length: count }, (_, i) => 'x'.repeat(Math.floor(total / count) + (i < total % count ? 1 : 0)))

t.test('the pod totals: at the bound accepted, one past it refused with the count', async (t) => {
  const pod = Bounds.podText
  const rows: [string, Json[], string | undefined][] = [
    [
      'command and args at the bound (one container without either)',
      [container('web', { command: texts(pod - 4096, 4), args: texts(4096, 1) }), container('side')],
      undefined,
    ],
    [
      'command alone one past it',
      [container('web', { command: texts(pod + 1, 5) })],
      `spec.pod.containers: command and args of all containers together must be at most ${pod} characters, got ${pod + 1}`,
    ],
    [
      'args alone one past it',
      [container('web', { args: texts(pod + 1, 5) })],
      `spec.pod.containers: command and args of all containers together must be at most ${pod} characters, got ${pod + 1}`,
    ],
    [
      'spread over containers, one past it',
      [container('web', { command: texts(pod / 2, 4) }), container('side', { args: texts(pod / 2 + 1, 5) })],
      `spec.pod.containers: command and args of all containers together must be at most ${pod} characters, got ${pod + 1}`,
    ],
    [
      'env variables at the bound (one container without any)',
      [container('web', { env: envs(64, 'A') }), container('side', { env: envs(64, 'B') }), container('third')],
      undefined,
    ],
    [
      'one env variable past it',
      [
        container('web', { env: envs(64, 'A') }),
        container('side', { env: envs(64, 'B') }),
        container('third', { env: envs(1, 'C') }),
      ],
      `spec.pod.containers: at most ${Bounds.podEnvItems} env variables in all containers together, got ${Bounds.podEnvItems + 1}`,
    ],
    [
      'env values at the bound (a variable without a value)',
      [
        container('web', { env: [...valued(pod - 4096, 'A'), { name: 'EMPTY' }] }),
        container('side', { env: valued(4096, 'B') }),
      ],
      undefined,
    ],
    [
      'resource names at the bound, over containers and both lists',
      [
        container('web', { resources: { requests: names(16), limits: names(16) } }),
        container('side', { resources: { requests: names(16), limits: names(16) } }),
      ],
      undefined,
    ],
    [
      'one resource name past it',
      [
        container('web', { resources: { requests: names(16), limits: names(16) } }),
        container('side', { resources: { requests: names(16), limits: names(16) } }),
        container('third', { resources: { limits: names(1) } }),
      ],
      `spec.pod.containers: at most ${Bounds.podResourceNames} resource names in the requests and limits of all containers together, got ${Bounds.podResourceNames + 1}`,
    ],
    [
      'env values one past it',
      [container('web', { env: valued(pod - 4096, 'A') }), container('side', { env: valued(4097, 'B') })],
      `spec.pod.containers: the env values of all containers together must be at most ${pod} characters, got ${pod + 1}`,
    ],
  ]
  for (const [what, containers, expected] of rows) t.equal(problem(spec(containers)), expected, what)
})

/** `count` resource names the operator allows (see `problem`), each 1 unit: the requests equal the limits. */
function names(count: number) {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`example.com/r${i}`, '1']))
}

function envs(count: number, prefix: string) {
  return Array.from({ length: count }, (_, i) => ({ name: `${prefix}${i}`, value: 'v' }))
}

function valued(total: number, prefix: string) {
  return texts(total, Math.ceil(total / 4096)).map((value, i) => ({ name: `${prefix}${i}`, value }))
}

t.test('the flag variable, and port names', async (t) => {
  const rows: [string, Json[], string | undefined][] = [
    [
      'the flag variable among others',
      [
        container('web', {
          env: [
            { name: 'OTHER', value: '1' },
            { name: 'FLAG', value: 'x' },
          ],
        }),
      ],
      'spec.pod.containers[0].env: FLAG is reserved for the flag (flag.env)',
    ],
    [
      'only other variables',
      [
        container('web', {
          env: [
            { name: 'OTHER', value: '1' },
            { name: 'MORE', value: '2' },
          ],
        }),
      ],
      undefined,
    ],
    ['two unnamed ports', [container('web', { ports: [{ containerPort: 80 }, { containerPort: 81 }] })], undefined],
    [
      'two unnamed ports, then one name twice',
      [
        container('web', {
          ports: [
            { containerPort: 80 },
            { containerPort: 81 },
            { containerPort: 82, name: 'http' },
            { containerPort: 83, name: 'http' },
          ],
        }),
      ],
      'spec.pod.containers[0].ports: the name "http" is used twice',
    ],
    [
      'two differently named ports',
      [
        container('web', {
          ports: [
            { containerPort: 80, name: 'http' },
            { containerPort: 81, name: 'admin' },
          ],
        }),
      ],
      undefined,
    ],
    [
      'one name twice',
      [
        container('web', {
          ports: [
            { containerPort: 80, name: 'http' },
            { containerPort: 81, name: 'http' },
          ],
        }),
      ],
      'spec.pod.containers[0].ports: the name "http" is used twice',
    ],
  ]
  for (const [what, containers, expected] of rows) t.equal(problem(spec(containers)), expected, what)
})

t.test('prototypeKeyPath: __proto__ anywhere, prototype under constructor, with the path', async (t) => {
  const rows: [string, unknown, string | undefined][] = [
    ['none', { pod: { containers: [{ name: 'web' }] } }, undefined],
    ['__proto__ at the top', JSON.parse('{"__proto__": {}}'), 'spec.__proto__'],
    [
      '__proto__ in a list item',
      JSON.parse('{"pod": {"containers": [{"name": "a"}, {"__proto__": 1}]}}'),
      'spec.pod.containers[1].__proto__',
    ],
    ['constructor.prototype', { a: { constructor: { prototype: {} } } }, 'spec.a.constructor.prototype'],
    ['prototype elsewhere', { prototype: { constructor: {} } }, undefined],
    ['constructor alone', { constructor: { name: 'x' } }, undefined],
    ['null and other plain values on the way', { a: null, b: [null, 1, 'x'], c: { d: null } }, undefined],
    ['a list named constructor holding a key prototype', { constructor: [{ prototype: 1 }] }, undefined],
  ]
  for (const [what, value, expected] of rows) t.equal(prototypeKeyPath(value), expected, what)
})

t.test('schema errors name the field the way a spec is read', async (t) => {
  const rows: [string, string][] = [
    ['/pod/containers/0/image', 'spec.pod.containers[0].image'],
    ['/a1/10', 'spec.a1[10]'],
    ['/1a', 'spec.1a'],
    ['/a1', 'spec.a1'],
    ['/10', 'spec[10]'],
    ['/a~1b/c~0d', 'spec.a/b.c~d'],
    ['', 'spec'],
  ]
  for (const [pointer, path] of rows) t.equal(fieldPath('spec', pointer), path, pointer || '(root)')
  t.equal(
    describeSchemaError('spec', { path: '/pod/extra', message: 'Unexpected property' }),
    'spec.pod.extra: is not allowed',
  )
  t.equal(
    describeSchemaError('spec', { path: '/lifetimeSeconds', message: 'Expected integer' }),
    'spec.lifetimeSeconds: Expected integer',
  )
})
