import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../helpers/app.js'
import { MAX_JSON_DEPTH, tooDeep, tooDeepAt } from '../../src/http/json-body.js'
import { customizeRequest, finalizingRequest, newRequest, runningRequest } from '../helpers/hook-requests.js'

type Loose = Record<string, any>
const HOOKS = ['/sync', '/finalize', '/customize'] as const

async function postRaw(app: FastifyInstance, url: string, payload: string, contentType?: string) {
  const headers: Record<string, string> = contentType === undefined ? {} : { 'content-type': contentType }
  return app.inject({ method: 'POST', url, payload, headers })
}

/** Every refusal: the status, and a `{error, message}` body (nothing else) whose message matches. */
function assertRefused(
  t: Test,
  response: { statusCode: number; body: string; json(): any },
  status: number,
  message: RegExp,
  what: string,
) {
  t.equal(response.statusCode, status, `${what}: status`)
  const body = response.json()
  t.strictSame(Object.keys(body).sort(), ['error', 'message'], `${what}: body keys`)
  t.type(body.error, 'string', `${what}: error`)
  t.match(body.message, message, `${what}: message`)
}

t.test('bodies that are not a JSON object are 400 on every hook', async (t) => {
  const app = await buildTestApp(t)
  const cases: [string, string, RegExp][] = [
    ['not JSON', 'this is not json', /not valid JSON/],
    ['truncated JSON', '{"parent": {"metadata":', /not valid JSON/],
    ['empty body', '', /cannot be empty/],
    ['JSON array', '[]', /^body must be object$/],
    ['JSON string', '"parent"', /^body must be object$/],
    ['JSON number', '42', /^body must be object$/],
    ['JSON null', 'null', /^body must be object$/],
    ['JSON true', 'true', /^body must be object$/],
  ]
  for (const url of HOOKS) {
    for (const [what, payload, message] of cases) {
      assertRefused(t, await postRaw(app, url, payload, 'application/json'), 400, message, `${url} ${what}`)
    }
  }
})

t.test('a content type other than JSON is 415; JSON with parameters or in capitals is accepted', async (t) => {
  const app = await buildTestApp(t)
  const valid = JSON.stringify(newRequest())
  for (const contentType of [
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/yaml',
    'multipart/form-data; boundary=x',
  ]) {
    const escaped = contentType.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    assertRefused(
      t,
      await postRaw(app, '/sync', valid, contentType),
      415,
      new RegExp(`^Content-Type ${escaped} is not supported; send application/json\\.$`),
      contentType,
    )
  }
  assertRefused(
    t,
    await postRaw(app, '/sync', valid),
    415,
    /^Content-Type \(none\) is not supported/,
    'no content type',
  )
  for (const contentType of ['application/json; charset=utf-8', 'Application/JSON']) {
    t.equal((await postRaw(app, '/sync', valid, contentType)).statusCode, 200, contentType)
  }
})

