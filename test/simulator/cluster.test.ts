import t from 'tap'
import { ApiError, Cluster, timestamp, type WatchEvent } from '../support/simulator/cluster.js'
import type { KubeObject } from '../support/simulator/objects.js'
import { challenge, deployment, NS, secret } from './fixtures.js'

const ref = (obj: KubeObject) => ({
  apiVersion: obj.apiVersion,
  kind: obj.kind,
  namespace: NS,
  name: obj.metadata.name,
})

t.test('clock', async (t) => {
  const cluster = new Cluster({ start: '2030-05-01T10:00:00Z' })
  t.equal(cluster.timestamp(), '2030-05-01T10:00:00Z')
  cluster.advance(90.5)
  t.equal(cluster.now().toISOString(), '2030-05-01T10:01:30.500Z')
  t.equal(cluster.timestamp(), '2030-05-01T10:01:30Z', 'Kubernetes times have whole seconds')
  t.equal(timestamp(new Date('2025-01-01T00:00:00.999Z')), '2025-01-01T00:00:00Z')
  t.equal(new Cluster().timestamp(), '2025-01-01T00:00:00Z', 'default start')
})

t.test('create assigns system metadata; reads are copies', async (t) => {
  const cluster = new Cluster()
  const input = challenge()
  input.metadata.uid = 'mine'
  input.metadata.generation = 7
  input.metadata.deletionTimestamp = '2020-01-01T00:00:00Z'
  input.status = { phase: 'Running' }
  const created = cluster.create(input)
  t.match(created.metadata, {
    uid: /^[0-9a-f]{8}-0000-4000-8000-0{11}1$/,
    resourceVersion: '1',
    generation: 1,
    creationTimestamp: '2025-01-01T00:00:00Z',
  })
  t.notOk(created.metadata.deletionTimestamp)
  t.notOk(created.status, 'status is only writable through the status subresource')
  t.equal(input.metadata.uid, 'mine', 'the input object is not touched')
  const read = cluster.get(ref(created)) as KubeObject
  read.metadata.name = 'changed'
  t.equal(cluster.get(ref(created))?.metadata.name, 'web-u-alice')
  t.equal(cluster.get({ ...ref(created), name: 'missing' }), undefined)

  const s = cluster.create(secret('s'))
  t.equal(s.metadata.generation, undefined, 'Secrets have no generation')
  t.equal(cluster.all().length, 2)
  t.strictSame(
    cluster.list('v1', 'Secret').map((o) => o.metadata.name),
    ['s'],
  )
  t.strictSame(cluster.list('v1', 'Secret', 'elsewhere'), [])

  t.throws(() => cluster.create(challenge()), { reason: 'AlreadyExists', status: 409, message: /./ })
  t.throws(() => cluster.create({ ...secret('x'), metadata: { name: 'x', namespace: NS, resourceVersion: '5' } }), {
    reason: 'Invalid',
    status: 422,
    message: /resourceVersion/,
  })
  for (const broken of [
    { kind: 'Secret', metadata: {} },
    { apiVersion: 'v1', metadata: {} },
    { apiVersion: 'v1', kind: 'Secret' },
  ]) {
    t.throws(() => cluster.create(broken as unknown as KubeObject), ApiError)
  }
})

t.test('an unknown kind is stored like a CRD with a status subresource', async (t) => {
  const cluster = new Cluster()
  const widget = cluster.create({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: NS },
    status: { x: 1 },
  })
  t.equal(widget.status, undefined)
  t.equal(widget.metadata.generation, 1)
})

