import t from 'tap'
import { sync } from '../../src/challenge/hooks.js'
import { testConfig } from '../helpers/app.js'
import { at, kinds, prepared, step } from '../helpers/drive.js'
import { T0 } from '../helpers/instant.js'
import { validateChildren } from '../helpers/validate.js'
import {
  challenge,
  conditionOf,
  netcatDefinition,
  observedChildren,
  readyWorld,
  syncRequest,
  waitingPod,
  withPod,
  webDefinition,
  type Json,
} from '../helpers/world.js'
import { ALICE, expectedInstanceId } from '../helpers/contract.js'

const NAME = 'web-login-u-alice'
const ALL_WEB_CHILDREN = [
  `Secret/${NAME}-flag`,
  `NetworkPolicy/${NAME}-isolate`,
  `Pod/${NAME}`,
  `Service/${NAME}`,
  `Ingress/${NAME}`,
]

t.test('new: admitted, Pending/Starting; the pod comes once its flag Secret and policies are its own', async (t) => {
  const { response, status, parent } = step(challenge(), { related: [webDefinition()] })
  t.strictSame(
    kinds(response),
    ALL_WEB_CHILDREN.filter((child) => !child.startsWith('Pod/')),
    'no Pod yet',
  )
  validateChildren(response.children)
  t.hasStrict(status, {
    phase: 'Pending',
    reason: 'Starting',
    message: 'The instance is starting.',
    run: 0,
    admittedAt: '2026-11-22T12:00:00Z',
    renewalsSeen: 0,
    renewalsApplied: 0,
  })
  t.notOk('flagSecretRef' in status, 'no flag Secret is referenced before the instance owns one')
  t.match(status.instanceId, /^[0-9a-f]{16}$/)
  t.notOk('endpoint' in status, 'no endpoint before traffic can reach the instance')
  t.notOk('startedAt' in status)
  t.equal(response.resyncAfterSeconds, 300, 'woken at the startup deadline (capped)')
  t.strictSame(Object.keys(response).sort(), ['children', 'resyncAfterSeconds', 'status'])

  const next = step(parent, { related: [webDefinition()], children: observedChildren(response.children), now: at(1) })
  t.strictSame(kinds(next.response), ALL_WEB_CHILDREN, 'every child, the Pod included')
  validateChildren(next.response.children)
  t.strictSame(next.status, status, 'the same status: nothing is written between the two syncs')
})

t.test('starting: children observed but not ready stays Pending, status unchanged', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  const observed = observedChildren(first.response.children)
  const second = step(first.parent, { related: [webDefinition()], children: observed, now: at(20) })
  t.strictSame(second.status, first.status, 'nothing changes by itself')
  t.equal(second.response.resyncAfterSeconds, 280)
})

