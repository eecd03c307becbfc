/**
 * Player and admin controls walked through time: renew, restart, stop, deadlines, release gate, owner budget.
 * Each test injects `now` and feeds every answer's status back as the next request's parent status.
 */
import t from 'tap'
import { at, kinds, prepared, step, type Step } from '../helpers/drive.js'
import {
  challenge,
  conditionOf,
  observedChildren,
  pod,
  readyWorld,
  waitingPod,
  webDefinition,
  withPod,
  type Json,
} from '../helpers/world.js'
import type { KubeObject } from '../../src/contract/protocol.js'

const NAME = 'web-login-u-alice'

/** A Challenge that went Running at t=0 (admitted at t=0, ready at once). */
function runningAt0(
  spec: Json = {},
  definition: Json = {},
): { running: Step; related: KubeObject[]; ready: KubeObject[] } {
  const related = [webDefinition(definition)]
  const first = prepared(challenge({ spec }), { related })
  const ready = readyWorld(first.response.children)
  const running = step(first.parent, { related, children: ready })
  return { running, related, ready }
}

function withSpec(parent: Step['parent'], spec: Json): Step['parent'] {
  return { ...parent, spec: { ...parent.spec, ...spec } }
}

t.test('renew: accepted while Running, acted on exactly once, resets the clock from now', async (t) => {
  const { running, related, ready } = runningAt0()
  t.equal(running.status.expiresAt, '2026-11-22T12:30:00Z')
  const asked = withSpec(running.parent, { renewals: 1 })
  const renewed = step(asked, { related, children: ready, now: at(1200) })
  t.hasStrict(renewed.status, {
    phase: 'Running',
    lastRenewedAt: '2026-11-22T12:20:00Z',
    expiresAt: '2026-11-22T12:50:00Z',
    renewalsSeen: 1,
    renewalsApplied: 1,
  })
  t.hasStrict(conditionOf(renewed.status, 'RenewalAccepted'), {
    status: 'True',
    reason: 'Renewed',
    message: 'Renewal 1 of 2 accepted.',
  })
  t.equal((renewed.status.conditions as Json[]).at(-1)?.type, 'RenewalAccepted', 'the last condition')
  t.equal(renewed.response.resyncAfterSeconds, 300)
  // The same request again (Metacontroller's next sync): nothing more happens.
  const again = step(renewed.parent, { related, children: ready, now: at(1300) })
  t.strictSame(again.status, renewed.status)
  // Before, at and after the new deadline.
  t.equal(step(renewed.parent, { related, children: ready, now: at(2999) }).status.phase, 'Running')
  t.hasStrict(step(renewed.parent, { related, children: ready, now: at(3000) }).status, {
    phase: 'Deleted',
    reason: 'Expired',
  })
})

t.test('renew: refused beyond maxRenewals, when not Running, and when the deadline already caps it', async (t) => {
  const { running, related, ready } = runningAt0({}, { maxRenewals: 1 })
  const once = step(withSpec(running.parent, { renewals: 1 }), { related, children: ready, now: at(60) })
  t.equal(once.status.renewalsApplied, 1)
  const twice = step(withSpec(once.parent, { renewals: 2 }), { related, children: ready, now: at(120) })
  t.hasStrict(twice.status, { renewalsSeen: 2, renewalsApplied: 1, lastRenewedAt: '2026-11-22T12:01:00Z' })
  const renewal = conditionOf(twice.status, 'RenewalAccepted')
  t.hasStrict(renewal, { status: 'False', reason: 'MaxRenewalsReached', lastTransitionTime: '2026-11-22T12:02:00Z' })

  const pending = step(withSpec(challenge(), { renewals: 1 }), { related: [webDefinition()] })
  t.hasStrict(pending.status, { phase: 'Pending', renewalsSeen: 1, renewalsApplied: 0 })
  t.hasStrict((pending.status.conditions as Json[]).at(-1), {
    type: 'RenewalAccepted',
    status: 'False',
    reason: 'NotRunning',
  })

  const capped = runningAt0({ deadline: '2026-11-22T12:20:00Z' })
  t.equal(capped.running.status.expiresAt, '2026-11-22T12:20:00Z', 'the deadline caps expiry')
  const refused = step(withSpec(capped.running.parent, { renewals: 1 }), {
    related: capped.related,
    children: capped.ready,
    now: at(600),
  })
  t.hasStrict(refused.status, { renewalsApplied: 0, expiresAt: '2026-11-22T12:20:00Z' })
  t.hasStrict((refused.status.conditions as Json[]).at(-1), { status: 'False', reason: 'PastDeadline' })

  const partly = runningAt0({ deadline: '2026-11-22T12:40:00Z' })
  const extended = step(withSpec(partly.running.parent, { renewals: 1 }), {
    related: partly.related,
    children: partly.ready,
    now: at(900),
  })
  t.hasStrict(
    extended.status,
    { renewalsApplied: 1, expiresAt: '2026-11-22T12:40:00Z' },
    'a renewal extends up to the deadline only',
  )
  t.hasStrict(step(extended.parent, { related: partly.related, children: partly.ready, now: at(2400) }).status, {
    phase: 'Deleted',
    reason: 'PastDeadline',
  })
})

