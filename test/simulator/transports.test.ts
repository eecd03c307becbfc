// The transports: real HTTP (a throwaway node:http server) and Fastify's inject.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import t from 'tap'
import { Cluster } from '../support/simulator/cluster.js'
import { httpTransport, injectTransport, jsonResponse } from '../support/simulator/hooks.js'
import { Simulator } from '../support/simulator/index.js'
import { challenge, controller, NS, webHook } from './fixtures.js'

interface Seen {
  method?: string
  url?: string
  headers: IncomingMessage['headers']
  body: any
}

async function server(
  t: { teardown(fn: () => unknown): void },
  handle: (seen: Seen, res: ServerResponse) => void,
): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const srv = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      const entry = { method: req.method, url: req.url, headers: req.headers, body: JSON.parse(body) as unknown }
      seen.push(entry)
      handle(entry, res)
    })
  })
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())))
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen }
}

t.test('httpTransport: POST JSON to /<hook>, bearer token, headers both ways', async (t) => {
  const { url, seen } = await server(t, (entry, res) => {
    if (entry.url === '/hooks/sync') {
      res.writeHead(200, { 'content-type': 'application/json', etag: '"abc"' })
      res.end(JSON.stringify(webHook(entry.body)))
    } else {
      res.writeHead(500, { 'content-type': 'text/plain' })
      res.end('no such hook')
    }
  })
  const cluster = new Cluster()
  cluster.create(challenge())
  const transport = httpTransport(`${url}/`, { token: 's3cret', paths: { sync: '/hooks/sync' } })
  const sim = new Simulator(controller(), cluster, transport, { etag: true })
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.equal(result.outcome, 'synced')
  t.match(seen[0], {
    method: 'POST',
    url: '/hooks/sync',
    headers: { 'content-type': 'application/json', authorization: 'Bearer s3cret' },
  })
  t.strictSame(seen[0]?.body, result.request)
  t.match(result.response, { statusCode: 200, headers: { etag: '"abc"' } })
  t.equal(result.response?.text, JSON.stringify(result.response?.body))
  await sim.reconcile(NS, 'web-u-alice')
  t.equal(seen[1]?.headers['if-none-match'], '"abc"')

  const finalize = await transport.call('finalize', { any: 'thing' })
  t.strictSame(finalize, { statusCode: 500, headers: finalize.headers, body: undefined, text: 'no such hook' })
  t.equal(seen[2]?.url, '/finalize', 'the default path is /<hook>')
  t.notOk(
    'authorization' in
      (await httpTransport(url)
        .call('customize', {})
        .then(() => seen[3]?.headers ?? {})),
  )
})

t.test('httpTransport: a redirect is answered, not followed; a slow hook times out', async (t) => {
  const { url } = await server(t, (entry, res) => {
    if (entry.url === '/sync') {
      res.writeHead(307, { location: '/elsewhere' })
      res.end()
    } else setTimeout(() => res.end('{}'), 200)
  })
  t.equal((await httpTransport(url).call('sync', {})).statusCode, 307)
  await t.rejects(httpTransport(url, { timeoutMs: 20 }).call('finalize', {}), { name: 'TimeoutError' })
})

t.test('injectTransport: an in-process Fastify app, no socket', async (t) => {
  const app = Fastify()
  app.post('/sync', async (request, reply) => {
    if (request.headers.authorization !== 'Bearer tok') return reply.code(401).send({ error: 'Unauthorized' })
    return reply.header('x-multi', ['a', 'b']).send(webHook(request.body as any))
  })
  app.post('/custom', async () => 'plain text')
  t.teardown(() => app.close())

  const cluster = new Cluster()
  cluster.create(challenge())
  const sim = new Simulator(controller(), cluster, injectTransport(app, { token: 'tok' }))
  await sim.runUntilQuiet()
  t.match(
    cluster.get({ apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'Challenge', namespace: NS, name: 'web-u-alice' })
      ?.status,
    { phase: 'Pending' },
  )
  t.match(sim.history[0]?.response, { statusCode: 200, headers: { 'x-multi': 'a, b', 'content-length': /^\d+$/ } })

  const denied = await injectTransport(app).call('sync', {})
  t.match(denied, { statusCode: 401, body: { error: 'Unauthorized' } })
  const text = await injectTransport(app, { paths: { customize: '/custom' } }).call('customize', {})
  t.match(text, { statusCode: 200, body: undefined, text: 'plain text' })
})

t.test('jsonResponse builds what a fake hook answers', async (t) => {
  t.strictSame(jsonResponse({ a: 1 }), {
    statusCode: 200,
    headers: { 'content-type': 'application/json' },
    body: { a: 1 },
    text: '{"a":1}',
  })
  t.match(jsonResponse(undefined, 204), { statusCode: 204, body: undefined })
})
