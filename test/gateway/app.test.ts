// The gateway's API over HTTP (src/gateway/app.ts, routes.ts, instances.ts) on the fake API server: what each call
// does to the Challenge, what it answers, and each refusal. The same calls on the real API server:
// test/cluster/gateway.test.ts.
import t from 'tap'
import { challengeName } from '../../src/gateway/names.js'
import { eventually } from '../support/eventually.js'
import { startFakeApiServer, type FakeApiServer, type Json } from './fake-apiserver.js'
import { loadPlatforms } from '../../src/gateway/identity.js'
import { CTFD_KEY, definition, gatewayApp, mint, OTHER_KEY, PLATFORMS_YAML, seen } from './support.js'

const API = '/apis/challenge-hooks.dev/v1alpha1/namespaces'
const alice = { kind: 'User', id: 'alice' } as const
const ALICE = challengeName('web', alice)
const asKey = (owner = 'User:alice') => ({ authorization: `Bearer ${CTFD_KEY}`, 'challenge-owner': owner })
const running = {
  phase: 'Running',
  reason: 'Ready',
  message: 'The instance is running.',
  endpoint: { type: 'TLS', host: 'h.example.org', port: 443, connection: 'ncat --ssl h.example.org 443' },
  expiresAt: '2026-11-22T12:30:00Z',
  renewalsSeen: 0,
  renewalsApplied: 0,
  run: 0,
  cost: 1,
  conditions: [{ type: 'Admitted', status: 'True' }],
}

t.test("ensure creates the owner's Challenge once, under the derived name, with the labels and owner", async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  const first = await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
  t.equal(first.statusCode, 201)
  t.strictSame(first.json(), {
    name: ALICE,
    namespace: 'challenges',
    definition: 'web',
    owner: alice,
    phase: 'None',
    version: '102',
    renewals: { applied: 0, max: 2 },
    actions: {
      renew: { allowed: false, why: 'Only a running instance can be renewed; this one is not started yet.' },
      restart: { allowed: false, why: 'The instance has not been seen by the controller yet.' },
      stop: { allowed: true },
    },
    budget: { held: 0, total: 3 },
  })
  const stored = fake.objects.get(`challenges/challenges/${ALICE}`) as Json
  t.strictSame(
    [stored.metadata, stored.spec],
    [
      {
        name: ALICE,
        labels: { 'challenge-hooks.dev/owner': 'alice', 'challenge-hooks.dev/definition': 'web' },
        namespace: 'challenges',
        uid: `uid-${ALICE}`,
        resourceVersion: '102',
        creationTimestamp: '2026-11-22T11:00:00Z',
      },
      { definitionRef: { name: 'web' }, owner: alice },
    ],
  )
  const second = await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
  t.equal(second.statusCode, 200)
  t.equal(fake.requests.filter((request) => request.startsWith('POST')).length, 1, 'a second ensure creates nothing')
  const none = await app.inject({ method: 'PUT', url: '/v1/instances/nothing', headers: asKey() })
  t.strictSame([none.statusCode, none.json().message], [404, 'There is no challenge nothing in challenges.'])
})

