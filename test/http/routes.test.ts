import t from 'tap'
import { Counter, Registry } from 'prom-client'
import { renderMetrics } from '../../src/http/metrics.js'
import { buildTestApp } from '../helpers/app.js'
import { customizeRequest, finalizingRequest, newRequest, runningRequest } from '../helpers/hook-requests.js'

const post = (url: string, payload: object, headers: Record<string, string> = {}) => ({
  method: 'POST' as const,
  url,
  payload,
  headers,
})

t.test('POST /sync answers 200 JSON with exactly status and children (+ resyncAfterSeconds)', async (t) => {
  const app = await buildTestApp(t)
  const fresh = await app.inject(post('/sync', newRequest()))
  t.equal(fresh.statusCode, 200)
  t.match(fresh.headers['content-type'], /^application\/json/)
  t.strictSame(Object.keys(fresh.json()).sort(), ['children', 'resyncAfterSeconds', 'status'])
  t.match(fresh.json(), { status: { phase: 'Pending', reason: 'Starting' } })

  const running = await app.inject(post('/sync', runningRequest()))
  t.equal(running.statusCode, 200)
  const body = running.json()
  t.strictSame(Object.keys(body).sort(), ['children', 'resyncAfterSeconds', 'status'])
  t.match(body, { status: { phase: 'Running', reason: 'Ready' } })
  t.strictSame(
    body.children.map((child: { kind: string }) => child.kind),
    ['Secret', 'NetworkPolicy', 'Pod', 'Service', 'Ingress'],
  )
})

t.test('POST /finalize answers 200 with status, children, finalized and resyncAfterSeconds', async (t) => {
  const app = await buildTestApp(t)
  const response = await app.inject(post('/finalize', finalizingRequest()))
  t.equal(response.statusCode, 200)
  const body = response.json()
  t.strictSame(Object.keys(body).sort(), ['children', 'finalized', 'resyncAfterSeconds', 'status'])
  t.match(body, { status: { phase: 'Terminating', reason: 'Deleting' }, finalized: false })

  const gone = finalizingRequest()
  for (const group of Object.keys(gone.children ?? {})) (gone.children ?? {})[group] = {}
  const done = await app.inject(post('/finalize', gone))
  t.strictSame(Object.keys(done.json()).sort(), ['children', 'finalized', 'status'])
  t.match(done.json(), { children: [], finalized: true })
})

t.test('one URL for both hooks: POST /sync answers a finalizing call with the same bytes as /finalize', async (t) => {
  const app = await buildTestApp(t)
  const gone = finalizingRequest()
  for (const group of Object.keys(gone.children ?? {})) (gone.children ?? {})[group] = {}
  for (const request of [finalizingRequest(), gone]) {
    const viaSync = await app.inject(post('/sync', request))
    const viaFinalize = await app.inject(post('/finalize', request))
    t.equal(viaSync.statusCode, 200)
    t.equal(viaSync.body, viaFinalize.body)
    t.match(viaSync.json(), { status: { phase: 'Terminating', reason: 'Deleting' }, finalized: request === gone })
  }
})

t.test('POST /customize answers 200 with exactly relatedResources', async (t) => {
  const app = await buildTestApp(t)
  const response = await app.inject(post('/customize', customizeRequest()))
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^application\/json/)
  t.strictSame(Object.keys(response.json()), ['relatedResources'])
  t.strictSame(
    response.json().relatedResources.map((rule: { resource: string }) => rule.resource),
    ['challengedefinitions', 'challenges', 'secrets', 'namespaces', 'limitranges', 'secrets'],
  )
})

t.test('hook versions v1 and v2 get byte-identical answers', async (t) => {
  const app = await buildTestApp(t)
  const v1 = await app.inject(post('/sync', runningRequest('v1')))
  const v2 = await app.inject(post('/sync', runningRequest('v2')))
  t.not(
    JSON.stringify(runningRequest('v1').children),
    JSON.stringify(runningRequest('v2').children),
    'the requests differ',
  )
  t.equal(v1.statusCode, 200)
  t.equal(v2.body, v1.body)
  t.equal(v2.headers.etag, v1.headers.etag)

  const f1 = await app.inject(post('/finalize', finalizingRequest('v1')))
  const f2 = await app.inject(post('/finalize', finalizingRequest('v2')))
  t.equal(f1.statusCode, 200)
  t.equal(f2.body, f1.body)
})

t.test('the same request twice gives the same bytes, on one app and on a fresh one', async (t) => {
  for (const [url, request] of [
    ['/sync', runningRequest()],
    ['/finalize', finalizingRequest()],
    ['/customize', customizeRequest()],
  ] as const) {
    const app = await buildTestApp(t)
    const first = await app.inject(post(url, request))
    const second = await app.inject(post(url, request))
    const other = await (await buildTestApp(t)).inject(post(url, request))
    t.equal(first.statusCode, 200, url)
    t.equal(second.body, first.body, url)
    t.equal(other.body, first.body, url)
  }
})

