// What the observed children and pods say about a run (src/challenge/workload.ts), one row per situation: the
// rules mutation testing found unchecked, each row a case where a changed rule gives another answer.
import t from 'tap'
import { Reason, RUN_ANNOTATION } from '../../src/contract/api.js'
import { resolveDefinition, type ResolvedDefinition } from '../../src/challenge/definition.js'
import { indexObjects } from '../../src/challenge/observed.js'
import { observeEndpoint } from '../../src/challenge/endpoint.js'
import { currentPod, podEnded, podInstants, podProblem, readySince } from '../../src/challenge/workload.js'
import { loadConfig } from '../../src/config/config.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { child, NAMESPACE, names, object, OWNED_BY_UID } from './objects.js'

/** The instance's Pod as Metacontroller made it (owned by UID), of run `run`, with `status` and `metadata`. */
function ownPod(
  status: Record<string, unknown>,
  run: unknown = '1',
  metadata: Record<string, unknown> = {},
): KubeObject {
  return child('Pod', names.base, {
    metadata: {
      name: names.base,
      namespace: NAMESPACE,
      ownerReferences: OWNED_BY_UID,
      annotations: { [RUN_ANNOTATION]: run },
      ...metadata,
    },
    status,
  })
}

const withPod = (p: KubeObject) => indexObjects({ 'Pod.v1': { [p.metadata.name]: p } }, NAMESPACE)
const READY = { type: 'Ready', status: 'True', lastTransitionTime: '2026-11-22T12:00:07Z' }

t.test('currentPod: the own Pod of this run, not on its way out', async (t) => {
  const rows: [string, KubeObject, boolean][] = [
    ['ours, this run', ownPod({}), true],
    ['another run', ownPod({}, '0'), false],
    ['a run annotation that is not a string is no run', ownPod({}, 1), false],
    ['no run annotation', ownPod({}, '1', { annotations: {} }), false],
    ['terminating', ownPod({}, '1', { deletionTimestamp: '2099-01-01T00:00:00Z' }), false],
    [
      "someone else's pod of that name",
      object('Pod', names.base, {
        metadata: { name: names.base, namespace: NAMESPACE, annotations: { [RUN_ANNOTATION]: '1' } },
      }),
      false,
    ],
  ]
  for (const [what, p, found] of rows) t.equal(currentPod(withPod(p), names, 1) === undefined, !found, what)
  t.equal(currentPod(withPod(ownPod({})), { ...names, base: 'other' }, 1), undefined, 'another name')
})

t.test("readySince: the kubelet's Ready time while the pod is ready", async (t) => {
  const rows: [string, KubeObject | undefined, number | undefined][] = [
    ['ready since 12:00:07', ownPod({ conditions: [READY] }), Date.parse('2026-11-22T12:00:07Z')],
    ['ready, no time recorded: since ever', ownPod({ conditions: [{ type: 'Ready', status: 'True' }] }), 0],
    ['not ready', ownPod({ conditions: [{ ...READY, status: 'False' }] }), undefined],
    ['ContainersReady only', ownPod({ conditions: [{ ...READY, type: 'ContainersReady' }] }), undefined],
    ['no status', ownPod({}), undefined],
    ['conditions that are not a list', ownPod({ conditions: 'Ready' }), undefined],
    ['no pod', undefined, undefined],
  ]
  for (const [what, p, since] of rows) t.equal(readySince(p), since, what)
})

t.test('podInstants: when the kubelet scheduled the pod and started its first container', async (t) => {
  const started = (time: string, name: string) => ({ name, state: { running: { startedAt: time } } })
  const p = ownPod({
    conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-11-22T12:00:01Z' }],
    containerStatuses: [
      started('2026-11-22T12:00:04Z', 'a'),
      started('2026-11-22T12:00:03Z', 'b'),
      { name: 'c', state: { waiting: { reason: 'ContainerCreating' } } },
    ],
  })
  t.strictSame(
    podInstants(p),
    { scheduled: Date.parse('2026-11-22T12:00:01Z'), started: Date.parse('2026-11-22T12:00:03Z') },
    'the earliest container start',
  )
  t.strictSame(podInstants(ownPod({ conditions: [{ type: 'PodScheduled', status: 'False' }] })), {
    scheduled: undefined,
    started: undefined,
  })
  t.strictSame(podInstants(undefined), { scheduled: undefined, started: undefined })
})