t.test('running (HTTP): ready workload and Ingress give Running with the endpoint', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  const ready = readyWorld(first.response.children)
  const running = step(first.parent, { related: [webDefinition()], children: ready, now: at(30) })
  // The contract's id of alice's web-login (test/helpers/contract.ts), not the id the status says.
  const id = expectedInstanceId(testConfig().flagSecret, ALICE)
  t.equal(running.status.instanceId, id)
  t.hasStrict(running.status, {
    phase: 'Running',
    reason: 'Ready',
    startedAt: '2026-11-22T12:00:30Z',
    expiresAt: '2026-11-22T12:30:30Z',
    endpoint: {
      type: 'HTTP',
      host: `${id}.challenges.localhost`,
      port: 80,
      url: `http://${id}.challenges.localhost/`,
      connection: `http://${id}.challenges.localhost/`,
    },
  })
  // Each step of the start, at the instant it happened: the admission (t=0), the kubelet's own times for the pod
  // (readyWorld's, ten seconds before), the endpoint and Ready when the instance became Running (t=30); not expired
  // since the Challenge was made (a minute before t=0).
  t.strictSame(
    (running.status.conditions as Json[]).map(({ type, status, lastTransitionTime }) => [
      type,
      status,
      lastTransitionTime,
    ]),
    [
      ['Admitted', 'True', '2026-11-22T12:00:00Z'],
      ['Scheduled', 'True', '2026-11-22T11:59:48Z'],
      ['ContainersStarted', 'True', '2026-11-22T11:59:49Z'],
      ['WorkloadReady', 'True', '2026-11-22T11:59:50Z'],
      ['EndpointReady', 'True', '2026-11-22T12:00:30Z'],
      ['Ready', 'True', '2026-11-22T12:00:30Z'],
      ['Expired', 'False', '2026-11-22T11:59:00Z'],
    ],
  )
  // The contract words of a running instance, one row per condition: a fixture regeneration cannot rename them.
  const words = (running.status.conditions as Json[]).map(({ type, reason, message }) => ({ type, reason, message }))
  t.strictSame(words, [
    { type: 'Admitted', reason: 'Admitted', message: "The instance holds a slot of its owner's budget." },
    { type: 'Scheduled', reason: 'PodScheduled', message: 'The pod is placed on a node.' },
    { type: 'ContainersStarted', reason: 'ContainersStarted', message: 'A container of the pod is running.' },
    { type: 'WorkloadReady', reason: 'PodReady', message: 'The pod passes its readiness probes.' },
    { type: 'EndpointReady', reason: 'EndpointAllocated', message: `http://${id}.challenges.localhost/` },
    { type: 'Ready', reason: 'Ready', message: 'The instance is running until 2026-11-22T12:30:30Z.' },
    { type: 'Expired', reason: 'NotExpired', message: 'The instance has not reached its end.' },
  ])
  t.equal(running.response.resyncAfterSeconds, 300)
  // Quiescence: the same world a minute later answers the same status.
  const again = step(running.parent, { related: [webDefinition()], children: ready, now: at(90) })
  t.strictSame(again.status, running.status)
  t.strictSame(again.response.children, running.response.children)
  // A status written without progress conditions (by a release before them), the rest unchanged: none is added
  // until something else changes, so the upgrade alone writes no status.
  const PROGRESS = ['Scheduled', 'ContainersStarted', 'WorkloadReady', 'EndpointReady']
  const withoutProgress = {
    ...running.status,
    conditions: (running.status.conditions as Json[]).filter(({ type }) => !PROGRESS.includes(type as string)),
  }
  const upgraded = step(
    { ...running.parent, status: withoutProgress },
    { related: [webDefinition()], children: ready, now: at(90) },
  )
  t.strictSame(upgraded.status, withoutProgress, 'the stored status, as it was')
})

t.test('TLS and ingress class from the configuration', async (t) => {
  const config = { ingressTlsSecret: 'wildcard-tls', ingressClassName: 'nginx', baseDomain: 'ctf.example.org' }
  const first = prepared(challenge(), { related: [webDefinition()], config })
  const ingress = first.response.children.find((child) => child.kind === 'Ingress') as Json
  const id = expectedInstanceId(testConfig().flagSecret, ALICE)
  t.hasStrict(ingress.spec, {
    ingressClassName: 'nginx',
    tls: [{ hosts: [`${id}.ctf.example.org`], secretName: 'wildcard-tls' }],
  })
  const running = step(first.parent, {
    related: [webDefinition()],
    children: readyWorld(first.response.children),
    config,
    now: at(5),
  })
  t.hasStrict(running.status.endpoint, { port: 443, url: `https://${id}.ctf.example.org/` })
})

t.test('running (NodePort): the endpoint waits for the allocated node port', async (t) => {
  const parent = challenge({ definition: 'pwn-echo' })
  const related = [netcatDefinition()]
  const first = prepared(parent, { related })
  t.strictSame(kinds(first.response), [
    'Secret/pwn-echo-u-alice-flag',
    'NetworkPolicy/pwn-echo-u-alice-isolate',
    'Pod/pwn-echo-u-alice',
    'Service/pwn-echo-u-alice',
  ])
  const unallocated = readyWorld(first.response.children).map((child) =>
    child.kind === 'Service' ? { ...child, spec: { ...(child.spec as Json), ports: [{ port: 1337 }] } } : child,
  )
  const waiting = step(first.parent, {
    related,
    children: unallocated,
    config: { publicHost: 'ctf.example.org' },
    now: at(5),
  })
  t.hasStrict(waiting.status, { phase: 'Pending', reason: 'WaitingForEndpoint' })
  const running = step(first.parent, {
    related,
    children: readyWorld(first.response.children, { nodePort: 31337 }),
    config: { publicHost: 'ctf.example.org' },
    now: at(6),
  })
  t.hasStrict(running.status.endpoint, {
    type: 'NodePort',
    host: 'ctf.example.org',
    port: 31337,
    connection: 'nc ctf.example.org 31337',
  })
  t.notOk('url' in (running.status.endpoint as Json))
})

