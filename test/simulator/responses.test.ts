// How answers are taken: status codes, 429, ETag, strict mode, malformed answers.
import t from 'tap'
import { Cluster } from '../support/simulator/cluster.js'
import { jsonResponse } from '../support/simulator/hooks.js'
import { Simulator } from '../support/simulator/index.js'
import { challenge, controller, FakeHook, NS, secret, webHook, type Handler } from './fixtures.js'

const CHILDREN = ['apps/v1/Deployment', 'v1/Service', 'v1/Secret']
const SYNC_ONLY = { hooks: { sync: { webhook: {} } } }

async function world(sync: Handler, options: ConstructorParameters<typeof Simulator>[3] = {}, spec = {}) {
  const cluster = new Cluster()
  cluster.create(challenge())
  const hook = new FakeHook({ sync })
  const sim = new Simulator(controller(spec), cluster, hook, options)
  const children = () =>
    cluster
      .all()
      .filter((o) => CHILDREN.includes(`${o.apiVersion}/${o.kind}`))
      .map((o) => `${o.kind}/${o.metadata.name}`)
  const status = () =>
    cluster.get({ apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'Challenge', namespace: NS, name: 'web-u-alice' })
      ?.status
  return { cluster, hook, sim, children, status }
}

t.test('only 200 is success: anything else is a SyncError, nothing applied, retried with backoff', async (t) => {
  for (const statusCode of [201, 204, 302, 400, 500]) {
    const { sim, children, status } = await world(() => ({
      ...jsonResponse({ status: { phase: 'X' }, children: [secret('s')] }),
      statusCode,
    }))
    const result = await sim.reconcile(NS, 'web-u-alice')
    t.equal(result.outcome, 'error', String(statusCode))
    t.match(result.events[0], {
      type: 'Warning',
      reason: 'SyncError',
      message: `Sync error: sync hook failed: unsupported status code: ${statusCode} body: {"status":{"phase":"X"},"children":[{"apiVersion":"v1"`,
    })
    t.strictSame(children(), [], 'no children')
    t.equal(status(), undefined, 'no status')
    t.equal(result.finalizerAdded, true, 'the finalizer comes before the hook call')
  }

  // Without a finalize hook: no finalizer write, whose watch event would queue the parent again.
  const { sim, cluster } = await world(() => jsonResponse({ error: 'down' }, 503), {}, SYNC_ONLY)
  await sim.reconcile(NS, 'web-u-alice')
  t.equal(sim.scheduledAt(NS, 'web-u-alice')?.getTime(), cluster.now().getTime() + 5)
  await sim.advance(0.005)
  t.equal(sim.scheduledAt(NS, 'web-u-alice')?.getTime(), cluster.now().getTime() + 10, 'the retry failed too: doubling')
  t.equal(sim.events.length, 2)
  t.equal(await sim.runUntilQuiet(), 0, 'a backoff is not due yet: quiet')
})

