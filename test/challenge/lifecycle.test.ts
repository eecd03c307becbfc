// Rules of the lifecycle (src/challenge/lifecycle.ts, running.ts) that mutation testing found unchecked, one case
// each: the renewals a restart carries, what a run that timed out while ready reports, when an Error asks to be
// woken, a missing route rule, which Error reasons end a run (and that only an Error does), where a queue's wait
// starts, the words of each refused renewal, the operator's allowances reaching the definition, a started run whose
// pod is gone, a pod's Ready time on a clock more than 60 s ahead, and the images gate's end and words.
import t from 'tap'
import { formatTime } from '../../src/challenge/time.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { at, prepared, step } from '../helpers/drive.js'
import {
  CHILD_GROUPS,
  challenge,
  conditionOf,
  NAMESPACE,
  readyPodStatus,
  readyWorld,
  webDefinition,
  withPod,
  type Json,
} from '../helpers/world.js'

const T = (seconds: number) => formatTime(at(seconds).getTime())

/** A Running instance of web-login (definition `spec` merged), started at 30 s. */
function runningInstance(definition: Json = {}, spec: Json = {}) {
  const related = [webDefinition(definition)]
  const first = prepared(challenge({ spec }), { related })
  const children = readyWorld(first.response.children)
  const running = step(first.parent, { related, children, now: at(30) })
  return { related, children, running }
}

const renew = (running: ReturnType<typeof runningInstance>, renewals: number, seconds: number) =>
  step(
    { ...running.running.parent, spec: { ...running.running.parent.spec, renewals } },
    { related: running.related, children: running.children, now: at(seconds) },
  )

t.test('a restart: renewals asked before it belong to the old run, and the larger count is kept as seen', async (t) => {
  const base = { phase: 'Running', reason: 'Ready', run: 0, admittedAt: T(0), startedAt: T(30) }
  const rows: [string, Json, Json, Json][] = [
    [
      'more seen before than asked now',
      { renewalsSeen: 2, renewalsApplied: 2 },
      { renewals: 1 },
      { run: 1, renewalsSeen: 2, renewalsApplied: 0 },
    ],
    [
      'asked with the restart',
      { renewalsSeen: 0, renewalsApplied: 0 },
      { renewals: 3 },
      { run: 1, renewalsSeen: 3, renewalsApplied: 0 },
    ],
    [
      'no renewals in the spec',
      { renewalsSeen: 2, renewalsApplied: 1 },
      { renewals: undefined },
      { run: 1, renewalsSeen: 2, renewalsApplied: 0 },
    ],
  ]
  for (const [what, status, spec, expected] of rows) {
    const parent = challenge({ spec: { restarts: 1, ...spec }, status: { ...base, ...status } })
    t.match(step(parent, { related: [webDefinition()], now: at(60) }).status, expected, what)
  }
})

t.test('a run that times out while its workload is ready: no workload is reported ready any more', async (t) => {
  const related = [webDefinition()]
  const first = prepared(challenge(), { related })
  const noIngress = readyWorld(first.response.children).filter((child) => child.kind !== 'Ingress')
  const timedOut = step(first.parent, { related, children: noIngress, now: at(301) })
  t.hasStrict(timedOut.status, {
    phase: 'Error',
    reason: 'StartupTimeout',
    message: 'The instance did not become ready within 300 seconds.',
  })
  t.hasStrict(conditionOf(timedOut.status, 'WorkloadReady'), { status: 'False', reason: 'NoWorkload' })
  t.strictSame(
    timedOut.response.children.map((child) => child.kind).sort(),
    ['NetworkPolicy', 'Pod', 'Secret'],
    'the teardown begins: the Service goes first',
  )
})

t.test('an Error is not woken at a deadline', async (t) => {
  const over = step(challenge({ spec: { deadline: T(3600) } }), {
    related: [webDefinition({ cost: 5 })],
    config: { ownerBudget: 3 },
  })
  t.hasStrict(over.status, {
    phase: 'Error',
    reason: 'OwnerBudgetExceeded',
    message: 'This challenge costs 5 units, more than the 3 units one owner may hold.',
  })
  t.equal(over.response.resyncAfterSeconds, undefined)
})