t.test('restart: a new run rolls the workload, resets timers and renewals, relaunches Error and Deleted', async (t) => {
  const { running, related, ready } = runningAt0()
  const renewed = step(withSpec(running.parent, { renewals: 1 }), { related, children: ready, now: at(100) })
  const restarted = step(withSpec(renewed.parent, { restarts: 1 }), { related, children: ready, now: at(200) })
  t.hasStrict(restarted.status, {
    phase: 'Pending',
    reason: 'Starting',
    run: 1,
    admittedAt: '2026-11-22T12:03:20Z',
    renewalsApplied: 0,
    renewalsSeen: 1,
  })
  for (const field of ['startedAt', 'lastRenewedAt', 'finishedAt', 'expiresAt'])
    t.notOk(field in restarted.status, `${field} reset`)
  const newPod = restarted.response.children.find((child) => child.kind === 'Pod') as unknown as Json & {
    metadata: { annotations: Json }
  }
  t.strictSame(
    newPod.metadata.annotations,
    { 'challenge-hooks.dev/run': '1' },
    'a Pod of the new run (Recreate replaces the old one)',
  )
  t.strictSame(
    (restarted.status.conditions as Json[]).map((condition) => condition.lastTransitionTime),
    Array(7).fill('2026-11-22T12:03:20Z'),
    'fresh conditions',
  )
  const secretBefore = running.response.children.find((child) => child.kind === 'Secret')
  const secretAfter = restarted.response.children.find((child) => child.kind === 'Secret')
  t.strictSame(secretAfter, secretBefore, 'the PerOwner flag stays the same across runs')

  const newReady = readyWorld(restarted.response.children)
  const runningAgain = step(restarted.parent, { related, children: newReady, now: at(230) })
  t.hasStrict(runningAgain.status, {
    phase: 'Running',
    run: 1,
    startedAt: '2026-11-22T12:03:50Z',
    expiresAt: '2026-11-22T12:33:50Z',
  })

  const expired = step(running.parent, { related, children: ready, now: at(1800) })
  t.equal(expired.status.phase, 'Deleted')
  const relaunched = step(withSpec(expired.parent, { restarts: 1 }), { related, children: [], now: at(2000) })
  t.hasStrict(relaunched.status, { phase: 'Pending', reason: 'Starting', run: 1 })
  t.equal(
    relaunched.response.children.length,
    4,
    'every child but the Pod (the flag Secret, the policy, the Service, the Ingress): it waits for the new Secret',
  )

  const crashed = step(running.parent, {
    related,
    children: withPod(
      ready,
      pod(NAME, 0, {
        containerStatuses: [{ name: 'web', restartCount: 5, state: { waiting: { reason: 'CrashLoopBackOff' } } }],
      }),
    ),
    now: at(50),
  })
  t.hasStrict(crashed.status, { phase: 'Error', reason: 'CrashLoopBackOff' })
  t.hasStrict(step(withSpec(crashed.parent, { restarts: 3 }), { related, now: at(60) }).status, {
    phase: 'Pending',
    run: 3,
  })
})

