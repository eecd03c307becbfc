// What hooks receive: request shape, v1/v2 keys, groups per rule, customize and related objects.
import t from 'tap'
import { Cluster } from '../support/simulator/cluster.js'
import type { KubeObject } from '../support/simulator/objects.js'
import { Simulator } from '../support/simulator/index.js'
import { challenge, controller, FakeHook, NS, secret, webHook } from './fixtures.js'

const CHALLENGES = { apiVersion: 'challenge-hooks.dev/v1alpha1', resource: 'challenges' }

t.test('the sync request: whole objects, one group per child rule, v1 keys', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const hook = new FakeHook({ sync: webHook })
  const sim = new Simulator(controller(), cluster, hook)
  await sim.runUntilQuiet()
  const result = await sim.reconcile(NS, 'web-u-alice')
  const request = result.request!
  t.strictSame(Object.keys(request), ['controller', 'parent', 'children', 'related', 'finalizing'])
  t.strictSame(request.controller, controller())
  t.equal(request.finalizing, false)
  t.strictSame(request.related, {}, 'no customize hook: {}')
  t.match(request.parent, {
    metadata: {
      finalizers: ['metacontroller.io/compositecontroller-challenge-hooks'],
      managedFields: [{ manager: 'test' }, { manager: 'metacontroller' }],
    },
    status: { phase: 'Pending', observedGeneration: 1 },
  })
  t.strictSame(Object.keys(request.children), [
    'Deployment.apps/v1',
    'NetworkPolicy.networking.k8s.io/v1',
    'Secret.v1',
    'Service.v1',
  ])
  t.strictSame(request.children['Secret.v1'], {}, 'an empty group is still there')
  t.strictSame(Object.keys(request.children['Deployment.apps/v1'] ?? {}), ['web-u-alice'], 'v1: keyed by name')
  t.strictSame(
    Object.keys(request.parent),
    ['apiVersion', 'kind', 'metadata', 'spec', 'status'],
    'keys sorted, as Go writes maps',
  )
  t.strictSame(hook.calls.at(-1)?.body, request, 'what the hook got is what the result shows')
  t.ok(JSON.stringify(request).length > 5000, 'managedFields and last-applied annotations make bodies large')
})

t.test('v2 keys namespace/name; the override shows in the controller sent', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const sim = new Simulator(controller(), cluster, new FakeHook({ sync: webHook }), { hookVersion: 'v2' })
  await sim.runUntilQuiet()
  const { request } = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(Object.keys(request?.children['Service.v1'] ?? {}), [`${NS}/web-u-alice`])
  t.equal(request?.controller.spec.hooks?.sync?.version, 'v2')
  t.equal(request?.controller.spec.hooks?.finalize?.version, 'v2')
})

t.test('a hook cannot reach the cluster through its request', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const sim = new Simulator(
    controller(),
    cluster,
    new FakeHook({
      sync: (request) => {
        request.parent.metadata.labels.hacked = 'yes'
        request.parent.status = { phase: 'Hacked' }
        return { status: { phase: 'Pending' }, children: [] }
      },
    }),
  )
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.notOk(result.request?.parent.metadata.labels?.hacked)
  const parent = cluster.get({
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    namespace: NS,
    name: 'web-u-alice',
  })
  t.notOk(parent?.metadata.labels?.hacked)
  t.strictSame(parent?.status, { phase: 'Pending', observedGeneration: 1 })
})

