// The whole lifecycle over HTTP with every object stored in a real API server: create, Pending, Running with its
// endpoint, renew, restart, stop, relaunch, a budget queue that drains, expiry, and deletion through the ordered
// finalize teardown until the Challenge is gone. The controller is the stand-in (as Metacontroller's service
// account) or, with METACONTROLLER_BIN, Metacontroller itself; the kubelet is the stand-in.
import t, { type Test } from 'tap'
import { conditionOf } from '../helpers/world.js'
import { expectedHost } from '../helpers/contract.js'
import { orderProblem } from '../helpers/order.js'
import { assertPrintable } from './printing.js'
import { startSuite, type Json, type Scenario } from '../support/kube/harness.js'

const suite = await startSuite(t)
const challengeCrd = await suite.rest.get<Json>(
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/challenges.challenge-hooks.dev',
)
const NAME = 'web-login-u-alice'
const WEB = (p: string) => [
  `Ingress/${p}`,
  `NetworkPolicy/${p}-isolate`,
  `Pod/${p}`,
  `Secret/${p}-flag`,
  `Service/${p}`,
]

const seconds = (time: unknown) => Date.parse(String(time)) / 1000
const printable = (t: Test, s: Scenario) => assertPrintable(t, suite.kubectl, 'chal', s.ns, challengeCrd)

async function running(s: Scenario, name: string, run = 0): Promise<Json> {
  return s.until(name, (st) => st.phase === 'Running' && st.run === run, `Running (run ${run})`)
}

/** The uids of the instance's pods not being deleted. */
async function podsOf(s: Scenario, name: string): Promise<string[]> {
  const pods = await s.list(`/api/v1/namespaces/${s.ns}/pods`)
  return pods
    .filter(
      (pod) =>
        pod.metadata.labels?.['challenge-hooks.dev/instance'] === name && pod.metadata.deletionTimestamp === undefined,
    )
    .map((pod) => String(pod.metadata.uid))
}

t.test('a web instance: Pending, Running, renew, restart, stop, relaunch, expiry, deletion', async (t) => {
  const s = await suite.scenario(t, 'lifecycle')
  await s.create(s.definition('web-login'))
  await s.create(s.challenge('web-login', 'alice'))

  let status = await running(s, NAME)
  const transitions = await suite.recorder.transitionsThrough(s.ns, NAME, 'Running/Ready')
  // Pending / WaitingForEndpoint may come between, when the pod is ready before the Ingress reaches the cache.
  t.match(
    transitions.join(' '),
    /^Pending\/Starting( Pending\/\w+)* Running\/Ready$/,
    `Pending while starting, then Running (${transitions.join(', ')})`,
  )
  t.hasStrict(status, {
    phase: 'Running',
    reason: 'Ready',
    run: 0,
    renewalsApplied: 0,
    flagSecretRef: { name: `${NAME}-flag` },
  })
  // The contract's id of this owner key under the hook's FLAG_SECRET, not the id the status says.
  const host = expectedHost(
    suite.flagSecret,
    { namespace: s.ns, definition: 'web-login', kind: 'User', id: 'alice' },
    'challenges.localhost',
  )
  t.strictSame(
    status.endpoint,
    { type: 'HTTP', host, port: 80, url: `http://${host}/`, connection: `http://${host}/` },
    'the endpoint a player connects to',
  )
  t.equal(seconds(status.expiresAt) - seconds(status.startedAt), 1800, 'expires a lifetime after it started')
  t.strictSame(await s.children(NAME), WEB(NAME), 'every child created, each controlled by the Challenge')
  const [firstPod] = await podsOf(s, NAME)
  let rows = await printable(t, s)
  t.hasStrict(
    rows[NAME],
    { OWNER: 'alice', DEFINITION: 'web-login', PHASE: 'Running', REASON: 'Ready', ENDPOINT: `http://${host}/` },
    'kubectl get chal',
  )

  await s.advance(600)
  await s.patchSpec(NAME, { renewals: (status.renewalsSeen as number) + 1 })
  status = await s.until(NAME, (st) => st.renewalsApplied === 1, 'the renewal applied')
  t.equal(
    seconds(status.expiresAt),
    seconds(status.lastRenewedAt) + 1800,
    'renewed: expires a lifetime after the renewal',
  )
  t.ok(
    seconds(status.lastRenewedAt) >= seconds(status.startedAt) + 600,
    'renewed at the (advanced) time of the request',
  )
  t.hasStrict(conditionOf(status, 'RenewalAccepted'), { status: 'True', reason: 'Renewed' })

  await s.patchSpec(NAME, { restarts: 1 })
  status = await running(s, NAME, 1)
  t.hasStrict(status, { run: 1, renewalsApplied: 0 }, 'a restart is a new run: renewals reset')
  const [secondPod] = await podsOf(s, NAME)
  t.not(secondPod, firstPod, 'a new pod serves the new run')
  t.equal(status.endpoint && (status.endpoint as Json).host, host, 'the same host (the instance id is stable)')

  await s.patchSpec(NAME, { desiredState: 'Stopped', stopReason: 'Solved' })
  status = await s.until(NAME, (st) => st.phase === 'Deleted', 'Deleted')
  t.hasStrict(status, { phase: 'Deleted', reason: 'Solved' })
  t.notOk('endpoint' in status, 'no endpoint once stopped')
  t.strictSame(await eventuallyChildren(s, NAME, []), [], 'stopped: the workload and its policies are torn down')
  rows = await printable(t, s)
  t.hasStrict(rows[NAME], { PHASE: 'Deleted', REASON: 'Solved' })

  await s.patchSpec(NAME, { desiredState: 'Running', restarts: 2 })
  await running(s, NAME, 2)
  t.strictSame(await s.children(NAME), WEB(NAME), 'relaunched: every child back')

  await s.advance(1800)
  status = await s.until(NAME, (st) => st.phase === 'Deleted', 'Deleted after its lifetime')
  t.hasStrict(status, { phase: 'Deleted', reason: 'Expired' })
  t.strictSame(await eventuallyChildren(s, NAME, []), [], 'expired: torn down')

  await s.patchSpec(NAME, { restarts: 3 })
  await running(s, NAME, 3)
  const before = suite.recorder.deletions(s.ns).length
  await suite.kubectl(['delete', 'chal', NAME, '-n', s.ns, '--wait=false'])
  await s.until(NAME, (st) => st.phase === 'Terminating', 'Terminating').catch(() => undefined)
  await waitGone(s, NAME)
  const order = (await suite.recorder.deletionsThrough(s.ns, `Challenge/${NAME}`)).slice(before)
  // Each pair holds only when both kinds were deleted (a kind never deleted would have index -1).
  for (const [first, then, what] of [
    ['Ingress', 'Pod', 'the traffic path goes first: the Ingress'],
    ['Service', 'Pod', 'the traffic path goes first: the Service'],
    ['Pod', 'NetworkPolicy', 'the policies go only once no pod is left'],
    ['Pod', 'Secret', 'the flag goes only once no pod is left'],
  ] as const)
    t.equal(orderProblem(order, first, then), undefined, `${what} (${order.join(', ')})`)
  t.equal(order.at(-1), `Challenge/${NAME}`, 'the Challenge goes last, once its finalizer is removed')
  t.ok(
    suite.recorder.transitions(s.ns, NAME).includes('Terminating/Deleting'),
    'Terminating / Deleting while the teardown runs',
  )
})

