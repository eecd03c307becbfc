/**
 * Decision properties over plausible worlds (world-gen.ts): not only that an answer is well formed, but that the
 * decision is right, by comparing the answers to two worlds that differ in one known way.
 * - a terminating pod counts as no pod (its problems never become the instance's);
 * - a fatal pod problem always outranks a transient one, whichever container has which;
 * - a teardown answer never drops the NetworkPolicies or the flag Secret while a pod or the Deployment of the
 *   instance is observed;
 * - the same world later never moves the instance backwards in its lifecycle;
 * - hook v1 and v2 keys (name, namespace/name) give the same bytes.
 */
import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import type { KubeObject } from '../../src/contract/protocol.js'
import { buildTestApp, FIXED_NOW } from '../helpers/app.js'
import type { Json } from '../helpers/world.js'
import { requestFor, runs, SEED, world, type World } from './world-gen.js'

interface Answer {
  statusCode: number
  body: string
  status?: { phase?: string; reason?: string; run?: number }
  children?: KubeObject[]
}

async function ask(app: FastifyInstance, url: string, body: unknown): Promise<Answer> {
  const response = await app.inject({
    method: 'POST',
    url,
    payload: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  })
  if (response.statusCode !== 200) return { statusCode: response.statusCode, body: response.body }
  const parsed = JSON.parse(response.body) as { status: Answer['status']; children: KubeObject[] }
  return { statusCode: 200, body: response.body, status: parsed.status, children: parsed.children }
}

type Request = {
  related: Record<string, Record<string, KubeObject>>
  children: Record<string, Record<string, KubeObject>>
}
const PODS = 'Pod.v1'

/** The request with the observed Pod changed by `change` (removed when it returns undefined); undefined without a Pod. */
function withPod(body: Json, change: (pod: KubeObject) => KubeObject | undefined): Json | undefined {
  const request = structuredClone(body) as unknown as Request
  const pods = request.children[PODS] ?? {}
  const [key] = Object.keys(pods)
  if (key === undefined) return undefined
  const changed = change(pods[key] as KubeObject)
  if (changed === undefined) delete pods[key]
  else pods[key] = changed
  return request
}

const waiting = (name: string, reason: string) => ({
  name,
  ready: false,
  restartCount: 0,
  state: { waiting: { reason } },
})
const live = world.filter((w: World) => !w.deleting)

t.test("a terminating pod counts as no pod: its problems never become the instance's", async (t) => {
  const app = await buildTestApp(t)
  let compared = 0
  await fc.assert(
    fc.asyncProperty(
      live,
      fc.constantFrom('CrashLoopBackOff', 'InvalidImageName', 'ImagePullBackOff', 'CreateContainerConfigError'),
      async (w, reason) => {
        const { url, body } = requestFor(w)
        const without = withPod(body, () => undefined)
        const terminating = withPod(body, (pod) => ({
          ...pod,
          metadata: { ...pod.metadata, deletionTimestamp: '2026-11-22T11:59:50Z' },
          status: { phase: 'Running', containerStatuses: [{ ...waiting('web', reason), restartCount: 9 }] },
        }))
        if (without === undefined || terminating === undefined) return
        const [gone, dying] = [await ask(app, url, without), await ask(app, url, terminating)]
        if (gone.statusCode !== 200) return
        compared += 1
        if (dying.status?.phase !== gone.status?.phase || dying.status?.reason !== gone.status?.reason) {
          throw new Error(
            `no pod gives ${gone.status?.phase}/${gone.status?.reason}, a terminating ${reason} pod ${dying.status?.phase}/${dying.status?.reason}`,
          )
        }
      },
    ),
    { seed: SEED, numRuns: runs(200) },
  )
  t.ok(compared > runs(200) / 2, `${compared} worlds compared`)
})

t.test('a fatal pod problem outranks a transient one, whichever container has it', async (t) => {
  const app = await buildTestApp(t)
  let pulling = 0
  await fc.assert(
    fc.asyncProperty(live, fc.boolean(), async (w, fatalFirst) => {
      const { url, body } = requestFor(w)
      const base = await ask(app, url, body)
      if (base.statusCode !== 200) return
      // A pod of the run the instance is in, still starting.
      const run = String(base.status?.run ?? 0)
      const pending = (containerStatuses: Json[]) => (pod: KubeObject) => {
        const { deletionTimestamp: _gone, ...metadata } = pod.metadata
        metadata.annotations = { ...metadata.annotations, 'challenge-hooks.dev/run': run }
        return { ...pod, metadata, status: { phase: 'Pending', containerStatuses } } as KubeObject
      }
      const transient = withPod(body, pending([waiting('web', 'ImagePullBackOff')]))
      if (transient === undefined) return
      const withTransient = await ask(app, url, transient)
      // Only where the transient problem is what the player is told: the fatal one must then win.
      if (withTransient.status?.reason !== 'ImagePullBackOff') return
      pulling += 1
      const pair = [waiting('web', 'ImagePullBackOff'), waiting('sidecar', 'InvalidImageName')]
      const both = await ask(app, url, withPod(body, pending(fatalFirst ? pair.reverse() : pair)))
      if (both.status?.phase !== 'Error' || both.status.reason !== 'InvalidImage') {
        throw new Error(
          `an invalid image beside an image pull back-off gave ${both.status?.phase}/${both.status?.reason}`,
        )
      }
    }),
    { seed: SEED, numRuns: runs(200) },
  )
  t.ok(pulling > runs(200) / 20, `${pulling} worlds where the transient problem showed`)
})