t.test('running (LoadBalancer and Internal)', async (t) => {
  const lb = [netcatDefinition({ expose: { type: 'LoadBalancer', port: 1337 } })]
  const parent = challenge({ definition: 'pwn-echo' })
  const first = prepared(parent, { related: lb })
  const service = first.response.children.find((child) => child.kind === 'Service') as Json
  t.hasStrict(service.spec, { type: 'LoadBalancer' })
  const pending = step(first.parent, { related: lb, children: readyWorld(first.response.children), now: at(5) })
  t.hasStrict(pending.status, { phase: 'Pending', reason: 'WaitingForEndpoint' }, 'no address yet')
  const running = step(first.parent, {
    related: lb,
    children: readyWorld(first.response.children, { lbAddress: '203.0.113.7' }),
    now: at(5),
  })
  t.hasStrict(running.status.endpoint, {
    type: 'LoadBalancer',
    host: '203.0.113.7',
    port: 1337,
    connection: 'nc 203.0.113.7 1337',
  })

  const hostnameLb = readyWorld(first.response.children).map((child) =>
    child.kind === 'Service'
      ? { ...child, status: { loadBalancer: { ingress: [{ hostname: 'lb.example.org' }] } } }
      : child,
  )
  t.hasStrict(step(first.parent, { related: lb, children: hostnameLb, now: at(5) }).status.endpoint, {
    host: 'lb.example.org',
  })

  const internal = [netcatDefinition({ expose: { type: 'Internal', port: 1337 } })]
  const firstInternal = prepared(parent, { related: internal })
  const svc = firstInternal.response.children.find((child) => child.kind === 'Service') as Json
  t.hasStrict(svc.spec, { type: 'ClusterIP' })
  const isolate = firstInternal.response.children.find(
    (child) => child.kind === 'NetworkPolicy' && (child.metadata as Json).name === 'pwn-echo-u-alice-isolate',
  ) as Json
  t.strictSame(
    ((isolate.spec as Json).ingress as Json[]).slice(1),
    [
      {
        from: [
          {
            podSelector: {
              matchLabels: { 'challenge-hooks.dev/owner': 'alice', 'challenge-hooks.dev/owner-kind': 'User' },
            },
          },
        ],
        ports: [{ protocol: 'TCP', port: 1337 }],
      },
    ],
    "only the owner's own pods (docs/api.md, children) reach an Internal instance",
  )
  const runningInternal = step(firstInternal.parent, {
    related: internal,
    children: readyWorld(firstInternal.response.children),
    now: at(5),
  })
  t.hasStrict(runningInternal.status.endpoint, {
    type: 'Internal',
    host: 'pwn-echo-u-alice.challenges.svc.cluster.local',
    port: 1337,
    connection: 'nc pwn-echo-u-alice.challenges.svc.cluster.local 1337',
  })
})

t.test('a workload of another run or still rolling out is not ready', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  const oldRun = readyWorld(first.response.children).map((child) => {
    if (child.kind !== 'Pod') return child
    const copy = structuredClone(child)
    ;(copy.metadata.annotations as Json)['challenge-hooks.dev/run'] = '7'
    return copy
  })
  t.hasStrict(step(first.parent, { related: [webDefinition()], children: oldRun, now: at(5) }).status, {
    phase: 'Pending',
    reason: 'Starting',
  })
  const notReady = readyWorld(first.response.children).map((child) =>
    child.kind === 'Pod'
      ? {
          ...child,
          status: {
            phase: 'Running',
            conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: '2026-11-22T12:00:00Z' }],
          },
        }
      : child,
  )
  t.hasStrict(step(first.parent, { related: [webDefinition()], children: notReady, now: at(5) }).status, {
    phase: 'Pending',
  })
  const deleting = readyWorld(first.response.children).map((child) =>
    child.kind === 'Pod'
      ? { ...child, metadata: { ...child.metadata, deletionTimestamp: '2026-11-22T12:00:01Z' } }
      : child,
  )
  t.hasStrict(step(first.parent, { related: [webDefinition()], children: deleting, now: at(5) }).status, {
    phase: 'Pending',
  })
  const noIngress = readyWorld(first.response.children).filter((child) => child.kind !== 'Ingress')
  t.hasStrict(step(first.parent, { related: [webDefinition()], children: noIngress, now: at(5) }).status, {
    phase: 'Pending',
    reason: 'WaitingForEndpoint',
  })
  const serviceGoing = readyWorld(first.response.children).map((child) =>
    child.kind === 'Service'
      ? { ...child, metadata: { ...child.metadata, deletionTimestamp: '2026-11-22T12:00:01Z' } }
      : child,
  )
  t.hasStrict(step(first.parent, { related: [webDefinition()], children: serviceGoing, now: at(5) }).status, {
    reason: 'WaitingForEndpoint',
  })
  const ingressGoing = readyWorld(first.response.children).map((child) =>
    child.kind === 'Ingress'
      ? { ...child, metadata: { ...child.metadata, deletionTimestamp: '2026-11-22T12:00:01Z' } }
      : child,
  )
  t.hasStrict(step(first.parent, { related: [webDefinition()], children: ingressGoing, now: at(5) }).status, {
    reason: 'WaitingForEndpoint',
  })
})