t.test('customize: related objects from the rules, one group per rule, cached per generation', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge('web-u-alice'))
  cluster.create(challenge('pwn-u-alice'))
  cluster.create({
    ...challenge('web-u-bob'),
    metadata: { name: 'web-u-bob', namespace: NS, labels: { 'challenge-hooks.dev/owner': 'bob' } },
  })
  cluster.create({
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    metadata: { name: 'web', namespace: NS },
    spec: {},
  })
  const hook = new FakeHook({
    customize: (request) => ({
      relatedResources: [
        {
          ...CHALLENGES,
          labelSelector: {
            matchLabels: { 'challenge-hooks.dev/owner': request.parent.metadata.labels['challenge-hooks.dev/owner'] },
          },
        },
        {
          apiVersion: 'challenge-hooks.dev/v1alpha1',
          resource: 'challengedefinitions',
          names: [request.parent.spec.definitionRef.name],
        },
        { apiVersion: 'v1', resource: 'secrets', names: ['static-flag'] },
      ],
    }),
    sync: () => ({ status: {}, children: [] }),
  })
  const sim = new Simulator(controller({ hooks: { sync: { webhook: {} }, customize: { webhook: {} } } }), cluster, hook)
  const first = await sim.reconcile(NS, 'web-u-alice')
  t.match(first.customize, {
    cached: false,
    rules: [{ resource: 'challenges' }, { resource: 'challengedefinitions' }, { resource: 'secrets' }],
  })
  t.strictSame(Object.keys(hook.callsOf('customize')[0]?.body ?? {}), ['controller', 'parent'])
  const related = first.request!.related
  t.strictSame(Object.keys(related['Challenge.challenge-hooks.dev/v1alpha1'] ?? {}), ['pwn-u-alice', 'web-u-alice'])
  t.strictSame(Object.keys(related['ChallengeDefinition.challenge-hooks.dev/v1alpha1'] ?? {}), ['web'])
  t.strictSame(related['Secret.v1'], {}, 'a rule that selects nothing is an empty group')

  const second = await sim.reconcile(NS, 'web-u-alice')
  t.strictSame(second.customize, { cached: true, rules: first.customize?.rules })
  t.equal(hook.callsOf('customize').length, 1)

  // A change to a related object resyncs the parents whose rules select it.
  await sim.runUntilQuiet()
  cluster.create(secret('static-flag'))
  t.strictSame(sim.pending(), [`${NS}/pwn-u-alice`, `${NS}/web-u-alice`, `${NS}/web-u-bob`])
  await sim.runUntilQuiet()
  // ...and one that stops matching (its previous state matched) too.
  const alicePwn = cluster.get({
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    namespace: NS,
    name: 'pwn-u-alice',
  }) as KubeObject
  cluster.update({ ...alicePwn, metadata: { ...alicePwn.metadata, labels: { 'challenge-hooks.dev/owner': 'carol' } } })
  t.strictSame(sim.pending(), [`${NS}/pwn-u-alice`, `${NS}/web-u-alice`])
  await sim.runUntilQuiet()

  // A new generation asks again; so does an answer older than 20 minutes.
  const calls = hook.callsOf('customize').length
  const parent = cluster.get({
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    namespace: NS,
    name: 'web-u-alice',
  }) as KubeObject
  cluster.update({ ...parent, spec: { ...(parent.spec as object), renewals: 1 } })
  t.equal((await sim.reconcile(NS, 'web-u-alice')).customize?.cached, false)
  cluster.advance(20 * 60 + 1)
  t.equal((await sim.reconcile(NS, 'web-u-alice')).customize?.cached, false)
  t.equal(hook.callsOf('customize').length, calls + 2)
})

t.test('customize failures block the sync', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const cases: Array<[string, unknown, RegExp]> = [
    [
      'non-200',
      { statusCode: 500, headers: {}, body: undefined, text: 'boom' },
      /customize hook failed: unsupported status code: 500 body: boom/,
    ],
    [
      'strict v2, unknown field',
      { relatedResources: [], extra: true },
      /customize hook failed \(version=v2\): strict validation failed: unknown field "extra"/,
    ],
    ['a null rule', { relatedResources: [null] }, /would crash Metacontroller/],
    [
      'an invalid rule',
      { relatedResources: [{ apiVersion: 'v1', resource: 'secrets', names: ['a'], labelSelector: {} }] },
      /both names and labelSelector/,
    ],
    [
      'an unknown resource',
      { relatedResources: [{ apiVersion: 'v1', resource: 'widgets' }] },
      /can't find resource "widgets"/,
    ],
  ]
  for (const [name, answer, message] of cases) {
    const hook = new FakeHook({ customize: () => answer, sync: () => ({ children: [] }) })
    const sim = new Simulator(
      controller({ hooks: { sync: { webhook: {} }, customize: { version: 'v2', webhook: {} } } }),
      cluster,
      hook,
    )
    const result = await sim.reconcile(NS, 'web-u-alice')
    t.equal(result.outcome, 'error', name)
    t.match(result.errors[0], message, name)
    t.equal(hook.callsOf('sync').length, 0, `${name}: no sync call`)
    sim.close()
  }
})

t.test('a cached rule that cannot be resolved selects nothing when objects change', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const hook = new FakeHook({
    customize: () => ({ relatedResources: [{ apiVersion: 'v1', resource: 'widgets' }] }),
    sync: () => ({ children: [] }),
  })
  const sim = new Simulator(controller({ hooks: { sync: { webhook: {} }, customize: { webhook: {} } } }), cluster, hook)
  t.equal((await sim.reconcile(NS, 'web-u-alice')).outcome, 'error')
  cluster.create(secret('s'))
  t.strictSame(sim.pending(), [])
})

t.test('customize in loose mode ignores unknown fields, with a warning', async (t) => {
  const cluster = new Cluster()
  cluster.create(challenge())
  const hook = new FakeHook({ customize: () => ({ RelatedResources: [] }), sync: () => ({ children: [] }) })
  const sim = new Simulator(controller({ hooks: { sync: { webhook: {} }, customize: { webhook: {} } } }), cluster, hook)
  const result = await sim.reconcile(NS, 'web-u-alice')
  t.equal(result.outcome, 'synced')
  t.strictSame(result.warnings, ['customize answer: unknown field "RelatedResources" ignored (loose mode)'])
  t.strictSame(result.request?.related, {})
})
