// The controllers a hook's children depend on, reduced to what a hook can observe: the scheduler and the kubelet
// (Pod status, failure modes, graceful termination) for bare Pods (the hook's workload) and for a Deployment's
// (the workload of earlier releases: Recreate rollouts, Pods owned by the Deployment directly, no ReplicaSets),
// the garbage collector and a cloud load-balancer controller.
import type { Cluster } from './cluster.js'
import { deepCopy, firstFree, fnv1a, isObject, sortKeys, type JsonObject } from './json.js'
import { controllerOf, controllerRefTo, refOf, type KubeObject } from './objects.js'

export type PodFailureMode =
  | 'none'
  /** scheduled, containers being created (not ready yet) */
  | 'starting'
  /** ErrImagePull, then ImagePullBackOff */
  | 'imagePull'
  /** CrashLoopBackOff, restartCount growing on every settle() */
  | 'crashLoop'
  /** InvalidImageName */
  | 'invalidImage'
  /** CreateContainerConfigError */
  | 'configError'
  /** PodScheduled=False/Unschedulable, no containerStatuses */
  | 'unschedulable'

/**
 * Which workloads a failure mode applies to: one by name (a bare Pod's, or a Deployment's), or all whose pods carry
 * these labels.
 */
export type WorkloadTarget =
  { namespace: string; workload: string } | { namespace?: string; labels: Record<string, string> }

interface Condition {
  type: string
  status: 'True' | 'False'
  reason?: string
  message?: string
  lastTransitionTime?: string
  lastUpdateTime?: string
  lastProbeTime?: null
}

const TEMPLATE_HASH = 'pod-template-hash'
const NODE = 'node-1'

// ---- kubelet: graceful termination ends ----

export function terminatePods(cluster: Cluster): void {
  for (const pod of cluster.list('v1', 'Pod')) {
    if (pod.metadata.deletionTimestamp !== undefined) cluster.delete(refOf(pod), { gracePeriodSeconds: 0 })
  }
}

// ---- garbage collector ----

export function collectGarbage(cluster: Cluster): void {
  for (let collected = true; collected;) {
    collected = false
    for (const obj of cluster.all()) {
      const owners = obj.metadata.ownerReferences ?? []
      if (owners.length === 0 || obj.metadata.deletionTimestamp !== undefined) continue
      const ownerAlive = owners.some(
        (owner) =>
          cluster.get({
            apiVersion: owner.apiVersion,
            kind: owner.kind,
            namespace: refOf(obj).namespace,
            name: owner.name,
          })?.metadata.uid === owner.uid,
      )
      if (ownerAlive) continue
      cluster.delete(refOf(obj))
      collected = true
    }
  }
}

// ---- Deployment controller + scheduler + kubelet ----

export function rolloutDeployments(cluster: Cluster): void {
  for (const deployment of cluster.list('apps/v1', 'Deployment')) {
    if (deployment.metadata.deletionTimestamp === undefined) rollout(cluster, deployment)
  }
}

/** Scheduler and kubelet for the Pods no Deployment owns (the hook's own workload): bound, then their status. */
export function runBarePods(cluster: Cluster): void {
  for (const pod of cluster.list('v1', 'Pod')) {
    if (pod.metadata.deletionTimestamp !== undefined || controllerOf(pod)?.kind === 'Deployment') continue
    const template = pod.metadata.labels ?? {}
    runPod(cluster, pod, cluster.podFailureFor(pod.metadata.namespace as string, pod.metadata.name, template))
  }
}

interface DeploymentSpec {
  replicas: number
  template: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: JsonObject }
}

/** The Deployment controller's revision numbers, per cluster and Deployment uid: the template hash of each. */
const revisions = new WeakMap<Cluster, Map<string, string[]>>()
const REVISION = 'deployment.kubernetes.io/revision'

