// The warm pools' routes, POST /pools/sync and /pools/customize, beside the Challenge's hooks: the same bearer token,
// ETag and 304, refusals naming the problem, and the pool's metrics.
import t from 'tap'
import { buildApp } from '../../src/http/app.js'
import { buildTestApp, testConfig } from '../helpers/app.js'
import { ticket, definition, request, warmPool } from '../helpers/pool-world.js'

const TOKEN = 'p00l-t0k3n-n3v3r-l0gg3d-5c2e'
const post = (url: string, payload: object, headers: Record<string, string> = {}) => ({
  method: 'POST' as const,
  url,
  payload,
  headers,
})

t.test('POST /pools/sync and /pools/customize answer with the pool hooks, with an ETag', async (t) => {
  const app = await buildTestApp(t, { flagSecret: 'pool-test-secret' })
  const sync = await app.inject(post('/pools/sync', request(definition(), [])))
  t.equal(sync.statusCode, 200)
  t.match(sync.headers['content-type'], /^application\/json/)
  t.strictSame(Object.keys(sync.json()).sort(), ['children', 'status'])
  t.strictSame(
    sync
      .json()
      .children.map((child: { kind: string; metadata: { name: string } }) => `${child.kind} ${child.metadata.name}`),
    ['NetworkPolicy web.pool-isolate', 'Secret web.pool-0-flag', 'Secret web.pool-1-flag'],
  )
  const etag = sync.headers.etag as string
  const again = await app.inject(post('/pools/sync', request(definition(), []), { 'if-none-match': etag }))
  t.equal(again.statusCode, 304, 'the same answer is not sent twice')
  t.equal(again.body, '')

  const customize = await app.inject(post('/pools/customize', { parent: definition() }))
  t.equal(customize.statusCode, 200)
  t.strictSame(customize.json(), {
    relatedResources: [
      {
        apiVersion: 'v1',
        resource: 'services',
        namespace: 'challenges',
        labelSelector: { matchLabels: { 'challenge-hooks.dev/pool-ticket': 'web' } },
      },
      {
        apiVersion: 'v1',
        resource: 'pods',
        namespace: 'challenges',
        labelSelector: { matchLabels: { 'challenge-hooks.dev/prepull': 'web' } },
      },
    ],
  })
})

t.test('with HOOK_TOKEN set, the pool hooks need the bearer token too', async (t) => {
  const app = await buildTestApp(t, { hookToken: TOKEN })
  for (const [url, payload] of [
    ['/pools/sync', request(definition(), [])],
    ['/pools/customize', { parent: definition() }],
  ] as const) {
    for (const headers of [{}, { authorization: 'Bearer not-the-token' }] as Record<string, string>[]) {
      const refused = await app.inject(post(url, payload, headers))
      t.equal(refused.statusCode, 401, `${url} ${JSON.stringify(headers)}`)
      t.strictSame(refused.json(), {
        error: 'Unauthorized',
        message: 'This hook needs the header Authorization: Bearer <HOOK_TOKEN>.',
      })
    }
    const ok = await app.inject(post(url, payload, { authorization: `Bearer ${TOKEN}` }))
    t.equal(ok.statusCode, 200, `${url} with the token`)
  }
  const metrics = await app.ops.inject({ method: 'GET', url: '/metrics' })
  t.match(metrics.body, /challenge_hooks_rejected_total\{cause="unauthorized"\} 4/)
  t.match(metrics.body, /challenge_hooks_hook_duration_seconds_count\{hook="pools\/sync",code="200"\} 1/)
})

t.test('a request whose parent is no ChallengeDefinition is 400 naming the problem', async (t) => {
  const app = await buildTestApp(t)
  type Loose = Record<string, any>
  const cases: [string, (body: Loose) => void, string][] = [
    ['no parent', (body) => delete body.parent, 'body.parent is required'],
    ['no uid', (body) => delete body.parent.metadata.uid, 'body.parent.metadata.uid is required'],
    [
      'empty uid',
      (body) => (body.parent.metadata.uid = ''),
      'body.parent.metadata.uid must NOT have fewer than 1 characters',
    ],
    ['no namespace', (body) => delete body.parent.metadata.namespace, 'body.parent.metadata.namespace is required'],
    ['no spec', (body) => delete body.parent.spec, 'body.parent.spec is required'],
    ['a spec that is no object', (body) => (body.parent.spec = 'pool'), 'body.parent.spec must be object'],
  ]
  for (const url of ['/pools/sync', '/pools/customize']) {
    for (const [what, breaks, message] of cases) {
      const body: Loose = url === '/pools/sync' ? request(definition(), []) : { parent: definition() }
      breaks(body)
      const response = await app.inject(post(url, body))
      t.equal(response.statusCode, 400, `${url} ${what}`)
      t.strictSame(response.json(), { error: 'Bad Request', message }, `${url} ${what}`)
    }
  }
  const children = await app.inject(post('/pools/sync', { ...request(definition(), []), children: { 'Pod.v1': [] } }))
  t.equal(children.statusCode, 400)
  t.strictSame(children.json(), { error: 'Bad Request', message: 'body.children.Pod.v1 must be object' })
})

