// End to end, over real HTTP: what a player reads when the workload cannot start, and a missing definition.
import t, { type Test } from 'tap'
import type { PodFailureMode } from '../support/simulator/index.js'
import { conditionOf, netcatChildren, NS, secondsUntil, startWorld, webChildren, type World } from './harness.js'

const NAME = 'pwn-echo-u-alice'

/** A pwn-echo instance whose pods fail in `mode` from the first settle on. */
async function failing(t: Test, mode: PodFailureMode): Promise<World> {
  const world = await startWorld(t)
  world.cluster.create(world.definition('pwn-echo'))
  world.cluster.create(world.challenge('pwn-echo', 'alice'))
  world.cluster.setPodFailure({ namespace: NS, workload: NAME }, mode)
  await world.run(t)
  t.hasStrict(world.status(NAME), { phase: 'Pending', reason: 'Starting' })
  return world
}

/** Settles until nothing is left of the workload; returns the settle rounds it took. */
async function tornDown(t: Test, world: World, name: string): Promise<number> {
  for (let round = 1; round <= 5; round++) {
    await world.settle(t)
    if (world.children(name).length === 0 && world.pods(name).length === 0) return round
  }
  t.fail(
    `${name}: children left after 5 settle rounds: ${world.children(name).join(', ')} ${world.pods(name).join(', ')}`,
  )
  return Infinity
}

t.test(
  'image pull failing: Pending/ImagePullBackOff, then Error/StartupTimeout at the startup timeout; Error is sticky',
  async (t) => {
    const world = await failing(t, 'imagePull')
    const { cluster, sim } = world
    await world.settle(t)
    const pulling = world.status(NAME)
    t.hasStrict(pulling, {
      phase: 'Pending',
      reason: 'ImagePullBackOff',
      message: 'The image of container echo cannot be pulled yet; retrying.',
      admittedAt: '2025-01-01T00:00:00Z',
    })
    t.notOk('startedAt' in pulling)
    t.strictSame(world.children(NAME), netcatChildren(NAME), 'a transient problem keeps the workload')
    await world.settle(t)
    t.hasStrict(
      world.status(NAME),
      { phase: 'Pending', reason: 'ImagePullBackOff' },
      'ErrImagePull became ImagePullBackOff: same reason',
    )
    await world.assertQuiet(t)

    // pwn-echo's startupTimeoutSeconds is 120, counted from admittedAt.
    const deadline = '2025-01-01T00:02:00Z'
    t.ok(sim.scheduledAt(NS, NAME), 'a resync is scheduled for the startup deadline')
    t.ok((sim.scheduledAt(NS, NAME) as Date).getTime() <= Date.parse(deadline))
    await world.advance(t, secondsUntil(cluster, deadline) - 1)
    t.hasStrict(
      world.status(NAME),
      { phase: 'Pending', reason: 'ImagePullBackOff' },
      'one second before: still Pending',
    )
    await world.advance(t, 1)
    const timedOut = world.status(NAME)
    t.hasStrict(timedOut, {
      phase: 'Error',
      reason: 'StartupTimeout',
      message:
        'The instance did not become ready within 120 seconds. The image of container echo cannot be pulled yet; retrying.',
      finishedAt: deadline,
    })
    t.notOk('expiresAt' in timedOut)
    t.strictSame(
      world.children(NAME),
      [`NetworkPolicy/${NAME}-isolate`, `Pod/${NAME}`, `Secret/${NAME}-flag`],
      'the Service went first and the pod is terminating; the guards wait for it',
    )
    t.equal(await tornDown(t, world, NAME), 1, 'the kubelet ends the pod in one settle step, then the guards go')
    t.strictSame(world.children(NAME), [])
    t.hasStrict(world.status(NAME), { phase: 'Error', reason: 'StartupTimeout', finishedAt: deadline })
    t.notOk('flagSecretRef' in world.status(NAME), 'no flag Secret, no reference to it')
    await world.assertQuiet(t)

    // The image is fixed: the Error stays (a run-ending Error needs a restart), and costs nothing.
    cluster.setPodFailure({ namespace: NS, workload: NAME }, 'none')
    await world.settle(t)
    await world.advance(t, 3600)
    t.hasStrict(world.status(NAME), { phase: 'Error', reason: 'StartupTimeout', finishedAt: deadline })
    t.strictSame(world.children(NAME), [])
    await world.assertQuiet(t)
  },
)

t.test('crash loop: Pending while the container restarts, Error/CrashLoopBackOff at three restarts', async (t) => {
  const world = await failing(t, 'crashLoop')
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Pending', reason: 'Starting' }, 'one restart is not yet a crash loop')
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Pending', reason: 'Starting' })
  await world.settle(t)
  t.hasStrict(world.status(NAME), {
    phase: 'Error',
    reason: 'CrashLoopBackOff',
    message: 'Container echo keeps crashing.',
    finishedAt: '2025-01-01T00:00:00Z',
  })
  t.ok((await tornDown(t, world, NAME)) <= 3)
  t.hasStrict(world.status(NAME), { phase: 'Error', reason: 'CrashLoopBackOff' })
  await world.assertQuiet(t)
})