/** A new template is a new revision, numbered from 1, on the Deployment's `revision` annotation. */
function recordRevision(cluster: Cluster, deployment: KubeObject, hash: string): KubeObject {
  const byDeployment = revisions.get(cluster) ?? new Map<string, string[]>()
  revisions.set(cluster, byDeployment)
  const hashes = byDeployment.get(String(deployment.metadata.uid)) ?? []
  if (hashes.at(-1) !== hash) hashes.push(hash)
  byDeployment.set(String(deployment.metadata.uid), hashes)
  const revision = String(hashes.length)
  if (deployment.metadata.annotations?.[REVISION] === revision) return deployment
  const annotations = { ...deployment.metadata.annotations, [REVISION]: revision }
  return cluster.update({ ...deployment, metadata: { ...deployment.metadata, annotations } }, 'kube-controller-manager')
}

function rollout(cluster: Cluster, stored: KubeObject): void {
  const spec = stored.spec as DeploymentSpec
  const hash = templateHash(spec.template)
  const deployment = recordRevision(cluster, stored, hash)
  const owned = () =>
    cluster
      .list('v1', 'Pod', deployment.metadata.namespace)
      .filter((pod) => controllerOf(pod)?.uid === deployment.metadata.uid)
  const isCurrent = (pod: KubeObject) => pod.metadata.labels?.[TEMPLATE_HASH] === hash
  // Recreate: old pods are deleted, and new ones start only once no old pod remains (terminating ones included).
  for (const pod of owned()) {
    if (!isCurrent(pod) && pod.metadata.deletionTimestamp === undefined) cluster.delete(refOf(pod))
  }
  if (owned().every(isCurrent)) {
    const live = owned().filter((pod) => pod.metadata.deletionTimestamp === undefined)
    for (let i = live.length; i < spec.replicas; i++) createPod(cluster, deployment, hash)
    for (const extra of live.slice(spec.replicas)) cluster.delete(refOf(extra))
  }
  const mode = cluster.podFailureFor(
    deployment.metadata.namespace as string,
    deployment.metadata.name,
    spec.template.metadata.labels ?? {},
  )
  for (const pod of owned()) if (pod.metadata.deletionTimestamp === undefined) runPod(cluster, pod, mode)
  updateDeploymentStatus(cluster, deployment, owned(), hash)
}

function templateHash(template: unknown): string {
  return fnv1a(JSON.stringify(sortKeys(template)))
    .toString(16)
    .padStart(8, '0')
}

function createPod(cluster: Cluster, deployment: KubeObject, hash: string): void {
  const { template } = deployment.spec as DeploymentSpec
  const namespace = deployment.metadata.namespace as string
  const taken = new Set(cluster.list('v1', 'Pod', namespace).map((pod) => pod.metadata.name))
  const name = firstFree(taken, (n) => {
    const suffix = fnv1a(`${String(deployment.metadata.uid)}/${hash}/${n}`)
      .toString(36)
      .slice(-5)
      .padStart(5, '0')
    return `${deployment.metadata.name}-${hash}-${suffix}`
  })
  cluster.create(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        generateName: `${deployment.metadata.name}-${hash}-`,
        namespace,
        labels: { ...template.metadata.labels, [TEMPLATE_HASH]: hash },
        annotations: deepCopy(template.metadata.annotations),
        ownerReferences: [controllerRefTo(deployment)],
      },
      spec: deepCopy(template.spec),
    },
    'kube-controller-manager',
  )
}

function runPod(cluster: Cluster, pod: KubeObject, mode: PodFailureMode): void {
  const spec = pod.spec as JsonObject
  if (mode !== 'unschedulable' && spec.nodeName === undefined) {
    pod = cluster.bind(pod, NODE)
  }
  cluster.updateStatus({ ...pod, status: podStatus(pod, mode, cluster.timestamp()) }, 'kubelet')
}

