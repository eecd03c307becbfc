/**
 * The desired children of an admitted instance, one typed builder per kind. Children never carry status,
 * ownerReferences, resourceVersion or uid: Metacontroller adds the owner reference and the controller-uid label
 * itself. (What an instance that no longer runs keeps: teardown.ts.)
 */
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy'
import type { INetworkPolicyPeer } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicyPeer'
import type { IContainer } from 'kubernetes-models/v1/Container'
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar'
import type { IPod } from 'kubernetes-models/v1/Pod'
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec'
import type { ISecret } from 'kubernetes-models/v1/Secret'
import type { IService } from 'kubernetes-models/v1/Service'
import type { Config } from '../config/config.js'
import type { DesiredChild } from '../contract/protocol.js'
import { Annotation, Label, RUN_ANNOTATION, ServedBy, type DefinitionContainer } from '../contract/api.js'
import type { ResolvedDefinition } from './definition.js'
import { GATE_BOUNDED_RESOURCES, GATE_COMMAND, GATE_CONTAINER, GATE_USER, GateEnv } from './gate.js'
import { childLabels, type ChildNames } from './names.js'
import { effectiveResources, quantityValue } from './resources.js'
import { instanceHost, route } from './traffic-routes.js'

export const FLAG_KEY = 'flag'
export const FLAG_PATH = '/flag'
const TMP_SIZE_LIMIT = '64Mi'

/**
 * Addresses the `-internet` policy never lets an instance reach: private, loopback, link-local (cloud metadata),
 * CGNAT, multicast, reserved, IETF protocol assignments (192.0.0.0/24), benchmarking (198.18.0.0/15), the old
 * 6to4 relay anycast (192.88.99.0/24), and Azure's platform address (168.63.129.16: DNS, DHCP and the VM agent,
 * reachable from every VM).
 */
export const NON_PUBLIC_IPV4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '168.63.129.16/32',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
]
/**
 * Loopback, unique-local, link-local and multicast; the discard prefix (100::/64); and every prefix that leads back
 * into IPv4 through a translator or a relay: NAT64 (well-known and local-use), 6to4 (2002::/16, which embeds any
 * IPv4 address, private ones included) and Teredo (2001::/32). Not the IPv4-mapped prefix `::ffff:0:0/96`: the API
 * server refuses it in an ipBlock ("must not have an IPv4-mapped IPv6 address"), and it is not needed, since a
 * connection to `::ffff:a.b.c.d` leaves the pod as IPv4, which NON_PUBLIC_IPV4 governs.
 */
export const NON_PUBLIC_IPV6 = [
  '::1/128',
  '64:ff9b::/96',
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/32',
  '2002::/16',
  'fc00::/7',
  'fe80::/10',
  'ff00::/8',
]

export interface RenderInput {
  namespace: string
  names: ChildNames
  /** The labels that select this Challenge's pods (names.ts, podLabels). */
  podLabels: Record<string, string>
  definition: ResolvedDefinition
  parameters: Record<string, string>
  flagData: string
  instanceId: string
  /** Whose instance it is: an Internal instance admits that owner's pods only. */
  owner: { kind: string; id: string }
  run: number
  /** status.admittedAt, as written there: a run with a workload was admitted. */
  admittedAt: string
  config: Config
  /** Answer the Pod too: the flag Secret and the NetworkPolicies are observed as the instance's own. */
  withPod: boolean
  /**
   * How a run of a pooled definition is served, which its Service records. Waiting or Claimed, it is served by a warm
   * pool's pod: only the traffic path is the instance's, selecting that pod by `podLabels`; the pod, its flag Secret
   * and its isolation are the pool's, and the record is the run's ticket, which is what the pool sees of it
   * (docs/api.md#warm-pools). Cold, it runs a pod of its own and the pool does not see its Service.
   */
  served?: ServedRecord
}