t.test('get, list, renew, restart, stop and delete, each on the record the hook keeps', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web', { maxRenewals: 1 })
  definition(fake, 'pwn')
  await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
  await app.inject({ method: 'PUT', url: '/v1/instances/pwn', headers: asKey() })
  await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey('User:bob') })
  await seen(app, fake.setStatus('challenges', ALICE, running))

  const got = (await app.inject({ method: 'GET', url: '/v1/instances/web', headers: asKey() })).json()
  t.strictSame(
    [got.phase, got.command, got.expiresAt, got.budget, got.actions.renew],
    ['Running', 'ncat --ssl h.example.org 443', '2026-11-22T12:30:00Z', { held: 1, total: 3 }, { allowed: true }],
  )
  const list = (await app.inject({ method: 'GET', url: '/v1/instances', headers: asKey() })).json<Json[]>()
  t.strictSame(list.map((each) => each.definition).sort(), ['pwn', 'web'], "the owner's own instances only")

  const renewed = await app.inject({ method: 'POST', url: '/v1/instances/web/renew', headers: asKey() })
  t.equal(renewed.statusCode, 202)
  t.equal(((fake.objects.get(`challenges/challenges/${ALICE}`) as Json).spec as Json).renewals, 1, 'observed + 1')
  t.strictSame(renewed.json().actions.renew, { allowed: false, why: 'A renewal is already being applied.' })
  const again = await app.inject({ method: 'POST', url: '/v1/instances/web/renew', headers: asKey() })
  t.strictSame(
    [again.statusCode, again.json()],
    [409, { error: 'Conflict', message: 'A renewal is already being applied.' }],
  )
  fake.setStatus('challenges', ALICE, { ...running, renewalsSeen: 1, renewalsApplied: 1 })
  const used = await app.inject({ method: 'POST', url: '/v1/instances/web/renew', headers: asKey() })
  t.strictSame([used.statusCode, used.json().message], [409, 'All 1 renewals are used.'])

  const restarted = await app.inject({ method: 'POST', url: '/v1/instances/web/restart', headers: asKey() })
  t.equal(restarted.statusCode, 202)
  t.strictSame(
    [
      ((fake.objects.get(`challenges/challenges/${ALICE}`) as Json).spec as Json).restarts,
      restarted.json().actions.restart,
    ],
    [1, { allowed: false, why: 'A restart is already under way.' }],
  )
  const stopped = await app.inject({ method: 'POST', url: '/v1/instances/web/stop', headers: asKey() })
  t.strictSame(
    [stopped.statusCode, stopped.json().actions.stop],
    [202, { allowed: false, why: 'The instance is already stopped.' }],
  )
  t.equal(((fake.objects.get(`challenges/challenges/${ALICE}`) as Json).spec as Json).desiredState, 'Stopped')

  const deleted = await app.inject({ method: 'DELETE', url: '/v1/instances/web', headers: asKey() })
  t.strictSame([deleted.statusCode, deleted.json()], [202, { deleted: 'web' }])
  t.equal(fake.objects.has(`challenges/challenges/${ALICE}`), false)
  const gone = await app.inject({ method: 'GET', url: '/v1/instances/web', headers: asKey() })
  t.strictSame(gone.json(), {
    error: 'Not Found',
    message: 'User:alice has no instance of web in challenges; PUT /v1/instances/web starts one.',
  })
})

t.test('a patch that meets a concurrent change is decided again on the new version', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
  fake.setStatus('challenges', ALICE, running)
  // Every PATCH meets a version that moved since the read: three attempts, then the conflict is answered.
  const original = fake.put.bind(fake)
  let moved = 0
  fake.requests.push = function (this: string[], ...items: string[]) {
    if (items.some((item) => item.startsWith('PATCH'))) {
      moved += 1
      const stored = fake.objects.get(`challenges/challenges/${ALICE}`) as Json
      original('challenges', 'challenges', stored)
    }
    return Array.prototype.push.apply(this, items)
  }
  const answer = await app.inject({ method: 'POST', url: '/v1/instances/web/stop', headers: asKey() })
  t.strictSame([answer.statusCode, moved], [409, 3])
  t.equal(answer.json().message, 'the object has been modified')
})

t.test("never another owner's record: a name held by someone else is refused, naming it", async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  fake.put('challenges', 'challenges', {
    metadata: { name: ALICE, labels: { 'challenge-hooks.dev/owner': 'mallory' } },
    spec: { definitionRef: { name: 'web' }, owner: { kind: 'User', id: 'mallory' } },
    status: running,
  })
  for (const [method, url] of [
    ['GET', '/v1/instances/web'],
    ['PUT', '/v1/instances/web'],
    ['POST', '/v1/instances/web/stop'],
    ['DELETE', '/v1/instances/web'],
  ] as const) {
    const answer = await app.inject({ method, url, headers: asKey() })
    t.strictSame(
      [answer.statusCode, answer.json()],
      [
        409,
        {
          error: 'Conflict',
          message: `The Challenge ${ALICE} in challenges is not User:alice's instance of web (its spec.owner or definitionRef differs); nothing of it is shown.`,
        },
      ],
      `${method} ${url}`,
    )
  }
  t.equal(fake.objects.has(`challenges/challenges/${ALICE}`), true, 'nothing was deleted')
})