t.test('podEnded: Failed and Succeeded pods never run again by themselves', async (t) => {
  for (const [phase, ended] of [
    ['Failed', true],
    ['Succeeded', true],
    ['Running', false],
    ['Pending', false],
    [undefined, false],
  ] as const) {
    t.equal(podEnded(ownPod(phase === undefined ? {} : { phase })), ended, String(phase))
  }
  t.equal(podEnded(undefined), false, 'no pod')
})

t.test('podProblem: the isolation gate that exited non-zero ends the run, saying what it said', async (t) => {
  const gate = (status: Record<string, unknown>, containers: Record<string, unknown>[] = []) =>
    ownPod({ initContainerStatuses: [{ name: 'isolation-gate', ...status }], containerStatuses: containers })
  const said =
    'Egress isolation is not in force: 10.96.0.1:443 (the API server), which every egress mode forbids, accepted 2900 of 2900 connections over 60 s, and never 3 in a row were blocked.'
  const failed = { terminated: { exitCode: 1, reason: 'Error', message: `${said}\n` } }
  t.strictSame(podProblem(gate({ state: failed })), {
    fatal: true,
    reason: Reason.IsolationNotEnforced,
    message: `The isolation gate did not let the instance start: ${said}`,
  })
  t.strictSame(
    podProblem(gate({ restartCount: 1, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: failed })),
    {
      fatal: true,
      reason: Reason.IsolationNotEnforced,
      message: `The isolation gate did not let the instance start: ${said}`,
    },
    'restarted by the kubelet, waiting: its last state says it',
  )
  t.strictSame(
    podProblem(gate({ state: { terminated: { exitCode: 137, reason: 'OOMKilled' } } })),
    {
      fatal: true,
      reason: Reason.IsolationNotEnforced,
      message: 'The isolation gate did not let the instance start: it exited with code 137 (OOMKilled).',
    },
    'no message: its exit code and reason',
  )
  t.strictSame(
    podProblem(gate({ state: { terminated: { exitCode: 2, message: '  ' } } }))?.message,
    'The isolation gate did not let the instance start: it exited with code 2.',
    'a blank message, no reason',
  )
  t.equal(
    podProblem(gate({ state: { terminated: { exitCode: 1, message: 'x'.repeat(4096) } } }))?.message,
    `The isolation gate did not let the instance start: ${'x'.repeat(1000)}`,
    'at most 1,000 characters of it',
  )
  const passed = { terminated: { exitCode: 0, reason: 'Completed' } }
  const rows: [string, KubeObject, Reason | undefined][] = [
    ['passed', gate({ state: passed }, [{ name: 'web', state: { running: {} } }]), undefined],
    ['still trying', gate({ state: { running: {} } }), undefined],
    ['not started', gate({ state: { waiting: { reason: 'PodInitializing' } } }), undefined],
    ['an exit code that is not a number', gate({ state: { terminated: { exitCode: '1' } } }), undefined],
    ['its image cannot be pulled', gate({ state: { waiting: { reason: 'ErrImagePull' } } }), Reason.ImagePullBackOff],
    [
      "another init container's failure is not the gate's",
      ownPod({ initContainerStatuses: [{ name: 'setup', state: failed }] }),
      undefined,
    ],
    [
      "the gate's failure outranks an app container waiting for its image",
      gate({ state: failed }, [{ name: 'web', state: { waiting: { reason: 'ImagePullBackOff' } } }]),
      Reason.IsolationNotEnforced,
    ],
  ]
  for (const [what, p, reason] of rows) t.equal(podProblem(p)?.reason, reason, what)
})