t.test('an HTTP challenge without the child rule of its route is a ConfigError that names the rule', async (t) => {
  const groups = CHILD_GROUPS.filter((group) => !group.startsWith('Ingress.'))
  const answer = step(challenge(), { related: [webDefinition()], groups })
  t.hasStrict(answer.status, {
    phase: 'Error',
    reason: 'ConfigError',
    message:
      'This challenge cannot be exposed yet: the CompositeController has no child rule for Ingress.networking.k8s.io/v1 (the operator must install its routing component).',
  })
  t.strictSame(answer.response.children, [])
})

t.test(
  'only a run-ending Error ends the run: an Error of the world recovers, whatever else the status says',
  async (t) => {
    const previous = {
      phase: 'Error',
      reason: 'DefinitionNotFound',
      message: 'was missing',
      run: 0,
      finishedAt: T(-60),
    }
    const answer = step(challenge({ status: previous }), { related: [webDefinition()] })
    t.hasStrict(answer.status, { phase: 'Pending', reason: 'Starting' })
    const ended = step(challenge({ status: { ...previous, reason: 'StartupTimeout' } }), { related: [webDefinition()] })
    t.hasStrict(ended.status, { phase: 'Error', reason: 'StartupTimeout' }, 'a run-ending reason stays')
  },
)

t.test(
  'a queued instance waits from its creation (first run) or from its Admitted condition (a relaunch)',
  async (t) => {
    const config = { ownerBudget: 1 }
    const holder = challenge({
      name: 'other-u-alice',
      definition: 'other',
      status: { phase: 'Running', reason: 'Ready', run: 0, cost: 1, admittedAt: T(-100), startedAt: T(-90) },
    })
    const related = (...extra: KubeObject[]) => [webDefinition(), holder, ...extra]
    const since = (condition: Json[]) => ({ phase: 'Pending', reason: 'Queued', conditions: condition })
    const old = {
      type: 'WorkloadReady',
      status: 'False',
      reason: 'NoWorkload',
      message: '',
      lastTransitionTime: T(-3600),
    }
    const admittedRecently = {
      type: 'Admitted',
      status: 'False',
      reason: 'Queued',
      message: '',
      lastTransitionTime: T(-60),
    }
    const rows: [string, ReturnType<typeof challenge>, string][] = [
      [
        'a relaunch waits from its Admitted condition, not another',
        challenge({
          createdAt: T(-7200),
          spec: { restarts: 1 },
          status: { ...since([old, admittedRecently]), run: 1 },
        }),
        'Queued',
      ],
      [
        'a relaunch whose wait began a lifetime ago',
        challenge({
          createdAt: T(-7200),
          spec: { restarts: 1 },
          status: { ...since([{ ...admittedRecently, lastTransitionTime: T(-1800) }]), run: 1 },
        }),
        'Expired',
      ],
      [
        'a relaunch without an Admitted condition waits from now',
        challenge({ createdAt: T(-7200), spec: { restarts: 1 }, status: { ...since([]), run: 1 } }),
        'Queued',
      ],
      [
        'a first run waits from its creation, whatever its conditions say',
        challenge({ createdAt: T(-1800), status: { ...since([admittedRecently]), run: 0 } }),
        'Expired',
      ],
      ['a first run created recently', challenge({ createdAt: T(-60), status: { ...since([]), run: 0 } }), 'Queued'],
    ]
    for (const [what, parent, reason] of rows)
      t.hasStrict(step(parent, { related: related(), config }).status, { reason }, what)
  },
)

