/**
 * The timers combined, as a property: generated worlds (the definition's lifetime, startup timeout, maxRenewals,
 * availableFrom and availableUntil; the Challenge's own lifetime and deadline; the settle time) and generated clocks
 * (syncs at random gaps, and exactly at, just before and just after the instant the model says the answer changes),
 * with the platform's buttons pressed along the way (renew, stop, restart), the pod becoming Ready or not, and its
 * Service or route deleted and created again (so the path comes after Ready, also while Running). Each
 * answer of the pure `sync`, driven through time (test/helpers/timeline.ts), must be what the contract's rules say,
 * as test/helpers/timer-model.ts writes them from docs/api.md without calling src/: the phase and reason, every time
 * and counter of the status, the verdict on a renewal, whether the workload is answered, and when to sync again.
 */
/* eslint-disable @typescript-eslint/no-unnecessary-type-assertion -- the casts give fast-check's arbitraries the
   literal types the model's events need; the type checker refuses the file without them (the linter's view differs) */
import fc from 'fast-check'
import t from 'tap'
import { conditionOf, type Json } from '../helpers/world.js'
import { expectedResync, TimerModel, type Expected, type TimerFacts, type TimerSpec } from '../helpers/timer-model.js'
import { iso, Timeline } from '../helpers/timeline.js'
import { runs, SEED } from './world-gen.js'
import { T0 } from '../helpers/instant.js'

const at = (min: number, max: number) => fc.integer({ min, max }).map((seconds) => T0 + seconds * 1000)
const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined, freq: 2 })

type Action = 'none' | 'ready' | 'unready' | 'renew' | 'stop' | 'solved' | 'restart' | 'bump' | 'reroute' | 'reservice'
type Wait = { gap: number } | { aim: -1 | 0 | 1 }

const event = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      // Half the syncs land on the instant the model says the answer changes (or a second either side of it).
      wait: fc.oneof(
        fc.integer({ min: 1, max: 400 }).map((gap): Wait => ({ gap })),
        fc.constantFrom<Wait>({ aim: 0 }, { aim: 0 }, { aim: -1 }, { aim: 1 }),
      ),
      action: fc.constantFrom<Action>(
        'none',
        'ready',
        'ready',
        'unready',
        'renew',
        'renew',
        'stop',
        'solved',
        'restart',
        'bump',
        'reroute',
        'reservice',
      ),
    }),
  },
  // A renewal that arrives exactly when the answer changes by itself: at expiry, among others.
  { weight: 1, arbitrary: fc.constant({ wait: { aim: 0 } as Wait, action: 'renew' as Action }) },
  // A renewal some time into the run.
  {
    weight: 1,
    arbitrary: fc.integer({ min: 10, max: 300 }).map((gap) => ({ wait: { gap } as Wait, action: 'renew' as Action })),
  },
)

/**
 * Most lives begin as a player's does: the first sync (its children), the next (the Pod, once its flag Secret and
 * policies are its own), then the pod Ready a few seconds later. Some then lose their route or Service just after
 * Ready, so the path that makes them Running is created after the pod became Ready.
 */
const start = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.integer({ min: 1, max: 30 }).map((gap) => [
      { wait: { gap: 1 } as Wait, action: 'none' as Action },
      { wait: { gap: 1 } as Wait, action: 'none' as Action },
      { wait: { gap } as Wait, action: 'ready' as Action },
    ]),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 1, max: 30 }), fc.constantFrom<Action>('reroute', 'reservice'))
      .map(([gap, lost]) => [
        { wait: { gap: 1 } as Wait, action: 'none' as Action },
        { wait: { gap: 1 } as Wait, action: 'none' as Action },
        { wait: { gap } as Wait, action: 'ready' as Action },
        { wait: { gap: 1 } as Wait, action: lost },
        // A second after the path came back, and at the instant the model says it has settled.
        { wait: { gap: 1 } as Wait, action: 'none' as Action },
        { wait: { aim: 0 } as Wait, action: 'none' as Action },
      ]),
  },
  { weight: 1, arbitrary: fc.constant([]) },
)

const anyWorld = fc.record({
  definition: fc.record({
    lifetimeSeconds: maybe(fc.integer({ min: 60, max: 1200 })),
    startupTimeoutSeconds: maybe(fc.integer({ min: 30, max: 600 })),
    maxRenewals: maybe(fc.integer({ min: 0, max: 3 })),
    availableFrom: maybe(at(-300, 600)),
    availableUntil: maybe(at(60, 2400)),
  }),
  spec: fc.record({ lifetimeSeconds: maybe(fc.integer({ min: 60, max: 1200 })), deadline: maybe(at(60, 3600)) }),
  settleMs: fc.constantFrom(0, 1000, 2500),
  events: fc.tuple(start, fc.array(event, { minLength: 1, maxLength: 30 })).map(([first, rest]) => [...first, ...rest]),
})

