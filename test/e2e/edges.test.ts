// End to end, over real HTTP: the less travelled paths of the lifecycle rules.
import t from 'tap'
import { conditionOf, netcatChildren, NS, secondsUntil, startWorld, webChildren } from './harness.js'

const WEB = 'web-login-u-alice'
const PWN = 'pwn-echo-u-alice'

t.test('a queue entry older than its lifetime is Deleted/Expired and holds nothing', async (t) => {
  const world = await startWorld(t, { env: { OWNER_BUDGET: '1' } })
  const { cluster } = world
  cluster.create(world.definition('web-login', { lifetimeSeconds: 7200 }))
  cluster.create(world.definition('pwn-echo'))
  cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  await world.settle(t)
  cluster.advance(10)
  cluster.create(world.challenge('pwn-echo', 'alice'))
  await world.run(t)
  t.hasStrict(world.status(PWN), { phase: 'Pending', reason: 'Queued' })
  // pwn-echo lives 3600 s: queued since 00:00:10, it expires from the queue at 01:00:10.
  await world.advance(t, 3599)
  t.hasStrict(world.status(PWN), { phase: 'Pending', reason: 'Queued' })
  await world.advance(t, 1)
  t.hasStrict(world.status(PWN), { phase: 'Deleted', reason: 'Expired', finishedAt: '2025-01-01T01:00:10Z' })
  t.hasStrict(conditionOf(world.status(PWN), 'Expired'), { status: 'True' })
  t.strictSame(world.children(PWN), [])
  t.hasStrict(world.status(WEB), { phase: 'Running' }, 'the running one is untouched')
  await world.assertQuiet(t)
})

t.test('an instance ending in a run-ending Error frees its budget for the queued one', async (t) => {
  const world = await startWorld(t, { env: { OWNER_BUDGET: '1' } })
  const { cluster } = world
  cluster.create(world.definition('web-login'))
  cluster.create(world.definition('pwn-echo'))
  cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  cluster.advance(1)
  cluster.create(world.challenge('pwn-echo', 'alice'))
  await world.run(t)
  t.hasStrict(world.status(PWN), { phase: 'Pending', reason: 'Queued' })
  cluster.setPodFailure({ namespace: NS, workload: WEB }, 'invalidImage')
  await world.settle(t)
  t.hasStrict(world.status(WEB), { phase: 'Error', reason: 'InvalidImage' })
  t.hasStrict(world.status(PWN), { phase: 'Pending', reason: 'Starting' }, 'admitted by itself')
  await world.settle(t)
  await world.settle(t)
  t.hasStrict(world.status(PWN), { phase: 'Running' })
  t.strictSame(world.children(WEB), [])
  await world.assertQuiet(t)
})

t.test('a renewal asked while not Running is seen once and refused (NotRunning)', async (t) => {
  const world = await startWorld(t)
  world.cluster.create(world.definition('web-login'))
  world.cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  world.patchSpec(WEB, { renewals: 1 })
  await world.run(t)
  const status = world.status(WEB)
  t.hasStrict(status, { phase: 'Pending', renewalsSeen: 1, renewalsApplied: 0 })
  t.hasStrict(conditionOf(status, 'RenewalAccepted'), { status: 'False', reason: 'NotRunning' })
  await world.settle(t)
  t.hasStrict(
    world.status(WEB),
    { phase: 'Running', renewalsSeen: 1, renewalsApplied: 0, expiresAt: '2025-01-01T00:30:00Z' },
    'not applied later',
  )
  t.hasStrict(
    conditionOf(world.status(WEB), 'RenewalAccepted'),
    { status: 'False', reason: 'NotRunning' },
    'the answer stays readable',
  )
  await world.assertQuiet(t)
})

t.test('a renewal that cannot extend past spec.deadline is refused (PastDeadline)', async (t) => {
  const world = await startWorld(t)
  world.cluster.create(world.definition('web-login'))
  world.cluster.create(world.challenge('web-login', 'alice', { deadline: '2025-01-01T00:20:00Z' }))
  await world.run(t)
  await world.settle(t)
  t.hasStrict(world.status(WEB), { phase: 'Running', expiresAt: '2025-01-01T00:20:00Z' })
  world.patchSpec(WEB, { renewals: 1 })
  await world.run(t)
  t.hasStrict(world.status(WEB), {
    phase: 'Running',
    expiresAt: '2025-01-01T00:20:00Z',
    renewalsApplied: 0,
    renewalsSeen: 1,
  })
  t.hasStrict(conditionOf(world.status(WEB), 'RenewalAccepted'), { status: 'False', reason: 'PastDeadline' })
  await world.assertQuiet(t)
})