/** The status a kubelet would report for this pod in this mode; times only move when something flips. */
function podStatus(pod: KubeObject, mode: PodFailureMode, now: string): JsonObject {
  const previous = isObject(pod.status) ? pod.status : {}
  const conditions = previous.conditions as Condition[] | undefined
  if (mode === 'unschedulable') {
    return {
      phase: 'Pending',
      qosClass: 'Burstable',
      conditions: keepTimes(
        conditions,
        [
          {
            type: 'PodScheduled',
            status: 'False',
            reason: 'Unschedulable',
            message:
              '0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.',
            lastProbeTime: null,
          },
        ],
        now,
      ),
    }
  }
  const containers = ((pod.spec as JsonObject).containers as JsonObject[]).map((container) =>
    containerStatus(pod, container, mode, previous, now),
  )
  const ready = mode === 'none'
  const running = ready || mode === 'crashLoop'
  const notReady = {
    reason: 'ContainersNotReady',
    message: `containers with unready status: [${containers.map((c) => c.name).join(' ')}]`,
  }
  const h = fnv1a(pod.metadata.name)
  return {
    phase: running ? 'Running' : 'Pending',
    qosClass: 'Burstable',
    hostIP: '10.0.0.11',
    hostIPs: [{ ip: '10.0.0.11' }],
    podIP: `10.244.${(h >>> 8) & 255}.${1 + ((h & 255) % 254)}`,
    podIPs: [{ ip: `10.244.${(h >>> 8) & 255}.${1 + ((h & 255) % 254)}` }],
    startTime: previous.startTime ?? now,
    conditions: keepTimes(
      conditions,
      [
        { type: 'PodReadyToStartContainers', status: mode === 'starting' ? 'False' : 'True', lastProbeTime: null },
        { type: 'Initialized', status: 'True', lastProbeTime: null },
        { type: 'Ready', status: ready ? 'True' : 'False', ...(ready ? {} : notReady), lastProbeTime: null },
        { type: 'ContainersReady', status: ready ? 'True' : 'False', ...(ready ? {} : notReady), lastProbeTime: null },
        { type: 'PodScheduled', status: 'True', lastProbeTime: null },
      ],
      now,
    ),
    containerStatuses: containers,
  }
}

function containerStatus(
  pod: KubeObject,
  container: JsonObject,
  mode: PodFailureMode,
  previous: JsonObject,
  now: string,
): JsonObject {
  const name = String(container.name)
  const image = String(container.image)
  const before = ((previous.containerStatuses ?? []) as JsonObject[]).find((status) => status.name === name)
  const restartCount = Number(before?.restartCount ?? 0)
  const id = fnv1a(`${pod.metadata.uid}/${name}`).toString(16).padStart(8, '0')
  const base = { name, image, imageID: '', containerID: '', started: false, ready: false, restartCount, lastState: {} }
  const waiting = (reason: string, message: string) => ({ ...base, state: { waiting: { reason, message } } })
  switch (mode) {
    case 'starting':
      return { ...base, state: { waiting: { reason: 'ContainerCreating' } } }
    case 'imagePull': {
      // The first failure is ErrImagePull; from then on the kubelet backs off.
      const pulledOnce = isObject(before?.state) && isObject(before.state.waiting)
      return pulledOnce
        ? waiting('ImagePullBackOff', `Back-off pulling image "${image}"`)
        : waiting('ErrImagePull', `failed to pull and unpack image "${image}": not found`)
    }
    case 'invalidImage':
      return waiting(
        'InvalidImageName',
        `Failed to apply default image tag "${image}": couldn't parse image name "${image}": invalid reference format`,
      )
    case 'configError':
      return waiting('CreateContainerConfigError', `secret "${pod.metadata.name}" not found`)
    case 'crashLoop':
      return {
        ...base,
        imageID: `docker.io/library/${image}@sha256:${id}`,
        containerID: `containerd://${id}`,
        restartCount: restartCount + 1,
        lastState: {
          terminated: {
            exitCode: 1,
            reason: 'Error',
            startedAt: now,
            finishedAt: now,
            containerID: `containerd://${id}`,
          },
        },
        state: {
          waiting: {
            reason: 'CrashLoopBackOff',
            message: `back-off 10s restarting failed container=${name} pod=${pod.metadata.name}`,
          },
        },
      }
    default: {
      const running =
        isObject(before?.state) && isObject(before.state.running) ? before.state.running : { startedAt: now }
      return {
        ...base,
        imageID: `docker.io/library/${image}@sha256:${id}`,
        containerID: `containerd://${id}`,
        started: true,
        ready: true,
        state: { running },
      }
    }
  }
}