/** status.pool as the run's Service records it: the state, and the pod and since when as far as they are known. */
export interface ServedRecord {
  state: typeof ServedBy.Waiting | typeof ServedBy.Claimed | typeof ServedBy.Cold
  pod: string | undefined
  since: string | undefined
}

/** Served by a warm pool's pod: the run's own pod, flag Secret and isolation are not answered. */
function fromPool(served: ServedRecord | undefined): boolean {
  return served !== undefined && served.state !== ServedBy.Cold
}

/**
 * What a pod is made from: the definition, the operator's settings, the parameters its containers get, and the
 * Secret its flag is read from. A cold instance's pod and a warm pool's (pool-children.ts) are the same pod.
 */
export interface PodInput {
  definition: ResolvedDefinition
  config: Config
  parameters: Record<string, string>
  flagSecretName: string
}

const labels = childLabels

function podSelector(input: RenderInput): { matchLabels: Record<string, string> } {
  return { matchLabels: { ...input.podLabels } }
}

export function flagSecret(input: RenderInput): ISecret & DesiredChild {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: input.names.flagSecret, labels: labels(input.names) },
    type: 'Opaque',
    data: { [FLAG_KEY]: input.flagData },
  }
}

/**
 * Where DNS queries may go: the cluster DNS pods in their own namespace only (`k8s-app=kube-dns` in
 * `kube-system` by default; a pod with that label in any other namespace, a player's included, is not DNS), and
 * node-local addresses such as NodeLocal DNSCache's 169.254.20.10 when configured.
 */
export function dnsRule(config: Config): NonNullable<NonNullable<INetworkPolicy['spec']>['egress']>[number] {
  const { namespace, podSelector: labels, addresses, port } = config.dns
  return {
    to: [
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
        podSelector: { matchLabels: { ...labels } },
      },
      ...addresses.map((cidr) => ({ ipBlock: { cidr } })),
    ],
    ports: [
      { protocol: 'UDP', port },
      { protocol: 'TCP', port },
    ],
  }
}

/**
 * Default deny for the instance's pods, except traffic among themselves, DNS (unless egress is None) and the
 * exposure rule: one policy where two would add up to the same, since each child is an API write (docs/api.md).
 */
export function isolatePolicy(input: RenderInput): INetworkPolicy & DesiredChild {
  const self: INetworkPolicyPeer = { podSelector: podSelector(input) }
  const egress: NonNullable<INetworkPolicy['spec']>['egress'] = [{ to: [self] }]
  if (input.definition.egress !== 'None') egress.push(dnsRule(input.config))
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: input.names.isolatePolicy, labels: labels(input.names) },
    spec: {
      podSelector: podSelector(input),
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [self] }, exposureRule(input)],
      egress,
    },
  }
}

/** The exposure rule alone, for a run served from a warm pool, whose pod the pool's own policy isolates. */
export function exposePolicy(input: RenderInput): INetworkPolicy & DesiredChild {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: input.names.exposePolicy, labels: labels(input.names) },
    spec: { podSelector: podSelector(input), policyTypes: ['Ingress'], ingress: [exposureRule(input)] },
  }
}

type IngressRule = NonNullable<NonNullable<INetworkPolicy['spec']>['ingress']>[number]

/** Ingress to the exposed port only, from where the exposure says traffic comes from. */
function exposureRule(input: RenderInput): IngressRule {
  const { expose } = input.definition
  const ports = [{ protocol: 'TCP' as const, port: expose.port }]
  switch (expose.type) {
    case 'HTTP':
    case 'TLS': {
      // Only the proxy's pods (of INGRESS_POD_SELECTOR, when set) in its namespace; both selectors in one peer.
      const { ingressNamespace, ingressPodSelector } = input.config
      const proxy: INetworkPolicyPeer = {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ingressNamespace } },
      }
      if (ingressPodSelector !== undefined) proxy.podSelector = { matchLabels: ingressPodSelector }
      return { from: [proxy], ports }
    }
    case 'Internal':
      // Only the owner's own pods in this namespace (a workstation the platform runs for that player or team,
      // labelled with the owner's kind and id): never another player's workstation, a shared bot, or an instance.
      // The name of an Internal instance can be guessed; who reaches it cannot.
      return {
        from: [
          { podSelector: { matchLabels: { [Label.owner]: input.owner.id, [Label.ownerKind]: input.owner.kind } } },
        ],
        ports,
      }
    default:
      // NodePort and LoadBalancer traffic comes from outside the cluster: any source, this port only.
      return { ports }
  }
}