t.test('podProblem: what a waiting container or an unschedulable pod says, and what it does not', async (t) => {
  const waiting = (status: Record<string, unknown>) => ownPod({ containerStatuses: [{ name: 'web', ...status }] })
  const scheduled = (condition: Record<string, unknown>) => ownPod({ conditions: [condition] })
  const rows: [string, KubeObject, Reason | undefined][] = [
    ['a container with no state', waiting({}), undefined],
    ['a container whose state is null', waiting({ state: null }), undefined],
    ['a running container', waiting({ state: { running: {} } }), undefined],
    ['waiting for another reason', waiting({ state: { waiting: { reason: 'ContainerCreating' } } }), undefined],
    [
      'crash loop, 3 restarts',
      waiting({ restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } } }),
      Reason.CrashLoopBackOff,
    ],
    [
      'crash loop, 2 restarts',
      waiting({ restartCount: 2, state: { waiting: { reason: 'CrashLoopBackOff' } } }),
      undefined,
    ],
    [
      'crash loop, restarts not a number',
      waiting({ restartCount: '5', state: { waiting: { reason: 'CrashLoopBackOff' } } }),
      undefined,
    ],
    ['config error', waiting({ state: { waiting: { reason: 'CreateContainerConfigError' } } }), Reason.ConfigError],
    [
      'init container with an invalid image',
      ownPod({ initContainerStatuses: [{ name: 'init', state: { waiting: { reason: 'InvalidImageName' } } }] }),
      Reason.InvalidImage,
    ],
    ['statuses that are not a list', ownPod({ containerStatuses: { name: 'web' }, conditions: 'none' }), undefined],
    [
      'unschedulable',
      scheduled({ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }),
      Reason.Unschedulable,
    ],
    ['scheduled', scheduled({ type: 'PodScheduled', status: 'True', reason: 'Unschedulable' }), undefined],
    [
      'not scheduled for another reason',
      scheduled({ type: 'PodScheduled', status: 'False', reason: 'SchedulerError' }),
      undefined,
    ],
    ['another condition', scheduled({ type: 'Ready', status: 'False', reason: 'Unschedulable' }), undefined],
  ]
  for (const [what, p, reason] of rows) t.equal(podProblem(p)?.reason, reason, what)
  t.equal(podProblem(undefined), undefined, 'no pod')
  t.equal(
    podProblem(waiting({ state: { waiting: { reason: 'CreateContainerError' } } }))?.message,
    'Container web cannot be created (CreateContainerError).',
  )
  t.equal(
    podProblem(ownPod({ containerStatuses: [{ state: { waiting: { reason: 'ErrImagePull' } } }] }))?.message,
    'The image of container unknown cannot be pulled yet; retrying.',
    'a container with no name',
  )
  // What the kubelet says of an image that runs as root under runAsNonRoot, and of a container killed at its memory limit.
  const root = waiting({
    state: {
      waiting: {
        reason: 'CreateContainerConfigError',
        message: 'container has runAsNonRoot and image will run as root (pod: "x", container: web)',
      },
    },
  })
  t.strictSame(podProblem(root), {
    fatal: true,
    reason: Reason.ConfigError,
    message:
      'The image of container web runs as root, which the Restricted profile does not allow: use an image with a numeric non-root USER, set securityContext.runAsUser, or security.profile Baseline.',
  })
  const named = waiting({
    state: {
      waiting: {
        reason: 'CreateContainerConfigError',
        message: 'container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root',
      },
    },
  })
  t.equal(
    podProblem(named)?.message.startsWith('The image of container web runs as root'),
    true,
    'a user name the kubelet cannot check',
  )
  const oom = waiting({
    restartCount: 3,
    lastState: { terminated: { reason: 'OOMKilled', exitCode: 137 } },
    state: { waiting: { reason: 'CrashLoopBackOff' } },
  })
  t.strictSame(podProblem(oom), {
    fatal: true,
    reason: Reason.CrashLoopBackOff,
    message: 'Container web keeps running out of memory (killed at its memory limit).',
  })
  const crashed = waiting({
    restartCount: 3,
    lastState: { terminated: { reason: 'Error', exitCode: 1 } },
    state: { waiting: { reason: 'CrashLoopBackOff' } },
  })
  t.equal(podProblem(crashed)?.message, 'Container web keeps crashing.')
})