t.test('a budget queue that drains: the second instance waits until the first one ends', async (t) => {
  const s = await suite.scenario(t, 'budget')
  // OWNER_BUDGET is 3: two instances of cost 2 do not fit together.
  await s.create(s.definition('web-login', { cost: 2 }, 'heavy-a'))
  await s.create(s.definition('web-login', { cost: 2 }, 'heavy-b'))
  await s.create(s.challenge('heavy-a', 'bob'))
  await running(s, 'heavy-a-u-bob')
  await s.create(s.challenge('heavy-b', 'bob'))
  const queued = await s.until('heavy-b-u-bob', (st) => st.phase === 'Pending' && st.reason === 'Queued', 'Queued')
  t.hasStrict(queued, { phase: 'Pending', reason: 'Queued' })
  t.strictSame(await s.children('heavy-b-u-bob'), [], 'a queued instance has no children')
  const rows = await printable(t, s)
  t.hasStrict(rows['heavy-b-u-bob'], { PHASE: 'Pending', REASON: 'Queued' })

  await s.patchSpec('heavy-a-u-bob', { desiredState: 'Stopped' })
  await s.until('heavy-a-u-bob', (st) => st.phase === 'Deleted', 'the first one stopped')
  await running(s, 'heavy-b-u-bob')
  const transitions = await suite.recorder.transitionsThrough(s.ns, 'heavy-b-u-bob', 'Running/Ready')
  t.match(
    transitions.join(' '),
    /^Pending\/Queued Pending\/Starting( Pending\/\w+)* Running\/Ready$/,
    `queued, admitted when the first ended, running (${transitions.join(', ')})`,
  )
})

async function eventuallyChildren(s: Scenario, name: string, wanted: string[]): Promise<string[]> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const children = await s.children(name)
    if (JSON.stringify(children) === JSON.stringify(wanted) || Date.now() > deadline) return children
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

async function waitGone(s: Scenario, name: string): Promise<void> {
  const deadline = Date.now() + 60_000
  while ((await s.get(name)) !== undefined) {
    if (Date.now() > deadline)
      throw new Error(`${s.ns}/${name} still there after 60 s: ${JSON.stringify((await s.get(name))?.status)}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}