/** Egress Internet: any public address; never private ranges, cloud metadata, or the cluster's own ranges. */
export function internetPolicy(input: RenderInput): INetworkPolicy & DesiredChild {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: input.names.internetPolicy, labels: labels(input.names) },
    spec: { podSelector: podSelector(input), policyTypes: ['Egress'], egress: [internetRule(input.config)] },
  }
}

/** The `-internet` policy's one egress rule: every public address, the cluster's own ranges excepted. */
export function internetRule(config: Config): NonNullable<NonNullable<INetworkPolicy['spec']>['egress']>[number] {
  const extra = config.clusterCidrs
  const v4Except = [...NON_PUBLIC_IPV4, ...extra.filter((cidr) => !cidr.includes(':'))]
  const v6Except = [...NON_PUBLIC_IPV6, ...extra.filter((cidr) => cidr.includes(':'))]
  return {
    to: [{ ipBlock: { cidr: '0.0.0.0/0', except: v4Except } }, { ipBlock: { cidr: '::/0', except: v6Except } }],
  }
}

/**
 * Definition env (a value, or a key of one of its author's Secrets), then the Challenge's parameters (a parameter
 * replaces a variable of the same name), then the flag.
 */
function environment(container: DefinitionContainer, input: PodInput): IEnvVar[] {
  const parameters = input.parameters
  const env: IEnvVar[] = (container.env ?? [])
    .filter((variable) => !Object.hasOwn(parameters, variable.name))
    .map((variable) => {
      const ref = variable.valueFrom?.secretKeyRef
      return ref === undefined
        ? { name: variable.name, value: variable.value ?? '' }
        : { name: variable.name, valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } } }
    })
  for (const name of Object.keys(parameters).sort()) env.push({ name, value: parameters[name] })
  env.push({
    name: input.definition.flag.env,
    valueFrom: { secretKeyRef: { name: input.flagSecretName, key: FLAG_KEY } },
  })
  return env
}

function container(definitionContainer: DefinitionContainer, input: PodInput): IContainer {
  const { definition } = input
  const restricted = definition.profile === 'Restricted'
  const exposed = definitionContainer.name === definition.expose.container
  const result: IContainer = {
    name: definitionContainer.name,
    image: definitionContainer.image,
  }
  // With pull Secrets, every start asks the registry with them: a copy on the node, pulled for anyone, is never run
  // without the credentials (the layers stay cached; a start costs one manifest request).
  if (definition.imagePullSecrets.length > 0) result.imagePullPolicy = 'Always'
  if (definitionContainer.command) result.command = definitionContainer.command
  if (definitionContainer.args) result.args = definitionContainer.args
  result.env = environment(definitionContainer, input)
  if (definitionContainer.ports) result.ports = definitionContainer.ports
  else if (exposed) result.ports = [{ containerPort: definition.expose.port, protocol: 'TCP' }]
  result.resources = effectiveResources(definitionContainer)
  // Probed every second: an instance is Running as soon as it listens (a player waits for it), and a TCP connect a
  // second costs a node nothing.
  const probe =
    definitionContainer.readinessProbe ??
    (exposed ? { tcpSocket: { port: definition.expose.port }, periodSeconds: 1 } : undefined)
  if (probe) result.readinessProbe = probe
  const own = definitionContainer.securityContext
  result.securityContext = {
    ...own,
    // Every Restricted container gets a group unless its definition names one. On the container, not the pod: a
    // pod-level group without a user makes containerd refuse the sandbox, whereas a container's user comes from its
    // image when the definition names none (the kubelet passes the image's uid, never its group, to the runtime).
    ...(restricted && own?.runAsGroup === undefined ? { runAsGroup: DEFAULT_GROUP } : {}),
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    // Baseline keeps the runtime's default capabilities but NET_RAW: raw sockets forge packets and play ARP games
    // against the node's other pods.
    capabilities: { drop: restricted ? ['ALL'] : ['NET_RAW'] },
  }
  result.volumeMounts = [
    { name: 'tmp', mountPath: '/tmp' },
    { name: 'flag', mountPath: FLAG_PATH, subPath: FLAG_KEY, readOnly: true },
  ]
  return result
}