t.test('update: generation follows content, status is kept, no-op writes are free', async (t) => {
  const cluster = new Cluster()
  const events: WatchEvent[] = []
  const stop = cluster.watch((e) => events.push(e))
  const created = cluster.create(challenge())
  const withStatus = cluster.updateStatus({ ...created, status: { phase: 'Pending' } }, 'metacontroller')
  t.equal(withStatus.metadata.generation, 1, 'a status write does not bump generation')
  t.equal(withStatus.metadata.resourceVersion, '2')

  const labelled = cluster.update({
    ...withStatus,
    metadata: { ...withStatus.metadata, labels: { a: 'b' } },
    status: { phase: 'Hacked' },
  })
  t.equal(labelled.metadata.generation, 1, 'metadata changes keep generation')
  t.strictSame(labelled.status, { phase: 'Pending' }, 'updates through the main resource keep status')
  t.equal(labelled.metadata.uid, created.metadata.uid)

  const respecced = cluster.update({ ...labelled, spec: { ...(labelled.spec as object), renewals: 1 } })
  t.equal(respecced.metadata.generation, 2)

  const writes = cluster.writes
  const again = cluster.update(respecced)
  t.equal(again.metadata.resourceVersion, respecced.metadata.resourceVersion, 'nothing changed: no new resourceVersion')
  t.equal(cluster.writes, writes)
  t.strictSame(
    events.map((e) => e.type),
    ['ADDED', 'MODIFIED', 'MODIFIED', 'MODIFIED'],
  )
  t.equal(events[1]?.previous?.metadata.resourceVersion, '1')

  t.throws(() => cluster.update(withStatus), { reason: 'Conflict', message: /has been modified/ })
  t.throws(() => cluster.updateStatus(withStatus), { reason: 'Conflict', message: /./ })
  t.throws(() => cluster.update({ ...challenge('nope') }), { reason: 'NotFound', status: 404, message: /./ })

  // updateStatus with no status removes it; Secrets have no status subresource, so update writes everything
  const cleared = cluster.updateStatus({ ...again, status: undefined })
  t.notOk('status' in cleared)
  const s = cluster.create(secret('s'))
  t.strictSame(cluster.update({ ...s, type: 'Opaque', data: {} }).data, {})
  const seen = events.length
  stop()
  cluster.create(secret('quiet'))
  t.equal(events.length, seen, 'no events after unwatching')
})

t.test('put creates or updates, ignoring resourceVersion', async (t) => {
  const cluster = new Cluster()
  const first = cluster.put({ ...challenge(), metadata: { ...challenge().metadata } })
  const second = cluster.put({
    ...challenge(),
    metadata: { ...challenge().metadata, resourceVersion: '999' },
    spec: { definitionRef: { name: 'other' } },
  })
  t.equal(second.metadata.uid, first.metadata.uid)
  t.equal(second.metadata.generation, 2)
})

t.test('delete: finalizers, graceful Pods, uid preconditions', async (t) => {
  const cluster = new Cluster()
  const events: WatchEvent[] = []
  cluster.watch((e) => events.push(e))
  const parent = cluster.create({
    ...challenge(),
    metadata: { ...challenge().metadata, finalizers: ['example.com/keep'] },
  })
  cluster.advance(10)
  const deleting = cluster.delete(ref(parent)) as KubeObject
  t.equal(deleting.metadata.deletionTimestamp, '2025-01-01T00:00:10Z')
  t.equal(deleting.metadata.deletionGracePeriodSeconds, 0)
  t.equal(deleting.metadata.generation, 2, 'recording a deletion bumps generation')
  t.strictSame(cluster.delete(ref(parent)), deleting, 'deleting again changes nothing')
  const gone = cluster.update({ ...deleting, metadata: { ...deleting.metadata, finalizers: [] } })
  t.ok(gone.metadata.deletionTimestamp, 'the final state is returned')
  t.equal(cluster.get(ref(parent)), undefined, 'removing the last finalizer removes the object')
  t.equal(events.at(-1)?.type, 'DELETED')

  const s = cluster.create(secret('s'))
  t.throws(() => cluster.delete(ref(s), { uid: 'other' }), { reason: 'Conflict', message: /Precondition failed/ })
  t.equal(cluster.delete(ref(s), { uid: s.metadata.uid }), undefined)
  t.throws(() => cluster.delete(ref(s)), { reason: 'NotFound', message: /./ })

  const pod = cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: NS },
    spec: { containers: [], nodeName: 'node-1' },
  })
  const terminating = cluster.delete(ref(pod)) as KubeObject
  t.equal(terminating.metadata.deletionGracePeriodSeconds, 30, 'Pods on a node wait for the kubelet')
  cluster.terminatePods()
  t.equal(cluster.get(ref(pod)), undefined)

  const unscheduled = cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'q', namespace: NS },
    spec: { containers: [] },
  })
  t.equal(cluster.delete(ref(unscheduled)), undefined, 'a Pod no kubelet has is deleted at once')
  const ended = cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'r', namespace: NS },
    spec: { containers: [], nodeName: 'node-1' },
  })
  cluster.updateStatus({ ...ended, status: { phase: 'Failed' } })
  t.equal(cluster.delete(ref(ended)), undefined, 'so is a Pod that has ended')
})

