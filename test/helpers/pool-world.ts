// A warm pool's world for the tests of its hooks: a definition with a pool, its sync requests, and its children as
// Metacontroller makes them from an answer (the definition's own, with a uid), step by step.
import { createHmac } from 'node:crypto'
import { poolSync } from '../../src/challenge/pool-hooks.js'
import type { DesiredChild, KubeObject, PoolSyncRequest, SyncResponse } from '../../src/contract/protocol.js'
import { testConfig } from './app.js'
import { T0 } from './instant.js'
import { controllerRef } from './world.js'

export const config = testConfig({ flagSecret: 'pool-test-secret' })
export const NS = 'challenges'
export const DEF_UID = 'd0d0d0d0-0000-4000-8000-000000000001'
export const NOW = new Date(T0)
export const OWNED = [
  {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    name: 'web',
    uid: DEF_UID,
    controller: true,
    blockOwnerDeletion: true,
  },
]

export type Json = Record<string, any>

export const BASE_SPEC: Json = {
  pod: { containers: [{ name: 'app', image: 'registry.example.org/web:1' }] },
  expose: { type: 'HTTP', port: 8080 },
  flag: { mode: 'PerInstance' },
  pool: { size: 2 },
}

export function definition(spec: Json = {}, metadata: Json = {}, status?: unknown): PoolSyncRequest['parent'] {
  return {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    metadata: { name: 'web', namespace: NS, uid: DEF_UID, ...metadata },
    spec: { ...BASE_SPEC, ...spec },
    ...(status === undefined ? {} : { status }),
  }
}

export const GROUP: Record<string, string> = {
  Pod: 'Pod.v1',
  Secret: 'Secret.v1',
  NetworkPolicy: 'NetworkPolicy.networking.k8s.io/v1',
  Challenge: 'Challenge.challenge-hooks.dev/v1alpha1',
  Service: 'Service.v1',
}

export function groups(objects: readonly KubeObject[]): Record<string, Record<string, KubeObject>> {
  const result: Record<string, Record<string, KubeObject>> = {}
  for (const object of objects) {
    const group = (result[GROUP[object.kind as string] as string] ??= {})
    group[object.metadata.name] = object
  }
  return result
}

export function request(
  parent: PoolSyncRequest['parent'],
  children: readonly KubeObject[],
  related: readonly KubeObject[] = [],
): PoolSyncRequest {
  return { parent, children: groups(children), related: groups(related) }
}

/** What Metacontroller makes of an answered child: the definition's own, with a uid of the API server's. */
export function applied(child: DesiredChild | KubeObject, extra: Json = {}): KubeObject {
  return {
    ...child,
    metadata: { ...child.metadata, namespace: NS, uid: `uid-${child.metadata.name}`, ownerReferences: OWNED },
    ...extra,
  } as unknown as KubeObject
}

/** The world after Metacontroller applied the answer: every child answered is there, and nothing else. */
export function apply(answer: SyncResponse, keep: (child: DesiredChild) => Json = () => ({})): KubeObject[] {
  return answer.children.map((child) => applied(child, keep(child)))
}

export const READY = { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } }
export const readyPods = (child: DesiredChild) => (child.kind === 'Pod' ? READY : {})

export function flagOf(uid: string, prefix = 'flag{', suffix = '}'): string {
  const part = createHmac('sha256', 'pool-test-secret').update(uid).digest('hex').slice(0, 32)
  return Buffer.from(`${prefix}${part}${suffix}`).toString('base64')
}

export const names = (answer: SyncResponse) => answer.children.map((child) => `${child.kind} ${child.metadata.name}`)
export const podOf = (answer: SyncResponse, name: string) =>
  answer.children.find((child) => child.kind === 'Pod' && child.metadata.name === name) as Json

export const challenge = (name: string, uid: string, pool: Json | undefined, extra: Json = {}): KubeObject => ({
  apiVersion: 'challenge-hooks.dev/v1alpha1',
  kind: 'Challenge',
  metadata: {
    name,
    namespace: NS,
    uid,
    creationTimestamp: '2026-11-22T11:00:00Z',
    labels: { 'challenge-hooks.dev/definition': 'web' },
  },
  spec: { definitionRef: { name: 'web' }, owner: { kind: 'User', id: name } },
  status: { admittedAt: '2026-11-22T11:59:00Z', ...(pool === undefined ? {} : { pool }) },
  ...extra,
})

/**
 * The Service of a Challenge served from the pool, with the ticket its hook writes on it (docs/api.md#warm-pools):
 * what the pool sees of that Challenge. `pool` is its status.pool; a run that is not Waiting or Claimed carries no
 * ticket label in the product, and one here says what the pool makes of a state that asks for nothing.
 */
export const ticket = (
  name: string,
  uid: string,
  pool: Json | undefined,
  extra: { admittedAt?: string; metadata?: Json } = {},
): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: {
    name,
    namespace: NS,
    uid: `service-${uid}`,
    creationTimestamp: '2026-11-22T11:59:00Z',
    labels: { 'challenge-hooks.dev/pool-ticket': 'web' },
    annotations: {
      ...(pool?.state === undefined ? {} : { 'challenge-hooks.dev/pool-state': pool.state }),
      ...(pool?.pod === undefined ? {} : { 'challenge-hooks.dev/pool-pod': pool.pod }),
      'challenge-hooks.dev/admitted-at': extra.admittedAt ?? '2026-11-22T11:59:00Z',
    },
    ownerReferences: [controllerRef(uid, name)],
    ...extra.metadata,
  } as KubeObject['metadata'],
  spec: { type: 'ClusterIP', ports: [{ name: 'challenge', protocol: 'TCP', port: 8080, targetPort: 8080 }] },
})

/** The pool of `size` after the three steps that make its pods: policies and empty Secrets, flags, pods. */
export function warmPool(spec: Json = {}): {
  world: KubeObject[]
  parent: PoolSyncRequest['parent']
  last: SyncResponse
} {
  let parent = definition(spec)
  let world: KubeObject[] = []
  let last = poolSync(request(parent, world), config, NOW)
  for (let step = 0; step < 3; step++) {
    parent = definition(spec, {}, last.status)
    world = apply(last, readyPods)
    last = poolSync(request(parent, world), config, NOW)
  }
  return { world: apply(last, readyPods), parent: definition(spec, {}, last.status), last }
}