t.test('stop: Deleted with Stopped or the stop reason; the record and its times stay', async (t) => {
  const { running, related, ready } = runningAt0()
  const stopped = step(withSpec(running.parent, { desiredState: 'Stopped' }), {
    related,
    children: ready,
    now: at(100),
  })
  t.hasStrict(stopped.status, {
    phase: 'Deleted',
    reason: 'Stopped',
    message: 'The instance was stopped.',
    startedAt: '2026-11-22T12:00:00Z',
    admittedAt: '2026-11-22T12:00:00Z',
    finishedAt: '2026-11-22T12:01:40Z',
  })
  t.notOk(stopped.response.children.some((child) => child.kind === 'Service' || child.kind === 'Ingress'))

  const solved = step(withSpec(running.parent, { desiredState: 'Stopped', stopReason: 'Solved' }), {
    related,
    children: ready,
    now: at(100),
  })
  t.hasStrict(solved.status, { phase: 'Deleted', reason: 'Solved', message: 'The instance was stopped: "Solved".' })
  t.hasStrict(conditionOf(solved.status, 'Expired'), { status: 'False' })

  const resumedWithoutRestart = step(withSpec(stopped.parent, { desiredState: 'Running' }), { related, now: at(200) })
  t.hasStrict(
    resumedWithoutRestart.status,
    { phase: 'Deleted', reason: 'Stopped' },
    'a finished run needs spec.restarts to relaunch',
  )
  const stoppedRestart = step(withSpec(stopped.parent, { restarts: 1 }), { related, now: at(200) })
  t.hasStrict(stoppedRestart.status, { phase: 'Deleted', run: 0 }, 'a restart is not consumed while Stopped')
  const relaunched = step(withSpec(stopped.parent, { desiredState: 'Running', restarts: 1 }), { related, now: at(200) })
  t.hasStrict(relaunched.status, { phase: 'Pending', run: 1 })
})

t.test('deadlines: spec.deadline and availableUntil cap expiresAt and end the instance', async (t) => {
  const { running, related, ready } = runningAt0({}, { availableUntil: '2026-11-22T12:10:00Z' })
  t.equal(running.status.expiresAt, '2026-11-22T12:10:00Z')
  t.equal(step(running.parent, { related, children: ready, now: at(599) }).status.phase, 'Running')
  t.hasStrict(step(running.parent, { related, children: ready, now: at(600) }).status, {
    phase: 'Deleted',
    reason: 'PastDeadline',
  })

  const late = step(challenge({ spec: { deadline: '2026-11-22T11:59:00Z' } }), { related: [webDefinition()] })
  t.hasStrict(late.status, { phase: 'Deleted', reason: 'PastDeadline', finishedAt: '2026-11-22T12:00:00Z' })
  t.strictSame(late.response.children, [], 'never started')

  const pending = step(challenge({ spec: { deadline: '2026-11-22T12:02:00Z' } }), { related: [webDefinition()] })
  t.hasStrict(pending.status, { phase: 'Pending', expiresAt: '2026-11-22T12:02:00Z' })
  t.equal(pending.response.resyncAfterSeconds, 120, 'woken at the deadline, before the startup timeout')
})

t.test('availableFrom holds the instance Pending/NotYetAvailable and wakes it on time', async (t) => {
  const related = [webDefinition({ availableFrom: '2026-11-22T12:10:00Z' })]
  const early = step(challenge(), { related })
  t.hasStrict(early.status, {
    phase: 'Pending',
    reason: 'NotYetAvailable',
    message: 'The challenge opens at 2026-11-22T12:10:00Z.',
  })
  t.strictSame(early.response.children, [])
  t.notOk('admittedAt' in early.status)
  t.equal(early.response.resyncAfterSeconds, 300)
  t.equal(step(early.parent, { related, now: at(599) }).response.resyncAfterSeconds, 1)
  const open = step(early.parent, { related, now: at(600) })
  t.hasStrict(open.status, { phase: 'Pending', reason: 'Starting', admittedAt: '2026-11-22T12:10:00Z' })
})

