/**
 * The real-node suite's world: the cluster suite's (test/support/kube/harness.ts: the project's manifests installed,
 * the hook server in this process, the Metacontroller stand-in or METACONTROLLER_BIN), on a cluster with a real
 * node (npm run test:node starts it and runs this suite inside its namespaces): real pods of the test images,
 * real Services through kube-proxy, NetworkPolicies enforced by kube-router, DNS by CoreDNS.
 *
 *   const suite = await startNodeSuite(t)
 *   const s = await suite.scenario(t, 'reach')
 *   await s.create(definition('web', { pod: app('http-app', 8080), expose: { type: 'NodePort', port: 8080 } }))
 */
import type { Test } from 'tap'
import { kubectlOk } from '../kube/kubectl.js'
import type { KubeObject } from '../simulator/index.js'
import { podsHaveIpv6 } from './configs.js'
import { image, NODE_IP, POD_CIDR, SERVICE_CIDR } from './layout.js'
import { startSuite, type Json, type Scenario, type Suite } from '../kube/harness.js'

export type { Json, Scenario, Suite }
export * from './layout.js'

/** The suite of a test file; `components` of manifests/components/ and hook settings on top of the node's. */
export async function startNodeSuite(
  t: Test,
  options: { components?: string[]; hookEnv?: Record<string, string> } = {},
): Promise<Suite> {
  if (process.env.TEST_NODE !== '1')
    throw new Error('the real-node suite runs inside its node: npm run test:node [-- test/node/<file>.test.ts]')
  const suite = await startSuite(t, {
    realNode: true,
    components: options.components,
    // Players reach NodePorts at the node's address; the node and Service ranges are the cluster's own. While the
    // node's pods have IPv6 addresses, the isolation gate would refuse every instance (what it must do: kube-router
    // polices IPv4 only); the scenarios then say the engine covers IPv6, to measure everything else over IPv4, and
    // isolation-gate.test.ts shows the refusal.
    hookEnv: {
      PUBLIC_HOST: NODE_IP,
      CLUSTER_CIDRS: `${POD_CIDR},${SERVICE_CIDR}`,
      ...(podsHaveIpv6() ? { POLICY_ENFORCES_IPV6: 'true' } : {}),
      // The pre-pull DaemonSet's containers (docs/api.md#pre-pulled-images): the node's imported pause image, its
      // pod sandbox's, as an operator names the pause image every node has (nothing here reaches registry.k8s.io).
      PREPULL_PAUSE_IMAGE: image('pause'),
      ...options.hookEnv,
    },
  })
  // The hook server runs in this process; its installed Deployment's image (ghcr.io) cannot be pulled here.
  await kubectlOk(suite.kubectl, ['-n', 'challenge-hooks', 'scale', 'deployment/challenge-hooks', '--replicas=0'])
  return suite
}

