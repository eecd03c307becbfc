/**
 * Plausible worlds for the fuzz tests: a Challenge with any previous status, spec, definition, observed children,
 * pods and sibling Challenges an operator or the API server could produce, and the request Metacontroller would
 * send for it. Generated times are RFC 3339 within a few days of the clock, and counters are safe integers.
 */
import fc from 'fast-check'
import type { KubeObject } from '../../src/contract/protocol.js'
import { FIXED_NOW } from '../helpers/app.js'
import { prepared } from '../helpers/drive.js'
import { challenge, netcatDefinition, readyWorld, syncRequest, webDefinition, type Json } from '../helpers/world.js'

export const NAME = 'web-login-u-alice'
/** Seeded: the suite is reproducible. FUZZ_SEED and FUZZ_RUNS explore further by hand. */
export const SEED = Number(process.env.FUZZ_SEED ?? 42)
export const runs = (usual: number) => Number(process.env.FUZZ_RUNS ?? usual)
const NOW = FIXED_NOW.getTime()

/** RFC 3339 at whole seconds, from two days before the clock to two days after. */
const time = fc
  .integer({ min: -2 * 86400, max: 2 * 86400 })
  .map((seconds) => new Date(NOW + seconds * 1000).toISOString().replace('.000Z', 'Z'))
const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined })
/** Mostly absent: each trouble is rare, so most worlds have one or two and every phase is reached. */
const rare = <T>(arbitrary: fc.Arbitrary<T>, weight = 4) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight }, { arbitrary, weight: 1 })
export type Of<A> = A extends fc.Arbitrary<infer T> ? T : never
/** True about one time in `odds`. */
const seldom = (odds: number) => fc.integer({ min: 1, max: odds }).map((roll) => roll === 1)
const counter = fc.oneof(fc.nat({ max: 5 }), fc.constantFrom(-1, 1.5, 'x' as unknown as number))
const junk = fc.constantFrom('', 'x', 'tomorrow', null as unknown as string)

const PHASES = ['Pending', 'Running', 'Error', 'Deleted', 'Terminating', 'Paused']
const REASONS = [
  'Starting',
  'Queued',
  'Ready',
  'StartupTimeout',
  'CrashLoopBackOff',
  'InvalidImage',
  'ConfigError',
  'Expired',
  'Stopped',
  'Solved',
  'NotYetAvailable',
  'Deleting',
  '',
]
const CONDITIONS = ['Admitted', 'WorkloadReady', 'EndpointReady', 'Ready', 'Expired', 'RenewalAccepted', 'Other']

const condition = fc.record({
  type: fc.constantFrom(...CONDITIONS),
  status: fc.constantFrom('True', 'False', 'Unknown', 'Maybe'),
  reason: fc.constantFrom(...REASONS),
  message: fc.string({ maxLength: 20 }),
  lastTransitionTime: fc.oneof(time, junk),
})

const previousStatus = fc.record({
  phase: fc.oneof(
    { arbitrary: fc.constantFrom('Pending', 'Running'), weight: 4 },
    { arbitrary: fc.constantFrom(...PHASES), weight: 1 },
  ),
  reason: rare(fc.constantFrom(...REASONS), 1),
  message: rare(fc.string({ maxLength: 30 })),
  instanceId: rare(fc.constantFrom('0123456789abcdef', 'stale')),
  admittedAt: fc.oneof({ arbitrary: time, weight: 4 }, { arbitrary: junk, weight: 1 }),
  startedAt: fc.oneof(
    { arbitrary: time, weight: 2 },
    { arbitrary: fc.constant(undefined), weight: 2 },
    { arbitrary: junk, weight: 1 },
  ),
  lastRenewedAt: rare(fc.oneof(time, junk)),
  finishedAt: rare(fc.oneof(time, junk)),
  expiresAt: rare(time),
  run: rare(counter, 3),
  renewalsSeen: rare(counter, 3),
  renewalsApplied: rare(counter, 3),
  conditions: rare(fc.array(condition, { maxLength: 7 }), 1),
  flagSecretRef: rare(fc.constant({ name: `${NAME}-flag` }), 1),
  observedGeneration: rare(fc.nat({ max: 9 }), 1),
})

