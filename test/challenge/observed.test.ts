// The observed index (src/challenge/observed.ts), one row per rule: each object under its own kind, the group key's
// prefix only for an object sent without one, other namespaces left out, and the count over every kind.
import t from 'tap'
import { countObjects, findObject, indexObjects, isBeingDeleted, objectsOfKind } from '../../src/challenge/observed.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { NAMESPACE, object } from './objects.js'

const names = (objects: KubeObject[]) => objects.map((o) => o.metadata.name)

t.test('indexObjects: the object kind first, the group key only as a fallback', async (t) => {
  const index = indexObjects(
    {
      'Deployment.apps/v1': {
        web: object('Deployment', 'web'),
        // A group key says nothing about what the object is: its own kind wins.
        lying: object('Service', 'lying'),
        kindless: { metadata: { name: 'kindless', namespace: NAMESPACE } },
        'empty-kind': object('', 'empty-kind'),
        'number-kind': object(7 as unknown as string, 'number-kind'),
      },
      'Secret.v1': { flag: object('Secret', 'flag') },
    },
    NAMESPACE,
  )
  t.strictSame(
    names(objectsOfKind(index, 'Deployment')),
    ['web', 'kindless', 'empty-kind', 'number-kind'],
    'the group key names a kindless, empty or non-string kind',
  )
  t.strictSame(names(objectsOfKind(index, 'Service')), ['lying'], 'an object under another group key keeps its kind')
  t.strictSame(names(objectsOfKind(index, 'Secret')), ['flag'])
  t.strictSame(objectsOfKind(index, 'Pod'), [], 'a kind not observed: none')
  t.strictSame([...index.keys()].sort(), ['Deployment', 'Secret', 'Service'], 'no kind from a value that is not a kind')
  t.equal(countObjects(index), 6, 'counted over every kind')
  t.equal(findObject(index, 'Service', 'lying')?.metadata.name, 'lying')
  t.equal(findObject(index, 'Deployment', 'lying'), undefined, 'found by its own kind only')
})

t.test('indexObjects: an object sent without its kind or apiVersion takes them from its group key', async (t) => {
  const index = indexObjects(
    {
      'NetworkPolicy.networking.k8s.io/v1': {
        bare: { metadata: { name: 'bare', namespace: NAMESPACE }, spec: { podSelector: {} } },
        'own-kind': { kind: 'NetworkPolicy', apiVersion: '', metadata: { name: 'own-kind', namespace: NAMESPACE } },
        whole: {
          kind: 'NetworkPolicy',
          apiVersion: 'example.org/v9',
          metadata: { name: 'whole', namespace: NAMESPACE },
        },
      },
      // A key without a dot names a kind and no apiVersion; one that begins with its dot, an apiVersion and no kind.
      odd: { 'no-version': { metadata: { name: 'no-version', namespace: NAMESPACE } } },
      '.v1': { 'no-kind': { metadata: { name: 'no-kind', namespace: NAMESPACE } } },
    },
    NAMESPACE,
  )
  t.strictSame(objectsOfKind(index, 'NetworkPolicy'), [
    {
      metadata: { name: 'bare', namespace: NAMESPACE },
      spec: { podSelector: {} },
      kind: 'NetworkPolicy',
      apiVersion: 'networking.k8s.io/v1',
    },
    { kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', metadata: { name: 'own-kind', namespace: NAMESPACE } },
    { kind: 'NetworkPolicy', apiVersion: 'example.org/v9', metadata: { name: 'whole', namespace: NAMESPACE } },
  ])
  t.strictSame(objectsOfKind(index, 'odd'), [
    { metadata: { name: 'no-version', namespace: NAMESPACE }, kind: 'odd', apiVersion: '' },
  ])
  t.strictSame(objectsOfKind(index, ''), [
    { metadata: { name: 'no-kind', namespace: NAMESPACE }, kind: '', apiVersion: 'v1' },
  ])
})

t.test('indexObjects: objects of another namespace are not the parent’s, objects without one are', async (t) => {
  const other = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'elsewhere', namespace: 'kube-system' },
  } as KubeObject
  const bare = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bare' } } as KubeObject
  const index = indexObjects(
    { 'Secret.v1': { 'kube-system/elsewhere': other, [`${NAMESPACE}/flag`]: object('Secret', 'flag'), bare } },
    NAMESPACE,
  )
  t.strictSame(names(objectsOfKind(index, 'Secret')), ['flag', 'bare'])
  t.equal(countObjects(index), 2)
  t.equal(countObjects(indexObjects(undefined, NAMESPACE)), 0, 'no groups: an empty index')
  t.equal(countObjects(indexObjects({ 'Secret.v1': {} }, NAMESPACE)), 0, 'an empty group counts nothing')
})

t.test('isBeingDeleted: a deletion timestamp, as a string', async (t) => {
  t.equal(isBeingDeleted(object('Pod', 'p')), false)
  t.equal(
    isBeingDeleted(object('Pod', 'p', { metadata: { name: 'p', deletionTimestamp: '2026-01-01T00:00:00Z' } })),
    true,
  )
})
