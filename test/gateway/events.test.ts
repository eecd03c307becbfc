// GET /v1/instances/{definition}/events (src/gateway/events.ts) over a real connection: the current view first,
// one event per change of the status (none for a change elsewhere), heartbeats, resuming from Last-Event-ID, a watch
// the API server ends or expires, an API server that goes away and comes back, and the end of the record.
import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test as Tap } from 'tap'
import { challengeName } from '../../src/gateway/names.js'
import { eventually } from '../support/eventually.js'
import { startFakeApiServer, type FakeApiServer, type Json } from './fake-apiserver.js'
import { CTFD_KEY, definition, gatewayApp } from './support.js'

const NAME = challengeName('web', { kind: 'User', id: 'alice' })

interface Stream {
  status: number
  headers: Record<string, unknown>
  /** Parsed events: `{event, id, data}`, and comments as `{comment}`. */
  events: Json[]
  close(): void
  ended: Promise<void>
}

function open(url: string, headers: Record<string, string> = {}): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { headers: { authorization: `Bearer ${CTFD_KEY}`, 'challenge-owner': 'User:alice', ...headers } },
      (res) => {
        const events: Json[] = []
        let buffered = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          buffered += chunk
          let end = buffered.indexOf('\n\n')
          while (end >= 0) {
            const block = buffered.slice(0, end)
            buffered = buffered.slice(end + 2)
            if (block.startsWith(':')) events.push({ comment: block.slice(1).trim() })
            else {
              const fields = Object.fromEntries(
                block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
              )
              events.push({ event: fields.event, id: fields.id, data: JSON.parse(String(fields.data)) as unknown })
            }
            end = buffered.indexOf('\n\n')
          }
        })
        const ended = new Promise<void>((done) => res.on('close', done))
        resolve({ status: res.statusCode as number, headers: res.headers, events, close: () => req.destroy(), ended })
      },
    )
    req.on('error', reject)
    req.end()
  })
}

