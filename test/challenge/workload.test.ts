// What the observed children and pods say about a run (src/challenge/workload.ts), one row per situation: the
// rules mutation testing (issue 14) found unchecked, each row a case where a changed rule gives another answer.
import t from 'tap'
import { Label, Reason, RUN_ANNOTATION } from '../../src/challenge/api.js'
import { resolveDefinition, type ResolvedDefinition } from '../../src/challenge/definition.js'
import { podLabels } from '../../src/challenge/names.js'
import { indexObjects } from '../../src/challenge/observed.js'
import { anyPodRemains, currentPods, observeEndpoint, podProblem, podRefusal, workloadReady } from '../../src/challenge/workload.js'
import { loadConfig } from '../../src/config.js'
import type { KubeObject } from '../../src/protocol.js'
import { child, NAMESPACE, names, object, OWNED_BY_UID, UID } from './objects.js'

const labels = podLabels(names)

function pods(...list: KubeObject[]) {
  return indexObjects({ 'Pod.v1': Object.fromEntries(list.map((pod) => [pod.metadata.name, pod])) }, NAMESPACE)
}

function pod(name: string, metadata: Record<string, unknown>, status: Record<string, unknown> = {}): KubeObject {
  return object('Pod', name, { metadata: { name, namespace: NAMESPACE, ...metadata }, status })
}

function deployment(status: Record<string, unknown>, run = '1', generation = 2): KubeObject {
  return object('Deployment', names.base, {
    apiVersion: 'apps/v1',
    metadata: { name: names.base, namespace: NAMESPACE, generation, ownerReferences: OWNED_BY_UID },
    spec: { template: { metadata: { annotations: { [RUN_ANNOTATION]: run } } } },
    status,
  })
}

const withDeployment = (d: KubeObject) => indexObjects({ 'Deployment.apps/v1': { [d.metadata.name]: d } }, NAMESPACE)

t.test('workloadReady: rolled out to this generation with an available replica, counted as numbers', async (t) => {
  const rows: [string, KubeObject, boolean][] = [
    ['available at the generation', deployment({ observedGeneration: 2, availableReplicas: 1 }), true],
    ['no status yet', deployment({}), false],
    ['not rolled out to this generation', deployment({ observedGeneration: 1, availableReplicas: 1 }), false],
    ['no replica available', deployment({ observedGeneration: 2, availableReplicas: 0 }), false],
    ['a count that is not a number counts as none', deployment({ observedGeneration: 2, availableReplicas: '1' }), false],
    ['another run', deployment({ observedGeneration: 2, availableReplicas: 1 }, '0'), false],
    ['a run annotation that is not a string is no run', deployment({ observedGeneration: 2, availableReplicas: 1 }, 1 as unknown as string), false],
  ]
  for (const [what, d, ready] of rows) t.equal(workloadReady(withDeployment(d), names, 1), ready, what)
  t.equal(workloadReady(withDeployment({ ...deployment({}), status: 'broken' } as unknown as KubeObject), names, 1), false, 'a status that is not an object')
  t.equal(workloadReady(withDeployment({ ...deployment({}), status: null } as unknown as KubeObject), names, 1), false, 'a null status')
})

t.test('currentPods: every pod label, this run, not terminating', async (t) => {
  const run = { annotations: { [RUN_ANNOTATION]: '3' } }
  const found = currentPods(
    pods(
      pod('ours', { labels, ...run }),
      pod('other-uid', { labels: { ...labels, [Label.uid]: 'someone-else' }, ...run }),
      pod('instance-label-only', { labels: { [Label.instance]: names.base }, ...run }),
      pod('no-labels', { ...run }),
      pod('previous-run', { labels, annotations: { [RUN_ANNOTATION]: '2' } }),
      pod('no-run', { labels }),
      pod('terminating', { labels, ...run, deletionTimestamp: '2099-01-01T00:00:00Z' }),
    ),
    labels,
    3,
  )
  t.same(
    found.map((p) => p.metadata.name),
    ['ours'],
  )
})

