// A stand-in for the API server on loopback, for the gateway's fast tests: the few calls the gateway makes on
// Challenges and ChallengeDefinitions (get, list by label, create, merge patch with a resourceVersion
// precondition, delete, watch of a namespace or by name), an in-memory store, and switches for an API server that is
// down, slow, failing some calls, or whose watches lag.
// The truth is the real API server: test/cluster/gateway.test.ts runs the same calls there.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { KubeConfig } from '@kubernetes/client-node'

export type Json = Record<string, unknown>

const PREFIX =
  /^\/apis\/challenge-hooks\.dev\/v1alpha1\/namespaces\/([^/]+)\/(challenges|challengedefinitions)(?:\/([^/]+))?$/

export interface FakeApiServer {
  url: string
  kubeconfig: KubeConfig
  objects: Map<string, Json>
  /** Every request, `METHOD path?query`. */
  requests: string[]
  /** How many connections clients opened. */
  connections: number
  /**
   * `down`: every call answers 503; `dead`: every connection is cut; `html`: a proxy's 502 page; `cut`: an answer
   * cut in its body; `silent`: no answer at all.
   */
  mode: 'up' | 'down' | 'dead' | 'html' | 'cut' | 'silent'
  /** Lists answer 503 (gets and watches still work). */
  failLists: boolean
  /** Every call whose `METHOD path?query` matches answers 503. */
  failing: RegExp | undefined
  /**
   * What a DELETE that removes the object at once answers: the object (`object`, the default) or a Status, as API
   * servers that do not return deleted objects do. An object with finalizers is kept with its deletionTimestamp set,
   * and answered.
   */
  deleteAnswer: 'object' | 'status'
  /** While true, what the watches would be told waits, in order, for releaseWatches(): a watch that lags. */
  holdWatches: boolean
  releaseWatches(): void
  /** Writes a line to every open watch. */
  watchLine(text: string): void
  /** Cuts every open watch's connection. */
  cutWatches(): void
  put(namespace: string, plural: string, object: Json): Json
  setStatus(namespace: string, name: string, status: Json): Json
  /** Ends every open watch, as the API server does at its timeout. */
  endWatches(): void
  /** The next watch answers an ERROR event (410 Gone: its version is too old). */
  expireNextWatch(): void
  close(): Promise<void>
}

const status = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  code,
  reason,
  message,
})

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch
  const result: Json =
    typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as Json) } : {}
  for (const [key, value] of Object.entries(patch as Json)) {
    if (value === null) delete result[key]
    else result[key] = mergePatch(result[key], value)
  }
  return result
}

