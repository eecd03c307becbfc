import t from 'tap'
import { Cluster } from '../support/simulator/cluster.js'
import type { KubeObject } from '../support/simulator/objects.js'
import { Simulator } from '../support/simulator/index.js'
import { challenge, controller, FakeHook, NS } from './fixtures.js'

const REF = { apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'Challenge', namespace: NS, name: 'web-u-alice' }

/** A cut-down Challenge CRD with the schema features the API server acts on. */
function crd(statusSubresource = true): KubeObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'challenges.challenge-hooks.dev' },
    spec: {
      group: 'challenge-hooks.dev',
      names: { kind: 'Challenge', plural: 'challenges' },
      versions: [
        {
          name: 'v1alpha1',
          ...(statusSubresource ? { subresources: { status: {} } } : {}),
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: {
                  type: 'object',
                  properties: {
                    definitionRef: { type: 'object', properties: { name: { type: 'string' } } },
                    owner: { type: 'object', properties: { kind: { type: 'string' }, id: { type: 'string' } } },
                    desiredState: { type: 'string', default: 'Running' },
                    renewals: { type: 'integer', default: 0 },
                    deadline: { type: 'string', nullable: true },
                    parameters: { type: 'object', additionalProperties: { type: 'string' } },
                    limits: { type: 'object', default: {}, properties: { cpu: { type: 'string', default: '500m' } } },
                    extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                    labels: { type: 'object', additionalProperties: true },
                    tags: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
                    raw: { type: 'array' },
                  },
                },
                status: {
                  type: 'object',
                  properties: { phase: { type: 'string' }, observedGeneration: { type: 'integer' } },
                },
              },
            },
          },
        },
      ],
    },
  }
}

t.test('writes are pruned to the schema and defaulted', async (t) => {
  const cluster = new Cluster()
  cluster.registerCRD(crd())
  const created = cluster.create({
    ...challenge(),
    topLevel: 'pruned',
    spec: {
      ...(challenge().spec as object),
      unknown: 'pruned',
      renewals: null,
      deadline: null,
      parameters: { FOO: 'bar' },
      extra: { anything: { goes: true } },
      labels: { a: 'b' },
      tags: [{ name: 'x', junk: 1 }],
      raw: [{ kept: true }],
    },
  })
  t.strictSame(created.spec, {
    definitionRef: { name: 'web' },
    owner: { kind: 'User', id: 'alice' },
    desiredState: 'Running',
    renewals: 0,
    deadline: null,
    parameters: { FOO: 'bar' },
    limits: { cpu: '500m' },
    extra: { anything: { goes: true } },
    labels: { a: 'b' },
    tags: [{ name: 'x' }],
    raw: [{ kept: true }],
  })
  t.notOk('topLevel' in created)
  t.equal(created.metadata.name, 'web-u-alice', 'metadata is never pruned')

  const withStatus = cluster.updateStatus({ ...created, status: { phase: 'Running', endpoint: { port: 1 } } })
  t.strictSame(withStatus.status, { phase: 'Running' }, 'an undeclared status field is lost')
  const updated = cluster.update({ ...withStatus, spec: { definitionRef: { name: 'web' } } })
  t.match(updated.spec, { desiredState: 'Running', renewals: 0 })
  t.equal(updated.metadata.generation, 2)
})

t.test('a schema that keeps unknown fields keeps everything', async (t) => {
  const cluster = new Cluster()
  cluster.registerCRD({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      names: { kind: 'Widget', plural: 'widgets' },
      versions: [
        { name: 'v1', schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
      ],
    },
  })
  const widget = cluster.create({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w', namespace: NS },
    spec: { a: 1 },
    status: { b: 2 },
  })
  t.strictSame(
    [widget.spec, widget.status],
    [{ a: 1 }, { b: 2 }],
    'no status subresource declared: status is part of the object',
  )
})

t.test('a CRD without the status subresource: status is written with the object', async (t) => {
  const cluster = new Cluster()
  cluster.registerCRD(crd(false))
  const created = cluster.create({ ...challenge(), status: { phase: 'Pending' } })
  t.strictSame(created.status, { phase: 'Pending' })
})

t.test('a status field missing from the CRD is lost, and every sync writes status again', async (t) => {
  const cluster = new Cluster()
  cluster.registerCRD(crd())
  cluster.create(challenge())
  const sim = new Simulator(
    controller(),
    cluster,
    new FakeHook({ sync: () => ({ status: { phase: 'Running', endpoint: { port: 1 } }, children: [] }) }),
  )
  await sim.runUntilQuiet()
  t.strictSame(cluster.get(REF)?.status, { phase: 'Running', observedGeneration: 1 })
  const again = await sim.reconcile(NS, 'web-u-alice')
  t.equal(again.statusWritten, true, 'the pruned status never matches the answer')
  t.equal(await sim.runUntilQuiet(), 0, 'the API server finds nothing to change: no event, no loop')
})