t.test('each refused renewal says why, word for word', async (t) => {
  const pending = step(challenge({ spec: { renewals: 1 } }), { related: [webDefinition()] })
  t.hasStrict(conditionOf(pending.status, 'RenewalAccepted'), {
    status: 'False',
    reason: 'NotRunning',
    message: 'Only a running instance can be renewed.',
  })

  const none = runningInstance({ maxRenewals: 0 })
  t.hasStrict(conditionOf(renew(none, 1, 60).status, 'RenewalAccepted'), {
    status: 'False',
    reason: 'MaxRenewalsReached',
    message: 'The instance was already renewed 0 times.',
  })

  const capped = runningInstance({}, { deadline: T(30 + 1800) })
  t.hasStrict(conditionOf(renew(capped, 1, 60).status, 'RenewalAccepted'), {
    status: 'False',
    reason: 'PastDeadline',
    message: 'The instance already runs until the challenge deadline.',
  })

  const accepted = renew(runningInstance(), 1, 600)
  t.hasStrict(conditionOf(accepted.status, 'RenewalAccepted'), {
    status: 'True',
    reason: 'Renewed',
    message: 'Renewal 1 of 2 accepted.',
  })
  t.hasStrict(accepted.status, {
    expiresAt: T(600 + 1800),
    lastRenewedAt: T(600),
    renewalsApplied: 1,
    message: `The instance is running until ${T(600 + 1800)}.`,
  })
})

t.test('only an Error ends a run: a run-ending reason under another phase does not', async (t) => {
  for (const phase of ['Pending', 'Running']) {
    const previous = { phase, reason: 'StartupTimeout', message: 'written by hand', run: 0, finishedAt: T(-60) }
    const answer = step(challenge({ status: previous }), { related: [webDefinition()] })
    t.strictSame(
      [answer.status.phase, answer.status.reason, answer.status.message],
      ['Pending', 'Starting', 'The instance is starting.'],
      `a ${phase} status`,
    )
  }
})

t.test("a RuntimeClass and an extended resource the operator allows are the definition's to use", async (t) => {
  const definition = webDefinition({
    security: { runtimeClassName: 'kata' },
    pod: {
      containers: [
        {
          name: 'web',
          image: 'ghcr.io/example/web-login:1.0',
          ports: [{ containerPort: 8080 }],
          resources: { requests: { 'nvidia.com/gpu': '1' }, limits: { 'nvidia.com/gpu': '1' } },
        },
      ],
    },
  })
  const config = { allowedRuntimeClasses: ['kata'], allowedExtendedResources: ['nvidia.com/gpu'] }
  const answer = prepared(challenge(), { related: [definition], config })
  t.strictSame([answer.status.phase, answer.status.reason], ['Pending', 'Starting'])
  const pod = answer.response.children.find((child) => child.kind === 'Pod')
  t.equal((pod?.spec as Json | undefined)?.runtimeClassName, 'kata')
})

t.test('a started run whose pod is gone is Pending until its lifetime ends, never a StartupTimeout', async (t) => {
  // Admitted at 0, Running at 30; at 400 (past admittedAt + 300 s) its pod was evicted and is not observed.
  const instance = runningInstance()
  const gone = withPod(instance.children, undefined)
  const answer = step(instance.running.parent, { related: instance.related, children: gone, now: at(400) })
  t.hasStrict(answer.status, {
    phase: 'Pending',
    reason: 'Starting',
    message: 'The instance is starting.',
    startedAt: T(30),
    expiresAt: T(30 + 1800),
  })
  t.ok(
    answer.response.children.some((child) => child.kind === 'Pod'),
    'the Pod is asked for again, in the same run',
  )
})

t.test('a started run whose pod is gone is not judged against the namespace again', async (t) => {
  // A Baseline pod, Running at 30; then the namespace enforces restricted and the pod is evicted.
  const instance = runningInstance({ security: { profile: 'Baseline' } })
  const restricted: KubeObject = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: NAMESPACE, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
  }
  const answer = step(instance.running.parent, {
    related: [...instance.related, restricted],
    children: withPod(instance.children, undefined),
    now: at(60),
  })
  t.hasStrict(answer.status, { phase: 'Pending', reason: 'Starting', startedAt: T(30) })
})