t.test('a request that breaks the schema is 400 naming the field', async (t) => {
  const app = await buildTestApp(t)
  const cases: [string, (request: Loose) => void, RegExp][] = [
    ['missing parent', (r) => delete r.parent, /^body\.parent is required$/],
    ['parent not an object', (r) => (r.parent = 'web-login-u-alice'), /^body\.parent must be object$/],
    ['parent without metadata', (r) => delete r.parent.metadata, /^body\.parent\.metadata is required$/],
    [
      'parent without metadata.name',
      (r) => delete r.parent.metadata.name,
      /^body\.parent\.metadata\.name is required$/,
    ],
    [
      'empty metadata.name',
      (r) => (r.parent.metadata.name = ''),
      /^body\.parent\.metadata\.name must NOT have fewer than 1 characters$/,
    ],
    [
      'parent without metadata.namespace',
      (r) => delete r.parent.metadata.namespace,
      /^body\.parent\.metadata\.namespace is required$/,
    ],
    ['parent without metadata.uid', (r) => delete r.parent.metadata.uid, /^body\.parent\.metadata\.uid is required$/],
    [
      'label value not a string',
      (r) => (r.parent.metadata.labels.team = 7),
      /^body\.parent\.metadata\.labels\.team must be string$/,
    ],
    ['parent without spec', (r) => delete r.parent.spec, /^body\.parent\.spec is required$/],
    ['spec missing owner', (r) => delete r.parent.spec.owner, /^body\.parent\.spec\.owner is required$/],
    [
      'spec missing definitionRef',
      (r) => delete r.parent.spec.definitionRef,
      /^body\.parent\.spec\.definitionRef is required$/,
    ],
    [
      'owner.id not label-safe',
      (r) => (r.parent.spec.owner.id = 'Alice_Smith'),
      /^body\.parent\.spec\.owner\.id must match pattern/,
    ],
    [
      'owner.id too long',
      (r) => (r.parent.spec.owner.id = 'a'.repeat(64)),
      /^body\.parent\.spec\.owner\.id must match pattern/,
    ],
    [
      'owner.kind unknown',
      (r) => (r.parent.spec.owner.kind = 'Org'),
      /^body\.parent\.spec\.owner\.kind must be one of "User", "Team"$/,
    ],
    [
      'desiredState unknown',
      (r) => (r.parent.spec.desiredState = 'Paused'),
      /^body\.parent\.spec\.desiredState must be one of "Running", "Stopped"$/,
    ],
    ['renewals negative', (r) => (r.parent.spec.renewals = -1), /^body\.parent\.spec\.renewals must be >= 0$/],
    [
      'renewals a numeric string',
      (r) => (r.parent.spec.renewals = '5'),
      /^body\.parent\.spec\.renewals must be integer$/,
    ],
    ['renewals a fraction', (r) => (r.parent.spec.renewals = 1.5), /^body\.parent\.spec\.renewals must be integer$/],
    ['restarts a boolean', (r) => (r.parent.spec.restarts = true), /^body\.parent\.spec\.restarts must be integer$/],
    [
      'lifetimeSeconds too short',
      (r) => (r.parent.spec.lifetimeSeconds = 59),
      /^body\.parent\.spec\.lifetimeSeconds must be >= 60$/,
    ],
    [
      'deadline not a date-time',
      (r) => (r.parent.spec.deadline = 'tomorrow'),
      /^body\.parent\.spec\.deadline must match pattern/,
    ],
    [
      'parameters with a bad key',
      (r) => (r.parent.spec.parameters = { 'bad-key': 'x' }),
      /^body\.parent\.spec\.parameters\.bad-key is not allowed$/,
    ],
    [
      'parameter value not a string',
      (r) => (r.parent.spec.parameters = { LEVEL: 3 }),
      /^body\.parent\.spec\.parameters\.LEVEL must be string$/,
    ],
    [
      'too many parameters',
      (r) => (r.parent.spec.parameters = Object.fromEntries([...Array(17).keys()].map((i) => [`P${i}`, 'x']))),
      /^body\.parent\.spec\.parameters must NOT have more than 16 properties$/,
    ],
    ['status a string', (r) => (r.parent.status = 'Running'), /^body\.parent\.status must be object$/],
  ]
  for (const url of HOOKS) {
    for (const [what, mutate, message] of cases) {
      const request = (url === '/customize' ? customizeRequest() : runningRequest()) as Loose
      mutate(request)
      assertRefused(t, await app.inject({ method: 'POST', url, payload: request }), 400, message, `${url} ${what}`)
    }
  }
})

