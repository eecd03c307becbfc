// Metacontroller builds a request from its caches: in a rush its view of a Challenge can lag its own last status
// write, while the children it made in the same sync are already seen. A sync from such a view must answer the status
// the fresh view has, or Metacontroller writes the two in turn (docs/api.md, "The Service records the run's instants").
// Each case: the sync that made a step, then the next one twice, from the fresh view and from the lagging one.
import t from 'tap'
import { at, step, type Step } from '../helpers/drive.js'
import { challenge, observedChildren, webDefinition, type Json } from '../helpers/world.js'
import { claimedSecret, pooledDefinition } from '../helpers/pooled-challenge.js'
import type { KubeObject } from '../../src/contract/protocol.js'

/** The next sync at `seconds`, once from the parent `made` wrote and once from the one before it. */
function both(made: Step, before: KubeObject & { spec: Json }, related: KubeObject[], seconds: number) {
  const children = observedChildren(made.response.children)
  return {
    fresh: step(made.parent, { related, children, now: at(seconds) }),
    lagging: step(before, { related, children, now: at(seconds) }),
  }
}

t.test('admitted at the first sync: a sync that reads no status yet answers as the fresh one', async (t) => {
  const first = step(challenge(), { related: [webDefinition()] })
  t.equal(first.status.admittedAt, '2026-11-22T12:00:00Z')
  const { fresh, lagging } = both(first, challenge(), [webDefinition()], 2)
  t.strictSame(lagging.status, fresh.status)
  t.strictSame(lagging.response.children, fresh.response.children)
  t.strictSame(fresh.status.admittedAt, '2026-11-22T12:00:00Z')
  // A condition the first status had not flipped holds since the Challenge was made.
  t.strictSame(
    (fresh.status.conditions as Json[]).map((condition) => [condition.type, condition.lastTransitionTime]),
    [
      ['Admitted', '2026-11-22T12:00:00Z'],
      ['Scheduled', '2026-11-22T11:59:00Z'],
      ['ContainersStarted', '2026-11-22T11:59:00Z'],
      ['WorkloadReady', '2026-11-22T11:59:00Z'],
      ['EndpointReady', '2026-11-22T11:59:00Z'],
      ['Ready', '2026-11-22T11:59:00Z'],
      ['Expired', '2026-11-22T11:59:00Z'],
    ],
  )
})

t.test('admitted after a wait in the queue: a sync that still reads Queued answers as the fresh one', async (t) => {
  const ahead = challenge({
    name: 'ahead',
    createdAt: '2026-11-22T10:00:00Z',
    status: { cost: 1, phase: 'Running', admittedAt: '2026-11-22T11:00:00Z', startedAt: '2026-11-22T11:00:10Z' },
  })
  const queued = step(challenge(), { related: [webDefinition(), ahead], config: { ownerBudget: 1 } })
  t.strictSame([queued.status.phase, queued.status.reason], ['Pending', 'Queued'])
  const ended = { ...ahead, status: { ...(ahead.status as Json), phase: 'Deleted' } } as KubeObject
  const related = [webDefinition(), ended]
  const admitted = step(queued.parent, { related, now: at(30) })
  t.strictSame(admitted.status.admittedAt, '2026-11-22T12:00:30Z')
  const { fresh, lagging } = both(admitted, queued.parent, related, 33)
  t.strictSame(lagging.status, fresh.status)
  t.strictSame(lagging.response.children, fresh.response.children)
})

t.test('a pooled run: the wait and the claim are the instants its Service records', async (t) => {
  const waiting = step(challenge(), { related: [pooledDefinition()] })
  t.strictSame(waiting.status.pool, { state: 'Waiting', run: 0, since: '2026-11-22T12:00:00Z' })
  const admission = both(waiting, challenge(), [pooledDefinition()], 2)
  t.strictSame(admission.lagging.status, admission.fresh.status)
  t.strictSame(admission.fresh.status.pool, { state: 'Waiting', run: 0, since: '2026-11-22T12:00:00Z' })

  const related = [pooledDefinition(), claimedSecret('4')]
  const claimed = step(admission.fresh.parent, {
    related,
    children: observedChildren(admission.fresh.response.children),
    now: at(3),
  })
  const pool = { state: 'Claimed', run: 0, since: '2026-11-22T12:00:03Z', pod: 'web-login.pool-4' }
  t.hasStrict(claimed.status.pool, pool)
  const claim = both(claimed, admission.fresh.parent, related, 5)
  t.strictSame(claim.lagging.status, claim.fresh.status)
  t.strictSame(claim.lagging.response.children, claim.fresh.response.children)
  t.hasStrict(claim.fresh.status.pool, pool)
  t.hasStrict(claim.fresh.status.conditions, [
    { type: 'Admitted', lastTransitionTime: '2026-11-22T12:00:00Z' },
    { type: 'Scheduled', status: 'True', lastTransitionTime: '2026-11-22T12:00:03Z' },
    { type: 'ContainersStarted', status: 'True', lastTransitionTime: '2026-11-22T12:00:03Z' },
    { type: 'WorkloadReady', status: 'True', lastTransitionTime: '2026-11-22T12:00:03Z' },
  ])
})

t.test('what another run’s Service, or one on its way out, records is not this run’s', async (t) => {
  const first = step(challenge(), { related: [webDefinition()] })
  const service = (annotations: Json, deleting = false): KubeObject[] =>
    observedChildren(first.response.children).map((child) =>
      child.kind === 'Service'
        ? ({
            ...child,
            metadata: {
              ...child.metadata,
              annotations: { ...child.metadata.annotations, ...annotations },
              ...(deleting ? { deletionTimestamp: '2026-11-22T12:00:01Z' } : {}),
            },
          } as KubeObject)
        : child,
    )
  const again = (children: KubeObject[]) =>
    step(challenge(), { related: [webDefinition()], children, now: at(2) }).status.admittedAt
  t.strictSame(again(service({})), '2026-11-22T12:00:00Z')
  t.strictSame(again(service({ 'challenge-hooks.dev/run': '1' })), '2026-11-22T12:00:02Z')
  t.strictSame(again(service({}, true)), '2026-11-22T12:00:02Z')
  t.strictSame(again(service({ 'challenge-hooks.dev/admitted-at': 'soon' })), '2026-11-22T12:00:02Z')
})

t.test('a pooled run gone cold: a sync that still reads Waiting and then sees its claim stays cold', async (t) => {
  const waiting = step(challenge(), { related: [pooledDefinition()] })
  const children = observedChildren(waiting.response.children)
  const cold = step(waiting.parent, { related: [pooledDefinition()], children, now: at(5) })
  t.strictSame(cold.status.pool, { state: 'Cold', run: 0, since: '2026-11-22T12:00:05Z' })
  // The pool's claim lands just after: the fresh view is cold for good, the lagging one would have taken it.
  const { fresh, lagging } = both(cold, waiting.parent, [pooledDefinition(), claimedSecret('4')], 6)
  t.strictSame(lagging.status, fresh.status)
  t.strictSame(lagging.response.children, fresh.response.children)
  t.strictSame(fresh.status.pool, { state: 'Cold', run: 0, since: '2026-11-22T12:00:05Z' })
})