t.test('a restart relaunches a run that ended in Error/StartupTimeout', async (t) => {
  const world = await startWorld(t)
  const { cluster } = world
  cluster.create(world.definition('pwn-echo'))
  cluster.create(world.challenge('pwn-echo', 'alice'))
  cluster.setPodFailure({ namespace: NS, workload: PWN }, 'imagePull')
  await world.run(t)
  await world.settle(t)
  await world.advance(t, 120)
  t.hasStrict(world.status(PWN), { phase: 'Error', reason: 'StartupTimeout' })
  await world.settle(t)
  await world.settle(t)
  t.strictSame(world.children(PWN), [])
  cluster.setPodFailure({ namespace: NS, workload: PWN }, 'none')
  world.patchSpec(PWN, { restarts: 1 })
  await world.run(t)
  t.hasStrict(world.status(PWN), { phase: 'Pending', reason: 'Starting', run: 1, admittedAt: '2025-01-01T00:02:00Z' })
  t.notOk('finishedAt' in world.status(PWN))
  t.strictSame(world.children(PWN), netcatChildren(PWN))
  await world.settle(t)
  t.hasStrict(world.status(PWN), { phase: 'Running', run: 1 })
  await world.assertQuiet(t)
})

t.test('a restart while Stopped is not consumed; Running and restarts in one patch relaunch', async (t) => {
  const world = await startWorld(t)
  world.cluster.create(world.definition('web-login'))
  world.cluster.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  await world.settle(t)
  world.patchSpec(WEB, { desiredState: 'Stopped' })
  await world.run(t)
  world.patchSpec(WEB, { restarts: 1 })
  await world.run(t)
  t.hasStrict(world.status(WEB), { phase: 'Deleted', reason: 'Stopped', run: 0 })
  await world.settle(t)
  await world.settle(t)
  t.strictSame(world.children(WEB), [])
  world.patchSpec(WEB, { desiredState: 'Running', restarts: 2 })
  await world.run(t)
  t.hasStrict(world.status(WEB), { phase: 'Pending', reason: 'Starting', run: 2 })
  t.strictSame(world.children(WEB), webChildren(WEB))
  await world.settle(t)
  t.hasStrict(world.status(WEB), { phase: 'Running', run: 2 })
  await world.assertQuiet(t)
})

t.test('Internal exposure: Running with the Service DNS name', async (t) => {
  const world = await startWorld(t)
  world.cluster.create(world.definition('pwn-echo', { expose: { type: 'Internal', port: 1337 } }))
  world.cluster.create(world.challenge('pwn-echo', 'alice'))
  await world.run(t)
  await world.settle(t)
  const host = `${PWN}.${NS}.svc.cluster.local`
  t.hasStrict(world.status(PWN), {
    phase: 'Running',
    endpoint: { type: 'Internal', host, port: 1337, connection: `nc ${host} 1337` },
  })
  t.equal(
    (world.cluster.get({ apiVersion: 'v1', kind: 'Service', namespace: NS, name: PWN })?.spec as { type: string }).type,
    'ClusterIP',
  )
  await world.assertQuiet(t)
})

t.test('a LoadBalancer that never gets an address ends in Error/StartupTimeout', async (t) => {
  const world = await startWorld(t, { cluster: { loadBalancersReady: false } })
  world.cluster.create(world.definition('pwn-echo', { expose: { type: 'LoadBalancer', port: 1337 } }))
  world.cluster.create(world.challenge('pwn-echo', 'alice'))
  await world.run(t)
  await world.settle(t)
  t.hasStrict(world.status(PWN), { phase: 'Pending', reason: 'WaitingForEndpoint' })
  await world.advance(t, secondsUntil(world.cluster, '2025-01-01T00:02:00Z'))
  t.hasStrict(world.status(PWN), {
    phase: 'Error',
    reason: 'StartupTimeout',
    message: 'The instance did not become ready within 120 seconds.',
  })
  await world.assertQuiet(t)
})