t.test('sync and finalize check children and related groups, naming the group with its slash', async (t) => {
  const app = await buildTestApp(t)
  const cases: [string, (request: Loose) => void, RegExp][] = [
    ['children not an object', (r) => (r.children = []), /^body\.children must be object$/],
    ['children group not an object', (r) => (r.children['Pod.v1'] = 'x'), /^body\.children\.Pod\.v1 must be object$/],
    ['children group an array', (r) => (r.children['Service.v1'] = []), /^body\.children\.Service\.v1 must be object$/],
    [
      'child without metadata.name',
      (r) => delete r.children['Pod.v1']['web-login-u-alice'].metadata.name,
      /^body\.children\.Pod\.v1\.web-login-u-alice\.metadata\.name is required$/,
    ],
    [
      'child null',
      (r) => (r.children['Service.v1']['web-login-u-alice'] = null),
      /^body\.children\.Service\.v1\.web-login-u-alice must be object$/,
    ],
    [
      'a name key with a tilde',
      (r) => (r.children['Secret.v1'] = { 'a~b': { metadata: {} } }),
      /^body\.children\.Secret\.v1\.a~b\.metadata\.name is required$/,
    ],
    [
      'related group not an object',
      (r) => (r.related['ChallengeDefinition.challenge-hooks.dev/v1alpha1'] = 1),
      /^body\.related\.ChallengeDefinition\.challenge-hooks\.dev\/v1alpha1 must be object$/,
    ],
    ['finalizing not a boolean', (r) => (r.finalizing = 'true'), /^body\.finalizing must be boolean$/],
    ['controller not an object', (r) => (r.controller = 'challenge-hooks'), /^body\.controller must be object$/],
  ]
  for (const url of ['/sync', '/finalize'] as const) {
    for (const [what, mutate, message] of cases) {
      const request = (url === '/sync' ? runningRequest() : finalizingRequest()) as Loose
      mutate(request)
      assertRefused(t, await app.inject({ method: 'POST', url, payload: request }), 400, message, `${url} ${what}`)
    }
  }
})

/** Every own property name of the built-in prototypes a polluting merge would reach. */
function prototypeShapes(): string {
  return JSON.stringify(
    [Object.prototype, Array.prototype, Function.prototype].map((proto) => Object.getOwnPropertyNames(proto).sort()),
  )
}

t.test(
  '__proto__ and constructor.prototype keys are plain data: answered on their merits, no prototype polluted',
  async (t) => {
    const app = await buildTestApp(t)
    const before = prototypeShapes()
    const running = JSON.stringify(runningRequest())
    const finalizing = JSON.stringify(finalizingRequest())
    const hostile = '{"__proto__":{"polluted":true,"isAdmin":true},"constructor":{"prototype":{"polluted":true}}}'
    // Where they are plain data the hook does not decide on (metadata, an observed child), the answer is the usual one.
    const harmless: [string, string, string][] = [
      ['/sync', 'parent metadata', running.replace('"metadata":{', `"metadata":{"x":${hostile},`)],
      ['/sync', 'an observed child', running.replace('"data":{', `"data":{"__proto__":"eA==","constructor":"eA==",`)],
      ['/finalize', 'parent spec', finalizing.replace('"spec":{', `"spec":{"x":${hostile},`)],
      ['/customize', 'parent spec', JSON.stringify(customizeRequest()).replace('"spec":{', `"spec":{"x":${hostile},`)],
    ]
    for (const [url, where, payload] of harmless) {
      t.ok(payload.includes('__proto__'), `${url} ${where}: the key is in the body`)
      const response = await postRaw(app, url, payload, 'application/json')
      t.equal(response.statusCode, 200, `${url} ${where}: answered`)
    }
    const running200 = await postRaw(app, '/sync', harmless[0]?.[2] as string, 'application/json')
    t.match(running200.json(), { status: { phase: 'Running' } }, 'a Running instance stays Running')
    // A body that is nothing but such a key is refused for what it lacks, like any other.
    assertRefused(
      t,
      await postRaw(app, '/sync', '{"__proto__":{"parent":{}}}', 'application/json'),
      400,
      /^body\.parent is required$/,
      'top-level __proto__',
    )
    t.equal(prototypeShapes(), before, 'no built-in prototype gained or lost a property')
    t.equal(({} as Loose).polluted, undefined, 'Object.prototype untouched')
    t.equal(({} as Loose).isAdmin, undefined, 'Object.prototype untouched')
  },
)