t.test('image pull failing: Pending inside the startup window, then Error/StartupTimeout', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  const created = observedChildren(first.response.children)
  const related = [webDefinition()]
  const children = withPod(created, waitingPod(NAME, 0, 'ImagePullBackOff'))
  const pulling = step(first.parent, { related, children, now: at(60) })
  t.match(pulling.status, { phase: 'Pending', reason: 'ImagePullBackOff', message: /cannot be pulled yet/ })
  t.equal(pulling.response.children.length, 5, 'keeps trying')
  const errImagePull = step(first.parent, {
    related,
    children: withPod(created, waitingPod(NAME, 0, 'ErrImagePull')),
    now: at(60),
  })
  t.hasStrict(errImagePull.status, { reason: 'ImagePullBackOff' })

  const timedOut = step(pulling.parent, { related, children, now: at(300) })
  t.match(timedOut.status, {
    phase: 'Error',
    reason: 'StartupTimeout',
    message: /did not become ready within 300 seconds\. The image of container web cannot be pulled/,
    finishedAt: '2026-11-22T12:05:00Z',
  })
  t.notOk('resyncAfterSeconds' in timedOut.response)
  t.strictSame(
    kinds(timedOut.response),
    [`Pod/${NAME}`, `NetworkPolicy/${NAME}-isolate`, `Secret/${NAME}-flag`],
    'teardown starts with the traffic path',
  )
  t.ok(kinds(timedOut.response).includes(`Secret/${NAME}-flag`), 'the flag Secret stays until the pod is gone')
  t.notOk('flagSecretRef' in timedOut.status, 'no reference: the instance is not Running')

  // The error is sticky for the run: even with the pods gone and the world healthy, it does not restart.
  const later = step(timedOut.parent, { related: [webDefinition()], children: [], now: at(400) })
  t.hasStrict(later.status, { phase: 'Error', reason: 'StartupTimeout', finishedAt: '2026-11-22T12:05:00Z' })
  t.strictSame(later.response.children, [])
  t.notOk('flagSecretRef' in later.status)
})

t.test('slow start without a pod problem times out with a plain message', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition({ startupTimeoutSeconds: 30 })] })
  const timedOut = step(first.parent, { related: [webDefinition({ startupTimeoutSeconds: 30 })], now: at(31) })
  t.match(timedOut.status, {
    phase: 'Error',
    reason: 'StartupTimeout',
    message: 'The instance did not become ready within 30 seconds.',
  })
})

