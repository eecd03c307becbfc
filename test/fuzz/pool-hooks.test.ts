/**
 * Fuzzing the pool hooks over HTTP (app.inject): a warm pool's requests (its pods free and claimed, the tickets of Waiting and
 * Claimed runs; and a pre-pull's DaemonSet and pod), mutated as the Challenge hooks' fuzzing mutates theirs. Whatever comes in: never a 5xx; a 4xx
 * is a JSON {error, message}; a 200 is {status, children[, resyncAfterSeconds]}, the same bytes when asked twice, and
 * never answers a pod with another claim than the one observed on it.
 */
import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../helpers/app.js'
import { ticket, request, warmPool, type Json as Loose } from '../helpers/pool-world.js'
import { applyMutation, mutation, serialize, type Json, type Mutation } from './mutations.js'

const SEED = Number(process.env.FUZZ_SEED ?? 42)
const runs = (usual: number) => Number(process.env.FUZZ_RUNS ?? usual)
const CLAIM = 'challenge-hooks.dev/claimed-by'

function base(): Record<string, Json> {
  const { world, parent } = warmPool()
  const claimed = world.map((object) =>
    object.metadata.name === 'web.pool-1'
      ? { ...object, metadata: { ...object.metadata, labels: { ...object.metadata.labels, [CLAIM]: 'uid-a' } } }
      : object,
  )
  const challenges = [
    ticket('a', 'uid-a', { state: 'Claimed', pod: 'web.pool-1' }),
    ticket('b', 'uid-b', { state: 'Waiting' }),
  ]
  // It pre-pulls too: its DaemonSet observed, and the DaemonSet's pod on one node (one image there, one failing).
  const daemonSet = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: {
      name: 'web.images',
      namespace: 'challenges',
      uid: 'uid-ds',
      generation: 1,
      ownerReferences: parent.metadata.uid === undefined ? [] : [{ controller: true, uid: parent.metadata.uid }],
    },
    status: { observedGeneration: 1, desiredNumberScheduled: 1 },
  }
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web.images-n1',
      namespace: 'challenges',
      uid: 'uid-p',
      ownerReferences: [{ controller: true, uid: 'uid-ds' }],
    },
    spec: { nodeName: 'n1', volumes: [{ name: 'image-0', image: { reference: 'registry.example.org/web:1' } }] },
    status: {
      containerStatuses: [{ name: 'image-0', state: { waiting: { reason: 'ErrImagePull', message: 'nope' } } }],
    },
  }
  const body = request({ ...parent, spec: { ...parent.spec, prepull: 'Hold' } }, claimed, challenges) as Loose
  body.children['DaemonSet.apps/v1'] = { 'web.images': daemonSet }
  body.related['Pod.v1'] = { 'web.images-n1': pod }
  return JSON.parse(JSON.stringify(body)) as Record<string, Json>
}

/** The claims observed on the request's pods, by pod name (only those written as a label of a named pod). */
function observedClaims(body: unknown): Map<string, unknown> {
  const claims = new Map<string, unknown>()
  const pods = (body as Loose | undefined)?.children?.['Pod.v1'] as Record<string, Loose> | undefined
  if (pods === null || typeof pods !== 'object') return claims
  for (const pod of Object.values(pods)) {
    const labels = pod?.metadata?.labels
    if (typeof pod?.metadata?.name === 'string' && labels !== null && typeof labels === 'object' && CLAIM in labels)
      claims.set(pod.metadata.name, labels[CLAIM])
  }
  return claims
}

function problems(statusCode: number, text: string, body: unknown): string[] {
  if (statusCode >= 500) return [`${statusCode}: ${text.slice(0, 300)}`]
  const parsed = JSON.parse(text) as Loose
  if (statusCode >= 400)
    return typeof parsed.error === 'string' && typeof parsed.message === 'string'
      ? []
      : ['4xx without {error, message}']
  const found: string[] = []
  const keys = Object.keys(parsed).filter((key) => key !== 'resyncAfterSeconds')
  if (keys.sort().join() !== 'children,status') found.push(`top-level fields ${Object.keys(parsed).join()}`)
  if (!Array.isArray(parsed.children)) return [...found, 'children is not an array']
  const claims = observedClaims(body)
  for (const child of parsed.children as Loose[]) {
    if (
      typeof child.apiVersion !== 'string' ||
      typeof child.kind !== 'string' ||
      typeof child.metadata?.name !== 'string'
    )
      found.push(`a malformed child ${JSON.stringify(child).slice(0, 200)}`)
    if (
      child.kind === 'Pod' &&
      claims.has(child.metadata.name) &&
      child.metadata.labels?.[CLAIM] !== claims.get(child.metadata.name)
    )
      found.push(
        `${child.metadata.name}: claim ${String(claims.get(child.metadata.name))} answered as ${child.metadata.labels?.[CLAIM]}`,
      )
  }
  return found
}

async function check(app: FastifyInstance, payload: string): Promise<number> {
  const post = () =>
    app.inject({ method: 'POST', url: '/pools/sync', payload, headers: { 'content-type': 'application/json' } })
  const response = await post()
  const body = response.statusCode === 200 ? (JSON.parse(payload) as unknown) : undefined
  const found = problems(response.statusCode, response.body, body)
  if (response.statusCode === 200 && (await post()).body !== response.body) found.push('different bytes asked twice')
  if (found.length > 0) throw new Error(`/pools/sync answered ${response.statusCode}:\n  ${found.join('\n  ')}`)
  return response.statusCode
}

t.test('mutated pool requests: never a 5xx, a claim never answered changed', async (t) => {
  const app = await buildTestApp(t, { flagSecret: 'pool-test-secret' })
  const request = base()
  t.equal(await check(app, serialize(request)), 200, 'the unmutated request')
  const unmutated = await app.inject({
    method: 'POST',
    url: '/pools/sync',
    payload: serialize(request),
    headers: { 'content-type': 'application/json' },
  })
  t.equal(
    unmutated.json<Loose>().status.images.state,
    'Failed',
    'the unmutated request reaches the pre-pull report: its pod failing an image',
  )
  const seen = new Map<number, number>()
  await fc.assert(
    fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), async (edits: Mutation[]) => {
      const copy = structuredClone(request)
      for (const edit of edits) applyMutation(copy, edit)
      const code = await check(app, serialize(copy))
      seen.set(code, (seen.get(code) ?? 0) + 1)
    }),
    { seed: SEED, numRuns: runs(300) },
  )
  t.ok((seen.get(200) ?? 0) > 30, `many mutations are still answered 200 (${JSON.stringify([...seen])})`)
  t.ok((seen.get(400) ?? 0) > 30, 'many are refused with 400')
})