t.test(
  'keys holding line breaks are validated like any other key: 400 naming the object, never a 5xx (regression)',
  async (t) => {
    // Type.Record(Type.String()) compiled to ^(.*)$, which no key with a line break matches: the value went unchecked.
    const app = await buildTestApp(t)
    // The key is quoted in the message as a JSON string: a line break there is written as its escape.
    const breakers: [string, string, string][] = [
      ['\n', 'LF', '\\n'],
      ['\r', 'CR', '\\r'],
      ['\u2028', 'U+2028', '\u2028'],
      ['\u2029', 'U+2029', '\u2029'],
    ]
    for (const [breaker, name, written] of breakers) {
      const key = `a${breaker}b`
      for (const field of ['children', 'related'] as const) {
        const inner = runningRequest() as Loose
        inner[field] = { ...inner[field], 'Secret.v1': { [key]: {} } }
        const response = await app.inject({ method: 'POST', url: '/sync', payload: inner })
        t.equal(response.statusCode, 400, `${field} inner key with ${name}`)
        t.equal(
          response.json().message,
          `body.${field}.Secret.v1["a${written}b"].metadata is required`,
          `${field} inner key with ${name}`,
        )
        const outer = runningRequest() as Loose
        outer[field] = { [`Secret.v1${breaker}`]: { x: 1 } }
        t.equal(
          (await app.inject({ method: 'POST', url: '/sync', payload: outer })).statusCode,
          400,
          `${field} group key with ${name}`,
        )
      }
      const labels = runningRequest() as Loose
      labels.parent.metadata.labels = { ...labels.parent.metadata.labels, [key]: 7 }
      const response = await app.inject({ method: 'POST', url: '/sync', payload: labels })
      t.equal(response.statusCode, 400, `label key with ${name}`)
      t.equal(
        response.json().message,
        `body.parent.metadata.labels["a${written}b"] must be string`,
        `label key with ${name}: named`,
      )
    }
    // Well-formed objects under such keys are accepted: the hook indexes objects by their own metadata.
    const accepted = runningRequest() as Loose
    accepted.children['Secret.v1'] = Object.fromEntries(
      Object.entries(accepted.children['Secret.v1']).map(([name, object]) => [`${name}\n`, object]),
    )
    const response = await app.inject({ method: 'POST', url: '/sync', payload: accepted })
    t.equal(response.statusCode, 200)
    t.match(response.json(), { status: { phase: 'Running' } }, 'the observed Secret still counts')
  },
)