t.test('pod failures that end the run', async (t) => {
  const cases: [string, number, string, RegExp][] = [
    ['CrashLoopBackOff', 3, 'CrashLoopBackOff', /Container web keeps crashing/],
    ['InvalidImageName', 0, 'InvalidImage', /not a valid image name/],
    ['CreateContainerConfigError', 0, 'ConfigError', /cannot be created \(CreateContainerConfigError\)/],
    ['CreateContainerError', 0, 'ConfigError', /CreateContainerError/],
    ['RunContainerError', 0, 'ConfigError', /RunContainerError/],
  ]
  const first = prepared(challenge(), { related: [webDefinition()] })
  for (const [waiting, restarts, reason, message] of cases) {
    const failed = step(first.parent, {
      related: [webDefinition()],
      children: withPod(observedChildren(first.response.children), waitingPod(NAME, 0, waiting, restarts)),
      now: at(40),
    })
    t.match(failed.status, { phase: 'Error', reason, message, finishedAt: '2026-11-22T12:00:40Z' }, waiting)
    t.notOk(
      failed.response.children.some((child) => child.kind === 'Ingress' || child.kind === 'Service'),
      `${waiting}: traffic path removed`,
    )
  }
  const fewCrashes = step(first.parent, {
    related: [webDefinition()],
    children: withPod(observedChildren(first.response.children), waitingPod(NAME, 0, 'CrashLoopBackOff', 1)),
    now: at(40),
  })
  t.hasStrict(
    fewCrashes.status,
    { phase: 'Pending', reason: 'Starting' },
    'a container that crashed once may still come up',
  )
  const otherRun = step(first.parent, {
    related: [webDefinition()],
    children: withPod(observedChildren(first.response.children), waitingPod(NAME, 5, 'InvalidImageName')),
    now: at(40),
  })
  t.hasStrict(otherRun.status, { phase: 'Pending' }, 'pods of another run do not count')
  const initFailure = step(first.parent, {
    related: [webDefinition()],
    children: withPod(observedChildren(first.response.children), {
      ...waitingPod(NAME, 0, 'x'),
      status: { initContainerStatuses: [{ name: 'setup', state: { waiting: { reason: 'InvalidImageName' } } }] },
    }),
    now: at(40),
  })
  t.match(initFailure.status, { reason: 'InvalidImage', message: /container setup/ })
})

t.test(
  'the isolation gate failed: Error / IsolationNotEnforced with its message, the run over, its path removed',
  async (t) => {
    const first = prepared(challenge(), { related: [webDefinition()] })
    const said = 'Egress isolation is not in force: 10.96.0.1:443 (the API server), which every egress mode forbids.'
    const failed = step(first.parent, {
      related: [webDefinition()],
      children: withPod(observedChildren(first.response.children), {
        ...waitingPod(NAME, 0, 'x'),
        status: {
          phase: 'Pending',
          initContainerStatuses: [
            {
              name: 'isolation-gate',
              restartCount: 1,
              state: { waiting: { reason: 'CrashLoopBackOff' } },
              lastState: { terminated: { exitCode: 1, reason: 'Error', message: said } },
            },
          ],
          containerStatuses: [{ name: 'web', state: { waiting: { reason: 'PodInitializing' } } }],
        },
      }),
      now: at(75),
    })
    t.hasStrict(failed.status, {
      phase: 'Error',
      reason: 'IsolationNotEnforced',
      message: `The isolation gate did not let the instance start: ${said}`,
      finishedAt: '2026-11-22T12:01:15Z',
    })
    t.strictSame(
      failed.response.children.map((child) => child.kind),
      ['Pod', 'NetworkPolicy', 'Secret'],
      'the traffic path first (Service and Ingress gone); the pod, its isolation and its flag kept for later steps',
    )
  },
)

t.test('unschedulable stays Pending with its reason', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  const pod = waitingPod(NAME, 0, 'x')
  pod.status = { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }
  const result = step(first.parent, {
    related: [webDefinition()],
    children: withPod(observedChildren(first.response.children), pod),
    now: at(10),
  })
  t.match(result.status, { phase: 'Pending', reason: 'Unschedulable', message: /no room/ })
  const both = {
    ...pod,
    status: {
      ...(pod.status as Json),
      containerStatuses: [{ name: 'web', state: { waiting: { reason: 'ImagePullBackOff' } } }],
    },
  }
  const answer = step(first.parent, {
    related: [webDefinition()],
    children: withPod(observedChildren(first.response.children), both),
    now: at(10),
  })
  t.hasStrict(answer.status, { reason: 'ImagePullBackOff' }, 'an image pull problem is named before scheduling')
})

