// What Metacontroller does with the desired children: create, update per strategy, delete, adopt, release.
import t from 'tap'
import { Cluster } from '../support/simulator/cluster.js'
import { LAST_APPLIED } from '../support/simulator/merge.js'
import type { KubeObject } from '../support/simulator/objects.js'
import { Simulator, type CompositeController, type UpdateMethod } from '../support/simulator/index.js'
import { challenge, controller, deployment, FakeHook, NS, secret, service } from './fixtures.js'

const SYNC_ONLY = { hooks: { sync: { webhook: {} } } }
const get = (cluster: Cluster, apiVersion: string, kind: string, name: string) =>
  cluster.get({ apiVersion, kind, namespace: NS, name })
const parentOf = (cluster: Cluster, name = 'web-u-alice') =>
  get(cluster, 'challenge-hooks.dev/v1alpha1', 'Challenge', name) as KubeObject

function world(
  children: () => unknown[],
  spec: Partial<CompositeController['spec']> = SYNC_ONLY,
  parent = challenge(),
) {
  const cluster = new Cluster()
  cluster.create(parent)
  const hook = new FakeHook({ sync: () => ({ status: { phase: 'Pending' }, children: children() }) })
  const sim = new Simulator(controller(spec), cluster, hook)
  return { cluster, hook, sim }
}

t.test('created children: ownerReference, controller-uid label, namespace default, last-applied', async (t) => {
  const { cluster, sim } = world(() => [
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'flag' }, stringData: { flag: 'f' } },
  ])
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(result.created, [{ apiVersion: 'v1', kind: 'Secret', namespace: NS, name: 'flag' }])
  const uid = parentOf(cluster).metadata.uid
  const flag = get(cluster, 'v1', 'Secret', 'flag') as KubeObject
  t.strictSame(flag.metadata.ownerReferences, [
    {
      apiVersion: 'challenge-hooks.dev/v1alpha1',
      kind: 'Challenge',
      name: 'web-u-alice',
      uid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ])
  t.strictSame(flag.metadata.labels, { 'controller-uid': uid })
  t.strictSame(JSON.parse(flag.metadata.annotations?.[LAST_APPLIED] as string), {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { labels: { 'controller-uid': uid }, name: 'flag', namespace: NS },
    stringData: { flag: 'f' },
  })
  t.equal(result.writes, 2, 'a create and a status write')
  t.equal(result.statusWritten, true)

  // stringData never reads back, so every sync sends an update the API server finds to be a no-op.
  const writes = cluster.writes
  const again = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(again.updated, [{ apiVersion: 'v1', kind: 'Secret', namespace: NS, name: 'flag' }])
  t.equal(again.writes, 1)
  t.equal(cluster.writes, writes, 'no change stored, no watch event')
  t.equal(await sim.runUntilQuiet(), 0)
})

t.test('InPlace keeps what the hook never set (clusterIP, nodePort) and applies what it changed', async (t) => {
  let type = 'NodePort'
  const { cluster, sim } = world(() => [service('web', type)])
  await sim.runUntilQuiet()
  const created = get(cluster, 'v1', 'Service', 'web')?.spec as any
  t.ok(created.ports[0].nodePort)
  const second = await sim.reconcile(NS, 'web-u-alice')
  t.equal(second.writes, 0, 'an unchanged answer writes nothing')
  t.strictSame((get(cluster, 'v1', 'Service', 'web')?.spec as any).ports[0].nodePort, created.ports[0].nodePort)

  type = 'LoadBalancer'
  const third = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(
    third.updated.map((r) => r.name),
    ['web'],
  )
  const updated = get(cluster, 'v1', 'Service', 'web')?.spec as any
  t.match(updated, {
    type: 'LoadBalancer',
    clusterIP: created.clusterIP,
    ports: [{ nodePort: created.ports[0].nodePort }],
  })
})

