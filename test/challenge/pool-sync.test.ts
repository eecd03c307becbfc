// A Challenge of a definition with a warm pool, through the Challenge's own hook (docs/api.md#warm-pools): it waits
// for the pool, is served by the pod claimed for it, becomes Running once the path settles, and gives the pod up.
import t from 'tap'
import { at, kinds, step } from '../helpers/drive.js'
import { validateChildren } from '../helpers/validate.js'
import { challenge, observedChildren, readyWorld, UID, webDefinition, type Json } from '../helpers/world.js'
import { claimedSecret, pooledDefinition } from '../helpers/pooled-challenge.js'

const NAME = 'web-login-u-alice'
const SELECTOR = {
  'app.kubernetes.io/managed-by': 'challenge-hooks',
  'challenge-hooks.dev/definition': 'web-login',
  'challenge-hooks.dev/claimed-by': UID,
}

const selectors = (response: { children: Json[] }) =>
  response.children.map((child) => {
    const spec = child.spec as Json
    return [child.kind, spec.podSelector ? (spec.podSelector as Json).matchLabels : spec.selector]
  })

t.test(
  'admitted while the pool is Ready: it waits, its traffic path already selecting what will be claimed for it',
  async (t) => {
    const first = step(challenge(), { related: [pooledDefinition()] })
    t.strictSame(kinds(first.response), [`NetworkPolicy/${NAME}-expose`, `Service/${NAME}`, `Ingress/${NAME}`])
    validateChildren(first.response.children)
    t.strictSame(selectors(first.response).slice(0, 2), [
      ['NetworkPolicy', SELECTOR],
      ['Service', SELECTOR],
    ])
    t.strictSame(first.status.pool, { state: 'Waiting', run: 0, since: '2026-11-22T12:00:00Z' })
    t.strictSame([first.status.phase, first.status.reason], ['Pending', 'Starting'])
    t.equal(first.response.resyncAfterSeconds, 5, 'woken when the wait ends')

    // No claim within POOL_CLAIM_TIMEOUT_SECONDS: cold, with every child of its own.
    const cold = step(first.parent, {
      related: [pooledDefinition()],
      children: observedChildren(first.response.children),
      now: at(5),
    })
    t.strictSame(cold.status.pool, { state: 'Cold', run: 0, since: '2026-11-22T12:00:05Z' })
    t.strictSame(kinds(cold.response), [
      `Secret/${NAME}-flag`,
      `NetworkPolicy/${NAME}-isolate`,
      `Service/${NAME}`,
      `Ingress/${NAME}`,
    ])
  },
)

t.test('a pool that is not Ready sends it cold at once; a definition without a pool writes no record', async (t) => {
  const exhausted = step(challenge(), { related: [pooledDefinition('Exhausted')] })
  t.strictSame(exhausted.status.pool, { state: 'Cold', run: 0, since: '2026-11-22T12:00:00Z' })
  const plain = step(challenge(), { related: [webDefinition()] })
  t.equal('pool' in plain.status, false)
})

t.test(
  'claimed: it records the pod and the uid its flag is made from, and is Running once the path settles',
  async (t) => {
    const waiting = step(challenge(), { related: [pooledDefinition()] })
    const path = observedChildren(waiting.response.children)
    const related = [pooledDefinition(), claimedSecret('4'), claimedSecret('9')]
    const claimed = step(waiting.parent, { related, children: path, now: at(1) })
    t.strictSame(claimed.status.pool, {
      state: 'Claimed',
      run: 0,
      since: '2026-11-22T12:00:01Z',
      pod: 'web-login.pool-4',
      flagUid: 'pool-secret-uid-4',
    })
    t.strictSame(kinds(claimed.response), [`NetworkPolicy/${NAME}-expose`, `Service/${NAME}`, `Ingress/${NAME}`])
    const slot4 = { ...SELECTOR, 'challenge-hooks.dev/pool-slot': '4' }
    t.strictSame(selectors(claimed.response).slice(0, 2), [
      ['NetworkPolicy', slot4],
      ['Service', slot4],
    ])
    t.equal(claimed.status.phase, 'Pending', 'the path to the claimed pod is new: it settles first')
    t.equal(claimed.response.resyncAfterSeconds, 2.5)

    const observed = readyWorld(claimed.response.children)
    const running = step(claimed.parent, { related, children: observed, now: at(4) })
    t.strictSame([running.status.phase, running.status.reason], ['Running', 'Ready'])
    t.strictSame(running.status.flagSecretRef, { name: 'web-login.pool-4-flag' })
    t.strictSame(running.status.startedAt, '2026-11-22T12:00:04Z')

    // Stopped: the run ends, its record names the pod it gives up.
    const stopped = { ...running.parent, spec: { ...running.parent.spec, desiredState: 'Stopped' } }
    const released = step(stopped, { related, children: observed, now: at(60) })
    t.strictSame(released.status.pool, { ...(claimed.status.pool as Json), state: 'Released' })
    t.equal(released.status.phase, 'Deleted')
  },
)