t.test('a player token acts for its own owner only; another namespace is refused', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  const token = await mint({ sub: 'User:alice' })
  const own = await app.inject({
    method: 'PUT',
    url: '/v1/instances/web',
    headers: { authorization: `Bearer ${token}` },
  })
  t.strictSame([own.statusCode, own.json().name], [201, ALICE])
  const replayed = await app.inject({
    method: 'GET',
    url: '/v1/instances/web',
    headers: { authorization: `Bearer ${token}`, 'challenge-owner': 'User:bob' },
  })
  t.strictSame(
    [replayed.statusCode, replayed.json().message],
    [403, 'This token acts for User:alice only; the header Challenge-Owner names User:bob.'],
  )
  const elsewhere = await app.inject({ method: 'GET', url: '/v1/instances/web?namespace=other', headers: asKey() })
  t.strictSame(
    [elsewhere.statusCode, elsewhere.json().message],
    [403, "Platform ctfd's credentials are scoped to the namespaces challenges, finals, not other."],
  )
  const otherKey = await app.inject({
    method: 'GET',
    url: '/v1/instances/web?namespace=challenges',
    headers: { authorization: `Bearer ${OTHER_KEY}`, 'challenge-owner': 'User:alice' },
  })
  t.strictSame(
    [otherKey.statusCode, otherKey.json().message],
    [403, "Platform other's credentials are scoped to the namespaces other, not challenges."],
  )
  const anonymous = await app.inject({ method: 'GET', url: '/v1/instances' })
  t.strictSame([anonymous.statusCode, anonymous.headers['www-authenticate']], [401, 'Bearer'])
  const noOwner = await app.inject({
    method: 'GET',
    url: '/v1/instances',
    headers: { authorization: `Bearer ${CTFD_KEY}` },
  })
  t.strictSame(
    [noOwner.statusCode, noOwner.json().message],
    [400, 'Name the owner: the header Challenge-Owner: <kind>:<id> (User or Team).'],
  )
  const badName = await app.inject({ method: 'GET', url: '/v1/instances/Web_1', headers: asKey() })
  t.strictSame(
    [badName.statusCode, badName.json().message],
    [400, 'params.definition must match pattern "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"'],
  )
})

t.test("the namespace's definitions, for a platform key only, in the platform's namespaces", async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  definition(fake, 'pwn', { flag: { mode: 'Static', secretRef: { name: 's', key: 'flag' } } })
  const key = { authorization: `Bearer ${CTFD_KEY}` }
  const listed = await app.inject({ method: 'GET', url: '/v1/definitions', headers: key })
  t.strictSame(
    [listed.statusCode, listed.json()],
    [
      200,
      [
        { name: 'pwn', flagMode: 'Static' },
        { name: 'web', flagMode: 'PerOwner' },
      ],
    ],
  )
  const finals = await app.inject({ method: 'GET', url: '/v1/definitions?namespace=finals', headers: key })
  // The fake API server refuses the gateway in finals, as a missing RoleBinding would.
  t.strictSame(
    [finals.statusCode, finals.json().message],
    [403, 'The gateway may not do this in this namespace: cannot GET in finals'],
  )
  const elsewhere = await app.inject({ method: 'GET', url: '/v1/definitions?namespace=other', headers: key })
  t.strictSame(
    [elsewhere.statusCode, elsewhere.json().message],
    [403, "Platform ctfd's credentials are scoped to the namespaces challenges, finals, not other."],
  )
  const token = await mint({ sub: 'User:alice', admin: true })
  const asToken = await app.inject({
    method: 'GET',
    url: '/v1/definitions',
    headers: { authorization: `Bearer ${token}` },
  })
  t.strictSame([asToken.statusCode, asToken.json().message], [403, 'Only a platform key lists the definitions.'])
  // A gateway whose informer of the definitions cannot list yet reads the API server, which fails the list too.
  fake.failLists = true
  const fresh = await gatewayApp(t, fake)
  const down = await fresh.inject({ method: 'GET', url: '/v1/definitions', headers: key })
  t.strictSame([down.statusCode, down.headers['retry-after']], [503, '1'], 'an API server that fails the list')
})