const spec = fc.record({
  desiredState: rare(fc.constantFrom('Running', 'Stopped')),
  stopReason: rare(fc.constantFrom('Solved', 'Cheating', '🚩 done', '')),
  lifetimeSeconds: rare(fc.integer({ min: 60, max: 86400 }), 2),
  deadline: rare(time),
  renewals: rare(fc.nat({ max: 5 }), 2),
  restarts: rare(fc.nat({ max: 5 }), 3),
  parameters: rare(
    fc.dictionary(fc.constantFrom('LEVEL', 'FLAG', 'MODE', '_X'), fc.string({ maxLength: 10 }), { maxKeys: 3 }),
    2,
  ),
})

const definitionTweaks = fc.record({
  expose: rare(
    fc.record({
      type: fc.constantFrom('HTTP', 'TLS', 'NodePort', 'LoadBalancer', 'Internal'),
      port: fc.constantFrom(8080, 1337),
    }),
    1,
  ),
  lifetimeSeconds: rare(fc.integer({ min: 60, max: 86400 }), 2),
  startupTimeoutSeconds: rare(fc.integer({ min: 30, max: 1800 }), 2),
  maxRenewals: rare(fc.nat({ max: 3 }), 2),
  cost: rare(fc.nat({ max: 4 })),
  availableFrom: rare(time),
  availableUntil: rare(time),
  network: rare(fc.record({ egress: fc.constantFrom('None', 'DNS', 'Internet') }), 1),
  security: rare(
    fc.record(
      { profile: fc.constantFrom('Restricted', 'Baseline'), runtimeClassName: fc.constantFrom('gvisor', 'kata') },
      { requiredKeys: ['profile'] },
    ),
    2,
  ),
  flag: rare(
    fc.record(
      {
        mode: fc.constantFrom('PerOwner', 'PerInstance', 'Static'),
        prefix: fc.constantFrom('CTF{', '', 'é{'),
        staticSecretRef: fc.constant({ name: 'web-login-static', key: 'flag' }),
      },
      { requiredKeys: [] },
    ),
    2,
  ),
})

const POD_WAITING = [
  'ContainerCreating',
  'ImagePullBackOff',
  'ErrImagePull',
  'CrashLoopBackOff',
  'InvalidImageName',
  'CreateContainerConfigError',
  'RunContainerError',
]

const container = fc.record({
  waiting: maybe(fc.constantFrom(...POD_WAITING)),
  restartCount: fc.nat({ max: 5 }),
  lastTerminated: maybe(fc.constantFrom('OOMKilled', 'Error', 'Completed')),
})

/** The instance's Pod as a kubelet could report it (replacing the ready pod of the observed children). */
export const podState = fc.record({
  run: fc.nat({ max: 3 }),
  phase: fc.constantFrom('Pending', 'Running', 'Failed', 'Succeeded'),
  containers: fc.array(container, { minLength: 1, maxLength: 2 }),
  unschedulable: seldom(4),
  terminating: fc.boolean(),
})

const sibling = fc.record({
  name: fc.constantFrom('aaa-u-alice', 'zzz-u-alice', 'web-login-u-alice'),
  owner: fc.constantFrom('alice', 'bob'),
  phase: maybe(fc.constantFrom('Pending', 'Running', 'Error', 'Deleted')),
  admittedAt: maybe(time),
  createdAt: time,
  restarts: fc.nat({ max: 2 }),
  desiredState: fc.constantFrom('Running', 'Stopped'),
})

const observedChanges = fc.record({
  kind: fc.constantFrom('web', 'netcat'),
  drop: rare(fc.array(fc.nat({ max: 6 }), { maxLength: 3 }), 3).map((each) => each ?? []),
  deleting: rare(fc.array(fc.nat({ max: 6 }), { maxLength: 2 })).map((each) => each ?? []),
  // Children someone else made under the instance's names: observed, but without the controller reference.
  foreign: rare(fc.array(fc.nat({ max: 6 }), { maxLength: 2 }), 4).map((each) => each ?? []),
  unavailable: seldom(4),
  otherRunAnnotation: seldom(6),
  lbAddress: fc.boolean(),
  labelMismatch: seldom(10),
  definitionMissing: seldom(10),
  staticSecret: fc.boolean(),
})

export interface World {
  status: Record<string, unknown>
  spec: Record<string, unknown>
  tweaks: Record<string, unknown>
  /** the observed Pod's state; undefined keeps it ready since READY_AT */
  pod: Of<typeof podState> | undefined
  siblings: Of<typeof sibling>[]
  observed: Of<typeof observedChanges>
  deleting: boolean
}