t.test(
  'its Service carries the ticket the pool reads: Waiting, then Claimed with its pod; none once cold or ended',
  async (t) => {
    const serviceOf = (response: { children: Json[] }): Json | undefined =>
      response.children.find((child) => child.kind === 'Service')?.metadata as Json | undefined
    const waiting = step(challenge(), { related: [pooledDefinition()] })
    const cold = step(waiting.parent, {
      related: [pooledDefinition()],
      children: observedChildren(waiting.response.children),
      now: at(5),
    })
    const plainLabels = serviceOf(cold.response)?.labels as Json
    // Every admitted run's Service records its run and when it was admitted.
    const instants = { 'challenge-hooks.dev/run': '0', 'challenge-hooks.dev/admitted-at': '2026-11-22T12:00:00Z' }
    t.strictSame(
      serviceOf(cold.response),
      {
        name: NAME,
        labels: plainLabels,
        annotations: {
          ...instants,
          'challenge-hooks.dev/pool-state': 'Cold',
          'challenge-hooks.dev/pool-since': '2026-11-22T12:00:05Z',
        },
      },
      'a cold run carries no ticket, and records since when it is cold',
    )
    const ticketed = (annotations: Json) => ({
      name: NAME,
      labels: { ...plainLabels, 'challenge-hooks.dev/pool-ticket': 'web-login' },
      annotations: { ...instants, ...annotations },
    })
    t.strictSame(serviceOf(waiting.response), ticketed({ 'challenge-hooks.dev/pool-state': 'Waiting' }))

    const related = [pooledDefinition(), claimedSecret('4')]
    const claimed = step(waiting.parent, { related, children: observedChildren(waiting.response.children), now: at(1) })
    t.strictSame(
      serviceOf(claimed.response),
      ticketed({
        'challenge-hooks.dev/pool-state': 'Claimed',
        'challenge-hooks.dev/pool-pod': 'web-login.pool-4',
        'challenge-hooks.dev/pool-since': '2026-11-22T12:00:01Z',
      }),
    )

    // Stopped: the run ends and its Service goes, and with it the ticket: the pool deletes the pod.
    const stopped = { ...claimed.parent, spec: { ...claimed.parent.spec, desiredState: 'Stopped' } }
    const released = step(stopped, { related, children: readyWorld(claimed.response.children), now: at(60) })
    t.equal(serviceOf(released.response), undefined)
  },
)

t.test('a claimed run whose pod goes away goes on cold', async (t) => {
  const waiting = step(challenge(), { related: [pooledDefinition()] })
  const claimed = step(waiting.parent, { related: [pooledDefinition(), claimedSecret('4')], now: at(1) })
  const gone = step(claimed.parent, { related: [pooledDefinition()], now: at(20) })
  t.strictSame(gone.status.pool, { state: 'Cold', run: 0, since: '2026-11-22T12:00:20Z' })
  t.strictSame(kinds(gone.response)[0], `Secret/${NAME}-flag`)
})

t.test('a record without its time is carried without one', async (t) => {
  const cold = step(challenge({ status: { run: 0, pool: { state: 'Cold', run: 0 } } }), {
    related: [pooledDefinition()],
  })
  t.strictSame(cold.status.pool, { state: 'Cold', run: 0 })
})
