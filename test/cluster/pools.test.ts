// A definition's warm pool on a real API server, through its CompositeController (the stand-in, or Metacontroller
// itself with METACONTROLLER_BIN): 50 Challenges created at once for 10 pooled pods. A pooled pod serves one player
// at most: each pod carries one claim in its whole life (watched from the start), each claim names a Challenge that
// records that pod, exactly 10 Challenges are served from the pool and the 40 others start cold, none has two pods
// once settled, and each pooled flag is the contract's (recomputed here from FLAG_SECRET and the Secret's uid).
// Then the players' instances end and the pool gives their pods up.
import { createHmac } from 'node:crypto'
import t from 'tap'
import { eventually } from '../support/eventually.js'
import { Informer } from '../support/kube/informer.js'
import { resourceByName } from '../support/simulator/index.js'
import { startSuite, type Json } from '../support/kube/harness.js'
import type { KubeObject } from '../support/simulator/objects.js'

const PLAYERS = 50
const POOLED = 10
// Ample, so that every waiting Challenge is offered a pod however slow the controller is on a busy machine: the test
// is about who gets which pod, not about how fast.
const suite = await startSuite(t, { hookEnv: { POOL_CLAIM_TIMEOUT_SECONDS: '60' } })

const SLOT = 'challenge-hooks.dev/pool-slot'
const CLAIMED_BY = 'challenge-hooks.dev/claimed-by'
const labels = (object: KubeObject) => object.metadata.labels ?? {}
const isReady = (pod: KubeObject) =>
  (((pod.status as Json | undefined)?.conditions ?? []) as Json[]).some(
    (condition) => condition.type === 'Ready' && condition.status === 'True',
  )
const owners = Array.from({ length: PLAYERS }, (_, index) => `p${String(index).padStart(2, '0')}`)