function definition(type: string, port = 1337): ResolvedDefinition {
  const resolved = resolveDefinition('web-login', {
    pod: { containers: [{ name: 'web', image: 'web:1' }] },
    expose: { type, port },
  })
  if (!resolved.found) throw new Error(resolved.message)
  return resolved.definition
}

const ID = '0123456789abcdef'

function observed(service: Record<string, unknown>, route?: KubeObject) {
  const children: Record<string, Record<string, KubeObject>> = {
    'Service.v1': { [names.base]: child('Service', names.base, service) },
  }
  if (route !== undefined) children[`${route.kind}.${route.apiVersion}`] = { [names.base]: route }
  return indexObjects(children, NAMESPACE)
}

t.test("observeEndpoint: a NodePort is the exposed port's; a LoadBalancer needs an address", async (t) => {
  const config = loadConfig({ PUBLIC_HOST: 'ctf.example.org' })
  const nodePorts = observed({
    spec: {
      ports: [
        { port: 22, nodePort: 30001 },
        { port: 1337, nodePort: 30002 },
      ],
    },
  })
  t.hasStrict(
    observeEndpoint(nodePorts, names, definition('NodePort'), NAMESPACE, ID, config).endpoint,
    { type: 'NodePort', port: 30002 },
    'the exposed port, not the first',
  )
  const balancer = (ingress: unknown) =>
    observeEndpoint(
      observed({ status: { loadBalancer: { ingress } } }),
      names,
      definition('LoadBalancer'),
      NAMESPACE,
      ID,
      config,
    ).endpoint
  t.strictSame(balancer([{ ip: '203.0.113.7' }]), {
    type: 'LoadBalancer',
    host: '203.0.113.7',
    port: 1337,
    connection: 'nc 203.0.113.7 1337',
  })
  t.hasStrict(balancer([{ hostname: 'lb.example.org' }]), { host: 'lb.example.org' })
  t.equal(balancer([{ ip: '' }]), undefined, 'an empty address is none')
  t.equal(balancer([{}]), undefined, 'no address yet')
  t.equal(balancer(undefined), undefined, 'no ingress yet')
})

