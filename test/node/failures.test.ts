// Real failures, as the runtime and the kubelet report them: an image that exits at once crash-loops, an image
// that allocates past its memory limit is OOM-killed, and a slow starter stays Pending until it listens. Each ends
// in the status the contract promises a player (Error / CrashLoopBackOff with a readable message; Pending, then
// Running only once the app answers). The pods' own statuses say what the kernel did.
import t from 'tap'
import { eventually } from '../support/eventually.js'
import {
  app,
  definition,
  NODE_IP,
  reaches,
  running,
  startNodeSuite,
  type Json,
  type Scenario,
} from '../support/node/harness.js'

const suite = await startNodeSuite(t)

/** The container statuses of an instance's pods, as the kubelet wrote them. */
async function containerStatuses(s: Scenario, instance: string): Promise<Json[]> {
  const pods = (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).filter(
    (pod) => pod.metadata.labels?.['challenge-hooks.dev/instance'] === instance,
  )
  return pods.flatMap((pod) => ((pod.status as Json | undefined)?.containerStatuses ?? []) as Json[])
}

t.test('an image that exits at once, and one past its memory limit: Error / CrashLoopBackOff', async (t) => {
  const s = await suite.scenario(t, 'failures')
  await s.create(
    definition('crash', {
      pod: app('crash', 8080),
      expose: { type: 'NodePort', port: 8080 },
      network: { egress: 'None' },
    }),
  )
  await s.create(
    definition('hog', { pod: app('oom', 8080), expose: { type: 'NodePort', port: 8080 }, network: { egress: 'None' } }),
  )
  const started = Date.now()
  await s.create(s.challenge('crash', 'alice'))
  await s.create(s.challenge('hog', 'alice'))
  // What the kubelet last said of each container's end, read every 200 ms: an instance in Error has its pod deleted
  // (a bare Pod lingers while it terminates, then goes), so the end is read while the pod is still there.
  const ends: Record<string, { terminated: Json; restarts: unknown }> = {}
  let watching = true
  const watcher = (async () => {
    while (watching) {
      for (const name of ['crash-u-alice', 'hog-u-alice']) {
        const container = (await containerStatuses(s, name))[0]
        const terminated = ((container?.lastState as Json | undefined)?.terminated ??
          (container?.state as Json | undefined)?.terminated) as Json | undefined
        if (terminated !== undefined) ends[name] = { terminated, restarts: container?.restartCount }
      }
      await new Promise((r) => setTimeout(r, 200))
    }
  })()
  t.teardown(async () => {
    watching = false
    await watcher
  })
  for (const [name, terminated] of [
    ['crash-u-alice', 'Error'],
    ['hog-u-alice', 'OOMKilled'],
  ] as const) {
    const status = await reaches(s, name, 'Error', 180_000)
    const containers = [{ restartCount: ends[name]?.restarts }]
    const last = ends[name]?.terminated ?? {}
    t.comment(
      `${name}: ${status.phase} / ${status.reason} after ${((Date.now() - started) / 1000).toFixed(0)} s: ${status.message} (the pod: restarts ${containers[0]?.restartCount}, last terminated ${last.reason} exit ${last.exitCode})`,
    )
    t.strictSame(
      { phase: status.phase, reason: status.reason },
      { phase: 'Error', reason: 'CrashLoopBackOff' },
      `${name}: the contract's reason`,
    )
    t.equal(last.reason, terminated, `${name}: the kubelet saw it end as ${terminated}`)
    if (terminated === 'Error')
      t.equal(status.message, 'Container app keeps crashing.', `${name}: a message a player can read`)
    else t.match(String(status.message), /memory/i, `${name}: the status says it ran out of memory`)
    // No workload wanted any more: the pod, if still there, is being deleted (a bare Pod goes once the kubelet
    // stopped it). Metacontroller deletes unwanted children before it writes the status, but writes the status even
    // when a delete failed (a busy API server) and retries the delete at the next sync: so within a resync, not at once.
    const keptPods = async () =>
      (await s.list(`/api/v1/namespaces/${s.ns}/pods`))
        .filter(
          (pod) =>
            pod.metadata.labels?.['challenge-hooks.dev/instance'] === name &&
            pod.metadata.deletionTimestamp === undefined,
        )
        .map((pod) => pod.metadata.name)
    await eventually(`${name}: its pod being deleted`, async () => (await keptPods()).length === 0, undefined, {
      timeoutMs: 30_000,
    }).catch(() => false)
    t.strictSame(await keptPods(), [], `${name}: an Error instance keeps no workload (its pod is being deleted)`)
    const gone = await eventually(
      `${name}: its pod gone`,
      async () => (await containerStatuses(s, name)).length === 0,
      undefined,
      { timeoutMs: 60_000 },
    ).catch(() => false)
    t.equal(gone, true, `${name}: and its pod is gone`)
  }
})

t.test('a slow starter is Pending until it listens, then Running and answering', async (t) => {
  const s = await suite.scenario(t, 'slow')
  // slow-start listens 8 s after it starts (its image's argument); the readiness probe is the hook's default.
  await s.create(
    definition('slow', {
      pod: app('slow-start', 8080),
      expose: { type: 'NodePort', port: 8080 },
      network: { egress: 'None' },
    }),
  )
  const created = Date.now()
  await s.create(s.challenge('slow', 'alice'))
  const pending = await s.until(
    'slow-u-alice',
    (st) => st.phase === 'Pending' && st.reason === 'Starting',
    'Pending / Starting',
  )
  t.equal(pending.endpoint, undefined, 'no endpoint while Pending')
  const status = await running(s, 'slow-u-alice')
  const after = (Date.now() - created) / 1000
  t.comment(`slow-start: Running ${after.toFixed(1)} s after create (it listens 8 s after its container starts)`)
  t.ok(after >= 8, 'not Running before the app listens')
  const endpoint = status.endpoint as { host: string; port: number }
  // Running means reachable (ENDPOINT_SETTLE_MS): the first try answers.
  const answer = await fetch(`http://${endpoint.host}:${endpoint.port}/`).then(
    (response) => response.text(),
    (error: Error) => `error: ${error.message}`,
  )
  t.strictSame(
    { host: endpoint.host, answer },
    { host: NODE_IP, answer: 'slow-start\n' },
    'the app answers at its endpoint',
  )
})