t.test(`${PLAYERS} Challenges at once for ${POOLED} pooled pods: one player per pod, ever`, async (t) => {
  const s = await suite.scenario(t, 'pools')
  // Every claim label any pooled pod of the namespace ever carried, from the first event on, by the pod's uid (a
  // pod made later may take the name of one that is gone).
  const claimsSeen = new Map<string, Set<string>>()
  const podNames = new Map<string, string>()
  const pods = new Informer(suite.rest, resourceByName('v1', 'pods') as NonNullable<ReturnType<typeof resourceByName>>)
  const stop = pods.on((event) => {
    const pod = event.object
    if (pod.metadata.namespace !== s.ns || labels(pod)[SLOT] === undefined) return
    const uid = String(pod.metadata.uid)
    const seen = claimsSeen.get(uid) ?? new Set<string>()
    const claim = labels(pod)[CLAIMED_BY]
    if (claim !== undefined) seen.add(claim)
    claimsSeen.set(uid, seen)
    podNames.set(uid, pod.metadata.name)
  })
  await pods.start()
  t.teardown(() => {
    stop()
    pods.stop()
  })

  await s.create(s.definition('web-login', { flag: { mode: 'PerInstance' }, pool: { size: POOLED, maxPods: POOLED } }))
  const poolPods = async () =>
    (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).filter((pod) => labels(pod)[SLOT] !== undefined)
  await eventually(
    `${POOLED} pooled pods ready and the pool Ready`,
    async () => {
      const ready = (await poolPods()).filter(isReady).length
      const definition = await suite.rest.get<Json>(
        `/apis/challenge-hooks.dev/v1alpha1/namespaces/${s.ns}/challengedefinitions/web-login`,
      )
      return ready === POOLED && ((definition.status as Json | undefined)?.pool as Json | undefined)?.state === 'Ready'
    },
    async () => {
      const definition = await suite.rest.get<Json>(
        `/apis/challenge-hooks.dev/v1alpha1/namespaces/${s.ns}/challengedefinitions/web-login`,
      )
      const secrets = await s.list(`/api/v1/namespaces/${s.ns}/secrets`)
      return `${(await poolPods()).filter(isReady).length} ready of ${(await poolPods()).length} pods; secrets ${secrets.map((x) => x.metadata.name).join(' ')}; definition status ${JSON.stringify(definition.status)}; pool syncs ${suite.requests.filter((r) => r.hook.startsWith('pools/')).length}`
    },
    { timeoutMs: 120_000 },
  )
  t.strictSame(
    [...claimsSeen.values()].map((claims) => claims.size),
    Array(POOLED).fill(0),
    'no pooled pod is claimed before anyone asks',
  )

  await Promise.all(owners.map((owner) => s.create(s.challenge('web-login', owner))))
  const statuses = await Promise.all(
    owners.map((owner) => s.until(`web-login-u-${owner}`, (status) => status.phase === 'Running', 'Running', 480_000)),
  )
  const served = statuses.map((status) => status.pool as Json)
  const claimed = served.filter((pool) => pool.state === 'Claimed')
  t.equal(claimed.length, POOLED, `${POOLED} served from the pool`)
  t.equal(served.filter((pool) => pool.state === 'Cold').length, PLAYERS - POOLED, 'the others started cold')
  t.strictSame(new Set(claimed.map((pool) => pool.pod)).size, POOLED, 'each pooled pod serves one Challenge')

  // Each pod's claim, seen in every event of its life, is one Challenge's; and that Challenge records that pod.
  const uids = new Map<string, { name: string; pool: Json }>()
  for (const [index, owner] of owners.entries()) {
    const record = (await s.get(`web-login-u-${owner}`)) as KubeObject
    uids.set(String(record.metadata.uid), { name: record.metadata.name, pool: served[index] as Json })
  }
  for (const [podUid, claims] of claimsSeen) {
    const pod = podNames.get(podUid)
    t.ok(claims.size <= 1, `${pod}: one claim in its life (${[...claims].join(', ') || 'none'})`)
    for (const uid of claims) t.equal(uids.get(uid)?.pool.pod, pod, `${pod}: its claimant records it`)
  }

  // Once settled, no Challenge has two pods: its own, or the pooled one claimed for it, not both, never two.
  const settled = await eventually('every spare claim given up', async () => {
    const all = await s.list(`/api/v1/namespaces/${s.ns}/pods`)
    const live = all.filter((pod) => pod.metadata.deletionTimestamp === undefined)
    const perChallenge = [...uids.entries()].map(([uid, { name }]) => ({
      name,
      pods: live.filter((pod) => labels(pod)['challenge-hooks.dev/uid'] === uid || labels(pod)[CLAIMED_BY] === uid)
        .length,
    }))
    return perChallenge.every((each) => each.pods === 1) ? perChallenge : undefined
  })
  t.strictSame(
    settled.map((each) => each.pods),
    Array(PLAYERS).fill(1),
    'one pod per Challenge',
  )

  // The flag of each pooled instance: the contract's PerInstance formula over its pod's flag Secret's uid.
  for (const pool of claimed) {
    const secret = await suite.rest.get<KubeObject & { data: Record<string, string> }>(
      `/api/v1/namespaces/${s.ns}/secrets/${String(pool.pod)}-flag`,
    )
    t.equal(secret.metadata.uid, pool.flagUid, `${String(pool.pod)}: status.pool.flagUid is its Secret's uid`)
    const expected = `flag{${createHmac('sha256', suite.flagSecret).update(String(secret.metadata.uid)).digest('hex').slice(0, 32)}}`
    t.equal(Buffer.from(secret.data.flag as string, 'base64').toString(), expected, `${String(pool.pod)}: its flag`)
  }

  // The players stop: every pooled pod is given up, none is handed to anyone else.
  const pooledOwners = owners.filter((_, index) => (served[index] as Json).state === 'Claimed')
  await Promise.all(pooledOwners.map((owner) => s.patchSpec(`web-login-u-${owner}`, { desiredState: 'Stopped' })))
  for (const owner of pooledOwners) {
    const status = await s.until(`web-login-u-${owner}`, (st) => st.phase === 'Deleted', 'Deleted')
    t.equal((status.pool as Json).state, 'Released', `web-login-u-${owner}: its pod released`)
  }
  await eventually('the released pods gone', async () => {
    const left = (await poolPods()).filter((pod) => labels(pod)[CLAIMED_BY] !== undefined)
    return left.length === 0
  })
  for (const [podUid, claims] of claimsSeen)
    t.ok(claims.size <= 1, `${podNames.get(podUid)}: still one claim in its life`)
})