t.test('prepull Hold: Pending/ImagesPulling without budget until the images are on every node', async (t) => {
  const images = (state: string, ready = [1, 2]) => ({
    images: {
      state,
      since: '2026-11-22T11:00:00Z',
      nodes: 3,
      images: ready.map((count, index) => ({ image: `i${index}`, desired: 3, ready: count, failed: 0, failures: [] })),
    },
  })
  const held = (status?: Json, spec: Json = { prepull: 'Hold' }) => [
    { ...webDefinition(spec), ...(status === undefined ? {} : { status }) },
  ]
  const early = step(challenge(), { related: held(images('Pulling')) })
  t.strictSame(
    { phase: early.status.phase, reason: early.status.reason, message: early.status.message },
    {
      phase: 'Pending',
      reason: 'ImagesPulling',
      message: "The challenge's images are on 1 of 3 nodes; the instance starts once they are on every one.",
    },
  )
  t.strictSame(early.response.children, [])
  t.notOk('admittedAt' in early.status, 'not admitted: no budget held')
  t.strictSame(
    step(challenge(), { related: held(undefined) }).status.message,
    "The challenge's images are being pulled onto the nodes; the instance starts once they are there.",
    'no report yet',
  )
  // A status written by an older hook or by hand: what it cannot say reads as nothing yet, or as no node ready.
  const odd = (status: Json) => step(challenge(), { related: held({ images: status }) }).status.message
  const pulling = "The challenge's images are being pulled onto the nodes; the instance starts once they are there."
  t.strictSame(
    [
      odd({ state: 'Pulling', nodes: 0, images: [{ image: 'i0', ready: 0 }] }),
      odd({ state: 'Pulling', nodes: 2, images: [] }),
      odd({
        state: 'Pulling',
        nodes: 2,
        images: [
          { image: 'i0', ready: 'two' },
          { image: 'i1', ready: 2 },
        ],
      }),
    ],
    [pulling, pulling, "The challenge's images are on 0 of 2 nodes; the instance starts once they are on every one."],
  )
  t.strictSame(
    step(challenge(), { related: held(images('Failed', [3, 0])) }).status.reason,
    'ImagesPulling',
    'a node that cannot pull holds it too',
  )
  const ready = step(early.parent, { related: held(images('Ready', [3, 3])), now: at(60) })
  t.strictSame([ready.status.reason, ready.status.admittedAt], ['Starting', '2026-11-22T12:01:00Z'])
  const later = step(ready.parent, { related: held(images('Pulling')), now: at(70) })
  t.strictSame(later.status.reason, 'Starting', 'once admitted, never held again')
  t.strictSame(
    step(challenge(), { related: held(images('Pulling'), { prepull: 'Pull' }) }).status.reason,
    'Starting',
    'Pull never holds',
  )
  const expired = step(early.parent, { related: held(images('Pulling')), now: at(1800) })
  t.strictSame(
    [expired.status.phase, expired.status.reason, expired.status.message],
    ['Deleted', 'Expired', "The instance waited for the challenge's images longer than its lifetime."],
  )
  t.equal(early.response.resyncAfterSeconds, 300, 'woken for its give-up time, at most MAX_RESYNC_SECONDS away')
})

/** A sibling Challenge of alice as the customize hook returns it; its status carries its cost (1 unless given). */
function sibling(
  name: string,
  status: Json | undefined,
  options: { createdAt?: string; spec?: Json; definition?: string; deleting?: boolean } = {},
): KubeObject {
  return challenge({
    name,
    definition: options.definition ?? 'web-login',
    createdAt: options.createdAt ?? '2026-11-22T10:00:00Z',
    ...(status ? { status: { cost: 1, ...status } } : {}),
    spec: options.spec ?? {},
    ...(options.deleting ? { deletionTimestamp: '2026-11-22T11:59:00Z' } : {}),
  })
}

t.test('owner budget: over budget means Pending/Queued with no children, admitted when a sibling ends', async (t) => {
  const config = { ownerBudget: 2 }
  const holding = [
    sibling('a', { phase: 'Running', admittedAt: '2026-11-22T11:00:00Z' }),
    sibling('b', { phase: 'Pending', admittedAt: '2026-11-22T11:30:00Z' }),
  ]
  const related = [webDefinition(), ...holding]
  const queued = step(challenge(), { related, config })
  t.hasStrict(queued.status, {
    phase: 'Pending',
    reason: 'Queued',
    message: 'Waiting for another of your instances to end: 2 of your 2 units are in use, and this challenge needs 1.',
  })
  // What is held, not the budget: with a budget of 3, the two siblings hold 2 and this one (cost 2) does not fit.
  const costly = step(challenge(), { related: [webDefinition({ cost: 2 }), ...holding], config: { ownerBudget: 3 } })
  t.equal(
    costly.status.message,
    'Waiting for another of your instances to end: 2 of your 3 units are in use, and this challenge needs 2.',
  )
  const unknown = step(challenge(), { related: [webDefinition(), sibling('a', undefined)], config: { ownerBudget: 1 } })
  t.hasStrict(
    unknown.status,
    { reason: 'Queued', message: 'Waiting for your other instances to report their cost.' },
    'a sibling ahead whose cost is not known yet',
  )
  t.strictSame(
    unknown.response.resyncAfterSeconds,
    5,
    'looked at again in 5 s, should the notice of the cost write be lost',
  )
  t.strictSame(queued.response.children, [])
  t.notOk('admittedAt' in queued.status)
  t.equal(queued.response.resyncAfterSeconds, 300)
  t.hasStrict(queued.status.conditions, [{ type: 'Admitted', status: 'False', reason: 'Queued' }])

  const ended = [holding[0] as KubeObject, sibling('b', { phase: 'Deleted', admittedAt: '2026-11-22T11:30:00Z' })]
  const admitted = step(queued.parent, { related: [webDefinition(), ...ended], config, now: at(30) })
  t.hasStrict(admitted.status, { phase: 'Pending', reason: 'Starting', admittedAt: '2026-11-22T12:00:30Z' })
})