t.test('definition missing or invalid, owner labels wrong: Error with the reason, no children', async (t) => {
  const missing = step(challenge(), { related: [] })
  t.hasStrict(missing.status, {
    phase: 'Error',
    reason: 'DefinitionNotFound',
    message: 'ChallengeDefinition "web-login" does not exist in this namespace.',
  })
  t.strictSame(missing.response.children, [])
  t.notOk('resyncAfterSeconds' in missing.response)
  t.hasStrict(missing.status.conditions, [{ type: 'Admitted', status: 'False', reason: 'DefinitionNotFound' }])

  const invalid = step(challenge(), {
    related: [
      webDefinition({ pod: { containers: [{ name: 'web', image: 'x', securityContext: { privileged: true } }] } }),
    ],
  })
  t.match(invalid.status, {
    phase: 'Error',
    reason: 'DefinitionInvalid',
    message: /securityContext\.privileged: is not allowed/,
  })

  const mislabelled = step(
    challenge({ labels: { 'challenge-hooks.dev/owner': 'mallory', 'challenge-hooks.dev/definition': 'web-login' } }),
    { related: [webDefinition()] },
  )
  t.hasStrict(mislabelled.status, {
    phase: 'Error',
    reason: 'OwnerLabelMismatch',
    message: 'Label challenge-hooks.dev/owner is "mallory" but spec.owner.id is "alice".',
  })
  const unlabelled = step(challenge({ labels: { 'challenge-hooks.dev/owner': 'alice' } }), {
    related: [webDefinition()],
  })
  t.match(unlabelled.status, {
    reason: 'OwnerLabelMismatch',
    message: /definition is missing but spec\.definitionRef\.name is "web-login"/,
  })

  // These describe the world, not the run: fixing the world recovers the instance.
  const recovered = step(missing.parent, { related: [webDefinition()], now: at(60) })
  t.hasStrict(recovered.status, { phase: 'Pending', reason: 'Starting', admittedAt: '2026-11-22T12:01:00Z' })
})

t.test('a running instance whose definition disappears loses its workload and comes back with its times', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  const ready = readyWorld(first.response.children)
  const running = step(first.parent, { related: [webDefinition()], children: ready, now: at(10) })
  const orphaned = step(running.parent, { related: [], children: ready, now: at(20) })
  t.hasStrict(orphaned.status, { phase: 'Error', reason: 'DefinitionNotFound', startedAt: '2026-11-22T12:00:10Z' })
  t.notOk('admittedAt' in orphaned.status, 'its budget slot is given up')
  // Its children still observed (their teardown not seen yet), its Service among them: the admission it records is
  // the run's, so the run is admitted again as of then.
  const back = step(orphaned.parent, { related: [webDefinition()], children: ready, now: at(30) })
  t.hasStrict(back.status, {
    phase: 'Running',
    startedAt: '2026-11-22T12:00:10Z',
    expiresAt: '2026-11-22T12:30:10Z',
    admittedAt: '2026-11-22T12:00:00Z',
  })
  // Once they are gone, it is admitted as of now.
  const rebuilt = step(orphaned.parent, { related: [webDefinition()], children: [], now: at(30) })
  t.hasStrict(rebuilt.status, { phase: 'Pending', admittedAt: '2026-11-22T12:00:30Z' })
})

t.test('expired: no workload children, Deleted/Expired, sticky', async (t) => {
  const first = prepared(challenge(), { related: [webDefinition()] })
  const ready = readyWorld(first.response.children)
  const running = step(first.parent, { related: [webDefinition()], children: ready, now: at(0) })
  t.equal(running.status.expiresAt, '2026-11-22T12:30:00Z')
  const before = step(running.parent, { related: [webDefinition()], children: ready, now: at(1799) })
  t.equal(before.status.phase, 'Running')
  t.equal(before.response.resyncAfterSeconds, 1, 'woken just after the deadline')
  const expired = step(running.parent, { related: [webDefinition()], children: ready, now: at(1800) })
  t.hasStrict(expired.status, { phase: 'Deleted', reason: 'Expired', finishedAt: '2026-11-22T12:30:00Z' })
  t.notOk('expiresAt' in expired.status)
  t.notOk('endpoint' in expired.status)
  t.notOk(expired.response.children.some((child) => child.kind === 'Ingress' || child.kind === 'Service'))
  t.strictSame(
    (expired.status.conditions as Json[]).map(({ type, status, reason }) => [type, status, reason]),
    [
      ['Admitted', 'False', 'Expired'],
      ['Scheduled', 'False', 'NoWorkload'],
      ['ContainersStarted', 'False', 'NoWorkload'],
      ['WorkloadReady', 'False', 'NoWorkload'],
      ['EndpointReady', 'False', 'NoEndpoint'],
      ['Ready', 'False', 'Expired'],
      ['Expired', 'True', 'Expired'],
    ],
  )
  t.equal(conditionOf(expired.status, 'Expired')?.lastTransitionTime, '2026-11-22T12:30:00Z')
  t.notOk('flagSecretRef' in expired.status, 'no reference once it is not Running')
  const stays = step(expired.parent, { related: [webDefinition()], children: [], now: at(4000) })
  t.strictSame(stays.status, expired.status, 'Deleted is final for the run')
})