t.test('managedFields describe what each manager wrote', async (t) => {
  const cluster = new Cluster()
  const d = cluster.create(
    { ...deployment('web'), metadata: { name: 'web', namespace: NS, labels: { app: 'web' }, finalizers: ['x/y'] } },
    'metacontroller',
  )
  const [entry] = d.metadata.managedFields ?? []
  t.match(entry, {
    manager: 'metacontroller',
    operation: 'Update',
    apiVersion: 'apps/v1',
    time: '2025-01-01T00:00:00Z',
    fieldsType: 'FieldsV1',
  })
  const fields = entry?.fieldsV1 as any
  t.ok(fields['f:metadata']['f:labels']['f:app'])
  t.ok(fields['f:metadata']['f:finalizers']['v:"x/y"'], 'scalar list items')
  t.ok(
    fields['f:spec']['f:template']['f:spec']['f:containers']['k:{"name":"app"}']['f:ports']['k:{"containerPort":8080}'],
    'keyed list items',
  )
  t.notOk(fields['f:status'])

  cluster.advance(5)
  const withStatus = cluster.updateStatus(
    { ...d, status: { replicas: 1, conditions: [{ type: 'Available', status: 'True' }] } },
    'kube-controller-manager',
  )
  const statusEntry = withStatus.metadata.managedFields?.[1]
  t.match(statusEntry, { manager: 'kube-controller-manager', subresource: 'status', time: '2025-01-01T00:00:05Z' })
  t.ok((statusEntry?.fieldsV1 as any)['f:status']['f:conditions']['k:{"type":"Available"}'])
  const rewritten = cluster.update(
    { ...withStatus, metadata: { ...withStatus.metadata, labels: { app: 'web', b: 'c' } } },
    'metacontroller',
  )
  t.equal(rewritten.metadata.managedFields?.length, 2, 'one entry per manager and subresource')

  const ingress = cluster.create({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: 'i', namespace: NS },
    spec: { rules: [{ host: 'a.example', http: { paths: [] } }] },
  })
  t.strictSame(
    (ingress.metadata.managedFields?.[0]?.fieldsV1 as any)['f:spec']['f:rules'],
    { '.': {} },
    'atomic lists of objects list no items',
  )
})

t.test(
  "managedFields follow Update semantics: the writer owns what it changed, a removed field is nobody's",
  async (t) => {
    const cluster = new Cluster()
    const created = cluster.create(
      { ...deployment('web'), metadata: { name: 'web', namespace: NS, labels: { app: 'web', tier: 'a' } } },
      'metacontroller',
    )
    const entries = () =>
      (cluster.get(ref(created))?.metadata.managedFields ?? []).map(
        (entry) => [entry.manager, entry.subresource ?? '', entry.fieldsV1] as const,
      )
    const owner = (field: string) =>
      entries()
        .filter(([, , fields]) => ((fields as any)['f:metadata']?.['f:labels'] ?? {})[field] !== undefined)
        .map(([manager]) => manager)
    t.strictSame(owner('f:tier'), ['metacontroller'], 'the creator owns what it created')
    t.ok(
      ((entries()[0]?.[2] as any)['f:spec'] ?? {})['f:revisionHistoryLimit'],
      'defaults included, as the API server records a create',
    )

    const current = cluster.get(ref(created)) as KubeObject
    cluster.update({ ...current, metadata: { ...current.metadata, labels: { app: 'web', tier: 'b' } } }, 'platform')
    t.strictSame(owner('f:tier'), ['platform'], 'an update takes the fields it changed from their previous owner')
    t.strictSame(owner('f:app'), ['metacontroller'], 'and leaves the others where they were')

    const again = cluster.get(ref(created)) as KubeObject
    cluster.update({ ...again, metadata: { ...again.metadata, labels: { app: 'web' } } }, 'metacontroller')
    t.strictSame(owner('f:tier'), [], "a removed field is nobody's")
    t.strictSame(
      entries().map(([manager]) => manager),
      ['metacontroller'],
      'an entry left with nothing is dropped',
    )
  },
)

t.test('binding a pod records no field manager, as the binding subresource', async (t) => {
  const cluster = new Cluster()
  const pod = cluster.create(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: NS },
      spec: { containers: [{ name: 'c', image: 'i:1' }] },
    },
    'kube-controller-manager',
  )
  const bound = cluster.bind(pod, 'node-1')
  t.equal((bound.spec as any).nodeName, 'node-1')
  t.strictSame(
    (bound.metadata.managedFields ?? []).map((entry) => entry.manager),
    ['kube-controller-manager'],
  )
})