export async function startFakeApiServer(t: { teardown(fn: () => unknown): void }): Promise<FakeApiServer> {
  let version = 100
  const watches = new Set<{ namespace: string; plural: string; name: string | undefined; res: ServerResponse }>()
  let expire = false
  const held: (() => void)[] = []
  const key = (namespace: string, plural: string, name: string) => `${namespace}/${plural}/${name}`
  const notify = (type: string, namespace: string, plural: string, object: Json) => {
    for (const watch of watches) {
      const name = (object.metadata as Json).name
      if (watch.namespace !== namespace || watch.plural !== plural || (watch.name !== undefined && watch.name !== name))
        continue
      const line = `${JSON.stringify({ type, object })}\n`
      const deliver = () => void (watch.res.writableEnded || watch.res.write(line))
      if (fake.holdWatches) held.push(deliver)
      else deliver()
    }
  }
  const send = (res: ServerResponse, code: number, body: unknown) => {
    res.writeHead(code, { 'content-type': 'application/json' })
    res.end(JSON.stringify(body))
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url as string, 'http://x')
    fake.requests.push(`${req.method} ${url.pathname}${url.search}`)
    let text = ''
    for await (const chunk of req) text += String(chunk)
    if (fake.mode === 'dead') return void req.socket.destroy()
    if (fake.failing?.test(`${req.method} ${url.pathname}${url.search}`))
      return send(res, 503, status(503, 'ServiceUnavailable', 'this call fails'))
    if (fake.mode === 'down') return send(res, 503, status(503, 'ServiceUnavailable', 'etcd is down'))
    if (fake.mode === 'silent') return
    if (fake.mode === 'html') {
      res.writeHead(502, { 'content-type': 'text/html' })
      return void res.end('<html>Bad Gateway</html>')
    }
    if (fake.mode === 'cut') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' })
      res.write('{"kind":')
      return void setTimeout(() => req.socket.destroy(), 20)
    }
    const match = PREFIX.exec(url.pathname)
    if (match === null) return send(res, 404, status(404, 'NotFound', 'no such path'))
    const [, namespace = '', plural = '', name] = match
    // The gateway's Role is not bound in `finals` (the platform ctfd is scoped to it all the same).
    if (namespace === 'finals') return send(res, 403, status(403, 'Forbidden', `cannot ${req.method} in finals`))
    const body = text === '' ? undefined : (JSON.parse(text) as Json)
    const stored = name === undefined ? undefined : fake.objects.get(key(namespace, plural, name))
    if (req.method === 'GET' && name === undefined && url.searchParams.get('watch') === 'true') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.flushHeaders()
      if (expire) {
        expire = false
        res.end(`${JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', 'too old resource version') })}\n`)
        return
      }
      const selected = /^metadata\.name=(.+)$/.exec(url.searchParams.get('fieldSelector') ?? '')?.[1]
      const watch = { namespace, plural, name: selected, res }
      watches.add(watch)
      res.on('close', () => watches.delete(watch))
      return
    }
    if (req.method === 'GET' && name === undefined) {
      if (fake.failLists) return send(res, 503, status(503, 'ServiceUnavailable', 'lists fail'))
      const [labelKey, labelValue] = (url.searchParams.get('labelSelector') ?? '=').split('=')
      const items = [...fake.objects.entries()]
        .filter(([k]) => k.startsWith(`${namespace}/${plural}/`))
        .map(([, object]) => object)
        .filter(
          (object) =>
            labelKey === '' ||
            ((object.metadata as Json).labels as Json | undefined)?.[labelKey as string] === labelValue,
        )
      return send(res, 200, { kind: 'List', items, metadata: { resourceVersion: String(version) } })
    }
    if (req.method === 'GET') {
      return stored === undefined
        ? send(res, 404, status(404, 'NotFound', `${plural} "${name}" not found`))
        : send(res, 200, stored)
    }
    if (req.method === 'POST') {
      const metadata = (body?.metadata ?? {}) as Json
      if (fake.objects.has(key(namespace, plural, String(metadata.name))))
        return send(res, 409, status(409, 'AlreadyExists', `${plural} "${String(metadata.name)}" already exists`))
      if (String(metadata.name).includes('..'))
        return send(res, 422, status(422, 'Invalid', `metadata.name: Invalid value: "${String(metadata.name)}"`))
      return send(res, 201, fake.put(namespace, plural, body as Json))
    }
    if (stored === undefined) return send(res, 404, status(404, 'NotFound', `${plural} "${name}" not found`))
    if (req.method === 'PATCH') {
      const wanted = ((body?.metadata ?? {}) as Json).resourceVersion
      if (wanted !== undefined && wanted !== (stored.metadata as Json).resourceVersion)
        return send(res, 409, status(409, 'Conflict', 'the object has been modified'))
      const patched = mergePatch(stored, { ...body, metadata: {} }) as Json
      return send(res, 200, fake.put(namespace, plural, patched))
    }
    // DELETE
    const metadata = stored.metadata as Json
    if ((metadata.finalizers as unknown[] | undefined)?.length) {
      const marked = { ...stored, metadata: { ...metadata, deletionTimestamp: '2026-11-22T12:00:00Z' } }
      return send(res, 200, fake.put(namespace, plural, marked))
    }
    version += 1
    const deleted = { ...stored, metadata: { ...metadata, resourceVersion: String(version) } }
    fake.objects.delete(key(namespace, plural, name as string))
    notify('DELETED', namespace, plural, deleted)
    if (fake.deleteAnswer === 'status')
      return send(res, 200, { kind: 'Status', apiVersion: 'v1', status: 'Success', details: { name, kind: plural } })
    return send(res, 200, deleted)
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: Error) => send(res, 500, status(500, 'InternalError', error.message)))
  })
  server.on('connection', () => fake.connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const kubeconfig = new KubeConfig()
  kubeconfig.loadFromOptions({
    // Plain HTTP on loopback: client-node's agent allows it only with skipTLSVerify.
    clusters: [{ name: 'fake', server: url, skipTLSVerify: true }],
    users: [{ name: 'gateway', token: 'a-token' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'gateway' }],
    currentContext: 'fake',
  })
  const fake: FakeApiServer = {
    url,
    kubeconfig,
    objects: new Map(),
    requests: [],
    connections: 0,
    mode: 'up',
    failLists: false,
    failing: undefined,
    deleteAnswer: 'object',
    holdWatches: false,
    releaseWatches() {
      fake.holdWatches = false
      for (const deliver of held.splice(0)) deliver()
    },
    watchLine(text) {
      for (const watch of watches) watch.res.write(`${text}\n`)
    },
    cutWatches() {
      for (const watch of watches) {
        watches.delete(watch)
        watch.res.socket?.destroy()
      }
    },
    put(namespace, plural, object) {
      version += 1
      const metadata = (object.metadata ?? {}) as Json
      const name = String(metadata.name)
      const previous = fake.objects.get(key(namespace, plural, name))
      const stored = {
        ...object,
        metadata: {
          ...metadata,
          namespace,
          uid: ((previous?.metadata as Json | undefined)?.uid as string | undefined) ?? `uid-${name}`,
          resourceVersion: String(version),
          creationTimestamp:
            ((previous?.metadata as Json | undefined)?.creationTimestamp as string | undefined) ??
            (metadata.creationTimestamp as string | undefined) ??
            '2026-11-22T11:00:00Z',
        },
      }
      fake.objects.set(key(namespace, plural, name), stored)
      notify(previous === undefined ? 'ADDED' : 'MODIFIED', namespace, plural, stored)
      return stored
    },
    setStatus(namespace, name, newStatus) {
      const stored = fake.objects.get(key(namespace, 'challenges', name))
      if (stored === undefined) throw new Error(`no Challenge ${name}`)
      return fake.put(namespace, 'challenges', { ...stored, status: newStatus })
    },
    endWatches() {
      for (const watch of watches) {
        watches.delete(watch)
        watch.res.end()
      }
    },
    expireNextWatch() {
      expire = true
    },
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
  t.teardown(() => fake.close())
  return fake
}