t.test('deterministic: the same request gives the same bytes; v1 and v2 keys give the same answer', async (t) => {
  const config = testConfig()
  const parent = challenge()
  const first = prepared(parent, { related: [webDefinition()] })
  const children = readyWorld(first.response.children)
  const v1 = syncRequest(first.parent, { related: [webDefinition()], children })
  const v2 = syncRequest(first.parent, { related: [webDefinition()], children, version: 'v2' })
  t.not(JSON.stringify(v1.children), JSON.stringify(v2.children), 'the requests differ in their keys')
  const a = JSON.stringify(sync(v1, config, at(5)))
  t.equal(JSON.stringify(sync(v1, config, at(5))), a)
  t.equal(JSON.stringify(sync(v2, config, at(5))), a)
  t.equal(
    JSON.stringify(sync(structuredClone(v1), config, new Date(T0 + 5400))),
    a,
    'sub-second differences do not show',
  )
})

t.test("objects of another namespace (v2 hooks) are not this instance's", async (t) => {
  const other = { ...webDefinition(), metadata: { name: 'web-login', namespace: 'elsewhere' } }
  t.hasStrict(step(challenge(), { related: [other], version: 'v2' }).status, { reason: 'DefinitionNotFound' })
})

t.test('a previous status that is garbage is read defensively', async (t) => {
  const parent = challenge({
    status: {
      phase: 'Exploded',
      reason: 7,
      admittedAt: 'not a time',
      startedAt: '+275760-09-13T00:00:00.000Z',
      lastRenewedAt: 'Nov 22 2026',
      finishedAt: '2026-11-22',
      run: -3,
      renewalsSeen: 'x',
      conditions: [
        null,
        { type: 'Ready' },
        { type: 'Ready', status: 'Maybe', lastTransitionTime: '2026-11-22T11:00:00Z' },
        'x',
      ],
    },
  })
  const result = step(parent, { related: [webDefinition()] })
  t.hasStrict(result.status, {
    phase: 'Pending',
    reason: 'Starting',
    run: 0,
    renewalsSeen: 0,
    admittedAt: '2026-11-22T12:00:00Z',
  })
  for (const field of ['startedAt', 'lastRenewedAt', 'finishedAt'])
    t.notOk(field in result.status, `${field}: not RFC 3339, dropped`)
  const arrayStatus = step({ ...challenge(), status: [] as unknown }, { related: [webDefinition()] })
  t.equal(arrayStatus.status.phase, 'Pending')
  const messageless = challenge({
    status: {
      phase: 'Deleted',
      conditions: [
        { type: 'Ready', status: 'False', reason: 'X', message: 5, lastTransitionTime: '2026-11-22T11:00:00Z' },
      ],
    },
  })
  const deleted = step(messageless, { related: [webDefinition()] })
  t.hasStrict(deleted.status, { phase: 'Deleted', reason: 'Expired', message: '' })
})