/**
 * Where the pod runs: the operator's pool for player code (INSTANCE_NODE_SELECTOR, INSTANCE_TOLERATIONS), away
 * from Metacontroller and the hook server, and the definition's RuntimeClass or else the operator's default.
 */
function placement(input: PodInput): Pick<IPodSpec, 'runtimeClassName' | 'nodeSelector' | 'tolerations'> {
  const pool = input.config.instancePods
  const runtimeClassName = input.definition.runtimeClassName ?? pool.runtimeClassName
  return {
    ...(runtimeClassName === undefined ? {} : { runtimeClassName }),
    ...(pool.nodeSelector === undefined ? {} : { nodeSelector: { ...pool.nodeSelector } }),
    ...(pool.tolerations.length === 0
      ? {}
      : { tolerations: pool.tolerations.map((toleration) => ({ ...toleration })) }),
  }
}

/**
 * The primary group of a Restricted container whose definition names no group: without one the runtime runs it with
 * group 0, root's group on the node should a process ever get out, even when the image's `USER` names a group (the
 * kubelet hands the runtime the image's uid alone; the real-node suite showed gid 0 for `USER 10001:10001`).
 * `nogroup`, which owns nothing. Set on each container, never on the pod: a pod-level group without a user makes
 * containerd refuse the pod's sandbox, so no instance would start.
 */
export const DEFAULT_GROUP = 65534

/**
 * The isolation gate (gate.ts): the pod's one init container, so the author's containers start only once the pod's
 * egress is seen blocked. The same hardened context whatever the profile, no volume and no flag: it needs nothing
 * but the network.
 */
export function gateContainer(config: Config, containers: readonly DefinitionContainer[]): IContainer {
  const gate = config.isolationGate
  const each = containers.map((one) => effectiveResources(one))
  const largest = (kind: 'requests' | 'limits') =>
    Object.fromEntries(
      GATE_BOUNDED_RESOURCES.map((name) => {
        const values = each.map((resources) => resources[kind][name] as string | number)
        // Checked quantities (definition.ts): each has a value.
        const pick = values.reduce((best, value) =>
          (quantityValue(value) as number) > (quantityValue(best) as number) ? value : best,
        )
        return [name, pick]
      }),
    )
  return {
    name: GATE_CONTAINER,
    image: gate.image,
    command: [...GATE_COMMAND],
    env: [
      ...(gate.target === undefined ? [] : [{ name: GateEnv.target, value: gate.target }]),
      { name: GateEnv.timeoutSeconds, value: String(gate.timeoutSeconds) },
      { name: GateEnv.ipv6Enforced, value: String(gate.ipv6Enforced) },
    ],
    resources: { requests: largest('requests'), limits: largest('limits') },
    securityContext: {
      runAsNonRoot: true,
      runAsUser: GATE_USER,
      runAsGroup: GATE_USER,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    },
  }
}

/**
 * The instance's workload: one bare Pod, the hardened pod of the definition's security profile. A Pod, not a
 * Deployment: its status reaches the hook as an observed child, with no related-object rule that Metacontroller would
 * evaluate for every pod event of the cluster against every Challenge (docs/design.md). One run never overlaps
 * the next: the child rule's `Recreate` update strategy deletes the pod of the old run before it creates the new one.
 * Its first container is the isolation gate: the author's containers, and so its readiness, start after it.
 */