t.test('bodies nesting too deeply to be echoed are 400, not a stack overflow (regression)', async (t) => {
  // Found by nesting a child's content 5000 levels deep: finalize echoes observed children and JSON.stringify
  // overflowed the stack, a 500.
  const app = await buildTestApp(t)
  const deep = (request: Loose, depth: number) => {
    request.children['Secret.v1']['web-login-u-alice-flag'].data = '@DEEP@'
    return JSON.stringify(request).replace('"@DEEP@"', '{"a":'.repeat(depth) + '1' + '}'.repeat(depth))
  }
  // A small body is parsed (in milliseconds, whatever its shape) and refused only where its answer would echo it.
  assertRefused(
    t,
    await postRaw(app, '/finalize', deep(finalizingRequest(), 5000), 'application/json'),
    400,
    new RegExp(
      `^body\\.children\\.Secret\\.v1\\.web-login-u-alice-flag\\.data\\.a nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels\\.$`,
    ),
    '/finalize depth 5000',
  )
  // A running instance's children are rendered afresh, so the deep observed copy is never serialised.
  t.equal(
    (await postRaw(app, '/sync', deep(runningRequest() as Loose, 5000), 'application/json')).statusCode,
    200,
    '/sync depth 5000',
  )
  // A large one is refused before it is parsed, at the first level past the limit, on every hook.
  for (const [url, request] of [
    ['/finalize', finalizingRequest()],
    ['/sync', runningRequest()],
  ] as const) {
    const payload = deep(request, 200_000)
    const response = await postRaw(app, url, payload, 'application/json')
    assertRefused(
      t,
      response,
      400,
      new RegExp(`^The body nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels \\(at character \\d+\\)\\.$`),
      `${url} depth 200000`,
    )
    const at = Number(/at character (\d+)/.exec(response.json().message)?.[1])
    const from = payload.indexOf('{"a":')
    t.ok(at > from && at < from + 5 * MAX_JSON_DEPTH, `${url}: the offset is inside the deep part (${at})`)
  }
  // 4 MiB of nested arrays: refused after reading 513 characters of it, instead of holding the event loop for seconds.
  const fourMiB = '['.repeat(2 * 1024 * 1024) + ']'.repeat(2 * 1024 * 1024)
  const refused = await postRaw(app, '/sync', fourMiB, 'application/json')
  assertRefused(
    t,
    refused,
    400,
    /^The body nests objects or arrays deeper than 512 levels \(at character 512\)\.$/,
    '4 MiB of arrays',
  )
  t.equal(tooDeepAt(`{"a":"${'['.repeat(600)}","b":[1]}`, 2), -1, 'brackets inside strings do not count')
  t.equal(
    tooDeepAt(`{"a":"${'['.repeat(600)}","b":[[1]]}`, 2),
    613,
    'the level after them does: the second "[" after "b" (6 + 600 + 7 characters in)',
  )
  t.equal(tooDeepAt('{"a":"\\"[[[[[[[[[[[[[[[[[[[[[["}', 2), -1, 'nor after an escaped quote')
  t.equal(tooDeepAt('[[[]]]', 2), 2, 'the offset of the first bracket past the limit')
  t.equal(tooDeepAt('[[]][[]]', 2), -1, 'depth, not count')
  // A string ends at the first quote after an even run of backslashes (each pair is one escaped backslash).
  t.equal(tooDeepAt('["\\\\",[[1]]]', 2), 7, 'a string ending in an escaped backslash ends at its quote')
  t.equal(tooDeepAt(`["${'\\'.repeat(3)}"[[[",[1]]`, 2), -1, 'three backslashes escape the quote after them')
  t.equal(tooDeepAt('[1,"[[[[', 1), -1, 'an unterminated string ends the scan')
  const arrays = '['.repeat(100_000) + ']'.repeat(100_000)
  assertRefused(
    t,
    await postRaw(app, '/customize', arrays, 'application/json'),
    400,
    /^body must be object$/,
    'nested arrays',
  )

  // Just under the limit still answers: the limit is far above any Kubernetes object.
  const request = finalizingRequest() as Loose
  request.children['Secret.v1']['web-login-u-alice-flag'].data = '@DEEP@'
  const inner = MAX_JSON_DEPTH - 5
  const payload = JSON.stringify(request).replace('"@DEEP@"', '{"a":'.repeat(inner) + '1' + '}'.repeat(inner))
  const response = await postRaw(app, '/finalize', payload, 'application/json')
  t.equal(response.statusCode, 200)
  t.match(response.json(), { status: { phase: 'Terminating' } })
})

t.test('a body over the limit is 413 with {error, message}, on every hook', async (t) => {
  const app = await buildTestApp(t, { bodyLimit: 2048 })
  const big = JSON.stringify({ ...customizeRequest(), padding: 'x'.repeat(4096) })
  for (const url of HOOKS) {
    assertRefused(t, await postRaw(app, url, big, 'application/json'), 413, /too large/, url)
  }
  t.equal(
    (await postRaw(app, '/customize', JSON.stringify(customizeRequest()), 'application/json')).statusCode,
    200,
    'under the limit',
  )
})