t.test('owner budget: admission order is deterministic (admittedAt, creation, name), first fit', async (t) => {
  const config = { ownerBudget: 1 }
  // Two new instances created at the same second: only the one with the smaller name wins, whichever asks.
  const mine = challenge({ name: 'web-login-u-alice', createdAt: '2026-11-22T11:59:00Z' })
  const waiting = { phase: 'Pending', reason: 'Queued' }
  const theirs = sibling('aaa-u-alice', waiting, { createdAt: '2026-11-22T11:59:00Z' })
  t.hasStrict(step(mine, { related: [webDefinition(), theirs], config }).status, { reason: 'Queued' })
  const zzz = sibling('zzz-u-alice', waiting, { createdAt: '2026-11-22T11:59:00Z' })
  t.hasStrict(step(mine, { related: [webDefinition(), zzz], config }).status, { reason: 'Starting' })
  const older = sibling('zzz-u-alice', waiting, { createdAt: '2026-11-22T11:58:00Z' })
  t.hasStrict(
    step(mine, { related: [webDefinition(), older], config }).status,
    { reason: 'Queued' },
    'earlier creation wins',
  )
  const admittedLater = sibling(
    'aaa-u-alice',
    { phase: 'Pending', admittedAt: '2026-11-22T11:59:00Z' },
    { createdAt: '2026-11-22T12:00:00Z' },
  )
  t.hasStrict(
    step(mine, { related: [webDefinition(), admittedLater], config }).status,
    { reason: 'Queued' },
    'an admitted instance keeps its slot',
  )

  // First fit: a big waiting instance does not block a small one behind it.
  const big = sibling('big-u-alice', { ...waiting, cost: 3 }, { createdAt: '2026-11-22T10:00:00Z', definition: 'big' })
  t.hasStrict(step(mine, { related: [webDefinition(), big], config: { ownerBudget: 2 } }).status, {
    reason: 'Starting',
  })

  // Siblings that do not hold or wait for budget.
  const ignored = [
    sibling('s1', { phase: 'Error', reason: 'CrashLoopBackOff', admittedAt: '2026-11-22T11:00:00Z' }),
    sibling('s2', { phase: 'Running', admittedAt: '2026-11-22T11:00:00Z' }, { spec: { desiredState: 'Stopped' } }),
    sibling('s3', { phase: 'Running', admittedAt: '2026-11-22T11:00:00Z' }, { deleting: true }),
    sibling('s4', { phase: 'Pending', reason: 'NotYetAvailable' }),
    {
      ...sibling('s5', { phase: 'Running', admittedAt: '2026-11-22T11:00:00Z' }),
      spec: { definitionRef: { name: 'web-login' }, owner: { kind: 'Team', id: 'alice' } },
    },
    sibling('web-login-u-alice', { phase: 'Running', admittedAt: '2026-11-22T11:00:00Z' }),
  ]
  t.hasStrict(step(mine, { related: [webDefinition(), ...ignored], config }).status, { reason: 'Starting' })

  // A relaunching sibling competes as a newcomer (its old admission does not count).
  const relaunching = sibling(
    'aaa-u-alice',
    { phase: 'Deleted', run: 0, admittedAt: '2026-11-22T10:00:00Z' },
    { spec: { restarts: 1 }, createdAt: '2026-11-22T11:59:30Z' },
  )
  t.hasStrict(step(mine, { related: [webDefinition(), relaunching], config }).status, { reason: 'Starting' })
  const free = webDefinition({ cost: 0 })
  const holder = sibling('aaa-u-alice', {
    phase: 'Running',
    admittedAt: '2026-11-22T11:00:00Z',
    startedAt: '2026-11-22T11:01:00Z',
  })
  t.hasStrict(
    step(mine, { related: [free, holder], config }).status,
    { reason: 'Starting' },
    'a free challenge always fits',
  )
})