t.test('anyPodRemains: a pod of this instance of any run, with this uid or none; never another instance', async (t) => {
  const rows: [string, Record<string, unknown>, boolean][] = [
    ['this uid', { labels: { [Label.instance]: names.base, [Label.uid]: UID } }, true],
    ['no uid label (made before it existed)', { labels: { [Label.instance]: names.base } }, true],
    ['terminating, of an old run', { labels: { [Label.instance]: names.base, [Label.uid]: UID }, deletionTimestamp: '2099-01-01T00:00:00Z' }, true],
    ['a predecessor of the same name (another uid)', { labels: { [Label.instance]: names.base, [Label.uid]: 'predecessor' } }, false],
    ['another instance, no uid label', { labels: { [Label.instance]: 'web-login-u-bob' } }, false],
    ['another instance, this uid', { labels: { [Label.instance]: 'web-login-u-bob', [Label.uid]: UID } }, false],
    ['no labels at all', {}, false],
  ]
  for (const [what, metadata, remains] of rows) t.equal(anyPodRemains(pods(pod('p', metadata)), names), remains, what)
  t.equal(anyPodRemains(pods(), names), false, 'no pod')
})

t.test('podProblem: what a waiting container or an unschedulable pod says, and what it does not', async (t) => {
  const waiting = (status: Record<string, unknown>) => pod('p', {}, { containerStatuses: [{ name: 'web', ...status }] })
  const scheduled = (condition: Record<string, unknown>) => pod('p', {}, { conditions: [condition] })
  const rows: [string, KubeObject, Reason | undefined][] = [
    ['a container with no state', waiting({}), undefined],
    ['a container whose state is null', waiting({ state: null }), undefined],
    ['a running container', waiting({ state: { running: {} } }), undefined],
    ['waiting for another reason', waiting({ state: { waiting: { reason: 'ContainerCreating' } } }), undefined],
    ['crash loop, 3 restarts', waiting({ restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } } }), Reason.CrashLoopBackOff],
    ['crash loop, 2 restarts', waiting({ restartCount: 2, state: { waiting: { reason: 'CrashLoopBackOff' } } }), undefined],
    ['crash loop, restarts not a number', waiting({ restartCount: '5', state: { waiting: { reason: 'CrashLoopBackOff' } } }), undefined],
    ['config error', waiting({ state: { waiting: { reason: 'CreateContainerConfigError' } } }), Reason.ConfigError],
    ['init container with an invalid image', pod('p', {}, { initContainerStatuses: [{ name: 'init', state: { waiting: { reason: 'InvalidImageName' } } }] }), Reason.InvalidImage],
    ['statuses that are not a list', pod('p', {}, { containerStatuses: { name: 'web' }, conditions: 'none' }), undefined],
    ['unschedulable', scheduled({ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }), Reason.Unschedulable],
    ['scheduled', scheduled({ type: 'PodScheduled', status: 'True', reason: 'Unschedulable' }), undefined],
    ['not scheduled for another reason', scheduled({ type: 'PodScheduled', status: 'False', reason: 'SchedulerError' }), undefined],
    ['another condition', scheduled({ type: 'Ready', status: 'False', reason: 'Unschedulable' }), undefined],
  ]
  for (const [what, p, reason] of rows) t.equal(podProblem([p])?.reason, reason, what)
  t.equal(podProblem([waiting({ state: { waiting: { reason: 'CreateContainerError' } } })])?.message, 'Container web cannot be created (CreateContainerError).')
  t.equal(podProblem([pod('p', {}, { containerStatuses: [{ state: { waiting: { reason: 'ErrImagePull' } } }] })])?.message, 'The image of container unknown cannot be pulled yet; retrying.', 'a container with no name')
})