t.test('a hook that cannot be reached, or answers no JSON, is an error', async (t) => {
  const broken = await world(() => {
    throw new Error('ECONNREFUSED')
  })
  t.match((await broken.sim.reconcile(NS, 'web-u-alice')).errors, ['sync hook failed: http error: ECONNREFUSED'])
  const thrown = await world(() => {
    // A transport that throws a string, not an Error: the point of this case.
    // eslint-disable-next-line @typescript-eslint/only-throw-error
    throw 'socket hang up'
  })
  t.match((await thrown.sim.reconcile(NS, 'web-u-alice')).errors, ['sync hook failed: http error: socket hang up'])
  const html = await world(() => ({ statusCode: 200, headers: {}, body: undefined, text: '<html>' }))
  t.match((await html.sim.reconcile(NS, 'web-u-alice')).errors, [/can't unmarshal webhookResponse: not JSON: "<html>"/])
  const empty = await world(() => ({ statusCode: 200, headers: {}, body: undefined }))
  t.match((await empty.sim.reconcile(NS, 'web-u-alice')).errors, [/not JSON/])
  const noWebhook = await world(webHook, {}, { hooks: { sync: { version: 'v2' } } })
  t.match((await noWebhook.sim.reconcile(NS, 'web-u-alice')).errors, [/sync hook nil\/\/not defined.*needs a webhook/])
})

t.test('429 with Retry-After requeues after that long, without an event', async (t) => {
  const { sim, cluster, hook } = await world(
    () => jsonResponse({ error: 'busy' }, 429, { 'Retry-After': '7' }),
    {},
    SYNC_ONLY,
  )
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.match(result, { outcome: 'retryAfter', retryAfterSeconds: 7, events: [], warnings: [] })
  t.equal(sim.scheduledAt(NS, 'web-u-alice')?.getTime(), cluster.now().getTime() + 7000)
  t.strictSame(sim.events, [])
  hook.handlers.sync = webHook
  await sim.advance(6)
  t.equal(hook.callsOf('sync').length, 1)
  await sim.advance(1)
  t.equal(hook.callsOf('sync').length, 3, 'retried at +7s (and once more for its own status write)')

  const date = await world(() => jsonResponse({}, 429, { 'retry-after': 'Wed, 01 Jan 2025 00:01:00 GMT' }))
  t.equal((await date.sim.reconcile(NS, 'web-u-alice')).retryAfterSeconds, 60, 'an HTTP date works too')
  const garbage = await world(() => jsonResponse({}, 429, { 'retry-after': 'soon' }))
  t.equal((await garbage.sim.reconcile(NS, 'web-u-alice')).retryAfterSeconds, 0)
})

t.test('429 without Retry-After is an immediate retry: a hot loop', async (t) => {
  const { sim } = await world(() => jsonResponse({}, 429))
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.match(result.warnings, [/hot loop/])
  t.strictSame(sim.pending(), [`${NS}/web-u-alice`])
  await t.rejects(sim.runUntilQuiet({ maxSteps: 10 }), {
    message:
      /not quiet after 10 syncs; still queued: ctf\/web-u-alice; last: ctf\/web-u-alice: retryAfter \(0 writes\)/,
  })
})

t.test('ETag: If-None-Match on the next call, 304/412 reuse the cached answer', async (t) => {
  let etag = '"v1"'
  const { sim, hook, status } = await world(
    (request, headers) =>
      headers['If-None-Match'] === etag
        ? { statusCode: 304, headers: {}, body: undefined, text: '' }
        : jsonResponse({ status: { n: request.parent.metadata.name }, children: [] }, 200, { ETag: etag }),
    { etag: true },
  )
  const first = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(first.requestHeaders, {})
  const second = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(second.requestHeaders, { 'If-None-Match': '"v1"' })
  t.equal(second.response?.statusCode, 304)
  t.strictSame(second.answer?.status, { n: 'web-u-alice' })
  t.match(status(), { n: 'web-u-alice' })
  t.equal(second.outcome, 'synced')

  hook.handlers.sync = () => ({ statusCode: 412, headers: {}, body: undefined })
  t.equal((await sim.reconcile(NS, 'web-u-alice')).outcome, 'synced', '412 is accepted like 304')
  etag = '"v2"'
  hook.handlers.sync = () => jsonResponse({ status: { n: 'changed' }, children: [] }, 200, { etag })
  await sim.reconcile(NS, 'web-u-alice')
  hook.handlers.sync = () => ({ statusCode: 304, headers: {}, body: undefined })
  const third = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(third.requestHeaders, { 'If-None-Match': '"v2"' })
  t.strictSame(third.answer?.status, { n: 'changed' })
})

t.test('304 without If-None-Match is an error; ETag is per controller config', async (t) => {
  const notModified = () => ({ statusCode: 304, headers: {}, body: undefined })
  const off = await world(notModified)
  t.match((await off.sim.reconcile(NS, 'web-u-alice')).errors, [/unsupported status code: 304/])
  const first = await world(notModified, { etag: true })
  t.match((await first.sim.reconcile(NS, 'web-u-alice')).errors, [/unsupported status code: 304/], 'nothing cached yet')

  const tagged = () => jsonResponse({ children: [] }, 200, { ETag: 'x' })
  const configured = await world(tagged, {}, { hooks: { sync: { webhook: { etag: { enabled: true } } } } })
  await configured.sim.reconcile(NS, 'web-u-alice')
  t.strictSame((await configured.sim.reconcile(NS, 'web-u-alice')).requestHeaders, { 'If-None-Match': 'x' })
  const disabled = await world(tagged)
  await disabled.sim.reconcile(NS, 'web-u-alice')
  t.strictSame((await disabled.sim.reconcile(NS, 'web-u-alice')).requestHeaders, {})
  const untagged = await world(() => jsonResponse({ children: [] }), { etag: true })
  await untagged.sim.reconcile(NS, 'web-u-alice')
  t.strictSame((await untagged.sim.reconcile(NS, 'web-u-alice')).requestHeaders, {}, 'no ETag header: nothing cached')
})

t.test('strict mode (v2 default): an unknown top-level field fails the sync; loose mode ignores it', async (t) => {
  const answer = () => ({ status: { phase: 'Pending' }, children: [], Children: [] })
  const strict = await world(answer, { hookVersion: 'v2' })
  const failed = await strict.sim.reconcile(NS, 'web-u-alice')
  t.match(failed.errors, ['sync hook failed (version=v2): strict validation failed: unknown field "Children"'])
  t.equal(strict.status(), undefined)

  const loose = await world(answer)
  const ok = await loose.sim.reconcile(NS, 'web-u-alice')
  t.equal(ok.outcome, 'synced')
  t.strictSame(ok.warnings, ['sync answer: unknown field "Children" ignored (loose mode)'])

  const explicit = await world(
    answer,
    { hookVersion: 'v2' },
    { hooks: { sync: { webhook: { responseUnMarshallMode: 'loose' } } } },
  )
  t.equal(
    (await explicit.sim.reconcile(NS, 'web-u-alice')).outcome,
    'synced',
    'responseUnMarshallMode overrides the default',
  )
  const strictV1 = await world(answer, {}, { hooks: { sync: { webhook: { responseUnMarshallMode: 'strict' } } } })
  t.equal((await strictV1.sim.reconcile(NS, 'web-u-alice')).outcome, 'error')
})

t.test('a null child would crash Metacontroller: nothing applied', async (t) => {
  const { sim, children, status } = await world(() => ({
    status: { phase: 'Pending' },
    children: [secret('s'), null],
    resyncAfterSeconds: 5,
  }))
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.match(result.errors, [/children contains null: Metacontroller would panic/])
  t.strictSame(children(), [])
  t.equal(status(), undefined)
  t.equal(result.resyncAfterSeconds, undefined)
})

t.test('a wrongly typed answer is an error', async (t) => {
  const { sim } = await world(() => ({ status: 'Running', children: [] }))
  t.match((await sim.reconcile(NS, 'web-u-alice')).errors, [
    'sync hook failed (version=v1): json: cannot unmarshal string into field status of type object',
  ])
})

t.test('missing children (or a {} or null body) delete every child; status becomes {observedGeneration}', async (t) => {
  for (const body of [{ status: { phase: 'Deleted' } }, {}, null]) {
    let answer: unknown = { status: { phase: 'Running' }, children: [secret('s')] }
    const { sim, children, status } = await world(() => answer)
    await sim.runUntilQuiet()
    t.strictSame(children(), ['Secret/s'])
    answer = body
    sim.enqueue(NS, 'web-u-alice')
    await sim.runUntilQuiet()
    t.strictSame(children(), [], JSON.stringify(body))
    t.strictSame(
      status(),
      body === null || !('status' in body) ? { observedGeneration: 1 } : { phase: 'Deleted', observedGeneration: 1 },
    )
  }
})