t.test(
  "owner budget: a sibling's cost is its status.cost; one not written yet makes the instances after it wait",
  async (t) => {
    const mine = challenge({ name: 'web-login-u-alice', createdAt: '2026-11-22T11:59:00Z' })
    const definition = webDefinition({ cost: 2 })
    const first = prepared(mine, { related: [definition], config: { ownerBudget: 3 } })
    t.hasStrict(
      first.status,
      { phase: 'Pending', reason: 'Starting', cost: 2 },
      "every sync writes the definition's cost",
    )
    // The catalogue is not in the request: a sibling of a 2-unit definition is judged by the 2 in its status.
    const costly = (cost: number) =>
      sibling('aaa-u-alice', {
        phase: 'Running',
        admittedAt: '2026-11-22T11:00:00Z',
        startedAt: '2026-11-22T11:01:00Z',
        cost,
      })
    t.hasStrict(
      step(mine, { related: [definition, costly(1)], config: { ownerBudget: 3 } }).status,
      { reason: 'Starting' },
      '1 + 2 fit in 3',
    )
    t.hasStrict(
      step(mine, { related: [definition, costly(2)], config: { ownerBudget: 3 } }).status,
      { reason: 'Queued' },
      '2 + 2 do not',
    )
    // Not written yet: a Challenge created earlier and not synced, or one last synced by an older release.
    const unsynced = challenge({ name: 'aaa-u-alice', createdAt: '2026-11-22T11:58:00Z' })
    t.hasStrict(
      step(mine, { related: [definition, unsynced], config: { ownerBudget: 10 } }).status,
      { reason: 'Queued' },
      'an earlier sibling of unknown cost: wait',
    )
    const legacy = challenge({
      name: 'zzz-u-alice',
      createdAt: '2026-11-22T12:30:00Z',
      status: { phase: 'Running', admittedAt: '2026-11-22T11:00:00Z', startedAt: '2026-11-22T11:01:00Z' },
    })
    t.hasStrict(
      step(mine, { related: [definition, legacy], config: { ownerBudget: 10 } }).status,
      { reason: 'Queued' },
      'a started sibling of unknown cost: wait',
    )
    const later = challenge({ name: 'zzz-u-alice', createdAt: '2026-11-22T12:30:00Z' })
    t.hasStrict(
      step(mine, { related: [definition, later], config: { ownerBudget: 3 } }).status,
      { reason: 'Starting' },
      'a later one of unknown cost does not matter',
    )
    for (const cost of [-1, 1.5, '2', null]) {
      const odd = sibling('aaa-u-alice', { phase: 'Running', admittedAt: '2026-11-22T11:00:00Z', cost })
      t.hasStrict(
        step(mine, { related: [definition, odd], config: { ownerBudget: 10 } }).status,
        { reason: 'Queued' },
        `a cost of ${JSON.stringify(cost)} is no cost`,
      )
    }
    // Errors, when the definition cannot be read, write no cost (they hold nothing).
    t.notOk('cost' in step(mine, { related: [] }).status, 'DefinitionNotFound: no cost')
  },
)

t.test(
  'owner budget: a challenge that costs more than the budget is an Error; a stale queue entry expires',
  async (t) => {
    const tooBig = step(challenge(), { related: [webDefinition({ cost: 5 })], config: { ownerBudget: 3 } })
    t.hasStrict(tooBig.status, {
      phase: 'Error',
      reason: 'OwnerBudgetExceeded',
      message: 'This challenge costs 5 units, more than the 3 units one owner may hold.',
    })

    const config = { ownerBudget: 1 }
    const related = [
      webDefinition({ lifetimeSeconds: 600 }),
      sibling('a', { phase: 'Running', admittedAt: '2026-11-22T10:00:00Z' }),
    ]
    const created = challenge({ createdAt: '2026-11-22T12:00:00Z' })
    const queued = step(created, { related, config })
    t.equal(queued.response.resyncAfterSeconds, 300)
    t.equal(step(queued.parent, { related, config, now: at(599) }).status.reason, 'Queued')
    const stale = step(queued.parent, { related, config, now: at(600) })
    t.match(stale.status, {
      phase: 'Deleted',
      reason: 'Expired',
      message: /waited for a free slot longer than its lifetime/,
    })

    // A relaunched run waits from the restart, not from creation.
    const relaunch = step(withSpec(stale.parent, { restarts: 1 }), { related, config, now: at(5000) })
    t.hasStrict(relaunch.status, { phase: 'Pending', reason: 'Queued', run: 1 })
    t.equal(step(relaunch.parent, { related, config, now: at(5599) }).status.reason, 'Queued')
    t.hasStrict(step(relaunch.parent, { related, config, now: at(5600) }).status, {
      phase: 'Deleted',
      reason: 'Expired',
    })
    const noCreation = { ...challenge(), metadata: { ...challenge().metadata, creationTimestamp: undefined } }
    t.equal(
      step(noCreation, { related, config }).response.resyncAfterSeconds,
      300,
      'without a creation time the wait starts now',
    )
  },
)