/**
 * Worlds shaped to reach a renewal that availableUntil caps: a short lifetime, availableUntil a little after the
 * first expiry (a renewal can still extend the run, but not by a whole lifetime), and a renewal between the two.
 */
const cappedWorld = fc
  .record({
    lifetime: fc.integer({ min: 120, max: 600 }),
    after: fc.integer({ min: 30, max: 60 }),
    deadline: maybe(at(3000, 3600)),
    base: anyWorld,
    rest: fc.array(event, { maxLength: 10 }),
  })
  .map(({ lifetime, after, deadline, base, rest }) => ({
    ...base,
    definition: {
      ...base.definition,
      lifetimeSeconds: lifetime,
      maxRenewals: undefined,
      availableFrom: undefined,
      availableUntil: T0 + (40 + lifetime + after) * 1000,
    },
    spec: { lifetimeSeconds: undefined, deadline },
    // Running from 12 s until 12 s + lifetime; renewed 10 s before that, when a whole lifetime passes availableUntil.
    events: [
      { wait: { gap: 1 } as Wait, action: 'none' as Action },
      { wait: { gap: 1 } as Wait, action: 'none' as Action },
      { wait: { gap: 5 } as Wait, action: 'ready' as Action },
      { wait: { gap: 5 } as Wait, action: 'none' as Action },
      { wait: { gap: lifetime - 10 } as Wait, action: 'renew' as Action },
      ...rest,
    ],
  }))

const worlds = fc.oneof({ weight: 4, arbitrary: anyWorld }, { weight: 1, arbitrary: cappedWorld })

/** What the hook answered, in the model's terms (times as the status writes them). */
function observedAnswer(status: Json, children: readonly Json[], resync: number | undefined) {
  const renewal = conditionOf(status, 'RenewalAccepted')
  return {
    phase: status.phase,
    reason: status.reason,
    run: status.run,
    admittedAt: status.admittedAt,
    startedAt: status.startedAt,
    lastRenewedAt: status.lastRenewedAt,
    finishedAt: status.finishedAt,
    expiresAt: status.expiresAt,
    renewalsSeen: status.renewalsSeen,
    renewalsApplied: status.renewalsApplied,
    renewalCondition: renewal === undefined ? undefined : `${String(renewal.status)}/${String(renewal.reason)}`,
    workload: children.some((child) => child.kind === 'Service'),
    resyncAfterSeconds: resync,
  }
}

/** The model's expectation in the same terms; `renewalCondition` is the last verdict of this run. */
function expectedAnswer(expected: Expected, renewalCondition: string | undefined, resync: number | undefined) {
  const time = (ms: number | undefined) => (ms === undefined ? undefined : iso(ms))
  return {
    phase: expected.phase,
    reason: expected.reason,
    run: expected.run,
    admittedAt: time(expected.admittedAt),
    startedAt: time(expected.startedAt),
    lastRenewedAt: time(expected.lastRenewedAt),
    finishedAt: time(expected.finishedAt),
    expiresAt: time(expected.workload ? expected.expiresAt : undefined),
    renewalsSeen: expected.renewalsSeen,
    renewalsApplied: expected.renewalsApplied,
    renewalCondition,
    workload: expected.workload,
    resyncAfterSeconds: resync,
  }
}

/** How often each combination the issue names was reached: the property must not pass having checked none. */
const seen = {
  syncs: 0,
  renewed: 0,
  renewedWithOwnLifetime: 0,
  renewalCappedByAvailableUntil: 0,
  renewalAtExpiry: 0,
  expiredAtTheInstant: 0,
  pastDeadlineByAvailableUntil: 0,
  pastDeadlineWithBoth: 0,
  startupTimeout: 0,
  stoppedWhileRunning: 0,
  relaunched: 0,
  woken: 0,
  settlingOnAPathAfterReady: 0,
  runningOnAPathAfterReady: 0,
  pathRecreatedWhileRunning: 0,
}