t.test('an API server that cannot be reached: 503 with Retry-After, and nothing lost', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  for (const mode of ['down', 'dead'] as const) {
    fake.mode = mode
    const answer = await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
    t.strictSame(
      [answer.statusCode, answer.headers['retry-after'], answer.json()],
      [
        503,
        '1',
        {
          error: 'Service Unavailable',
          message: 'The cluster cannot be reached right now; nothing was changed. Try again shortly.',
        },
      ],
      mode,
    )
  }
  fake.mode = 'up'
  const later = await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
  t.equal(later.statusCode, 201, 'the same call, repeated, does it')
})

t.test('rate limits per owner, body limit, CORS allow-list, the OpenAPI document, 404s', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake, {
    GATEWAY_RATE_LIMIT: '2',
    GATEWAY_CORS_ORIGINS: 'https://ctf.example.org',
    BODY_LIMIT: '1KiB',
  })
  definition(fake, 'web')
  // The limiter's window runs on Date.now: held still over these calls, the wait it names is the whole minute
  // however slowly a loaded machine runs them (it read 59 s once).
  const realNow = Date.now
  const frozen = realNow()
  Date.now = () => frozen
  t.teardown(() => {
    Date.now = realNow
  })
  const codes = []
  for (let i = 0; i < 3; i++)
    codes.push((await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })).statusCode)
  t.strictSame(codes, [201, 200, 429])
  const limited = await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
  Date.now = realNow
  t.strictSame(
    [limited.headers['retry-after'], limited.json()],
    ['60', { error: 'Too Many Requests', message: 'At most 2 changes a minute per owner; try again in 60 s.' }],
  )
  t.equal(
    (await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey('User:bob') })).statusCode,
    201,
    'another owner has its own',
  )
  t.equal(
    (await app.inject({ method: 'GET', url: '/v1/instances/web', headers: asKey() })).statusCode,
    200,
    'reads are not limited',
  )

  const big = await app.inject({
    method: 'POST',
    url: '/v1/flags/verify',
    headers: asKey(),
    payload: { definition: 'web', flag: 'x'.repeat(2000) },
  })
  t.equal(big.statusCode, 413)
  const preflight = (origin: string) =>
    app.inject({
      method: 'OPTIONS',
      url: '/v1/instances/web',
      headers: { origin, 'access-control-request-method': 'PUT' },
    })
  t.equal(
    (await preflight('https://ctf.example.org')).headers['access-control-allow-origin'],
    'https://ctf.example.org',
  )
  t.equal((await preflight('https://evil.example')).headers['access-control-allow-origin'], undefined)

  const openapi = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).json()
  t.strictSame(Object.keys(openapi.paths).sort(), [
    '/v1/definitions',
    '/v1/flags/verify',
    '/v1/instances',
    '/v1/instances/{definition}',
    '/v1/instances/{definition}/events',
    '/v1/instances/{definition}/renew',
    '/v1/instances/{definition}/restart',
    '/v1/instances/{definition}/stop',
  ])
  t.strictSame(Object.keys(openapi.paths['/v1/instances/{definition}']).sort(), ['delete', 'get', 'put'])
  const missing = await app.inject({ method: 'GET', url: '/v2/x?y=1' })
  t.strictSame([missing.statusCode, missing.json().message], [404, 'GET /v2/x is not a route of this gateway'])
  t.strictSame((await app.inject({ method: 'GET', url: '/healthz' })).json(), { status: 'ok' })
})

t.test("the API server's refusals in the API's words; an unexpected failure is a bare 500", async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web', {}, 'finals')
  const forbidden = await app.inject({ method: 'GET', url: '/v1/instances/web?namespace=finals', headers: asKey() })
  t.strictSame(
    [forbidden.statusCode, forbidden.json().message],
    [403, 'The gateway may not do this in this namespace: cannot GET in finals'],
  )
  definition(fake, 'a..b')
  const invalid = await app.inject({ method: 'PUT', url: '/v1/instances/a..b', headers: asKey() })
  t.strictSame(
    [invalid.statusCode, invalid.json().message],
    [400, `metadata.name: Invalid value: "${challengeName('a..b', alice)}"`],
  )
  const broken = await gatewayApp(
    t,
    fake,
    { LOG_LEVEL: 'silent' },
    {
      logger: undefined,
      kube: {
        get: async () => {
          throw new Error('a bug')
        },
        call: async () => ({}),
        watch: async () => undefined,
      },
    },
  )
  const failed = await broken.inject({ method: 'GET', url: '/v1/instances/web', headers: asKey() })
  t.strictSame(
    [failed.statusCode, failed.json()],
    [500, { error: 'Internal Server Error', message: 'Internal Server Error' }],
  )
})