t.test('flags: PerInstance over the uid, Static copied from a labelled Secret, parameters as env', async (t) => {
  const perInstance = step(challenge({ uid: 'uid-1' }), { related: [webDefinition({ flag: { mode: 'PerInstance' } })] })
  const otherUid = step(challenge({ uid: 'uid-2' }), { related: [webDefinition({ flag: { mode: 'PerInstance' } })] })
  const flagOf = (s: Step) => (s.response.children[0] as unknown as Json & { data: { flag: string } }).data.flag
  t.not(flagOf(perInstance), flagOf(otherUid))
  t.not(flagOf(perInstance), flagOf(step(challenge({ uid: 'uid-1' }), { related: [webDefinition()] })))

  const staticDefinition = webDefinition({
    flag: { mode: 'Static', staticSecretRef: { name: 'web-static', key: 'value' } },
  })
  const staticSecret: KubeObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 'web-static',
      namespace: 'challenges',
      labels: { 'challenge-hooks.dev/definition': 'web-login' },
    },
    data: { value: Buffer.from('flag{static}').toString('base64') },
  }
  const copied = step(challenge(), { related: [staticDefinition, staticSecret] })
  t.equal(Buffer.from(flagOf(copied), 'base64').toString(), 'flag{static}')
  const missing = step(challenge(), { related: [staticDefinition] })
  t.match(missing.status, {
    phase: 'Error',
    reason: 'ConfigError',
    message:
      /flag Secret "web-static" \(key "value"\) was not found; it must carry the label challenge-hooks.dev\/definition=web-login/,
  })
  t.strictSame(missing.response.children, [])

  const parameters = prepared(challenge({ spec: { parameters: { LEVEL: 'hard', MODE: 'x' } } }), {
    related: [
      webDefinition({
        pod: {
          containers: [
            {
              name: 'web',
              image: 'x',
              env: [{ name: 'MODE', value: 'easy' }, { name: 'KEEP', value: '1' }, { name: 'EMPTY' }],
            },
          ],
        },
      }),
    ],
  })
  const podChild = parameters.response.children.find((child) => child.kind === 'Pod') as unknown as Json & {
    spec: { containers: Json[] }
  }
  t.strictSame(podChild.spec.containers[0]?.env, [
    { name: 'KEEP', value: '1' },
    { name: 'EMPTY', value: '' },
    { name: 'LEVEL', value: 'hard' },
    { name: 'MODE', value: 'x' },
    { name: 'FLAG', valueFrom: { secretKeyRef: { name: `${NAME}-flag`, key: 'flag' } } },
  ])
  const collides = step(challenge({ spec: { parameters: { FLAG: 'mine' } } }), { related: [webDefinition()] })
  t.hasStrict(collides.status, {
    phase: 'Error',
    reason: 'ConfigError',
    message: 'spec.parameters: FLAG is reserved for the flag.',
  })
})

t.test('no status field changes between two syncs of an unchanged world, at every stage', async (t) => {
  const related = [webDefinition()]
  const first = prepared(challenge(), { related })
  const ready = readyWorld(first.response.children)
  const running = step(first.parent, { related, children: ready, now: at(10) })
  const expired = step(running.parent, { related, children: [], now: at(5000) })
  // Each stage synced again later, with nothing changed in the world: the same status, byte for byte.
  const stages: [string, Step, KubeObject[], number][] = [
    ['starting', first, observedChildren(first.response.children), 20],
    ['running', running, ready, 20],
    ['deleted', expired, [], 6000],
  ]
  for (const [name, previous, children, later] of stages) {
    const again = step(previous.parent, { related, children, now: at(later) })
    t.equal(JSON.stringify(again.status), JSON.stringify(previous.status), name)
  }
})

