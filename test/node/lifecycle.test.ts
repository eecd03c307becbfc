// The lifecycle with real pods (test/cluster/lifecycle.test.ts does it against the kubelet stand-in): create,
// Running and answering at its endpoint, renew (the same pod goes on), restart (a new pod really replaces the old
// one: never both at once, the old one's process gone), stop, relaunch, expiry, and deletion through the ordered
// teardown: the traffic path cut first, the pod really gone (its container stopped, the kubelet done with it)
// before the flag's Secret and the NetworkPolicies go, the Challenge last.
import t from 'tap'
import { eventually } from '../support/eventually.js'
import type { KubeObject } from '../support/simulator/index.js'
import { app, definition, NODE_IP, startNodeSuite, type Json, type Scenario } from '../support/node/harness.js'
import { banner, whenRunning } from '../support/node/timing.js'

const suite = await startNodeSuite(t)
const NAME = 'echo-u-alice'
const BANNER = 'tcp-echo ready'
const seconds = (time: unknown) => Date.parse(String(time)) / 1000

interface PodSeen {
  uid: string
  /** the runtime's id of its container (containerd://…), once it ran */
  container: string | undefined
}

/** The instance's pods, terminating ones included. */
async function podsOf(s: Scenario): Promise<(PodSeen & { deleting: boolean; ready: boolean })[]> {
  const pods = await s.list(`/api/v1/namespaces/${s.ns}/pods`)
  return pods
    .filter((pod) => pod.metadata.labels?.['challenge-hooks.dev/instance'] === NAME)
    .map((pod) => {
      const status = (pod.status ?? {}) as Json
      const containers = (status.containerStatuses ?? []) as Json[]
      return {
        uid: String(pod.metadata.uid),
        container: containers[0]?.containerID as string | undefined,
        deleting: pod.metadata.deletionTimestamp !== undefined,
        ready: ((status.conditions ?? []) as Json[]).some((c) => c.type === 'Ready' && c.status === 'True'),
      }
    })
}

/** The containers the node runs now, by runtime id: the kubelet's own view of its pods (its /pods, through the API server). */
async function runningContainers(): Promise<Set<string>> {
  const node = (await suite.rest.get<{ items: KubeObject[] }>('/api/v1/nodes')).items[0]?.metadata.name
  const answer = await suite.kubectl(['get', '--raw', `/api/v1/nodes/${node}/proxy/pods`])
  const pods = (JSON.parse(answer.stdout) as { items: Json[] }).items
  return new Set(
    pods.flatMap((pod) =>
      (((pod.status as Json | undefined)?.containerStatuses ?? []) as Json[])
        .filter((c) => (c.state as Json | undefined)?.running !== undefined)
        .map((c) => String(c.containerID)),
    ),
  )
}