t.test('a desired child that cannot be merged onto the observed one is an error', async (t) => {
  let ports: unknown = [{ port: 80 }]
  const { sim } = world(() => [{ ...service('web'), spec: { type: 'NodePort', ports } }])
  await sim.runUntilQuiet()
  ports = 'eighty'
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.match(result.errors, [
    /Service ctf\/web: can't merge desired changes: desired\[spec\]\[ports\]: expecting an array/,
  ])
  t.equal(result.statusWritten, false, 'the status did not change')
})

t.test('Recreate deletes a changed child; a later sync creates it again', async (t) => {
  let image = 'nginx:1.27'
  const spec = {
    ...SYNC_ONLY,
    childResources: [
      { apiVersion: 'apps/v1', resource: 'deployments', updateStrategy: { method: 'Recreate' as UpdateMethod } },
    ],
  }
  const { cluster, sim } = world(() => [deployment('web', { image })], spec)
  await sim.runUntilQuiet()
  const first = get(cluster, 'apps/v1', 'Deployment', 'web')
  image = 'nginx:1.28'
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(
    result.deleted.map((r) => r.name),
    ['web'],
  )
  t.strictSame(result.created, [])
  await sim.runUntilQuiet()
  const second = get(cluster, 'apps/v1', 'Deployment', 'web')
  t.not(second?.metadata.uid, first?.metadata.uid)
  t.equal((second?.spec as any).template.spec.containers[0].image, 'nginx:1.28')
})

t.test('OnDelete (the default) never updates; an unknown method is an error', async (t) => {
  let image = 'nginx:1.27'
  const onDelete = world(() => [deployment('web', { image })], {
    ...SYNC_ONLY,
    childResources: [{ apiVersion: 'apps/v1', resource: 'deployments' }],
  })
  await onDelete.sim.runUntilQuiet()
  image = 'nginx:1.28'
  const result = await onDelete.sim.reconcile(NS, 'web-u-alice')
  t.strictSame([result.updated, result.deleted, result.writes], [[], [], 0])

  const bogus = world(() => [deployment('web', { image })], {
    ...SYNC_ONLY,
    childResources: [
      { apiVersion: 'apps/v1', resource: 'deployments', updateStrategy: { method: 'Sideways' as UpdateMethod } },
    ],
  })
  await bogus.sim.runUntilQuiet()
  image = 'nginx:1.29'
  t.match((await bogus.sim.reconcile(NS, 'web-u-alice')).errors, [
    /invalid update strategy for Deployment: unknown method "Sideways"/,
  ])
})

t.test('Rolling methods act like their plain counterparts', async (t) => {
  let note = 'a'
  const { cluster, sim } = world(() => [{ ...secret('s'), metadata: { name: 's', annotations: { note } } }], {
    ...SYNC_ONLY,
    childResources: [{ apiVersion: 'v1', resource: 'secrets', updateStrategy: { method: 'RollingInPlace' } }],
  })
  await sim.runUntilQuiet()
  note = 'b'
  await sim.runUntilQuiet()
  sim.enqueue(NS, 'web-u-alice')
  await sim.runUntilQuiet()
  t.equal(get(cluster, 'v1', 'Secret', 's')?.metadata.annotations?.note, 'b')
})

t.test('children that are not wanted any more are deleted; ones being deleted are left alone', async (t) => {
  let children: KubeObject[] = [
    secret('a'),
    { ...secret('b'), metadata: { name: 'b', finalizers: ['example.com/hold'] } },
  ]
  const { cluster, sim, hook } = world(() => children)
  await sim.runUntilQuiet()
  children = []
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(
    result.deleted.map((r) => r.name),
    ['a', 'b'],
  )
  t.ok(get(cluster, 'v1', 'Secret', 'b')?.metadata.deletionTimestamp, 'held by its finalizer')
  children = [secret('b', 'flag{new}')]
  const next = await sim.reconcile(NS, 'web-u-alice')
  t.ok(
    hook.calls.at(-1)?.body.children['Secret.v1'].b.metadata.deletionTimestamp,
    'a child being deleted is still shown',
  )
  t.strictSame([next.deleted, next.updated, next.created], [[], [], []], 'not deleted twice, not updated')
})