t.test("timers: every answer through time is what the contract's rules say", async (t) => {
  fc.assert(
    fc.property(worlds, (world) => {
      const line = new Timeline(world.definition, world.spec, { endpointSettleMs: world.settleMs }, T0 - 60_000)
      const model = new TimerModel(world.definition, world.settleMs)
      let now = T0
      let expected: Expected | undefined
      let renewalCondition: string | undefined
      const history: string[] = []
      for (const { wait, action } of world.events) {
        const previous = expected
        if ('gap' in wait || previous?.next === undefined) now += ('gap' in wait ? wait.gap : 60) * 1000
        else now = Math.max(now + 1000, Math.ceil(previous.next / 1000) * 1000 + wait.aim * 1000)
        const run = model.run
        if (action === 'ready') line.ready(now)
        if (action === 'unready') line.unready()
        if (action === 'renew') line.spec.renewals += 1
        if (action === 'stop' || action === 'solved')
          Object.assign(line.spec, { stopped: true, stopReason: action === 'solved' ? 'Solved' : undefined })
        if (action === 'restart') Object.assign(line.spec, { stopped: false, restarts: line.spec.restarts + 1 })
        if (action === 'bump') line.spec.restarts += 1
        if (action === 'reroute') line.lose('Ingress')
        if (action === 'reservice') line.lose('Service')
        const facts = { pod: line.pod(), pathSince: line.pathSince() }
        const response = line.sync(now)
        expected = model.sync(now, { ...line.spec } as TimerSpec, facts)
        if (model.run !== run) renewalCondition = undefined
        if (expected.renewal !== undefined)
          renewalCondition = `${expected.renewal === 'Renewed' ? 'True' : 'False'}/${expected.renewal}`
        history.push(
          `${iso(now)} ${action}: ${expected.phase}/${expected.reason}${expected.renewal ? ` renewal ${expected.renewal}` : ''}`,
        )
        const resync = expectedResync(expected.next, now, line.config.maxResyncSeconds)
        const want = expectedAnswer(expected, renewalCondition, resync)
        const got = observedAnswer(response.status as Json, response.children as Json[], response.resyncAfterSeconds)
        if (JSON.stringify(got) !== JSON.stringify(want)) {
          throw new Error(
            `after ${history.join('; ')}\n  the model: ${JSON.stringify(want)}\n  the hook:  ${JSON.stringify(got)}`,
          )
        }
        count(expected, previous, action, world, now, run !== model.run, facts)
      }
    }),
    { seed: SEED, numRuns: runs(300) },
  )
  t.comment(`checked: ${JSON.stringify(seen)}`)
  // Every combination was reached, so the property checked each at least once (at FUZZ_RUNS=50 too).
  for (const [what, times] of Object.entries(seen)) t.ok(times > 0, `${what}: ${times}`)
})

type World = typeof worlds extends fc.Arbitrary<infer W> ? W : never

function count(
  expected: Expected,
  previous: Expected | undefined,
  action: Action,
  world: World,
  now: number,
  newRun: boolean,
  facts: TimerFacts,
): void {
  seen.syncs += 1
  const readyAt = facts.pod?.run === expected.run ? facts.pod.readyAt : undefined
  if (readyAt !== undefined && facts.pathSince !== undefined && facts.pathSince > readyAt) {
    if (expected.phase === 'Pending' && expected.reason === 'Starting') seen.settlingOnAPathAfterReady += 1
    if (expected.phase === 'Running' && previous?.phase === 'Pending') seen.runningOnAPathAfterReady += 1
  }
  if (previous?.phase === 'Running' && (action === 'reroute' || action === 'reservice') && expected.phase === 'Pending')
    seen.pathRecreatedWhileRunning += 1
  const { availableUntil } = world.definition
  const { deadline, lifetimeSeconds } = world.spec
  if (expected.renewal === 'Renewed') {
    seen.renewed += 1
    if (lifetimeSeconds !== undefined) seen.renewedWithOwnLifetime += 1
    if (availableUntil !== undefined && expected.expiresAt === availableUntil) seen.renewalCappedByAvailableUntil += 1
  }
  const atExpiry = previous?.phase === 'Running' && previous.expiresAt === now
  if (atExpiry && expected.phase === 'Deleted') seen.expiredAtTheInstant += 1
  if (atExpiry && action === 'renew') seen.renewalAtExpiry += 1
  if (expected.reason === 'PastDeadline' && previous?.phase !== 'Deleted') {
    if (availableUntil !== undefined && (deadline === undefined || availableUntil < deadline))
      seen.pastDeadlineByAvailableUntil += 1
    if (availableUntil !== undefined && deadline !== undefined) seen.pastDeadlineWithBoth += 1
  }
  if (expected.reason === 'StartupTimeout' && previous?.phase !== 'Error') seen.startupTimeout += 1
  if (previous?.phase === 'Running' && expected.phase === 'Deleted' && (action === 'stop' || action === 'solved'))
    seen.stoppedWhileRunning += 1
  if (newRun) seen.relaunched += 1
  if (previous?.reason === 'NotYetAvailable' && expected.reason !== 'NotYetAvailable') seen.woken += 1
}