async function setup(t: Tap) {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  await app.inject({
    method: 'PUT',
    url: '/v1/instances/web',
    headers: { authorization: `Bearer ${CTFD_KEY}`, 'challenge-owner': 'User:alice' },
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/instances/web/events`
  return { fake, url }
}

const instanceEvents = (stream: Stream) => stream.events.filter((event) => event.event === 'instance')
const phases = (stream: Stream) => instanceEvents(stream).map((event) => (event.data as Json).phase)
/** The watches of Challenges (the gateway watches the definitions too). */
const challengeWatches = (fake: FakeApiServer) => fake.requests.filter((r) => /\/challenges\?.*watch=true/.test(r))
const watching = (fake: FakeApiServer, count: number) =>
  eventually(`${count} watches`, async () => challengeWatches(fake).length >= count || undefined)

t.test(
  'the current view, then one event per status change, with heartbeats; the end of the record ends it',
  async (t) => {
    const { fake, url } = await setup(t)
    const stream = await open(url)
    t.teardown(() => stream.close())
    t.strictSame(
      [stream.status, stream.headers['content-type'], stream.headers['cache-control']],
      [200, 'text/event-stream; charset=utf-8', 'no-cache'],
    )
    await watching(fake, 1)
    fake.setStatus('challenges', NAME, { phase: 'Pending', reason: 'Starting' })
    const labelled = fake.objects.get(`challenges/challenges/${NAME}`) as Json
    fake.put('challenges', 'challenges', {
      ...labelled,
      metadata: { ...(labelled.metadata as Json), annotations: { a: 'b' } },
    })
    fake.setStatus('challenges', NAME, { phase: 'Running', reason: 'Ready' })
    await eventually('Running', async () => phases(stream).includes('Running') || undefined)
    t.strictSame(phases(stream), ['None', 'Pending', 'Running'], 'no event for a change outside the status')
    t.strictSame(
      instanceEvents(stream).map((event) => event.id),
      instanceEvents(stream).map((event) => (event.data as Json).version),
      "each event's id is the record's resourceVersion",
    )
    await eventually(
      'a heartbeat',
      async () => stream.events.some((event) => event.comment === 'heartbeat') || undefined,
    )
    await fetch(`${fake.url}/apis/challenge-hooks.dev/v1alpha1/namespaces/challenges/challenges/${NAME}`, {
      method: 'DELETE',
    })
    await stream.ended
    t.equal(stream.events.at(-1)?.event, 'deleted')
  },
)

t.test('Last-Event-ID: nothing resent when nothing changed; the current view when something did', async (t) => {
  const { fake, url } = await setup(t)
  const version = ((fake.objects.get(`challenges/challenges/${NAME}`) as Json).metadata as Json)
    .resourceVersion as string
  const same = await open(url, { 'last-event-id': version })
  t.teardown(() => same.close())
  await watching(fake, 1)
  t.strictSame(instanceEvents(same), [])
  fake.setStatus('challenges', NAME, { phase: 'Pending', reason: 'Starting' })
  const older = await open(url, { 'last-event-id': version })
  t.teardown(() => older.close())
  await eventually('the current view', async () => phases(older).length === 1 || undefined)
  t.strictSame(phases(older), ['Pending'])
})

t.test('a watch the API server ends, one whose version expired, and an API server away for a while', async (t) => {
  const { fake, url } = await setup(t)
  const stream = await open(url)
  t.teardown(() => stream.close())
  await watching(fake, 1)
  fake.endWatches()
  await watching(fake, 2)
  fake.setStatus('challenges', NAME, { phase: 'Pending', reason: 'Starting' })
  await eventually('Pending', async () => phases(stream).includes('Pending') || undefined)
  // Expired: the stream reads the record again and sends what changed meanwhile.
  fake.expireNextWatch()
  fake.endWatches()
  fake.setStatus('challenges', NAME, { phase: 'Pending', reason: 'WaitingForEndpoint' })
  await eventually('the re-read', async () => instanceEvents(stream).length >= 3 || undefined)
  // Away: the watch is refused; the stream waits Retry-After and carries on.
  fake.mode = 'down'
  fake.endWatches()
  await eventually('a refused watch', async () => challengeWatches(fake).length >= 5 || undefined)
  fake.mode = 'up'
  fake.setStatus('challenges', NAME, { phase: 'Running', reason: 'Ready' })
  await eventually('Running', async () => phases(stream).includes('Running') || undefined)
  t.strictSame(phases(stream).at(-1), 'Running')
  t.equal(stream.events.filter((event) => event.event === 'error').length, 0)
})

t.test('refused before the stream starts; a record taken over or gone while streaming ends it', async (t) => {
  const { fake, url } = await setup(t)
  const missing = await open(url.replace('/web/', '/pwn/'))
  t.equal(missing.status, 404)
  const stream = await open(url)
  await watching(fake, 1)
  const stored = fake.objects.get(`challenges/challenges/${NAME}`) as Json
  fake.put('challenges', 'challenges', {
    ...stored,
    spec: { ...(stored.spec as Json), owner: { kind: 'User', id: 'mallory' } },
  })
  await stream.ended
  t.strictSame(stream.events.at(-1), {
    event: 'error',
    id: undefined,
    data: { message: 'The record no longer belongs to this owner.' },
  })

  fake.put('challenges', 'challenges', stored)
  // The second stream follows the namespace's shared watch, still open.
  const second = await open(url)
  await watching(fake, 1)
  fake.objects.delete(`challenges/challenges/${NAME}`)
  fake.expireNextWatch()
  fake.endWatches()
  await second.ended
  t.strictSame(second.events.at(-1)?.event, 'deleted')
})

/** Alice's Challenge of web, stored straight in the fake (no call of the gateway reads the definition first). */
const alicesRecord = (fake: FakeApiServer, status?: Json) =>
  fake.put('challenges', 'challenges', {
    metadata: { name: NAME, labels: { 'challenge-hooks.dev/owner': 'alice', 'challenge-hooks.dev/definition': 'web' } },
    spec: { definitionRef: { name: 'web' }, owner: { kind: 'User', id: 'alice' } },
    ...(status === undefined ? {} : { status }),
  })

t.test('a view that cannot be made now is sent once the API server answers again', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  definition(fake, 'web')
  alicesRecord(fake, { phase: 'Pending', reason: 'Starting' })
  // Every call on the definitions fails: their informer cannot list, and the view's own read of the definition fails.
  fake.failing = /challengedefinitions/
  await app.listen({ port: 0, host: '127.0.0.1' })
  const stream = await open(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/instances/web/events`)
  t.teardown(() => stream.close())
  const refused = () => fake.requests.filter((r) => r.endsWith('/challengedefinitions/web'))
  await eventually('two refused reads of the definition', async () => refused().length >= 2 || undefined)
  t.strictSame(phases(stream), [], 'nothing shown while the view cannot be made')
  fake.failing = undefined
  await eventually('Pending', async () => phases(stream).length > 0 || undefined)
  t.strictSame(phases(stream), ['Pending'])
})

