import t from 'tap'
import { Cluster } from '../support/simulator/cluster.js'
import {
  controllerOf,
  describe,
  refOf,
  groupName,
  labelMatcher,
  resourceByKind,
  resourceByName,
  type KubeObject,
} from '../support/simulator/objects.js'
import { listRelated, resolveRule, type HookVersion } from '../support/simulator/related.js'
import type { RelatedRule } from '../support/simulator/response.js'
import { challenge, NS, secret } from './fixtures.js'

t.test('label selectors', async (t) => {
  const labels = { app: 'web', tier: 'front' }
  const cases: Array<[Parameters<typeof labelMatcher>[0], Record<string, string> | undefined, boolean]> = [
    [undefined, labels, true],
    [null, undefined, true],
    [{}, labels, true],
    [{ matchLabels: { app: 'web' } }, labels, true],
    [{ matchLabels: { app: 'api' } }, labels, false],
    [{ matchLabels: { app: 'web' } }, undefined, false],
    [{ matchExpressions: [{ key: 'app', operator: 'In', values: ['api', 'web'] }] }, labels, true],
    [{ matchExpressions: [{ key: 'app', operator: 'In', values: ['api'] }] }, labels, false],
    [{ matchExpressions: [{ key: 'missing', operator: 'In', values: ['x'] }] }, labels, false],
    [{ matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['api'] }] }, labels, true],
    [{ matchExpressions: [{ key: 'missing', operator: 'NotIn', values: ['x'] }] }, labels, true],
    [{ matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }] }, labels, false],
    [{ matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, labels, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' }] }, labels, false],
    [{ matchExpressions: [{ key: 'nope', operator: 'DoesNotExist', values: [] }] }, labels, true],
    [
      { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['front'] }] },
      labels,
      false,
    ],
  ]
  for (const [selector, input, expected] of cases)
    t.equal(labelMatcher(selector)(input), expected, JSON.stringify(selector))
  t.throws(() => labelMatcher({ matchExpressions: [{ key: 'a', operator: 'In' }] }), { message: /must be non-empty/ })
  t.throws(() => labelMatcher({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }), {
    message: /must be empty/,
  })
  t.throws(() => labelMatcher({ matchExpressions: [{ key: 'a', operator: 'Gt' as 'In', values: ['1'] }] }), {
    message: /not a valid operator/,
  })
})

t.test('resource table and object helpers', async (t) => {
  t.equal(resourceByName('apps/v1', 'deployments')?.kind, 'Deployment')
  t.equal(resourceByName('apps/v1beta1', 'deployments'), undefined)
  t.equal(resourceByKind('networking.k8s.io/v1', 'Ingress')?.resource, 'ingresses')
  t.equal(groupName('v1', 'Secret'), 'Secret.v1')
  t.equal(groupName('apps/v1', 'Deployment'), 'Deployment.apps/v1')
  t.equal(describe({ apiVersion: 'v1', kind: 'Secret', namespace: 'ns', name: 'n' }), 'Secret ns/n')
  t.equal(controllerOf(secret('s')), undefined)
  t.strictSame(refOf({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' } }), {
    apiVersion: 'v1',
    kind: 'Namespace',
    namespace: '',
    name: 'n',
  })
  const owned = {
    ...secret('s'),
    metadata: {
      name: 's',
      ownerReferences: [
        { apiVersion: 'v1', kind: 'X', name: 'a', uid: '1' },
        { apiVersion: 'v1', kind: 'Y', name: 'b', uid: '2', controller: true },
      ],
    },
  }
  t.equal(controllerOf(owned)?.name, 'b')
})

t.test('related rules', async (t) => {
  const cluster = new Cluster()
  const parent = cluster.create(challenge('mine'))
  const make = (name: string, namespace: string, labels: Record<string, string>) =>
    cluster.create({ ...challenge(name), metadata: { name, namespace, labels } })
  make('a', NS, { 'challenge-hooks.dev/owner': 'alice' })
  make('b', NS, { 'challenge-hooks.dev/owner': 'bob' })
  make('c', 'other', { 'challenge-hooks.dev/owner': 'alice' })
  cluster.create({ ...secret('flag'), metadata: { name: 'flag', namespace: NS } })
  cluster.create({ ...secret('flag'), metadata: { name: 'flag', namespace: 'other' } })

  const names = (rule: Partial<RelatedRule>, version: HookVersion) =>
    listRelated(
      cluster,
      resolveRule({ apiVersion: 'challenge-hooks.dev/v1alpha1', resource: 'challenges', ...rule }, parent, version),
    ).map((o: KubeObject) => `${o.metadata.namespace}/${o.metadata.name}`)
  const owner = { labelSelector: { matchLabels: { 'challenge-hooks.dev/owner': 'alice' } } }
  t.strictSame(names(owner, 'v1'), ['ctf/a', 'ctf/mine'], 'v1: only the parent namespace')
  t.strictSame(names(owner, 'v2'), ['ctf/a', 'ctf/mine', 'other/c'], 'v2: every namespace')
  t.strictSame(names({ ...owner, namespace: 'other' }, 'v2'), ['other/c'])
  t.strictSame(names({ ...owner, namespace: NS }, 'v1'), ['ctf/a', 'ctf/mine'])
  t.strictSame(names({ names: ['a', 'c'] }, 'v2'), ['ctf/a', 'other/c'])
  t.strictSame(names({ names: ['a', 'c'] }, 'v1'), ['ctf/a'])
  t.strictSame(names({ names: ['a', 'c'], namespace: 'other' }, 'v2'), ['other/c'])
  t.strictSame(names({ namespace: 'other' }, 'v2'), ['other/c'], 'a namespace and no names: everything in it')
  t.strictSame(names({ names: [], labelSelector: null }, 'v2').length, 4, 'empty names and a null selector: everything')

  t.throws(() => names({ ...owner, namespace: 'other' }, 'v1'), { message: /differs from parent object namespace/ })
  t.throws(() => names({ ...owner, names: ['a'] }, 'v2'), { message: /both names and labelSelector/ })
  t.throws(() => names({ names: ['a'], namespaceSelector: {} }, 'v2'), { message: /both names/ })
  t.throws(() => names({ namespaceSelector: {} }, 'v1'), { message: /not supported for namespaced parent in v1/ })
  t.throws(() => names({ namespaceSelector: {} }, 'v2'), { message: /not supported by the simulator/ })
  t.throws(() => resolveRule({ apiVersion: 'v1', resource: 'widgets' }, parent, 'v2'), {
    message: /can't find resource "widgets"/,
  })

  const flagRule = resolveRule({ apiVersion: 'v1', resource: 'secrets', names: ['flag'] }, parent, 'v1')
  t.strictSame(
    listRelated(cluster, flagRule).map((o) => o.metadata.namespace),
    [NS],
  )
  t.notOk(flagRule.matches(parent), 'another kind never matches')
})