/** One container of a test image listening on `port` (readiness: the hook's default TCP probe on the exposed port). */
export function app(name: string, port: number, extra: Json = {}): Json {
  return {
    containers: [
      {
        name: 'app',
        // No pull policy (a definition may not set one): a tag other than latest is IfNotPresent, so the imported
        // image is used and nothing is pulled.
        image: image(name),
        ports: [{ name: 'main', containerPort: port }],
        resources: { requests: { cpu: '20m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
        ...extra,
      },
    ],
  }
}

/** Kubelet events that mean the instance's pod cannot start as asked (not a slow start). */
const POD_FAILURES = ['FailedCreatePodSandBox', 'Failed', 'FailedMount']

/**
 * Waits until the instance is Running; returns the status. Fails at once on Error (with its reason), and after
 * 15 s when the kubelet keeps reporting that the instance's pod cannot start (its events say why: what the
 * status alone would show only as a StartupTimeout minutes later).
 */
export async function running(s: Scenario, name: string, timeoutMs = 90_000): Promise<Json> {
  return reaches(s, name, 'Running', timeoutMs, POD_FAILURES)
}

/**
 * Waits until the instance's phase is `phase` (fails at once on another final phase); after 15 s, fails when the
 * kubelet keeps reporting one of `failures` for its pod (default: it cannot even make the pod's sandbox).
 */
export async function reaches(
  s: Scenario,
  name: string,
  phase: string,
  timeoutMs = 90_000,
  failures = ['FailedCreatePodSandBox'],
): Promise<Json> {
  const started = Date.now()
  for (;;) {
    const status = await s.status(name)
    if (status.phase === phase) return status
    const said = JSON.stringify({ phase: status.phase, reason: status.reason, message: status.message })
    if ((status.phase === 'Error' && phase !== 'Error') || Date.now() > started + timeoutMs)
      throw new Error(`${s.ns}/${name} is not ${phase}: ${said}`)
    const failure = Date.now() > started + 15_000 ? await podFailure(s, name, failures) : undefined
    if (failure !== undefined)
      throw new Error(`${s.ns}/${name} is not ${phase} (${said}): its pod cannot start: ${failure}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** What the kubelet last said about why the instance's pod cannot start, if it did (its events). */
export async function podFailure(s: Scenario, name: string, reasons = POD_FAILURES): Promise<string | undefined> {
  const { items: events } = await s.suite.rest.get<{
    items: { involvedObject: { name: string }; reason: string; message: string }[]
  }>(`/api/v1/namespaces/${s.ns}/events`)
  const failure = events.findLast(
    (event) => event.involvedObject.name.startsWith(name) && reasons.includes(event.reason),
  )
  return failure === undefined ? undefined : `${failure.reason}: ${failure.message}`
}

/**
 * What the kubelet said of the instance's container `app` with this reason (`Pulled`, `Failed`), oldest first: its
 * events' messages, which outlive the pod.
 */
export async function kubeletSaid(s: Scenario, instance: string, reason: string): Promise<string[]> {
  const { items } = await s.suite.rest.get<{
    items: { involvedObject: { name: string; fieldPath?: string }; reason: string; message: string }[]
  }>(`/api/v1/namespaces/${s.ns}/events`)
  return items
    .filter(
      (event) =>
        event.involvedObject.name.startsWith(instance) &&
        event.reason === reason &&
        event.involvedObject.fieldPath === 'spec.containers{app}',
    )
    .map((event) => event.message)
}

/** A pod's Ready condition is True: its readiness probes pass. */
export function isReady(pod: KubeObject): boolean {
  return (((pod.status as Json | undefined)?.conditions ?? []) as Json[]).some(
    (c) => c.type === 'Ready' && c.status === 'True',
  )
}

/** The pods of the namespace's warm pools (docs/api.md#warm-pools). */
export async function poolPods(s: Scenario): Promise<KubeObject[]> {
  return (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).filter(
    (pod) => pod.metadata.labels?.['challenge-hooks.dev/pool-slot'] !== undefined,
  )
}

/** Waits until `size` warm-pool pods of the namespace are Ready (they are made before any player asks). */
export async function warmPool(s: Scenario, size: number, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const ready = (await poolPods(s)).filter(isReady).length
    if (ready >= size) return
    if (Date.now() > deadline)
      throw new Error(`the pool has ${ready} of ${size} warm pods ready after ${timeoutMs / 1000} s`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

/** A ChallengeDefinition (namespace set by the scenario's create). */
export function definition(name: string, spec: Json): KubeObject {
  return {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    metadata: { name },
    spec: { displayName: name, ...spec },
  }
}

/** The running pod of an instance (name, IP), once there is exactly one that is Ready. */
export async function podOf(s: Scenario, instance: string): Promise<{ name: string; ip: string }> {
  const pods = (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).filter(
    (pod) =>
      pod.metadata.labels?.['challenge-hooks.dev/instance'] === instance &&
      pod.metadata.deletionTimestamp === undefined,
  )
  const ready = pods.filter(isReady)
  if (ready.length !== 1) throw new Error(`${s.ns}: ${ready.length} ready pods of ${instance} (${pods.length} in all)`)
  const pod = ready[0] as KubeObject
  return { name: pod.metadata.name, ip: String((pod.status as Json).podIP) }
}

/** The labels of a workstation the platform runs for an owner (docs/api.md, Internal): what admits it. */
export function ownerLabels(id: string, kind: 'User' | 'Team' = 'User'): Record<string, string> {
  return { 'challenge-hooks.dev/owner': id, 'challenge-hooks.dev/owner-kind': kind }
}

export interface ProbeResult {
  target: string
  reached: boolean
  answer?: string
  error?: string
}

/** `probe check` run in a pod (kubectl exec): which targets its packets reached, by label. */
export async function probeFrom(
  suite: Suite,
  ns: string,
  pod: string,
  targets: Record<string, string>,
): Promise<Record<string, ProbeResult>> {
  const args = Object.entries(targets).map(([label, target]) => `${label}=${target}`)
  const result = await kubectlOk(suite.kubectl, ['exec', '-n', ns, pod, '--', '/probe', 'check', ...args])
  const report = JSON.parse(result.stdout) as { results: ProbeResult[] }
  return Object.fromEntries(report.results.map((entry) => [entry.target, entry]))
}

/** What `probe id` says about the process a pod runs: ids, no_new_privs, seccomp, capabilities, file system, limits. */
export async function identityOf(suite: Suite, ns: string, pod: string): Promise<Json> {
  const result = await kubectlOk(suite.kubectl, ['exec', '-n', ns, pod, '--', '/probe', 'id'])
  return JSON.parse(result.stdout) as Json
}

/**
 * A pod of the probe image that a person or a bot would run beside the instances (a player's workstation, a
 * checker): in namespace `ns`, allowed out by a NetworkPolicy of its own, since the namespace denies by default.
 * Meets the Restricted profile. `labels` are added to its own (a player's workstation carries its owner's, which an
 * Internal instance admits: ownerLabels). Resolves to its name once it is Ready.
 */
export async function workstation(
  suite: Suite,
  ns: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<{ name: string; ip: string }> {
  const security = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true }
  const objects = [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns, labels: { ...labels, 'challenge-hooks.test/role': name } },
      spec: {
        securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'probe',
            image: image('probe'),
            imagePullPolicy: 'IfNotPresent',
            securityContext: security,
            resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          },
        ],
      },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: `${name}-anywhere`, namespace: ns },
      spec: {
        podSelector: { matchLabels: { 'challenge-hooks.test/role': name } },
        policyTypes: ['Egress', 'Ingress'],
        egress: [{}],
        ingress: [{}],
      },
    },
  ]
  await kubectlOk(suite.kubectl, ['apply', '--server-side', '-f', '-'], {
    input: objects.map((o) => JSON.stringify(o)).join('\n---\n'),
  })
  await kubectlOk(suite.kubectl, ['wait', '-n', ns, '--for=condition=Ready', `pod/${name}`, '--timeout=60s'])
  const pod = await suite.rest.get<KubeObject>(`/api/v1/namespaces/${ns}/pods/${name}`)
  return { name, ip: String((pod.status as Json).podIP) }
}