t.test(
  "two ensures at once: the second finds the first one's Challenge; counters a status lacks count as 0",
  async (t) => {
    const fake = await startFakeApiServer(t)
    const app = await gatewayApp(t, fake)
    definition(fake, 'web')
    // Another ensure creates the Challenge between this one's read and its create.
    fake.requests.push = function (this: string[], ...items: string[]) {
      if (items.some((item) => item.startsWith('POST')) && !fake.objects.has(`challenges/challenges/${ALICE}`)) {
        fake.put('challenges', 'challenges', {
          metadata: { name: ALICE, labels: { 'challenge-hooks.dev/owner': 'alice' } },
          spec: { definitionRef: { name: 'web' }, owner: alice },
        })
      }
      return Array.prototype.push.apply(this, items)
    }
    const raced = await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
    t.strictSame([raced.statusCode, raced.json().name], [200, ALICE])
    const { renewalsSeen: _seen, run: _run, ...bare } = running
    fake.setStatus('challenges', ALICE, bare)
    await app.inject({ method: 'POST', url: '/v1/instances/web/renew', headers: asKey() })
    await app.inject({ method: 'POST', url: '/v1/instances/web/restart', headers: asKey() })
    const spec = (fake.objects.get(`challenges/challenges/${ALICE}`) as Json).spec as Json
    t.strictSame([spec.renewals, spec.restarts, spec.desiredState], [1, 1, 'Running'])
  },
)

t.test(
  "ensure's settings: the platform's backend sets them, a player's token may not, the platform's deadline caps them",
  async (t) => {
    const fake = await startFakeApiServer(t)
    const withDeadline = await loadPlatforms(
      PLATFORMS_YAML.replace(
        '    namespaces: [challenges, finals]\n',
        '    namespaces: [challenges, finals]\n    deadline: 2026-11-22T18:00:00Z\n',
      ),
    )
    const app = await gatewayApp(t, fake, {}, { platforms: withDeadline })
    definition(fake, 'web')
    definition(fake, 'pwn')
    definition(fake, 'rev')
    const specOf = (definitionName: string, owner: { kind: 'User'; id: string } = alice): Json =>
      (fake.objects.get(`challenges/challenges/${challengeName(definitionName, owner)}`) as Json).spec as Json

    const settings = { deadline: '2026-11-22T15:00:00Z', lifetimeSeconds: 900, parameters: { LEVEL: 'hard' } }
    const created = await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey(), payload: settings })
    t.equal(created.statusCode, 201)
    t.strictSame(specOf('web'), { definitionRef: { name: 'web' }, owner: alice, ...settings })
    const again = await app.inject({
      method: 'PUT',
      url: '/v1/instances/web',
      headers: asKey(),
      payload: { lifetimeSeconds: 60 },
    })
    t.equal(again.statusCode, 200)
    t.strictSame(
      specOf('web'),
      { definitionRef: { name: 'web' }, owner: alice, ...settings },
      'a second ensure changes nothing',
    )

    const later = await app.inject({
      method: 'PUT',
      url: '/v1/instances/pwn',
      headers: asKey(),
      payload: { deadline: '2026-11-23T00:00:00Z' },
    })
    t.equal(later.statusCode, 201)
    t.strictSame(specOf('pwn').deadline, '2026-11-22T18:00:00Z', "a deadline after the platform's is the platform's")
    const carol = { kind: 'User', id: 'carol' } as const
    const unreadable = await app.inject({
      method: 'PUT',
      url: '/v1/instances/pwn',
      headers: asKey('User:carol'),
      payload: { deadline: '2026-02-30T00:00:00Z' },
    })
    t.equal(unreadable.statusCode, 201)
    t.strictSame(
      specOf('pwn', carol).deadline,
      '2026-02-30T00:00:00Z',
      "a date the API server would not read is sent on for it to refuse by name, not swapped for the platform's",
    )

    const player = { authorization: `Bearer ${await mint({ sub: 'User:bob' })}` }
    const bob = { kind: 'User', id: 'bob' } as const
    const refused = await app.inject({
      method: 'PUT',
      url: '/v1/instances/web',
      headers: player,
      payload: { parameters: { LEVEL: 'easy' }, lifetimeSeconds: 86400 },
    })
    t.strictSame(
      [refused.statusCode, refused.json()],
      [
        403,
        {
          error: 'Forbidden',
          message:
            "A player's token may not set parameters, lifetimeSeconds: only the platform's backend (a key, or an admin token) may.",
        },
      ],
    )
    t.equal(fake.objects.has(`challenges/challenges/${challengeName('web', bob)}`), false, 'nothing created')
    const plain = await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: player })
    t.equal(plain.statusCode, 201)
    t.strictSame(
      specOf('web', bob),
      { definitionRef: { name: 'web' }, owner: bob, deadline: '2026-11-22T18:00:00Z' },
      "a player's start ends at the platform's deadline",
    )
    const admin = { authorization: `Bearer ${await mint({ sub: 'User:bob', admin: true })}` }
    const byAdmin = await app.inject({
      method: 'PUT',
      url: '/v1/instances/rev',
      headers: admin,
      payload: { lifetimeSeconds: 120 },
    })
    t.equal(byAdmin.statusCode, 201)
    t.strictSame(specOf('rev', bob), {
      definitionRef: { name: 'rev' },
      owner: bob,
      lifetimeSeconds: 120,
      deadline: '2026-11-22T18:00:00Z',
    })
  },
)