t.test('a ConfigError of the world recovers once fixed; a run-ending one does not', async (t) => {
  const staticDefinition = webDefinition({
    flag: { mode: 'Static', staticSecretRef: { name: 'web-static', key: 'value' } },
  })
  const missing = step(challenge(), { related: [staticDefinition] })
  t.hasStrict(missing.status, { phase: 'Error', reason: 'ConfigError' })
  t.notOk('finishedAt' in missing.status, 'a world problem does not end the run')
  const again = step(missing.parent, { related: [staticDefinition], now: at(10) })
  t.strictSame(again.status, missing.status, 'nothing changes while the world stays the same')
  const secret: KubeObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 'web-static',
      namespace: 'challenges',
      labels: { 'challenge-hooks.dev/definition': 'web-login' },
    },
    data: { value: 'eA==' },
  }
  t.hasStrict(step(missing.parent, { related: [staticDefinition, secret], now: at(20) }).status, {
    phase: 'Pending',
    reason: 'Starting',
  })

  const first = prepared(challenge(), { related: [webDefinition()] })
  const broken = step(first.parent, {
    related: [webDefinition()],
    children: withPod(observedChildren(first.response.children), waitingPod(NAME, 0, 'CreateContainerConfigError')),
    now: at(5),
  })
  t.hasStrict(broken.status, { phase: 'Error', reason: 'ConfigError', finishedAt: '2026-11-22T12:00:05Z' })
  t.hasStrict(
    step(broken.parent, { related: [webDefinition()], now: at(60) }).status,
    { phase: 'Error', reason: 'ConfigError' },
    'sticky',
  )
})

t.test('owner budget: two instances admitted on stale views settle on one before anyone played', async (t) => {
  const config = { ownerBudget: 1 }
  // Each was admitted without seeing the other (Metacontroller's caches); now both are visible.
  const mine = challenge({
    createdAt: '2026-11-22T11:59:00Z',
    status: { phase: 'Pending', reason: 'Starting', admittedAt: '2026-11-22T12:00:02Z', run: 0 },
  })
  const earlier = sibling(
    'aaa-u-alice',
    { phase: 'Pending', admittedAt: '2026-11-22T12:00:01Z' },
    { createdAt: '2026-11-22T11:59:30Z' },
  )
  const demoted = step(mine, { related: [webDefinition(), earlier], config, now: at(3) })
  t.hasStrict(demoted.status, { phase: 'Pending', reason: 'Queued' })
  t.notOk('admittedAt' in demoted.status)
  t.strictSame(kinds(demoted.response), [], 'no workload while queued')
  // The other one, seeing this one admitted later, keeps its slot.
  const later = sibling(
    'zzz-u-alice',
    { phase: 'Pending', admittedAt: '2026-11-22T12:00:02Z' },
    { createdAt: '2026-11-22T11:58:00Z' },
  )
  const kept = step(
    challenge({ status: { phase: 'Pending', reason: 'Starting', admittedAt: '2026-11-22T12:00:01Z', run: 0 } }),
    {
      related: [webDefinition(), later],
      config,
      now: at(3),
    },
  )
  t.hasStrict(kept.status, { reason: 'Starting', admittedAt: '2026-11-22T12:00:01Z' })
  // A started instance holds its slot whatever the order: the one that has not started yields.
  const startedLater = sibling('zzz-u-alice', {
    phase: 'Running',
    admittedAt: '2026-11-22T12:00:09Z',
    startedAt: '2026-11-22T12:00:10Z',
  })
  const yields = step(
    challenge({ status: { phase: 'Pending', reason: 'Starting', admittedAt: '2026-11-22T12:00:01Z', run: 0 } }),
    {
      related: [webDefinition(), startedLater],
      config,
      now: at(20),
    },
  )
  t.hasStrict(yields.status, { reason: 'Queued' })
  // And a started instance itself is never sent back to the queue.
  const { running, related, ready } = runningAt0()
  const crowded = [...related, sibling('aaa-u-alice', { phase: 'Pending', admittedAt: '2026-11-22T11:00:00Z' })]
  t.hasStrict(step(running.parent, { related: crowded, children: ready, config, now: at(30) }).status, {
    phase: 'Running',
  })
})