/** Until a connection to the node port is refused (or times out): the path is closed. */
async function closed(port: number, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const answer = await banner(NODE_IP, port)
    if (answer !== BANNER) return answer
    if (Date.now() > deadline) throw new Error(`node port ${port} still answers after ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Polls for a minute by default (the pods' grace periods and the teardown's syncs). */
const waitFor = <T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000) =>
  eventually(what, check, undefined, { timeoutMs })

/** Waits until the instance is Running in run `run`; its status and the one pod that serves it. */
async function runningRun(s: Scenario, run: number): Promise<{ status: Json; pod: PodSeen }> {
  const status = await s.until(NAME, (st) => st.phase === 'Running' && st.run === run, `Running (run ${run})`, 90_000)
  const pods = (await podsOf(s)).filter((pod) => !pod.deleting)
  if (pods.length !== 1 || !pods[0]?.ready) throw new Error(`run ${run}: ${JSON.stringify(pods)}`)
  return { status, pod: pods[0] }
}

t.test('an instance with real pods: Running, renew, restart, stop, relaunch, expiry, deletion in order', async (t) => {
  const s = await suite.scenario(t, 'node-lifecycle')
  await s.create(
    definition('echo', {
      pod: app('tcp-echo', 9000),
      expose: { type: 'NodePort', port: 9000 },
      network: { egress: 'None' },
    }),
  )
  const created = Date.now()
  await s.create(s.challenge('echo', 'alice'))
  await whenRunning(s, NAME, created)
  const started = await runningRun(s, 0)
  const first = started.pod
  let status = started.status
  const port = (status.endpoint as { port: number }).port
  t.strictSame(
    status.endpoint,
    { type: 'NodePort', host: NODE_IP, port, connection: `nc ${NODE_IP} ${port}` },
    'Running at the node port',
  )
  t.equal(await banner(NODE_IP, port), BANNER, 'the app answers at the endpoint')
  t.ok(
    first.container !== undefined && (await runningContainers()).has(first.container),
    'its container runs on the node',
  )

  // Renew: the deadline moves, the same pod goes on serving. On the real clock: the hook's clock moves only for the
  // expiry below (moved, it would also skip ENDPOINT_SETTLE_MS, which counts from the pod's real Ready time).
  await s.patchSpec(NAME, { renewals: (status.renewalsSeen as number) + 1 })
  status = await s.until(NAME, (st) => st.renewalsApplied === 1, 'the renewal applied')
  t.equal(
    seconds(status.expiresAt),
    seconds(status.lastRenewedAt) + 1800,
    'renewed: expires a lifetime after the renewal',
  )
  t.ok(seconds(status.lastRenewedAt) >= seconds(status.startedAt), 'renewed at the time of the request')
  t.strictSame(
    (await podsOf(s)).map((pod) => pod.uid),
    [first.uid],
    'renewed: the same pod, not restarted',
  )
  t.equal(await banner(NODE_IP, port), BANNER, 'and it still answers')

  // Restart: a new run with a new pod; the old one is gone before the new one exists.
  const together: string[] = []
  let watching = true
  const watcher = (async () => {
    while (watching) {
      const uids = (await podsOf(s)).map((pod) => pod.uid)
      if (uids.includes(first.uid) && uids.some((uid) => uid !== first.uid)) together.push(uids.join(' '))
      await new Promise((r) => setTimeout(r, 50))
    }
  })()
  await s.patchSpec(NAME, { restarts: 1 })
  const restarted = await runningRun(s, 1)
  watching = false
  await watcher
  const second = restarted.pod
  t.not(second.uid, first.uid, 'restart: a new pod serves the new run')
  t.strictSame(
    together,
    [],
    'the old pod was gone (not merely terminating) before the new one was created: runs never overlap',
  )
  const running = await runningContainers()
  t.ok(first.container !== undefined && !running.has(first.container), "the old pod's container no longer runs")
  t.ok(second.container !== undefined && running.has(second.container), "the new pod's container runs")
  t.equal(
    await banner(NODE_IP, (restarted.status.endpoint as { port: number }).port),
    BANNER,
    'the new run answers at its endpoint as soon as it is Running',
  )

  // Stop (solved): Deleted, no endpoint, no pod, nothing answers.
  await s.patchSpec(NAME, { desiredState: 'Stopped', stopReason: 'Solved' })
  status = await s.until(NAME, (st) => st.phase === 'Deleted', 'Deleted', 60_000)
  t.match(status, { phase: 'Deleted', reason: 'Solved' })
  t.notOk('endpoint' in status, 'no endpoint once stopped')
  await waitFor('the pods to be gone after the stop', async () => ((await podsOf(s)).length === 0 ? true : undefined))
  t.notOk(
    second.container !== undefined && (await runningContainers()).has(second.container),
    'stopped: its container no longer runs',
  )
  t.notMatch(
    await closed((restarted.status.endpoint as { port: number }).port),
    BANNER,
    'stopped: the node port no longer answers',
  )

  // Relaunch, then expiry.
  await s.patchSpec(NAME, { desiredState: 'Running', restarts: 2 })
  const relaunched = await runningRun(s, 2)
  t.equal(
    await banner(NODE_IP, (relaunched.status.endpoint as { port: number }).port),
    BANNER,
    'relaunched: answers as soon as it is Running',
  )
  await s.advance(1800)
  status = await s.until(NAME, (st) => st.phase === 'Deleted', 'Deleted after its lifetime', 60_000)
  t.match(status, { phase: 'Deleted', reason: 'Expired' })
  await waitFor('the pods to be gone after expiry', async () => ((await podsOf(s)).length === 0 ? true : undefined))
  t.notOk(
    relaunched.pod.container !== undefined && (await runningContainers()).has(relaunched.pod.container),
    'expired: its container no longer runs',
  )
  t.notMatch(
    await closed((relaunched.status.endpoint as { port: number }).port),
    BANNER,
    'expired: the node port no longer answers',
  )

  // Deletion: a prober connects every 20 ms; the objects' disappearance is timed by polling every 50 ms. The hook's
  // clock is now ahead of the pod's Ready time, so Running comes without the settle: the traffic is awaited here.
  await s.patchSpec(NAME, { restarts: 3 })
  const last = await runningRun(s, 3)
  const lastPort = (last.status.endpoint as { port: number }).port
  await waitFor(
    'run 3 to answer at its node port',
    async () => ((await banner(NODE_IP, lastPort)) === BANNER ? true : undefined),
    10_000,
  )
  let lastAnswer = 0
  let probing = true
  const prober = (async () => {
    const attempts: Promise<void>[] = []
    while (probing) {
      const startedAt = Date.now()
      attempts.push(
        banner(NODE_IP, lastPort).then(
          (answer) => void (answer === BANNER && startedAt > lastAnswer && (lastAnswer = startedAt)),
        ),
      )
      await new Promise((r) => setTimeout(r, 20))
    }
    await Promise.all(attempts)
  })()
  const gone: Record<string, number> = {}
  const paths: Record<string, string> = {
    Service: `/api/v1/namespaces/${s.ns}/services/${NAME}`,
    Pod: `/api/v1/namespaces/${s.ns}/pods/${NAME}`,
    Secret: `/api/v1/namespaces/${s.ns}/secrets/${NAME}-flag`,
    NetworkPolicy: `/apis/networking.k8s.io/v1/namespaces/${s.ns}/networkpolicies/${NAME}-isolate`,
    Challenge: `/apis/challenge-hooks.dev/v1alpha1/namespaces/${s.ns}/challenges/${NAME}`,
  }
  const present = await Promise.all(
    Object.entries(paths).map(async ([kind, path]) => [kind, (await suite.rest.find(path)) !== undefined] as const),
  )
  t.strictSame(
    present.filter(([, here]) => !here).map(([kind]) => kind),
    [],
    `every object there before the deletion (${Object.keys(paths).join(', ')})`,
  )
  const before = suite.recorder.deletions(s.ns).length
  const deleted = Date.now()
  await suite.kubectl(['delete', 'chal', NAME, '-n', s.ns, '--wait=false'])
  await waitFor('the Challenge and its children to be gone', async () => {
    for (const [kind, path] of Object.entries(paths))
      if (gone[kind] === undefined && (await suite.rest.find(path)) === undefined) gone[kind] = Date.now() - deleted
    return Object.keys(gone).length === Object.keys(paths).length ? true : undefined
  })
  probing = false
  await prober
  const answered = lastAnswer - deleted
  t.ok(lastAnswer > 0, 'the prober got answers before the deletion')
  t.comment(
    `deletion, ms after kubectl delete: last answer at the node port ${answered}; gone: ${Object.entries(gone)
      .map(([kind, ms]) => `${kind} ${ms}`)
      .join(', ')}`,
  )
  // Polled: two objects gone within one round of reads share a time; the watch below orders them strictly.
  t.ok(gone.Service! <= gone.Pod!, 'the Service (the traffic path) is gone no later than the pod')
  t.ok(answered < gone.Pod!, 'no connection got through once the pod was gone')
  t.ok(
    gone.Pod! <= gone.Secret! && gone.Pod! <= gone.NetworkPolicy!,
    'the pod is really gone no later than the flag and the policy',
  )
  t.equal(Math.max(...Object.values(gone)), gone.Challenge, 'the Challenge goes last')
  t.notOk(
    last.pod.container !== undefined && (await runningContainers()).has(last.pod.container),
    'deleted: its container no longer runs',
  )
  const order = (await suite.recorder.deletionsThrough(s.ns, `Challenge/${NAME}`))
    .slice(before)
    .map((entry) => entry.split('/')[0])
  const firstOf = (kind: string) => order.indexOf(kind)
  const lastOf = (kind: string) => order.lastIndexOf(kind)
  t.ok(
    lastOf('Service') < firstOf('Pod') &&
      lastOf('Pod') < firstOf('NetworkPolicy') &&
      lastOf('Pod') < firstOf('Secret') &&
      order.at(-1) === 'Challenge',
    `the watch saw the same order (${order.join(', ')})`,
  )
})