export const world: fc.Arbitrary<World> = fc.record({
  status: rare(previousStatus, 1).map((each) => each ?? {}),
  spec,
  tweaks: definitionTweaks,
  pod: rare(podState, 2),
  siblings: rare(fc.array(sibling, { minLength: 1, maxLength: 3 }), 2).map((each) => each ?? []),
  observed: observedChanges,
  deleting: seldom(5),
})

const CONTAINERS = ['web', 'sidecar']

/** The observed Pod made as the world says: its run, and its status as a kubelet wrote it. */
function shapePod(child: KubeObject, w: World): void {
  const annotations = (child.metadata.annotations ??= {})
  annotations['challenge-hooks.dev/run'] = String(
    w.pod?.run ?? (w.observed.otherRunAnnotation ? 9 : (w.status.run ?? 0)),
  )
  if (w.observed.unavailable) {
    const status = child.status as { conditions: Json[]; containerStatuses: Json[] }
    status.conditions = status.conditions.map((condition) =>
      condition.type === 'Ready' || condition.type === 'ContainersReady'
        ? { ...condition, status: 'False' }
        : condition,
    )
    for (const each of status.containerStatuses) each.ready = false
  }
  const state = w.pod
  if (state === undefined) return
  if (state.terminating) child.metadata.deletionTimestamp = '2026-11-22T11:59:30Z'
  child.status = {
    phase: state.phase,
    conditions: state.unschedulable ? [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] : [],
    containerStatuses: state.containers.map((each, index) => ({
      name: CONTAINERS[index],
      ready: each.waiting === undefined,
      restartCount: each.restartCount,
      state: each.waiting === undefined ? { running: {} } : { waiting: { reason: each.waiting } },
      ...(each.lastTerminated === undefined
        ? {}
        : {
            lastState: {
              terminated: { reason: each.lastTerminated, exitCode: each.lastTerminated === 'Completed' ? 0 : 137 },
            },
          }),
    })),
  }
}

function strip(record: Record<string, unknown>): Json {
  return Object.fromEntries(Object.entries(record as Record<string, Json>).filter(([, value]) => value !== undefined))
}

/** The request Metacontroller would send for this world, with hook v1's inner keys (name) or v2's (namespace/name). */
export function requestFor(w: World, version: 'v1' | 'v2' = 'v1'): { url: string; body: Json } {
  const base = w.observed.kind === 'web' ? webDefinition() : netcatDefinition({}, 'web-login')
  const definition = { ...base, spec: { ...(base.spec as Json), ...strip(w.tweaks) } } as KubeObject
  const desired = prepared(challenge(), { related: [base] }).response.children
  let children = readyWorld(desired, w.observed.lbAddress ? { lbAddress: '203.0.113.7' } : {})
  children = children.filter((_, index) => !w.observed.drop.includes(index))
  for (const index of w.observed.deleting) {
    const child = children[index]
    if (child) child.metadata.deletionTimestamp = '2026-11-22T11:59:00Z'
  }
  for (const index of w.observed.foreign) {
    const child = children[index]
    if (child) (child.metadata as Json).ownerReferences = []
  }
  for (const child of children) if (child.kind === 'Pod') shapePod(child, w)
  const related: KubeObject[] = w.observed.definitionMissing ? [] : [definition]
  for (const each of w.siblings) {
    related.push(
      challenge({
        name: each.name,
        owner: each.owner,
        definition: 'web-login',
        createdAt: each.createdAt,
        spec: { desiredState: each.desiredState, restarts: each.restarts },
        status: strip({ phase: each.phase, admittedAt: each.admittedAt, run: 0 }),
      }),
    )
  }
  if (w.observed.staticSecret) {
    related.push({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'web-login-static',
        namespace: 'challenges',
        labels: { 'challenge-hooks.dev/definition': 'web-login' },
      },
      data: { flag: Buffer.from('CTF{static}').toString('base64') },
    })
  }
  const parent = challenge({
    spec: strip(w.spec),
    status: w.status,
    ...(w.observed.labelMismatch ? { labels: { 'challenge-hooks.dev/owner': 'mallory' } } : {}),
    ...(w.deleting ? { deletionTimestamp: '2026-11-22T11:59:00Z' } : {}),
  })
  const request = syncRequest(parent, { children, related, finalizing: w.deleting, version })
  return { url: w.deleting ? '/finalize' : '/sync', body: request }
}