t.test("ensure's settings: each bad one is a 400 naming it, and nothing is created", async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  const cases: [unknown, string][] = [
    [{ lifetimeSeconds: 59 }, 'body.lifetimeSeconds must be >= 60'],
    [{ lifetimeSeconds: '900' }, 'body.lifetimeSeconds must be integer'],
    [{ lifetimeSeconds: 86401 }, 'body.lifetimeSeconds must be <= 86400'],
    [{ deadline: 'tomorrow' }, 'body.deadline must match pattern'],
    [{ parameters: { 'NOT-A-NAME': 'x' } }, 'body.parameters must NOT have additional properties'],
    [{ parameters: { A: 1 } }, 'body.parameters.A must be string'],
    [{ owner: { kind: 'User', id: 'mallory' } }, 'body must NOT have additional properties'],
    [[1], 'body must be object'],
  ]
  for (const [payload, start] of cases) {
    const answer = await app.inject({
      method: 'PUT',
      url: '/v1/instances/web',
      headers: asKey(),
      payload: payload as object,
    })
    t.equal(answer.statusCode, 400, JSON.stringify(payload))
    t.ok(answer.json().message.startsWith(start), `${JSON.stringify(payload)}: ${answer.json().message}`)
  }
  t.equal(fake.requests.filter((request) => request.startsWith('POST')).length, 0, 'nothing created')
})

/** Waits until the gateway's informers of `namespace` (Challenges and definitions) are watching, hence synced. */
const informing = (fake: FakeApiServer, namespace = 'challenges') =>
  eventually('the informers', () => {
    const watching = (plural: string) =>
      fake.requests.some((r) => r.startsWith(`GET ${API}/${namespace}/${plural}?`) && r.includes('watch=true'))
    return (watching('challenges') && watching('challengedefinitions')) || undefined
  })

t.test('once synced, reads ask the API server nothing; an action reads it first', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web', { flag: { mode: 'Static' } })
  const created = (await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })).json()
  await informing(fake)
  const before = fake.requests.length
  const got = await app.inject({ method: 'GET', url: '/v1/instances/web', headers: asKey() })
  const ensured = await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
  const list = await app.inject({ method: 'GET', url: '/v1/instances', headers: asKey() })
  const definitions = await app.inject({
    method: 'GET',
    url: '/v1/definitions',
    headers: { authorization: `Bearer ${CTFD_KEY}` },
  })
  t.strictSame(
    [got.json(), ensured.statusCode, ensured.json(), list.json(), definitions.json()],
    [created, 200, created, [created], [{ name: 'web', flagMode: 'Static' }]],
  )
  t.strictSame(fake.requests.slice(before), [], 'no call')
  await app.inject({ method: 'POST', url: '/v1/instances/web/stop', headers: asKey() })
  t.strictSame(
    fake.requests.slice(before).map((r) => r.split('?')[0]),
    [`GET ${API}/challenges/challenges/${ALICE}`, `PATCH ${API}/challenges/challenges/${ALICE}`],
    'the record read, then patched',
  )
})