export function pod(input: RenderInput): IPod & DesiredChild {
  const { names } = input
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: names.base,
      // Every label of a child, whatever the selectors (a Deployment of an earlier release keeps them narrower).
      labels: labels(names),
      annotations: { [RUN_ANNOTATION]: String(input.run) },
    },
    spec: podSpec({
      definition: input.definition,
      config: input.config,
      parameters: input.parameters,
      flagSecretName: names.flagSecret,
    }),
  }
}

/** The hardened pod's spec: its isolation gate, the definition's containers, its flag mounted and in the env. */
export function podSpec(input: PodInput): IPodSpec {
  const { definition } = input
  const restricted = definition.profile === 'Restricted'
  return {
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    ...placement(input),
    securityContext: {
      ...(restricted ? { runAsNonRoot: true } : {}),
      seccompProfile: { type: 'RuntimeDefault' },
    },
    // The definition's pull Secrets, and only those: a pod that names none would get the namespace's default
    // ServiceAccount's (its admission copies them in), which the install leaves without any.
    ...(definition.imagePullSecrets.length === 0
      ? {}
      : { imagePullSecrets: definition.imagePullSecrets.map((name) => ({ name })) }),
    initContainers: [gateContainer(input.config, definition.containers)],
    containers: definition.containers.map((each) => container(each, input)),
    volumes: [
      { name: 'tmp', emptyDir: { sizeLimit: TMP_SIZE_LIMIT } },
      { name: 'flag', secret: { secretName: input.flagSecretName, defaultMode: 0o444 } },
    ],
  }
}

const SERVICE_TYPE = {
  HTTP: 'ClusterIP',
  TLS: 'ClusterIP',
  Internal: 'ClusterIP',
  NodePort: 'NodePort',
  LoadBalancer: 'LoadBalancer',
} as const

export function service(input: RenderInput): IService & DesiredChild {
  const { definition, names, served } = input
  // The run's instants, written on the Service in the sync that made them: a sync whose view of the Challenge lags
  // reads them back (run-record.ts).
  const metadata: DesiredChild['metadata'] = {
    name: names.base,
    labels: fromPool(served) ? { ...labels(names), [Label.poolTicket]: definition.name } : labels(names),
    annotations: {
      [RUN_ANNOTATION]: String(input.run),
      [Annotation.admittedAt]: input.admittedAt,
      ...(served === undefined ? {} : { [Annotation.poolState]: served.state }),
      ...(served?.pod === undefined ? {} : { [Annotation.poolPod]: served.pod }),
      ...(served?.since === undefined ? {} : { [Annotation.poolSince]: served.since }),
    },
  }
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: {
      type: SERVICE_TYPE[definition.expose.type],
      selector: { ...input.podLabels },
      ports: [{ name: 'challenge', protocol: 'TCP', port: definition.expose.port, targetPort: definition.expose.port }],
    },
  }
}

/**
 * Every child of a running instance, in a fixed order so the same request gives the same bytes. The Pod comes
 * once the flag Secret and the NetworkPolicies are the instance's own (running.ts): until then it would mount
 * whatever Secret holds its flag Secret's name, and run before its isolation exists.
 */
export function renderChildren(input: RenderInput): DesiredChild[] {
  const pooled = fromPool(input.served)
  const children: DesiredChild[] = pooled ? [exposePolicy(input)] : [flagSecret(input), isolatePolicy(input)]
  if (input.definition.egress === 'Internet' && !pooled) children.push(internetPolicy(input))
  if (input.withPod && !pooled) children.push(pod(input))
  children.push(service(input))
  const { expose } = input.definition
  if (expose.type === 'HTTP' || expose.type === 'TLS') {
    const target = {
      metadata: { name: input.names.base, labels: labels(input.names) },
      host: instanceHost(expose.type, input.instanceId, input.config),
      service: { name: input.names.base, port: expose.port },
    }
    children.push(route(expose.type, target, input.config))
  }
  return children
}