t.test('ETag: present on 200; If-None-Match with it gets 304 and no body; another tag gets 200', async (t) => {
  const app = await buildTestApp(t)
  for (const [url, request] of [
    ['/sync', runningRequest()],
    ['/finalize', finalizingRequest()],
    ['/customize', customizeRequest()],
  ] as const) {
    const first = await app.inject(post(url, request))
    const etag = first.headers.etag
    t.type(etag, 'string', url)
    t.match(etag, /^"[A-Za-z0-9_-]{43}"$/, `${url}: a strong validator`)

    const cached = await app.inject(post(url, request, { 'if-none-match': String(etag) }))
    t.equal(cached.statusCode, 304, url)
    t.equal(cached.body, '', url)
    t.equal(cached.headers.etag, etag, url)

    const listed = await app.inject(post(url, request, { 'if-none-match': `"other", ${String(etag)}` }))
    t.equal(listed.statusCode, 304, `${url}: one of a list of tags`)

    const stale = await app.inject(post(url, request, { 'if-none-match': '"not-this-one"' }))
    t.equal(stale.statusCode, 200, url)
    t.equal(stale.body, first.body, url)
  }
  const differentWorld = await app.inject(post('/sync', newRequest()))
  const runningTag = (await app.inject(post('/sync', runningRequest()))).headers.etag
  t.not(differentWorld.headers.etag, runningTag, 'a different answer has a different tag')
})

t.test('GET /healthz and /readyz answer 200 on the operations app, and are no routes of the hook port', async (t) => {
  const app = await buildTestApp(t)
  const health = await app.ops.inject({ method: 'GET', url: '/healthz' })
  t.equal(health.statusCode, 200)
  t.strictSame(health.json(), { status: 'ok' })
  const ready = await app.ops.inject({ method: 'GET', url: '/readyz' })
  t.equal(ready.statusCode, 200)
  t.strictSame(ready.json(), { status: 'ready' })
  for (const url of ['/healthz', '/readyz', '/metrics']) {
    t.equal((await app.inject({ method: 'GET', url })).statusCode, 404, `${url} is not served on the hook port`)
  }
  for (const url of ['/sync', '/finalize', '/customize']) {
    t.equal((await app.ops.inject(post(url, {}))).statusCode, 404, `${url} is not served on the operations port`)
  }
})

t.test('GET /metrics: Prometheus text with the hook metrics after some calls', async (t) => {
  const app = await buildTestApp(t)
  await app.inject(post('/sync', runningRequest()))
  await app.inject(post('/sync', newRequest()))
  await app.inject(post('/finalize', finalizingRequest()))
  await app.inject(post('/customize', customizeRequest()))
  await app.inject({ method: 'POST', url: '/sync', payload: '{}', headers: { 'content-type': 'application/json' } })

  const response = await app.ops.inject({ method: 'GET', url: '/metrics' })
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const text = response.body
  t.match(text, /# TYPE challenge_hooks_hook_duration_seconds histogram/)
  t.match(text, /challenge_hooks_hook_duration_seconds_count\{hook="sync",code="200"\} 2/)
  t.match(text, /challenge_hooks_hook_duration_seconds_count\{hook="sync",code="400"\} 1/)
  t.match(text, /challenge_hooks_hook_duration_seconds_count\{hook="customize",code="200"\} 1/)
  t.match(text, /challenge_hooks_answers_total\{hook="sync",phase="Running",reason="Ready"\} 1/)
  t.match(text, /challenge_hooks_answers_total\{hook="sync",phase="Pending",reason="Starting"\} 1/)
  t.match(text, /challenge_hooks_answers_total\{hook="finalize",phase="Terminating",reason="Deleting"\} 1/)
  t.notMatch(text, /challenge_hooks_answers_total\{hook="customize"/, 'customize decides no phase')
  t.match(text, /# TYPE challenge_hooks_request_size_bytes histogram/)
  t.match(text, /challenge_hooks_request_size_bytes_count\{hook="sync"\} 3/)
  t.match(text, /challenge_hooks_in_flight_requests 0/)
  t.match(text, /process_cpu_user_seconds_total \d/)
  t.match(text, /nodejs_eventloop_lag_seconds/)
})

t.test('custom stop reasons count as "Custom" in the answers counter', async (t) => {
  const app = await buildTestApp(t)
  const request = runningRequest()
  Object.assign(request.parent.spec, { desiredState: 'Stopped', stopReason: 'Solved' })
  const response = await app.inject(post('/sync', request))
  t.match(response.json(), { status: { phase: 'Deleted', reason: 'Solved' } })
  const text = (await app.ops.inject({ method: 'GET', url: '/metrics' })).body
  t.match(text, /challenge_hooks_answers_total\{hook="sync",phase="Deleted",reason="Custom"\} 1/)
  t.notMatch(text, /Solved/)
})

t.test('an unknown path or method is 404 with {error, message}', async (t) => {
  const app = await buildTestApp(t)
  for (const [method, url] of [
    ['GET', '/nope'],
    ['POST', '/nope'],
    ['GET', '/sync'],
    ['DELETE', '/healthz'],
  ] as const) {
    for (const server of [app, app.ops]) {
      const response = await server.inject({ method, url })
      t.equal(response.statusCode, 404, `${method} ${url}`)
      t.strictSame(response.json(), { error: 'Not Found', message: `${method} ${url} is not a route of this server` })
    }
  }
})

t.test('metrics: scrapes that arrive together share one rendering, and every answer is current', async (t) => {
  const registry = new Registry()
  const counter = new Counter({ name: 'calls_total', help: 'calls', registers: [registry] })
  let renderings = 0
  const metrics = registry.metrics.bind(registry)
  registry.metrics = async () => {
    renderings += 1
    return metrics()
  }
  const render = renderMetrics(registry)
  const together = await Promise.all([render(), render(), render()])
  t.equal(renderings, 1, 'one rendering for three scrapes')
  t.strictSame(new Set(together), new Set([together[0]]))
  counter.inc()
  t.match(await render(), /calls_total 1/, 'a later scrape renders again')
  t.equal(renderings, 2)
})