t.test(
  'the definition deleted under a running instance: Error/DefinitionNotFound, recovered when it is back',
  async (t) => {
    const world = await startWorld(t)
    const { cluster } = world
    cluster.create(world.definition('web-login'))
    cluster.create(world.challenge('web-login', 'alice'))
    await world.run(t)
    await world.settle(t)
    t.hasStrict(world.status(WEB), { phase: 'Running' })
    cluster.advance(60)
    cluster.delete({
      apiVersion: 'challenge-hooks.dev/v1alpha1',
      kind: 'ChallengeDefinition',
      namespace: NS,
      name: 'web-login',
    })
    await world.run(t)
    t.hasStrict(world.status(WEB), { phase: 'Error', reason: 'DefinitionNotFound' })
    await world.settle(t)
    await world.settle(t)
    t.strictSame(world.children(WEB), [], 'a world-problem Error has no workload')
    cluster.advance(60)
    cluster.create(world.definition('web-login'))
    await world.run(t)
    await world.settle(t)
    t.hasStrict(world.status(WEB), { phase: 'Running', reason: 'Ready' })
    t.strictSame(world.children(WEB), webChildren(WEB))
    await world.assertQuiet(t)
  },
)

// World problems (re-checked every sync) recover when fixed, ConfigError included.

t.test(
  'Static flag: Error/ConfigError until the labelled flag Secret exists, then Running with its value',
  async (t) => {
    const world = await startWorld(t)
    const { cluster } = world
    const flag = { mode: 'Static', staticSecretRef: { name: 'web-login-static', key: 'flag' } }
    cluster.create(world.definition('web-login', { flag }))
    cluster.create(world.challenge('web-login', 'alice'))
    await world.run(t)
    t.hasStrict(world.status(WEB), { phase: 'Error', reason: 'ConfigError' })
    t.match(world.status(WEB).message, /"web-login-static"/)
    t.strictSame(world.children(WEB), [])
    await world.assertQuiet(t)

    const value = Buffer.from('flag{static-for-everyone}').toString('base64')
    cluster.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'web-login-static', namespace: NS, labels: { 'challenge-hooks.dev/definition': 'web-login' } },
      data: { flag: value },
    })
    await world.run(t)
    t.hasStrict(
      world.status(WEB),
      { phase: 'Pending', reason: 'Starting' },
      'the labelled Secret (a related object) wakes the Challenge',
    )
    await world.settle(t)
    t.hasStrict(world.status(WEB), { phase: 'Running' })
    const secret = cluster.get({ apiVersion: 'v1', kind: 'Secret', namespace: NS, name: `${WEB}-flag` })
    t.equal((secret?.data as Record<string, string>).flag, value, 'the instance flag is the static one')
    await world.assertQuiet(t)
  },
)

t.test(
  'a parameter named like the flag variable: Error/ConfigError, recovered when the parameter is removed',
  async (t) => {
    const world = await startWorld(t)
    world.cluster.create(world.definition('web-login'))
    world.cluster.create(world.challenge('web-login', 'alice', { parameters: { FLAG: 'flag{mine}' } }))
    await world.run(t)
    t.hasStrict(world.status(WEB), {
      phase: 'Error',
      reason: 'ConfigError',
      message: 'spec.parameters: FLAG is reserved for the flag.',
    })
    t.strictSame(world.children(WEB), [])
    t.notOk('finishedAt' in world.status(WEB), 'a world problem does not end the run')
    await world.assertQuiet(t)
    t.notOk('finishedAt' in world.status(WEB), 'nor does a second sync of the same world')

    world.patchSpec(WEB, { parameters: { LEVEL: 'hard' } })
    await world.run(t)
    t.hasStrict(world.status(WEB), { phase: 'Pending', reason: 'Starting' })
    t.strictSame(world.children(WEB), webChildren(WEB))
    await world.settle(t)
    t.hasStrict(world.status(WEB), { phase: 'Running' })
    await world.assertQuiet(t)
  },
)