t.test('edge cases of what Metacontroller may send', async (t) => {
  const config = testConfig()
  // The CRD defaults may be absent (an older CRD, a hand-made request): the hook applies the contract's.
  const bare = challenge()
  bare.spec = { definitionRef: { name: 'web-login' }, owner: { kind: 'User', id: 'alice' } }
  t.hasStrict(step(bare, { related: [webDefinition()] }).status, { phase: 'Pending', run: 0, renewalsSeen: 0 })
  // No labels at all.
  const unlabelled = challenge()
  delete unlabelled.metadata.labels
  t.hasStrict(step(unlabelled, { related: [webDefinition()] }).status, { reason: 'OwnerLabelMismatch' })
  // No related objects (no customize hook), and objects sent without their kind.
  const request = syncRequest(challenge(), {})
  delete request.related
  t.hasStrict(sync(request, config, at(0)).status, { reason: 'DefinitionNotFound' })
  const kindless = syncRequest(challenge(), { related: [webDefinition()] })
  delete (kindless.related?.['ChallengeDefinition.challenge-hooks.dev/v1alpha1']?.['web-login'] as Json).kind
  t.hasStrict(sync(kindless, config, at(0)).status, { reason: 'Starting' }, 'kind from the group key')
  // Malformed siblings: no spec, no creation time, an unparseable admission time.
  const noSpec = { ...challenge({ name: 'x' }) } as Json
  delete noSpec.spec
  const noCreation = challenge({ name: 'y', status: { phase: 'Pending', admittedAt: 'yesterday' } })
  delete noCreation.metadata.creationTimestamp
  const result = step(challenge(), {
    related: [webDefinition(), noSpec as never, noCreation],
    config: { ownerBudget: 1 },
  })
  t.hasStrict(result.status, { reason: 'Starting' }, 'a sibling without times queues behind')
  // A pod still creating its container is just starting; a condition without a reason is read as empty.
  const withStatus = prepared(
    challenge({
      status: { conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: '2026-11-22T11:00:00Z' }] },
    }),
    { related: [webDefinition()] },
  )
  const creating = step(withStatus.parent, {
    related: [webDefinition()],
    children: withPod(observedChildren(withStatus.response.children), waitingPod(NAME, 0, 'ContainerCreating')),
  })
  t.hasStrict(creating.status, { phase: 'Pending', reason: 'Starting' })
  t.hasStrict(conditionOf(creating.status, 'Ready'), { status: 'False', lastTransitionTime: '2026-11-22T11:00:00Z' })
  // A restart in a spec without renewals; a pod without the run annotation; a Pod without generation;
  // a container status without a name.
  const restarted = challenge()
  restarted.spec = { definitionRef: { name: 'web-login' }, owner: { kind: 'User', id: 'alice' }, restarts: 1 }
  t.hasStrict(step(restarted, { related: [webDefinition()] }).status, { run: 1, renewalsSeen: 0 })
  const desired = prepared(challenge(), { related: [webDefinition()] }).response.children
  const unannotated = waitingPod(NAME, 0, 'InvalidImageName')
  delete unannotated.metadata.annotations
  t.hasStrict(
    step(challenge(), { related: [webDefinition()], children: withPod(observedChildren(desired), unannotated) }).status,
    { reason: 'Starting' },
    'not of this run',
  )
  const generationless = readyWorld(desired).map((child) => {
    if (child.kind !== 'Pod') return child
    const { generation: _generation, ...metadata } = child.metadata
    return { ...child, metadata }
  })
  t.hasStrict(step(challenge(), { related: [webDefinition()], children: generationless }).status, { phase: 'Running' })
  const nameless = waitingPod(NAME, 0, 'InvalidImageName')
  nameless.status = { containerStatuses: [{ state: { waiting: { reason: 'InvalidImageName' } } }] }
  t.hasStrict(
    step(challenge(), { related: [webDefinition()], children: withPod(observedChildren(desired), nameless) }).status,
    { message: 'The image of container unknown is not a valid image name.' },
  )
  // A deadline that is no date (February 31st) makes the Challenge invalid, with a reason: never absent.
  t.hasStrict(step(challenge({ spec: { deadline: '2026-02-31T09:00:00Z' } }), { related: [webDefinition()] }).status, {
    phase: 'Error',
    reason: 'ConfigError',
    message: 'spec.deadline: "2026-02-31T09:00:00Z" is not a date-time.',
  })
})

t.test(
  'a progress condition the previous status lacks is not added while nothing else changes (no write for it)',
  async (t) => {
    const first = prepared(challenge(), { related: [webDefinition()] })
    const ready = readyWorld(first.response.children)
    const running = step(first.parent, { related: [webDefinition()], children: ready, now: at(30) })
    // A status written before the Scheduled condition existed: the same in everything else.
    const conditions = (running.status.conditions as Json[]).filter((each) => each.type !== 'Scheduled')
    const older = { ...running.parent, status: { ...running.status, conditions } }
    const again = step(older, { related: [webDefinition()], children: ready, now: at(40) })
    t.strictSame(again.status, older.status, 'the previous conditions stay, Scheduled still absent')
    t.ok(
      (running.status.conditions as Json[]).some((each) => each.type === 'Scheduled'),
      'which the hook writes with any other change',
    )
  },
)