function updateDeploymentStatus(cluster: Cluster, deployment: KubeObject, pods: KubeObject[], hash: string): void {
  const spec = deployment.spec as DeploymentSpec
  const live = pods.filter((pod) => pod.metadata.deletionTimestamp === undefined)
  const updated = live.filter((pod) => pod.metadata.labels?.[TEMPLATE_HASH] === hash)
  const ready = updated.filter((pod) =>
    ((pod.status as JsonObject).conditions as Condition[]).some((c) => c.type === 'Ready' && c.status === 'True'),
  )
  // Recreate has maxUnavailable 0: available means every desired replica is ready (and, so, updated).
  const available = ready.length >= spec.replicas
  const replicaSet = `ReplicaSet "${deployment.metadata.name}-${hash}"`
  const previous = isObject(deployment.status) ? deployment.status : {}
  // Zero counts are omitted, as the API server's omitempty does.
  const counts = {
    replicas: live.length,
    updatedReplicas: updated.length,
    readyReplicas: ready.length,
    availableReplicas: ready.length,
    unavailableReplicas: Math.max(spec.replicas - ready.length, 0),
  }
  const status: JsonObject = { observedGeneration: deployment.metadata.generation }
  for (const [field, count] of Object.entries(counts)) if (count > 0) status[field] = count
  // Written even when zero (a pointer field since Kubernetes 1.33).
  status.terminatingReplicas = pods.filter((pod) => pod.metadata.deletionTimestamp !== undefined).length
  status.conditions = keepTimes(
    previous.conditions as Condition[] | undefined,
    [
      available
        ? {
            type: 'Available',
            status: 'True',
            reason: 'MinimumReplicasAvailable',
            message: 'Deployment has minimum availability.',
          }
        : {
            type: 'Available',
            status: 'False',
            reason: 'MinimumReplicasUnavailable',
            message: 'Deployment does not have minimum availability.',
          },
      available
        ? {
            type: 'Progressing',
            status: 'True',
            reason: 'NewReplicaSetAvailable',
            message: `${replicaSet} has successfully progressed.`,
          }
        : {
            type: 'Progressing',
            status: 'True',
            reason: 'ReplicaSetUpdated',
            message: `${replicaSet} is progressing.`,
          },
    ],
    cluster.timestamp(),
    true,
  )
  cluster.updateStatus({ ...deployment, status }, 'kube-controller-manager')
}

/** Conditions keep lastTransitionTime while their status holds (and lastUpdateTime while nothing changes). */
function keepTimes(
  previous: Condition[] | undefined,
  next: Condition[],
  now: string,
  withUpdateTime = false,
): Condition[] {
  return next.map((condition) => {
    const before = previous?.find((c) => c.type === condition.type)
    const same = before?.status === condition.status
    const unchanged = same && before.reason === condition.reason && before.message === condition.message
    const times: Partial<Condition> = withUpdateTime ? { lastUpdateTime: unchanged ? before.lastUpdateTime : now } : {}
    return { ...condition, ...times, lastTransitionTime: same ? before.lastTransitionTime : now }
  })
}

// ---- cloud load-balancer controller ----

export function provisionLoadBalancers(cluster: Cluster): void {
  const services = cluster.list('v1', 'Service')
  const used = new Set(services.flatMap(ingressIPs))
  for (const svc of services) {
    const { namespace, name } = refOf(svc)
    let loadBalancer: JsonObject = {}
    if ((svc.spec as JsonObject).type === 'LoadBalancer' && cluster.isLoadBalancerReady(namespace, name)) {
      const ip = ingressIPs(svc)[0] ?? allocateAddress(`${namespace}/${name}`, used)
      used.add(ip)
      loadBalancer = { ingress: [{ ip, ipMode: 'VIP' }] }
    }
    cluster.updateStatus({ ...svc, status: { loadBalancer } }, 'cloud-controller-manager')
  }
}

/** Deterministic per Service, from the documentation range 203.0.113.0/24. */
function allocateAddress(seed: string, used: Set<string>): string {
  const start = fnv1a(seed)
  return firstFree(used, (i) => `203.0.113.${1 + ((start + i) % 254)}`)
}

function ingressIPs(svc: KubeObject): string[] {
  const status = svc.status as { loadBalancer: { ingress?: Array<{ ip: string }> } }
  return (status.loadBalancer.ingress ?? []).map((entry) => entry.ip)
}