t.test('until its informers are synced, a gateway reads the API server, with the same answers', async (t) => {
  const fake = await startFakeApiServer(t)
  // The informers' lists (no query) fail; the reads' own calls pass.
  fake.failing = /^GET \/apis\/[^?]+\/(challenges|challengedefinitions)$/
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  const created = await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
  t.equal(created.statusCode, 201)
  const updated = fake.setStatus('challenges', ALICE, running)
  const direct = (await app.inject({ method: 'GET', url: '/v1/instances/web', headers: asKey() })).json()
  t.strictSame([direct.phase, direct.version], ['Running', (updated.metadata as Json).resourceVersion], 'at once')
  t.strictSame((await app.inject({ method: 'GET', url: '/v1/instances', headers: asKey() })).json(), [direct])
  const key = { authorization: `Bearer ${CTFD_KEY}` }
  const definitions = await app.inject({ method: 'GET', url: '/v1/definitions', headers: key })
  t.strictSame(
    [definitions.statusCode, definitions.headers['retry-after']],
    [503, '1'],
    'the list both ways fails: 503',
  )
  fake.failing = undefined
  await informing(fake)
  const cached = (await app.inject({ method: 'GET', url: '/v1/instances/web', headers: asKey() })).json()
  t.strictSame(cached, direct, 'the same answer from the cache')
  t.strictSame((await app.inject({ method: 'GET', url: '/v1/definitions', headers: key })).json(), [
    { name: 'web', flagMode: 'PerOwner' },
  ])
})

t.test("the gateway's own writes are read at once, before the watch tells of them, and stay", async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  definition(fake, 'pwn')
  await app.inject({ method: 'PUT', url: '/v1/instances/web', headers: asKey() })
  await informing(fake)
  fake.holdWatches = true
  const get = async (definitionName: string) =>
    app.inject({ method: 'GET', url: `/v1/instances/${definitionName}`, headers: asKey() })
  // The hook's status write, untold: the cache answers the record before it.
  fake.setStatus('challenges', ALICE, running)
  t.equal((await get('web')).json().phase, 'None', 'read from the cache')

  const stopped = await app.inject({ method: 'POST', url: '/v1/instances/web/stop', headers: asKey() })
  t.strictSame([stopped.statusCode, (await get('web')).json()], [202, stopped.json()], "the stop's answer, read again")
  t.strictSame(stopped.json().actions.stop, { allowed: false, why: 'The instance is already stopped.' })
  const created = await app.inject({ method: 'PUT', url: '/v1/instances/pwn', headers: asKey() })
  t.strictSame([created.statusCode, (await get('pwn')).json()], [201, created.json()])
  const list = (await app.inject({ method: 'GET', url: '/v1/instances', headers: asKey() })).json<Json[]>()
  t.strictSame(
    list.map((each) => each.definition),
    ['pwn', 'web'],
  )

  // A delete that removes the record at once (answered with a Status), and one that finalizers hold.
  fake.deleteAnswer = 'status'
  t.equal((await app.inject({ method: 'DELETE', url: '/v1/instances/web', headers: asKey() })).statusCode, 202)
  t.equal((await get('web')).statusCode, 404, 'deleted')
  const pwn = challengeName('pwn', alice)
  const stored = fake.objects.get(`challenges/challenges/${pwn}`) as Json
  fake.put('challenges', 'challenges', { ...stored, metadata: { ...(stored.metadata as Json), finalizers: ['f'] } })
  t.equal((await app.inject({ method: 'DELETE', url: '/v1/instances/pwn', headers: asKey() })).statusCode, 202)
  t.strictSame((await get('pwn')).json().actions.stop, { allowed: false, why: 'The instance is being removed.' })

  // The watch tells of everything, older than the writes: nothing is undone. Seen once a later write is seen.
  fake.releaseWatches()
  await seen(app, fake.setStatus('challenges', pwn, { phase: 'Deleted' }))
  t.equal((await get('web')).statusCode, 404, 'still deleted')
  t.strictSame((await get('pwn')).json().actions.stop, {
    allowed: false,
    why: 'The instance is being removed.',
  })
})