t.test('tooDeep', async (t) => {
  const nest = (depth: number) => {
    let value: unknown = 'leaf'
    for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { key: value } : [value]
    return value
  }
  t.equal(tooDeep('text', 1), undefined, 'a primitive has no depth')
  t.equal(tooDeep(null, 1), undefined)
  t.equal(tooDeep({}, 1), undefined, 'one level')
  t.equal(tooDeep({ a: {} }, 1), 'body.a')
  t.equal(tooDeep(nest(10), 10), undefined, 'exactly the limit')
  t.equal(tooDeep(nest(11), 10), 'body.key.0.key.0.key', 'paths name the first five levels')
  t.equal(tooDeep({ a: 1, b: null, c: [1, 2, { d: {} }] }, 4), undefined)
  t.equal(tooDeep({ a: 1, b: null, c: [1, 2, { d: {} }] }, 3), 'body.c.2.d')
  t.equal(tooDeep({ a: 1, b: null, c: [1, 2, { d: {} }] }, 2), 'body.c.2')
})

t.test(
  'objects where observed strings belong (whose toString cannot be called) are read as absent, never a 500',
  async (t) => {
    // String({toString: 1}) throws "Cannot convert object to primitive value": each of these once made a 500.
    const hostile = { toString: 1, valueOf: 1 }
    const podOf = (request: Loose) => request.children['Pod.v1']['web-login-u-alice']
    const podNamed = runningRequest() as Loose
    podOf(podNamed).status.containerStatuses = [{ name: hostile, state: { waiting: { reason: 'InvalidImageName' } } }]
    const crashing = runningRequest() as Loose
    podOf(crashing).status.containerStatuses = [
      {
        name: 'web',
        restartCount: 5,
        state: { waiting: { reason: 'CrashLoopBackOff', message: hostile } },
        lastState: { terminated: { reason: hostile } },
      },
    ]
    const sibling = newRequest() as Loose
    sibling.related['Challenge.challenge-hooks.dev/v1alpha1'] = {
      other: {
        metadata: { name: 'other', namespace: 'challenges', creationTimestamp: '2026-11-22T11:00:00Z' },
        spec: { owner: { kind: 'User', id: 'alice' }, restarts: hostile },
        status: { phase: 'Running', admittedAt: hostile, startedAt: hostile, cost: hostile, run: hostile },
      },
    }
    const cases: [string, Loose, Loose][] = [
      [
        'a pod container status name',
        podNamed,
        {
          phase: 'Error',
          reason: 'InvalidImage',
          message: 'The image of container unknown is not a valid image name.',
        },
      ],
      [
        'a waiting message and a last termination reason',
        crashing,
        { phase: 'Error', reason: 'CrashLoopBackOff', message: 'Container web keeps crashing.' },
      ],
      ["a sibling's times, cost and counters", sibling, { phase: 'Pending' }],
    ]
    const app = await buildTestApp(t)
    for (const [what, request, status] of cases) {
      const response = await app.inject({ method: 'POST', url: '/sync', payload: request })
      t.equal(response.statusCode, 200, what)
      t.match(response.json().status, status, what)
    }
    // A Gateway API route whose condition reason is an object.
    const gatewayApp = await buildTestApp(t, {
      httpRouting: 'GatewayAPI',
      gateway: { namespace: 'gateway-system', name: 'challenges' },
    })
    const routed = runningRequest() as Loose
    const ingress = routed.children['Ingress.networking.k8s.io/v1']['web-login-u-alice']
    routed.children['HTTPRoute.gateway.networking.k8s.io/v1'] = {
      'web-login-u-alice': {
        ...ingress,
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        status: {
          parents: [
            {
              parentRef: { namespace: 'gateway-system', name: 'challenges' },
              conditions: [{ type: 'Accepted', status: 'False', reason: hostile }],
            },
          ],
        },
      },
    }
    const response = await gatewayApp.inject({ method: 'POST', url: '/sync', payload: routed })
    t.equal(response.statusCode, 200, 'a route condition reason')
    t.match(response.json().status, {
      phase: 'Pending',
      reason: 'WaitingForEndpoint',
      message: 'The instance is ready; the gateway has not accepted its route yet (Unknown).',
    })
  },
)