t.test('metrics: the pool pods by state at each pool sync, and the claims answered', async (t) => {
  const app = await buildTestApp(t, { flagSecret: 'pool-test-secret' })
  const { world, parent } = warmPool()
  const waiting = [ticket('a', 'uid-a', { state: 'Waiting' })]
  t.equal((await app.inject(post('/pools/sync', request(parent, world, waiting)))).statusCode, 200)
  const series = async () =>
    (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
      .split('\n')
      .filter((line) => line.startsWith('challenge_hooks_pool_'))
  t.strictSame(await series(), [
    'challenge_hooks_pool_pods{namespace="challenges",definition="web",state="free"} 1',
    'challenge_hooks_pool_pods{namespace="challenges",definition="web",state="claimed"} 1',
    'challenge_hooks_pool_pods{namespace="challenges",definition="web",state="starting"} 1',
    'challenge_hooks_pool_claims_total{namespace="challenges",definition="web"} 1',
  ])
  await app.inject(post('/pools/sync', request(definition({ pool: { size: 0 } }), [])))
  t.strictSame(
    await series(),
    ['challenge_hooks_pool_claims_total{namespace="challenges",definition="web"} 1'],
    'a definition without pool pods has no series of pods',
  )
})

t.test('metrics: the pre-pulled images’ nodes by image and state, and when the definition opens', async (t) => {
  const app = await buildTestApp(t)
  const gate = testConfig().isolationGate.image
  const series = async () =>
    (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
      .split('\n')
      .filter((line) => line.startsWith('challenge_hooks_prepull_'))
  const spec = { prepull: 'Pull', pool: undefined, availableFrom: '2026-11-22T13:00:00Z' }
  t.equal((await app.inject(post('/pools/sync', request(definition(spec), [])))).statusCode, 200)
  const of = (image: string, desired: number, ready: number, failed: number) => [
    `challenge_hooks_prepull_nodes{namespace="challenges",definition="web",image="${image}",state="desired"} ${desired}`,
    `challenge_hooks_prepull_nodes{namespace="challenges",definition="web",image="${image}",state="ready"} ${ready}`,
    `challenge_hooks_prepull_nodes{namespace="challenges",definition="web",image="${image}",state="failed"} ${failed}`,
  ]
  t.strictSame(await series(), [
    ...of(gate, 0, 0, 0),
    ...of('registry.example.org/web:1', 0, 0, 0),
    'challenge_hooks_prepull_opens_timestamp_seconds{namespace="challenges",definition="web"} 1795352400',
  ])
  const changed = {
    ...spec,
    availableFrom: undefined,
    pod: { containers: [{ name: 'app', image: 'registry.example.org/web:2' }] },
  }
  await app.inject(post('/pools/sync', request(definition(changed), [])))
  t.strictSame(
    await series(),
    [
      ...of(gate, 0, 0, 0),
      ...of('registry.example.org/web:2', 0, 0, 0),
      'challenge_hooks_prepull_opens_timestamp_seconds{namespace="challenges",definition="web"} 0',
    ],
    'a changed image loses its series; no availableFrom is open from the start',
  )
  await app.inject(post('/pools/sync', request(definition({ ...changed, prepull: 'Off' }), [])))
  t.strictSame(await series(), [], 'a definition that pulls nothing ahead has no series')
})

t.test('the pool hooks are shed like the others when the event loop runs late', async (t) => {
  const app = await buildApp(testConfig({ maxEventLoopDelayMs: 100 }), { logger: false, eventLoopDelay: () => 1500 })
  t.teardown(() => app.close())
  for (const [url, payload] of [
    ['/pools/sync', request(definition(), [])],
    ['/pools/customize', { parent: definition() }],
  ] as const) {
    const refused = await app.inject(post(url, payload))
    t.equal(refused.statusCode, 429, url)
    t.strictSame(refused.json(), {
      error: 'Too Many Requests',
      message: 'The event loop runs 1500 ms late; retry after 1 s.',
    })
  }
})
