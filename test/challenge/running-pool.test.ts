// How a Challenge of a definition with a warm pool is served and reports its progress (docs/api.md#warm-pools):
// from the pod claimed for it, or from a pod of its own when it goes cold.
import t from 'tap'
import { at, kinds, prepared, step } from '../helpers/drive.js'
import { challenge, conditionOf, observedChildren, readyWorld, webDefinition } from '../helpers/world.js'
import { claimedSecret, pooledDefinition } from '../helpers/pooled-challenge.js'

const NAME = 'web-login-u-alice'
const OWN_CHILDREN = [
  `Secret/${NAME}-flag`,
  `NetworkPolicy/${NAME}-isolate`,
  `Pod/${NAME}`,
  `Service/${NAME}`,
  `Ingress/${NAME}`,
]

const progress = (status: Record<string, unknown>) =>
  ['Scheduled', 'ContainersStarted', 'WorkloadReady'].map((type) => {
    const condition = conditionOf(status, type) as Record<string, unknown>
    return [type, condition.status, condition.reason, condition.lastTransitionTime]
  })

t.test('a claimed pod counts as scheduled, started and ready from the moment its claim was seen', async (t) => {
  const waiting = step(challenge(), { related: [pooledDefinition()] })
  const related = [pooledDefinition(), claimedSecret('4')]
  const claimed = step(waiting.parent, { related, children: observedChildren(waiting.response.children), now: at(1) })
  t.strictSame(progress(claimed.status), [
    ['Scheduled', 'True', 'PodScheduled', '2026-11-22T12:00:01Z'],
    ['ContainersStarted', 'True', 'ContainersStarted', '2026-11-22T12:00:01Z'],
    ['WorkloadReady', 'True', 'PodReady', '2026-11-22T12:00:01Z'],
  ])
})

t.test('a Challenge with parameters never waits for a pooled pod: it starts cold at once', async (t) => {
  const first = step(challenge({ spec: { parameters: { LEVEL: 'hard' } } }), { related: [pooledDefinition()] })
  t.strictSame(first.status.pool, { state: 'Cold', run: 0, since: '2026-11-22T12:00:00Z' })
  t.strictSame(kinds(first.response), [
    `Secret/${NAME}-flag`,
    `NetworkPolicy/${NAME}-isolate`,
    `Service/${NAME}`,
    `Ingress/${NAME}`,
  ])
})

t.test('a run that has a pod of its own when its definition gains a pool stays cold and keeps its pod', async (t) => {
  const plain = webDefinition({ flag: { mode: 'PerInstance' } })
  const own = prepared(challenge(), { related: [plain] })
  t.strictSame(kinds(own.response), OWN_CHILDREN)
  const later = step(own.parent, { related: [pooledDefinition()], children: readyWorld(own.response.children) })
  t.strictSame(later.status.pool, { state: 'Cold', run: 0, since: '2026-11-22T12:00:00Z' })
  t.strictSame(kinds(later.response), OWN_CHILDREN)
})

t.test('a cold run of a pooled definition gets its own pod once its guards are its own', async (t) => {
  const cold = prepared(challenge(), { related: [pooledDefinition('Exhausted')] })
  t.strictSame(cold.status.pool, { state: 'Cold', run: 0, since: '2026-11-22T12:00:00Z' })
  t.strictSame(kinds(cold.response), OWN_CHILDREN)
})

t.test('still waiting for the pool at the startup timeout: an Error that says the pool handed it no pod', async (t) => {
  const config = { poolClaimTimeoutSeconds: 300 }
  const definition = pooledDefinition('Ready', { startupTimeoutSeconds: 30 })
  const waiting = step(challenge(), { related: [definition], config })
  t.strictSame(waiting.status.pool, { state: 'Waiting', run: 0, since: '2026-11-22T12:00:00Z' })
  const path = observedChildren(waiting.response.children)
  const late = step(waiting.parent, { related: [definition], children: path, now: at(30), config })
  t.strictSame(
    [late.status.phase, late.status.reason, late.status.message],
    [
      'Error',
      'StartupTimeout',
      'The instance did not become ready within 30 seconds. The warm pool has not handed it a pod (a run waits up to POOL_CLAIM_TIMEOUT_SECONDS before it starts a pod of its own).',
    ],
  )
})

t.test('a claimed run whose route never came: StartupTimeout does not say its pod was never created', async (t) => {
  const definition = pooledDefinition('Ready', { startupTimeoutSeconds: 30 })
  const waiting = step(challenge(), { related: [definition] })
  const related = [definition, claimedSecret('4')]
  const withoutRoute = observedChildren(waiting.response.children).filter((child) => child.kind !== 'Ingress')
  const claimed = step(waiting.parent, { related, children: withoutRoute, now: at(1) })
  t.strictSame([claimed.status.phase, claimed.status.reason], ['Pending', 'WaitingForEndpoint'])
  const late = step(claimed.parent, { related, children: withoutRoute, now: at(30) })
  t.strictSame(
    [late.status.phase, late.status.reason, late.status.message],
    ['Error', 'StartupTimeout', 'The instance did not become ready within 30 seconds.'],
  )
})

t.test('a claimed run held by a problem of the world keeps its claim: its record stays Claimed', async (t) => {
  const waiting = step(challenge(), { related: [pooledDefinition()] })
  const related = [pooledDefinition(), claimedSecret('4')]
  const claimed = step(waiting.parent, { related, children: observedChildren(waiting.response.children), now: at(1) })
  const record = {
    state: 'Claimed',
    run: 0,
    since: '2026-11-22T12:00:01Z',
    pod: 'web-login.pool-4',
    flagUid: 'pool-secret-uid-4',
  }
  t.strictSame(claimed.status.pool, record)
  const mislabelled = {
    ...claimed.parent,
    metadata: {
      ...claimed.parent.metadata,
      labels: { 'challenge-hooks.dev/owner': 'mallory', 'challenge-hooks.dev/definition': 'web-login' },
    },
  }
  const held = step(mislabelled, { related, children: observedChildren(claimed.response.children), now: at(2) })
  t.strictSame([held.status.phase, held.status.reason], ['Error', 'OwnerLabelMismatch'])
  t.strictSame(held.status.pool, record)
  // Held, it holds no workload, as a cold run holds no pod: its traffic path goes (the Service and the route first,
  // the expose policy next), and with the Service the ticket the pool kept the pod for (docs/api.md#warm-pools).
  t.strictSame(kinds(held.response), [`NetworkPolicy/${NAME}-expose`])
})

t.test(
  'a record of a released claim on a run not marked finished answers no Pod before its guards are its own',
  async (t) => {
    const released = {
      state: 'Released',
      run: 0,
      since: '2026-11-22T11:59:30Z',
      pod: 'web-login.pool-4',
      flagUid: 'pool-secret-uid-4',
    }
    const edited = challenge({ status: { run: 0, admittedAt: '2026-11-22T11:59:00Z', pool: released } })
    const answer = step(edited, { related: [pooledDefinition()] })
    t.strictSame(kinds(answer.response), [
      `Secret/${NAME}-flag`,
      `NetworkPolicy/${NAME}-isolate`,
      `Service/${NAME}`,
      `Ingress/${NAME}`,
    ])
  },
)
