import t from 'tap'
import { applyUpdate, LAST_APPLIED, merge, setLastApplied } from '../support/simulator/merge.js'
import type { KubeObject } from '../support/simulator/objects.js'

t.test('three-way merge, case by case', async (t) => {
  const cases: Array<[string, unknown, unknown, unknown, unknown]> = [
    // name, observed, lastApplied, desired, result
    ['a scalar is replaced', 1, 1, 2, 2],
    ['a field the hook never set survives', { a: 1, live: 'x' }, { a: 1 }, { a: 2 }, { a: 2, live: 'x' }],
    ['a field the hook stopped setting goes', { a: 1, b: 2 }, { a: 1, b: 2 }, { a: 1 }, { a: 1 }],
    [
      'nested objects merge',
      { spec: { a: 1, live: 1 } },
      { spec: { a: 1 } },
      { spec: { a: 2 } },
      { spec: { a: 2, live: 1 } },
    ],
    ['no last-applied: only additions and changes', { a: 1, live: 1 }, undefined, { a: 2 }, { a: 2, live: 1 }],
    [
      'desired null on an object field keeps the object minus applied fields',
      { o: { a: 1, live: 1 } },
      { o: { a: 1 } },
      { o: null },
      { o: { live: 1 } },
    ],
    ['a plain list is replaced', { l: [1, 2, 3] }, { l: [1, 2] }, { l: [4] }, { l: [4] }],
    ['a plain list set to null', { l: [1] }, { l: [1] }, { l: null }, { l: null }],
    [
      'a list map keeps live-only fields of its items, by merge key',
      {
        ports: [
          { port: 80, nodePort: 30080, protocol: 'TCP' },
          { port: 81, nodePort: 30081 },
        ],
      },
      { ports: [{ port: 80 }, { port: 81 }] },
      { ports: [{ port: 81, name: 'b' }, { port: 82 }, { port: 80, name: 'a' }] },
      {
        ports: [
          { port: 80, nodePort: 30080, protocol: 'TCP', name: 'a' },
          { port: 81, nodePort: 30081, name: 'b' },
          { port: 82 },
        ],
      },
    ],
    [
      'list map items removed from desired go',
      {
        containers: [
          { name: 'a', image: '1' },
          { name: 'b', image: '1' },
        ],
      },
      {
        containers: [
          { name: 'a', image: '1' },
          { name: 'b', image: '1' },
        ],
      },
      { containers: [{ name: 'b', image: '2' }] },
      { containers: [{ name: 'b', image: '2' }] },
    ],
    [
      'merge keys in precedence order (containerPort before name)',
      { l: [{ containerPort: 1, name: 'x', live: 1 }] },
      undefined,
      { l: [{ containerPort: 1, name: 'y' }] },
      { l: [{ containerPort: 1, name: 'y', live: 1 }] },
    ],
    [
      'items without a common merge key: replaced',
      { l: [{ a: 1, live: 1 }] },
      undefined,
      { l: [{ a: 2 }] },
      { l: [{ a: 2 }] },
    ],
    ['an empty list is replaced', { l: [] }, undefined, { l: [] }, { l: [] }],
    [
      'a list whose items are not all objects is replaced',
      { l: [{ name: 'a' }, 'b'] },
      undefined,
      { l: ['c'] },
      { l: ['c'] },
    ],
    ['a scalar becomes an object', { a: 1 }, { a: 1 }, { a: { b: 1 } }, { a: { b: 1 } }],
  ]
  for (const [name, observed, lastApplied, desired, expected] of cases) {
    t.strictSame(merge('', structuredClone(observed), lastApplied, desired), expected, name)
  }
  t.throws(() => merge('', { a: { b: 1 } }, { a: 'x' }, { a: { b: 2 } }), {
    message: /lastApplied\[a\]: expecting an object/,
  })
  t.throws(() => merge('', { a: [1] }, undefined, { a: 'x' }), { message: /desired\[a\]: expecting an array/ })
})

t.test('applyUpdate keeps system metadata and status, and records what it applied', async (t) => {
  const desired: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 's', namespace: 'ns', labels: { app: 's' }, annotations: { note: 'v1' } },
    spec: { type: 'NodePort', ports: [{ port: 80 }] },
  }
  const created = structuredClone(desired)
  setLastApplied(created, desired)
  const observed: KubeObject = {
    ...created,
    metadata: {
      ...created.metadata,
      uid: 'u',
      resourceVersion: '7',
      generation: 1,
      creationTimestamp: 'then',
      managedFields: [],
    },
    spec: { type: 'NodePort', clusterIP: '10.96.0.1', ports: [{ port: 80, nodePort: 30080, protocol: 'TCP' }] },
    status: { loadBalancer: {} },
  }
  t.strictSame(applyUpdate(observed, desired), observed, 'nothing changed: the merge is the observed object')

  const changed = structuredClone(desired)
  changed.metadata.annotations = { note: 'v2', [LAST_APPLIED]: 'stale, ignored' }
  changed.status = { ignored: true }
  changed.metadata.uid = 'other'
  const merged = applyUpdate(observed, changed)
  t.match(merged.metadata, {
    uid: 'u',
    resourceVersion: '7',
    generation: 1,
    creationTimestamp: 'then',
    annotations: { note: 'v2' },
  })
  t.strictSame(merged.status, { loadBalancer: {} })
  t.strictSame(merged.spec, observed.spec, 'live-only fields stay')
  t.strictSame(JSON.parse(merged.metadata.annotations?.[LAST_APPLIED] as string).metadata.annotations, { note: 'v2' })

  const bare = applyUpdate(
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '1' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } },
  )
  t.strictSame(bare.data, { a: '1' }, 'without last-applied, nothing is removed')
  t.notOk('uid' in bare.metadata)
})