t.test('an unexpected failure of the watch ends the stream with an error event', async (t) => {
  const fake = await startFakeApiServer(t)
  const { kubeClient } = await import('../../src/gateway/kube.js')
  const real = kubeClient(fake.kubeconfig, 2000)
  const app = await gatewayApp(
    t,
    fake,
    { LOG_LEVEL: 'silent' },
    {
      logger: undefined,
      kube: {
        ...real,
        watch: async () => {
          throw new Error('a bug')
        },
      },
    },
  )
  definition(fake, 'web')
  await app.inject({
    method: 'PUT',
    url: '/v1/instances/web',
    headers: { authorization: `Bearer ${CTFD_KEY}`, 'challenge-owner': 'User:alice' },
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const stream = await open(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/instances/web/events`)
  await stream.ended
  t.strictSame(stream.events.at(-1), { event: 'error', id: undefined, data: { message: 'The stream failed.' } })
})

t.test('streams of one namespace share one watch of the API server', async (t) => {
  const { fake, url } = await setup(t)
  const first = await open(url)
  t.teardown(() => first.close())
  const second = await open(url)
  t.teardown(() => second.close())
  await watching(fake, 1)
  fake.setStatus('challenges', NAME, { phase: 'Running', reason: 'Ready' })
  await eventually(
    'Running',
    async () => (phases(first).includes('Running') && phases(second).includes('Running')) || undefined,
  )
  t.strictSame(phases(first), ['None', 'Running'])
  t.strictSame(phases(second), ['None', 'Running'])
  t.equal(challengeWatches(fake).length, 1)
})

t.test('what a lagging watch says of an older version is not shown; versions that do not compare are', async (t) => {
  const { fake, url } = await setup(t)
  const stored = fake.objects.get(`challenges/challenges/${NAME}`) as Json
  const stream = await open(url)
  t.teardown(() => stream.close())
  await watching(fake, 1)
  const older = {
    ...stored,
    status: { phase: 'Pending' },
    metadata: { ...(stored.metadata as Json), resourceVersion: '1' },
  }
  fake.watchLine(JSON.stringify({ type: 'MODIFIED', object: older }))
  const opaque = { ...older, metadata: { ...(stored.metadata as Json), resourceVersion: 'opaque' } }
  fake.watchLine(JSON.stringify({ type: 'MODIFIED', object: opaque }))
  await eventually('the opaque version', async () => instanceEvents(stream).length === 2 || undefined)
  t.strictSame(
    instanceEvents(stream).map((event) => event.id),
    [(stored.metadata as Json).resourceVersion, 'opaque'],
  )
})

t.test('a refusal of the shared watch, or of a view, ends the stream with its reason', async (t) => {
  for (const [what, refused] of [
    ['watch', 'the watch is refused'],
    ['call', 'the definitions are refused'],
  ] as const) {
    const fake = await startFakeApiServer(t)
    const { kubeClient, KubeError } = await import('../../src/gateway/kube.js')
    const real = kubeClient(fake.kubeconfig, 2000)
    const app = await gatewayApp(
      t,
      fake,
      {},
      {
        kube: {
          ...real,
          watch: async (...args) => {
            if (what === 'watch') throw new KubeError(403, refused)
            return real.watch(...args)
          },
          // The definitions: their informer fails for good, and the view's own read of the definition is refused.
          call: async (method, path, options) => {
            if (what === 'call' && path.includes('/challengedefinitions')) throw new KubeError(403, refused)
            return real.call(method, path, options)
          },
          get: async (path) => {
            if (what === 'call' && path.includes('/challengedefinitions')) throw new KubeError(403, refused)
            return real.get(path)
          },
        },
      },
    )
    definition(fake, 'web')
    alicesRecord(fake)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const stream = await open(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/instances/web/events`)
    await stream.ended
    const message = what === 'watch' ? refused : `The gateway may not do this in this namespace: ${refused}`
    t.strictSame(stream.events.at(-1), { event: 'error', id: undefined, data: { message } })
  }
})