t.test('observeEndpoint: a Gateway API route counts only once accepted; its endpoint is https', async (t) => {
  const config = loadConfig({
    HTTP_ROUTING: 'GatewayAPI',
    TLS_ROUTING: 'GatewayAPI',
    GATEWAY: 'gateway-system/challenges',
    BASE_DOMAIN: 'ctf.example.org',
    TLS_BASE_DOMAIN: 'tcp.ctf.example.org',
  })
  const accepted = {
    parents: [
      {
        parentRef: { namespace: 'gateway-system', name: 'challenges' },
        conditions: [
          { type: 'Accepted', status: 'True', reason: 'Accepted' },
          { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' },
        ],
      },
    ],
  }
  for (const [type, kind] of [
    ['HTTP', 'HTTPRoute'],
    ['TLS', 'TLSRoute'],
  ] as const) {
    const route = (status?: unknown) =>
      ({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind,
        metadata: { name: names.base, namespace: NAMESPACE, ownerReferences: OWNED_BY_UID },
        ...(status ? { status } : {}),
      }) as KubeObject
    const waiting = observeEndpoint(observed({}, route()), names, definition(type), NAMESPACE, ID, config)
    t.equal(waiting.endpoint, undefined, `${kind}: no endpoint before the Gateway reports`)
    t.equal(waiting.routeProblem?.reason, 'Pending', `${kind}: the route waits`)
    const ready = observeEndpoint(observed({}, route(accepted)), names, definition(type), NAMESPACE, ID, config)
    t.equal(ready.routeProblem, undefined, `${kind}: accepted`)
    t.match(
      ready.endpoint,
      type === 'HTTP'
        ? { url: `https://${ID}.ctf.example.org/`, port: 443 }
        : { host: `${ID}.tcp.ctf.example.org`, connection: /^ncat --ssl / },
      `${kind}: the endpoint`,
    )
  }
})

t.test('observeEndpoint: an Ingress is plain http unless INGRESS_TLS_SECRET is set', async (t) => {
  const ingress = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: names.base, namespace: NAMESPACE, ownerReferences: OWNED_BY_UID },
  } as KubeObject
  const endpoint = (env: Record<string, string>) =>
    observeEndpoint(
      observed({}, ingress),
      names,
      definition('HTTP'),
      NAMESPACE,
      ID,
      loadConfig({ BASE_DOMAIN: 'ctf.example.org', ...env }),
    ).endpoint
  t.hasStrict(endpoint({}), { url: `http://${ID}.ctf.example.org/`, port: 80 })
  t.hasStrict(endpoint({ INGRESS_TLS_SECRET: 'wildcard' }), { url: `https://${ID}.ctf.example.org/`, port: 443 })
})

// docs/api.md: Running counts the settle time from the later of the pod's Ready time and the path's creation (the
// Service, the route, a Gateway's acceptance).
const createdAt = (at: string) => ({
  name: names.base,
  namespace: NAMESPACE,
  ownerReferences: OWNED_BY_UID,
  creationTimestamp: at,
})

t.test("observeEndpoint: the path exists since the later of the Service's and the route's creation", async (t) => {
  const since = (service: string, route: string) =>
    observeEndpoint(
      observed(
        { metadata: createdAt(service) },
        { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: createdAt(route) },
      ),
      names,
      definition('HTTP'),
      NAMESPACE,
      ID,
      loadConfig({ BASE_DOMAIN: 'ctf.example.org' }),
    ).since
  t.equal(since('2026-11-22T12:00:00Z', '2026-11-22T12:00:03Z'), Date.parse('2026-11-22T12:00:03Z'), 'route later')
  t.equal(since('2026-11-22T12:00:05Z', '2026-11-22T12:00:03Z'), Date.parse('2026-11-22T12:00:05Z'), 'Service later')
})

t.test("observeEndpoint: a Gateway API route's path exists since its acceptance when that is later", async (t) => {
  const config = loadConfig({
    HTTP_ROUTING: 'GatewayAPI',
    GATEWAY: 'gateway-system/challenges',
    BASE_DOMAIN: 'ctf.example.org',
  })
  const since = (routeCreated: string, acceptedAt: string) => {
    const route: KubeObject = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: createdAt(routeCreated),
      status: {
        parents: [
          {
            parentRef: { namespace: 'gateway-system', name: 'challenges' },
            conditions: [
              { type: 'Accepted', status: 'True', reason: 'Accepted', lastTransitionTime: acceptedAt },
              { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', lastTransitionTime: acceptedAt },
            ],
          },
        ],
      },
    }
    const service = { metadata: createdAt('2026-11-22T12:00:00Z') }
    return observeEndpoint(observed(service, route), names, definition('HTTP'), NAMESPACE, ID, config).since
  }
  t.equal(since('2026-11-22T12:00:02Z', '2026-11-22T12:00:04Z'), Date.parse('2026-11-22T12:00:04Z'), 'accepted later')
  t.equal(
    since('2026-11-22T12:00:02Z', '2026-11-22T12:00:01Z'),
    Date.parse('2026-11-22T12:00:02Z'),
    'an acceptance recorded before the route was created (a clock off): the creation',
  )
})