t.test('podRefusal: the ReplicaSet failure of this run, its message shown up to 300 characters', async (t) => {
  const failing = (condition: Record<string, unknown>, run = '1') => withDeployment(deployment({ conditions: [condition] }, run))
  const refusal = (condition: Record<string, unknown>) => podRefusal(failing(condition), names, 1)
  t.equal(refusal({ type: 'ReplicaFailure', status: 'False', message: 'x' }), undefined, 'a failure that has passed')
  t.equal(refusal({ type: 'Progressing', status: 'True', message: 'x' }), undefined, 'another condition')
  t.equal(podRefusal(failing({ type: 'ReplicaFailure', status: 'True', message: 'x' }, '0'), names, 1), undefined, 'another run')
  t.same(refusal({ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate' }), {
    fatal: true,
    reason: Reason.PodRefused,
    message: "Kubernetes refused the instance's pod: FailedCreate",
  })
  t.equal(refusal({ type: 'ReplicaFailure', status: 'True' })?.message, "Kubernetes refused the instance's pod: no reason given")
  const exactly = 'p'.repeat(300)
  t.equal(refusal({ type: 'ReplicaFailure', status: 'True', message: exactly })?.message, `Kubernetes refused the instance's pod: ${exactly}`, '300 characters: whole')
  t.equal(refusal({ type: 'ReplicaFailure', status: 'True', message: `${exactly}q` })?.message, `Kubernetes refused the instance's pod: ${'p'.repeat(299)}…`, '301: cut')
  t.same(refusal({ type: 'ReplicaFailure', status: 'True', message: 'pods "x" is forbidden: exceeded quota: compute' }), {
    fatal: false,
    reason: Reason.PodRefused,
    message: `The namespace's quota is full; waiting for room (pods "x" is forbidden: exceeded quota: compute).`,
  })
})

function definition(type: string, port = 1337): ResolvedDefinition {
  const resolved = resolveDefinition('web-login', { pod: { containers: [{ name: 'web', image: 'web:1' }] }, expose: { type, port } })
  if (!resolved.found) throw new Error(resolved.message)
  return resolved.definition
}

const ID = '0123456789abcdef'

function observed(service: Record<string, unknown>, route?: KubeObject) {
  const children: Record<string, Record<string, KubeObject>> = { 'Service.v1': { [names.base]: child('Service', names.base, service) } }
  if (route !== undefined) children[`${route.kind}.${route.apiVersion}`] = { [names.base]: route }
  return indexObjects(children, NAMESPACE)
}

t.test('observeEndpoint: a NodePort is the exposed port\'s; a LoadBalancer needs an address', async (t) => {
  const config = loadConfig({ PUBLIC_HOST: 'ctf.example.org' })
  const nodePorts = observed({ spec: { ports: [{ port: 22, nodePort: 30001 }, { port: 1337, nodePort: 30002 }] } })
  t.match(observeEndpoint(nodePorts, names, definition('NodePort'), NAMESPACE, ID, config).endpoint, { type: 'NodePort', port: 30002 }, 'the exposed port, not the first')
  const balancer = (ingress: unknown) => observeEndpoint(observed({ status: { loadBalancer: { ingress } } }), names, definition('LoadBalancer'), NAMESPACE, ID, config).endpoint
  t.same(balancer([{ ip: '203.0.113.7' }]), { type: 'LoadBalancer', host: '203.0.113.7', port: 1337, connection: 'nc 203.0.113.7 1337' })
  t.match(balancer([{ hostname: 'lb.example.org' }]), { host: 'lb.example.org' })
  t.equal(balancer([{ ip: '' }]), undefined, 'an empty address is none')
  t.equal(balancer([{}]), undefined, 'no address yet')
  t.equal(balancer(undefined), undefined, 'no ingress yet')
})

t.test('observeEndpoint: a Gateway API route counts only once accepted; its endpoint is https', async (t) => {
  const config = loadConfig({ HTTP_ROUTING: 'GatewayAPI', TLS_ROUTING: 'GatewayAPI', GATEWAY: 'gateway-system/challenges', BASE_DOMAIN: 'ctf.example.org', TLS_BASE_DOMAIN: 'tcp.ctf.example.org' })
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
      ({ apiVersion: 'gateway.networking.k8s.io/v1', kind, metadata: { name: names.base, namespace: NAMESPACE, ownerReferences: OWNED_BY_UID }, ...(status ? { status } : {}) }) as KubeObject
    const waiting = observeEndpoint(observed({}, route()), names, definition(type), NAMESPACE, ID, config)
    t.equal(waiting.endpoint, undefined, `${kind}: no endpoint before the Gateway reports`)
    t.equal(waiting.routeProblem?.reason, 'Pending', `${kind}: the route waits`)
    const ready = observeEndpoint(observed({}, route(accepted)), names, definition(type), NAMESPACE, ID, config)
    t.equal(ready.routeProblem, undefined, `${kind}: accepted`)
    t.match(ready.endpoint, type === 'HTTP' ? { url: `https://${ID}.ctf.example.org/`, port: 443 } : { host: `${ID}.tcp.ctf.example.org`, connection: /^ncat --ssl / }, `${kind}: the endpoint`)
  }
})

t.test('observeEndpoint: an Ingress is plain http unless INGRESS_TLS_SECRET is set', async (t) => {
  const ingress = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: names.base, namespace: NAMESPACE, ownerReferences: OWNED_BY_UID } } as KubeObject
  const endpoint = (env: Record<string, string>) =>
    observeEndpoint(observed({}, ingress), names, definition('HTTP'), NAMESPACE, ID, loadConfig({ BASE_DOMAIN: 'ctf.example.org', ...env })).endpoint
  t.match(endpoint({}), { url: `http://${ID}.ctf.example.org/`, port: 80 })
  t.match(endpoint({ INGRESS_TLS_SECRET: 'wildcard' }), { url: `https://${ID}.ctf.example.org/`, port: 443 })
})