t.test('desired children the controller does not manage, or cannot make', async (t) => {
  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm' }, data: {} }
  const widget = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }
  const nameless = { apiVersion: 'v1', kind: 'Secret', metadata: {} }
  const noMetadata = { apiVersion: 'v1', kind: 'Secret' }
  const elsewhere = { ...secret('far'), metadata: { name: 'far', namespace: 'other' } }
  const { cluster, sim } = world(() => [configMap, widget, nameless, noMetadata, elsewhere, secret('ok')])
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(
    result.created.map((r) => `${r.kind}/${r.namespace}/${r.name}`),
    ['ConfigMap/ctf/cm', 'Secret/other/far', 'Secret/ctf/ok'],
  )
  t.match(result.warnings, [
    /ConfigMap ctf\/cm is not a child type of this controller/,
    /Secret other\/far is outside the parent's namespace/,
  ])
  t.match(result.errors, [/can't find resource for example.com\/v1\/Widget; Secret ctf\/undefined: .*metadata.name/])
  t.equal(result.outcome, 'error')
  t.equal(result.statusWritten, true, 'status is written even when some children fail')

  const again = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(
    again.created.map((r) => r.name),
    [],
    'the ConfigMap exists: created once, never again',
  )
  t.ok(get(cluster, 'v1', 'ConfigMap', 'cm'))
  cluster.settle()
  t.equal(
    cluster.get({ apiVersion: 'v1', kind: 'Secret', namespace: 'other', name: 'far' }),
    undefined,
    'a cross-namespace owner is no owner: collected',
  )
})

t.test('generateSelector: a desired child labelled for another parent aborts the whole sync', async (t) => {
  const { cluster, sim } = world(() => [
    secret('a'),
    { ...secret('b'), metadata: { name: 'b', labels: { 'controller-uid': 'someone-else' } } },
  ])
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.match(result.errors, [/labels on desired child Secret ctf\/b don't match parent selector/])
  t.strictSame(result.created, [])
  t.equal(parentOf(cluster).status, undefined)
})

t.test(
  'a later duplicate in the answer replaces an earlier one; an ownerReference in the answer is not doubled',
  async (t) => {
    let ownerUid = ''
    const { cluster, sim } = world(() => [
      secret('dup', 'first'),
      {
        ...secret('dup', 'second'),
        metadata: {
          name: 'dup',
          ownerReferences: [
            {
              apiVersion: 'challenge-hooks.dev/v1alpha1',
              kind: 'Challenge',
              name: 'web-u-alice',
              uid: ownerUid,
              controller: true,
            },
          ],
        },
      },
    ])
    ownerUid = String(parentOf(cluster).metadata.uid)
    await sim.reconcile(NS, 'web-u-alice')
    const dup = get(cluster, 'v1', 'Secret', 'dup')
    t.equal(Buffer.from((dup?.data as any).flag, 'base64').toString(), 'second')
    t.equal(dup?.metadata.ownerReferences?.length, 1)
  },
)

t.test('without generateSelector: the parent selector claims, adopts and releases', async (t) => {
  const selected = { app: 'web', instance: 'web-u-alice' }
  const parent = { ...challenge(), spec: { ...(challenge().spec as object), selector: { matchLabels: selected } } }
  let children: KubeObject[] = [{ ...secret('owned'), metadata: { name: 'owned', labels: selected } }]
  const { cluster, sim } = world(() => children, { ...SYNC_ONLY, generateSelector: false }, parent)
  cluster.create({ ...secret('orphan'), metadata: { name: 'orphan', namespace: NS, labels: selected } })
  cluster.create({ ...secret('stranger'), metadata: { name: 'stranger', namespace: NS, labels: { app: 'other' } } })
  const first = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(
    first.adopted.map((r) => r.name),
    ['orphan'],
  )
  t.strictSame(
    first.deleted.map((r) => r.name),
    ['orphan'],
    'adopted, then not desired: deleted',
  )
  t.notOk(get(cluster, 'v1', 'Secret', 'stranger')?.metadata.ownerReferences, 'not selected: left alone')

  const owned = get(cluster, 'v1', 'Secret', 'owned') as KubeObject
  cluster.update({ ...owned, metadata: { ...owned.metadata, labels: { app: 'web' } } })
  t.strictSame(sim.pending(), [`${NS}/web-u-alice`], 'a change to an owned child queues its parent')
  children = []
  const second = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(
    second.released.map((r) => r.name),
    ['owned'],
  )
  t.strictSame(get(cluster, 'v1', 'Secret', 'owned')?.metadata.ownerReferences, [])

  children = [{ ...secret('bad'), metadata: { name: 'bad', labels: { app: 'web' } } }]
  t.match((await sim.reconcile(NS, 'web-u-alice')).errors, [/don't match parent selector/])

  // An orphan that appears is offered to every parent whose selector matches it.
  await sim.runUntilQuiet()
  cluster.create({ ...secret('newcomer'), metadata: { name: 'newcomer', namespace: NS, labels: selected } })
  t.strictSame(sim.pending(), [`${NS}/web-u-alice`])
})

t.test('without generateSelector a parent needs spec.selector', async (t) => {
  for (const selector of [undefined, {}, { matchLabels: {} }, { matchExpressions: [] }]) {
    const parent = { ...challenge(), spec: { selector } }
    const { sim } = world(() => [], { ...SYNC_ONLY, generateSelector: false }, parent)
    t.match((await sim.reconcile(NS, 'web-u-alice')).errors, [
      '.spec.selector must have either matchLabels, matchExpressions, or both',
    ])
  }
  const withExpressions = {
    ...challenge(),
    spec: { selector: { matchExpressions: [{ key: 'app', operator: 'Exists' }] } },
  }
  const { sim, cluster } = world(() => [], { ...SYNC_ONLY, generateSelector: false }, withExpressions)
  t.equal((await sim.reconcile(NS, 'web-u-alice')).outcome, 'synced')
  // A parent whose selector is unusable adopts nothing (and does not stop the others).
  const { metadata: _m, ...rest } = challenge('broken')
  cluster.create({ ...rest, metadata: { name: 'broken', namespace: NS }, spec: {} })
  await sim.runUntilQuiet()
  cluster.create({ ...secret('orphan'), metadata: { name: 'orphan', namespace: NS, labels: { app: 'x' } } })
  t.strictSame(sim.pending(), [`${NS}/web-u-alice`])
})

t.test('child events: owned children queue their parent; others do not', async (t) => {
  const { cluster, sim } = world(() => [deployment('web')])
  await sim.runUntilQuiet()
  cluster.settle()
  t.strictSame(sim.pending(), [`${NS}/web-u-alice`], 'the Deployment became available')
  await sim.runUntilQuiet()
  cluster.create({
    ...secret('foreign'),
    metadata: {
      name: 'foreign',
      namespace: NS,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'x', controller: true }],
    },
  })
  cluster.create({
    ...secret('impostor'),
    metadata: {
      name: 'impostor',
      namespace: NS,
      ownerReferences: [
        {
          apiVersion: 'challenge-hooks.dev/v1alpha1',
          kind: 'Challenge',
          name: 'web-u-alice',
          uid: 'old-uid',
          controller: true,
        },
      ],
    },
  })
  const orphan = cluster.create({
    ...secret('orphan'),
    metadata: { name: 'orphan', namespace: NS, finalizers: ['x/y'] },
  })
  cluster.delete({ apiVersion: 'v1', kind: 'Secret', namespace: NS, name: orphan.metadata.name })
  t.strictSame(sim.pending(), [])
  const { request } = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(Object.keys(request?.children['Secret.v1'] ?? {}), [], 'children of other owners are not claimed')
})