t.test('a running instance that starts crashing ends in Error/CrashLoopBackOff', async (t) => {
  const world = await failing(t, 'none')
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Running' })
  world.cluster.setPodFailure({ namespace: NS, workload: NAME }, 'crashLoop')
  await world.settle(t)
  t.hasStrict(
    world.status(NAME),
    { phase: 'Pending', reason: 'Starting', startedAt: '2025-01-01T00:00:00Z' },
    'not ready: no endpoint shown',
  )
  t.notOk('endpoint' in world.status(NAME))
  await world.settle(t)
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Error', reason: 'CrashLoopBackOff', startedAt: '2025-01-01T00:00:00Z' })
  await tornDown(t, world, NAME)
  await world.assertQuiet(t)
})

const fatal: Array<[PodFailureMode, string, string]> = [
  ['invalidImage', 'InvalidImage', 'The image of container echo is not a valid image name.'],
  ['configError', 'ConfigError', 'Container echo cannot be created (CreateContainerConfigError).'],
]
for (const [mode, reason, message] of fatal) {
  t.test(`${mode}: Error/${reason} at once, workload torn down`, async (t) => {
    const world = await failing(t, mode)
    await world.settle(t)
    const status = world.status(NAME)
    t.hasStrict(status, { phase: 'Error', reason, message, finishedAt: '2025-01-01T00:00:00Z' })
    t.hasStrict(conditionOf(status, 'Ready'), { status: 'False', reason })
    await tornDown(t, world, NAME)
    t.hasStrict(world.status(NAME), { phase: 'Error', reason })
    await world.assertQuiet(t)
    await world.advance(t, 600)
    t.hasStrict(world.status(NAME), { phase: 'Error', reason }, 'sticky')
  })
}

t.test('unschedulable: Pending/Unschedulable with the workload kept, Running once capacity appears', async (t) => {
  const world = await failing(t, 'unschedulable')
  await world.settle(t)
  t.hasStrict(world.status(NAME), {
    phase: 'Pending',
    reason: 'Unschedulable',
    message: 'The cluster has no room for the instance yet; waiting for capacity.',
  })
  t.strictSame(world.children(NAME), netcatChildren(NAME))
  await world.assertQuiet(t)
  world.cluster.setPodFailure({ namespace: NS, workload: NAME }, 'none')
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Running', reason: 'Ready' })
  await world.assertQuiet(t)
})

t.test('definition missing: Error/DefinitionNotFound without children; creating it recovers to Running', async (t) => {
  const world = await startWorld(t)
  const { cluster } = world
  const name = 'web-login-u-alice'
  cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  const missing = world.status(name)
  t.hasStrict(missing, { phase: 'Error', reason: 'DefinitionNotFound' })
  t.match(missing.message, /web-login/, 'the message names the definition')
  t.notOk('admittedAt' in missing, 'a world problem holds no budget slot')
  t.strictSame(world.children(name), [])
  await world.assertQuiet(t)

  cluster.advance(30)
  cluster.create(world.definition('web-login'))
  t.strictSame(world.sim.pending(), [`${NS}/${name}`], 'the new definition (a related object) wakes the Challenge')
  await world.run(t)
  t.hasStrict(world.status(name), { phase: 'Pending', reason: 'Starting', admittedAt: '2025-01-01T00:00:30Z' })
  t.strictSame(world.children(name), webChildren(name))
  await world.settle(t)
  t.hasStrict(world.status(name), { phase: 'Running', reason: 'Ready' })
  await world.assertQuiet(t)
})

t.test(
  'a namespace that would refuse the pod: Error/PodRefused before any pod, a restart after the fix runs',
  async (t) => {
    const world = await startWorld(t)
    const { cluster } = world
    const name = 'pwn-echo-u-alice'
    const namespace = cluster.create({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    })
    cluster.create(world.definition('pwn-echo', { security: { profile: 'Baseline' } }))
    cluster.create(world.challenge('pwn-echo', 'alice'))
    await world.run(t)
    t.hasStrict(world.status(name), {
      phase: 'Error',
      reason: 'PodRefused',
      message: `The namespace ${NS} enforces Pod Security "restricted", which the definition's Baseline profile does not meet: use security.profile Restricted, or label the namespace pod-security.kubernetes.io/enforce=baseline.`,
    })
    t.strictSame(world.children(name), [], 'nothing is created')
    t.strictSame(world.pods(name), [])

    // The operator relabels the namespace: the Error stays (it ended the run) until the player restarts.
    cluster.update({
      ...namespace,
      metadata: { ...namespace.metadata, labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } },
    })
    t.strictSame(world.sim.pending(), [`${NS}/${name}`], 'the Namespace (a related object) wakes the Challenge')
    await world.run(t)
    t.hasStrict(world.status(name), { phase: 'Error', reason: 'PodRefused' })
    world.patchSpec(name, { restarts: 1 })
    await world.run(t)
    await world.settle(t)
    t.hasStrict(world.status(name), { phase: 'Running', reason: 'Ready', run: 1 })

    // A LimitRange that the next run's pod would break.
    cluster.create({
      apiVersion: 'v1',
      kind: 'LimitRange',
      metadata: { name: 'small', namespace: NS },
      spec: { limits: [{ type: 'Container', max: { memory: '128Mi' } }] },
    })
    world.patchSpec(name, { restarts: 2 })
    await world.run(t)
    t.hasStrict(world.status(name), {
      phase: 'Error',
      reason: 'PodRefused',
      run: 2,
      message: `The namespace's LimitRange "small" refuses the pod: container echo's memory limit is above the maximum 128Mi.`,
    })
    await world.settle(t)
    t.strictSame(world.pods(name), [], "the earlier run's pod is gone")
    await world.assertQuiet(t)
  },
)