t.test('a pod ready since a time on a wrong clock: more than 60 s ahead counts as now', async (t) => {
  const related = [webDefinition()]
  const first = prepared(challenge(), { related })
  /** The world of the prepared instance, its pod ready since `seconds` (from drive.ts's T0). */
  const readyAt = (seconds: number) => {
    const time = T(seconds)
    const status = readyPodStatus([{ name: 'web' }], { scheduled: time, started: time, ready: time })
    return readyWorld(first.response.children).map((child) => (child.kind === 'Pod' ? { ...child, status } : child))
  }
  const exactly60 = step(first.parent, { related, children: readyAt(30 + 60), now: at(30) })
  t.hasStrict(exactly60.status, { phase: 'Pending', reason: 'Starting' }, '60 s ahead: an event to wait for')
  t.equal(exactly60.response.resyncAfterSeconds, 62.5, 'woken when it has settled (ENDPOINT_SETTLE_MS 2.5 s)')
  const ahead61 = step(first.parent, { related, children: readyAt(30 + 61), now: at(30) })
  t.hasStrict(ahead61.status, { phase: 'Running', reason: 'Ready', startedAt: T(30) }, '61 s ahead: Running now')
  // Past the startup deadline (admitted at 0, 300 s) the instance that is reachable now is Running, not timed out.
  const late = step(first.parent, { related, children: readyAt(400 + 61), now: at(400) })
  t.hasStrict(late.status, { phase: 'Running', reason: 'Ready', startedAt: T(400) }, 'reachable now, past startup')
  const lateOnTime = step(first.parent, { related, children: readyAt(390), now: at(400) })
  t.hasStrict(lateOnTime.status, { phase: 'Running', reason: 'Ready', startedAt: T(400) }, 'a sync that came late')
})

t.test(
  'a free definition that asks for more than one COST_UNIT: DefinitionInvalid, no children, no slot',
  async (t) => {
    const free = webDefinition({
      cost: 0,
      pod: {
        containers: [
          { name: 'web', image: 'ghcr.io/example/web-login:1.0', ports: [{ containerPort: 8080 }] },
          { name: 'miner', image: 'ghcr.io/example/miner:1.0', resources: { limits: { cpu: '2' } } },
        ],
      },
    })
    const refused = prepared(challenge(), { related: [free] })
    t.strictSame([refused.status.phase, refused.status.reason], ['Error', 'DefinitionInvalid'])
    t.match(
      refused.status.message,
      /spec\.cost: the cpu limits of all containers add up to 2500m, above the 2 that cost 0 may hold/,
    )
    t.strictSame(refused.response.children, [], 'nothing is created')
    const unit = { cpu: '3', memory: '2Gi', 'ephemeral-storage': '2Gi' }
    const allowed = prepared(challenge(), { related: [free], config: { costUnit: unit } })
    t.strictSame([allowed.status.phase, allowed.status.reason], ['Pending', 'Starting'], "within the operator's unit")
  },
)

t.test('prepull Hold: a first run waits for the images at most its lifetime from its creation', async (t) => {
  const related = [{ ...webDefinition({ prepull: 'Hold' }), status: { images: { state: 'Pulling' } } }]
  const made = challenge({ createdAt: T(-60), spec: { lifetimeSeconds: 600 } })
  const before = step(made, { related, now: at(539.9) })
  t.strictSame([before.status.phase, before.status.reason], ['Pending', 'ImagesPulling'])
  const end = step(before.parent, { related, now: at(540) })
  t.strictSame(
    [end.status.phase, end.status.reason, end.status.message],
    ['Deleted', 'Expired', "The instance waited for the challenge's images longer than its lifetime."],
  )
})

t.test('prepull Hold: a report of the images without a node count reads as nothing pulled yet', async (t) => {
  const images = { state: 'Pulling', images: [{ image: 'i0', desired: 3, ready: 2, failed: 0, failures: [] }] }
  const related = [{ ...webDefinition({ prepull: 'Hold' }), status: { images } }]
  t.strictSame(
    step(challenge(), { related }).status.message,
    "The challenge's images are being pulled onto the nodes; the instance starts once they are there.",
  )
})