const GUARDED = ['Secret', 'NetworkPolicy']

t.test(
  'a teardown never drops the policies or the flag Secret while a pod or the Deployment is observed',
  async (t) => {
    const app = await buildTestApp(t)
    let guarded = 0
    await fc.assert(
      fc.asyncProperty(world, async (w) => {
        const { url, body } = requestFor(w)
        const answer = await ask(app, url, body)
        if (answer.statusCode !== 200) return
        const request = body as unknown as Request
        const desired = answer.children ?? []
        if (desired.some((child) => child.kind === 'Pod' || child.kind === 'Deployment')) return
        const observed = Object.entries(request.children).flatMap(([group, objects]) =>
          Object.values(objects).map((object) => ({ group, object })),
        )
        const deployment = observed.some(({ object }) => object.kind === 'Deployment')
        const pods = Object.keys(request.children[PODS] ?? {}).length > 0
        if (!deployment && !pods) return
        guarded += 1
        const kept = new Set(desired.map((child) => `${child.kind}/${child.metadata.name}`))
        const dropped = observed
          .filter(
            ({ object }) => GUARDED.includes(String(object.kind)) && object.metadata.deletionTimestamp === undefined,
          )
          .map(({ object }) => `${object.kind}/${object.metadata.name}`)
          .filter((name) => !kept.has(name))
        if (dropped.length > 0)
          throw new Error(
            `${url} dropped ${dropped.join(', ')} while ${deployment ? 'the Deployment' : 'a pod'} is observed`,
          )
      }),
      { seed: SEED, numRuns: runs(600) },
    )
    t.ok(guarded >= runs(600) / 60, `${guarded} teardowns with a pod or the Deployment observed`)
  },
)

/** Where an instance is in its lifecycle: later never comes before earlier. */
const STAGE: Record<string, number> = { Pending: 0, Running: 1, Error: 2, Deleted: 2, Terminating: 3 }

t.test('the same world later never moves the instance backwards in its lifecycle', async (t) => {
  const clock = { now: FIXED_NOW }
  const app = await buildTestApp(t, {}, () => clock.now)
  let compared = 0
  await fc.assert(
    fc.asyncProperty(world, fc.integer({ min: 1, max: 3 * 86400 }), async (w, seconds) => {
      const { url, body } = requestFor(w)
      clock.now = FIXED_NOW
      const now = await ask(app, url, body)
      clock.now = new Date(FIXED_NOW.getTime() + seconds * 1000)
      const later = await ask(app, url, body)
      clock.now = FIXED_NOW
      if (now.statusCode !== 200 || later.statusCode !== 200) return
      compared += 1
      const [a, b] = [now.status?.phase ?? '', later.status?.phase ?? '']
      if ((STAGE[b] ?? -1) < (STAGE[a] ?? -1))
        throw new Error(`${a}/${now.status?.reason} became ${b}/${later.status?.reason} ${seconds} s later`)
    }),
    { seed: SEED, numRuns: runs(300) },
  )
  t.ok(compared > (runs(300) * 2) / 3, `${compared} worlds compared`)
})

t.test('hook v1 and v2 keys give the same bytes', async (t) => {
  const app = await buildTestApp(t)
  let compared = 0
  await fc.assert(
    fc.asyncProperty(world, async (w) => {
      const { url, body } = requestFor(w)
      const v1 = await ask(app, url, body)
      const v2 = await ask(app, url, requestFor(w, 'v2').body)
      if (v1.statusCode !== v2.statusCode || v1.body !== v2.body)
        throw new Error(`v1 answered ${v1.statusCode}, v2 ${v2.statusCode}; the bodies differ`)
      if (v1.statusCode === 200) compared += 1
    }),
    { seed: SEED, numRuns: runs(200) },
  )
  t.ok(compared > runs(200) / 2, `${compared} answers compared`)
})
