import t from 'tap'
import { Cluster } from '../support/simulator/cluster.js'
import type { KubeObject } from '../support/simulator/objects.js'
import { challenge, deployment, NS, service } from './fixtures.js'

const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS }
const pods = (cluster: Cluster) => cluster.list('v1', 'Pod', NS)
const deploymentStatus = (cluster: Cluster, name = 'web') => cluster.get({ ...DEPLOY, name })?.status as any
const containerStatus = (pod: KubeObject | undefined) => (pod?.status as any)?.containerStatuses?.[0]
const condition = (obj: KubeObject | undefined, type: string) =>
  ((obj?.status as any)?.conditions ?? []).find((c: any) => c.type === type)

t.test('a Deployment becomes available: a ready Pod and a status', async (t) => {
  const cluster = new Cluster()
  cluster.create(deployment('web', { annotations: { 'challenge-hooks.dev/run': '0' } }))
  t.ok(cluster.settle() > 0)
  const [pod, ...others] = pods(cluster)
  t.equal(others.length, 0)
  t.match(pod?.metadata, {
    name: /^web-[0-9a-f]{8}-[0-9a-z]{5}$/,
    labels: { app: 'web', 'pod-template-hash': /^[0-9a-f]{8}$/ },
    annotations: { 'challenge-hooks.dev/run': '0' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', controller: true }],
  })
  t.match(pod?.spec, { nodeName: 'node-1', containers: [{ name: 'app', image: 'nginx:1.27' }] })
  t.match(pod?.status, { phase: 'Running', podIP: /^10\.244\./, startTime: '2025-01-01T00:00:00Z' })
  for (const type of ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'])
    t.equal(condition(pod, type)?.status, 'True', type)
  t.match(containerStatus(pod), {
    name: 'app',
    ready: true,
    started: true,
    restartCount: 0,
    state: { running: { startedAt: '2025-01-01T00:00:00Z' } },
  })
  t.match(deploymentStatus(cluster), {
    observedGeneration: 1,
    replicas: 1,
    updatedReplicas: 1,
    readyReplicas: 1,
    availableReplicas: 1,
    conditions: [
      { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
      { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
    ],
  })
  t.notOk('unavailableReplicas' in deploymentStatus(cluster), 'zero counts are omitted')

  cluster.advance(60)
  t.equal(cluster.settle(), 0, 'a settled cluster does not write')
  t.equal(condition(pods(cluster)[0], 'Ready').lastTransitionTime, '2025-01-01T00:00:00Z')
})

t.test('a changed pod template replaces the pod: old one terminates first (Recreate)', async (t) => {
  const cluster = new Cluster()
  cluster.create(deployment('web'))
  cluster.settle()
  const [old] = pods(cluster)
  const d = cluster.get({ ...DEPLOY, name: 'web' }) as KubeObject
  t.equal(d.metadata.annotations?.['deployment.kubernetes.io/revision'], '1', "the Deployment controller's revision")
  t.equal((d.status as any).terminatingReplicas, 0, 'terminatingReplicas, even when none')
  ;(d.spec as any).template.metadata.annotations = { 'challenge-hooks.dev/run': '1' }
  cluster.update(d)
  cluster.advance(1)

  cluster.settle()
  t.strictSame(
    pods(cluster).map((p) => p.metadata.name),
    [old?.metadata.name],
    'the old pod lingers for one step',
  )
  t.ok(pods(cluster)[0]?.metadata.deletionTimestamp)
  t.match(deploymentStatus(cluster), {
    observedGeneration: 2,
    terminatingReplicas: 1,
    conditions: [{ type: 'Available', status: 'False' }, { reason: 'ReplicaSetUpdated' }],
  })
  t.notOk('replicas' in deploymentStatus(cluster))
  t.equal(
    cluster.get({ ...DEPLOY, name: 'web' })?.metadata.annotations?.['deployment.kubernetes.io/revision'],
    '2',
    'a new template is revision 2',
  )

  cluster.settle()
  const [next, ...rest] = pods(cluster)
  t.equal(rest.length, 0)
  t.not(next?.metadata.name, old?.metadata.name)
  t.strictSame(next?.metadata.annotations, { 'challenge-hooks.dev/run': '1' })
  t.match(condition(cluster.get({ ...DEPLOY, name: 'web' }), 'Available'), {
    status: 'True',
    lastTransitionTime: '2025-01-01T00:00:01Z',
  })
})

t.test('scaling, and pods that are not ours', async (t) => {
  const cluster = new Cluster()
  cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'standalone', namespace: NS },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
  })
  cluster.create(deployment('web', { replicas: 2 }))
  cluster.settle()
  const owned = () => pods(cluster).filter((p) => p.metadata.name !== 'standalone')
  t.equal(owned().length, 2)
  t.equal(deploymentStatus(cluster).readyReplicas, 2)
  const d = cluster.get({ ...DEPLOY, name: 'web' }) as KubeObject
  cluster.update({ ...d, spec: { ...(d.spec as object), replicas: 1 } })
  cluster.settle()
  t.equal(owned().filter((p) => !p.metadata.deletionTimestamp).length, 1)
  cluster.settle()
  t.equal(owned().length, 1)
  t.ok(
    cluster.get({ apiVersion: 'v1', kind: 'Pod', namespace: NS, name: 'standalone' }),
    'a pod without an owner is left alone',
  )
})

t.test('pod failure modes', async (t) => {
  const cluster = new Cluster()
  cluster.create(deployment('web', { image: 'ghcr.io/ctf/web:1' }))
  const pod = () => pods(cluster)[0]
  const waiting = () => containerStatus(pod())?.state?.waiting

  cluster.setPodFailure({ namespace: NS, workload: 'web' }, 'imagePull')
  cluster.settle()
  t.match(waiting(), { reason: 'ErrImagePull', message: /ghcr.io\/ctf\/web:1/ })
  t.match(pod()?.status, { phase: 'Pending' })
  t.match(condition(pod(), 'Ready'), {
    status: 'False',
    reason: 'ContainersNotReady',
    message: 'containers with unready status: [app]',
  })
  t.match(deploymentStatus(cluster), {
    replicas: 1,
    updatedReplicas: 1,
    unavailableReplicas: 1,
    conditions: [{ type: 'Available', status: 'False' }],
  })
  t.notOk('readyReplicas' in deploymentStatus(cluster))
  cluster.settle()
  t.match(waiting(), { reason: 'ImagePullBackOff' })

  cluster.setPodFailure({ labels: { app: 'web' } }, 'crashLoop')
  cluster.settle()
  t.match(containerStatus(pod()), {
    restartCount: 1,
    ready: false,
    lastState: { terminated: { exitCode: 1, reason: 'Error' } },
  })
  t.match(waiting(), { reason: 'CrashLoopBackOff' })
  t.match(pod()?.status, { phase: 'Running' })
  t.ok(cluster.settle() > 0, 'a crash-looping pod changes on every step')
  t.equal(containerStatus(pod()).restartCount, 2)

  const cases: Array<[Parameters<Cluster['setPodFailure']>[1], string]> = [
    ['invalidImage', 'InvalidImageName'],
    ['configError', 'CreateContainerConfigError'],
    ['starting', 'ContainerCreating'],
  ]
  for (const [mode, reason] of cases) {
    cluster.setPodFailure({ namespace: NS, labels: { app: 'web' } }, mode)
    cluster.settle()
    t.equal(waiting()?.reason, reason, mode)
  }
  t.equal(condition(pod(), 'PodReadyToStartContainers').status, 'False')

  cluster.setPodFailure({ namespace: 'elsewhere', labels: { app: 'web' } }, 'crashLoop')
  cluster.setPodFailure({ namespace: NS, workload: 'other' }, 'crashLoop')
  cluster.setPodFailure({ namespace: NS, workload: 'web' }, 'none')
  cluster.advance(30)
  cluster.settle()
  t.match(containerStatus(pod()), { ready: true, state: { running: { startedAt: '2025-01-01T00:00:30Z' } } })
  t.equal(deploymentStatus(cluster).availableReplicas, 1)
})

t.test('an unschedulable pod has no node and no container statuses, until it heals', async (t) => {
  const cluster = new Cluster()
  cluster.setPodFailure({ namespace: NS, workload: 'web' }, 'unschedulable')
  cluster.create(deployment('web'))
  cluster.settle()
  const pod = () => pods(cluster)[0]
  t.notOk((pod()?.spec as any).nodeName)
  t.match(pod()?.status, {
    phase: 'Pending',
    conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
  })
  t.notOk('containerStatuses' in (pod()?.status as object))
  cluster.setPodFailure({ namespace: NS, workload: 'web' }, 'none')
  cluster.settle()
  t.equal((pod()?.spec as any).nodeName, 'node-1')
  t.equal(condition(pod(), 'Ready').status, 'True')
})

t.test('garbage collection: dependents of a deleted owner go, pods after a termination step', async (t) => {
  const cluster = new Cluster()
  const owner = cluster.create(challenge())
  const ownerRef = {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: String(owner.metadata.uid),
    controller: true,
  }
  cluster.create({ ...deployment('web'), metadata: { name: 'web', namespace: NS, ownerReferences: [ownerRef] } })
  cluster.create({
    ...service('web'),
    metadata: {
      name: 'web',
      namespace: NS,
      ownerReferences: [ownerRef, { ...ownerRef, name: 'gone', uid: 'x', controller: false }],
    },
  })
  cluster.settle()
  t.equal(pods(cluster).length, 1)

  cluster.delete({ apiVersion: owner.apiVersion, kind: owner.kind, namespace: NS, name: owner.metadata.name })
  cluster.settle()
  t.equal(cluster.get({ ...DEPLOY, name: 'web' }), undefined, 'the Deployment is collected')
  t.equal(
    cluster.get({ apiVersion: 'v1', kind: 'Service', namespace: NS, name: 'web' }),
    undefined,
    'all owners gone: collected',
  )
  t.ok(pods(cluster)[0]?.metadata.deletionTimestamp, 'its pod is terminating')
  cluster.settle()
  t.equal(pods(cluster).length, 0)
})

t.test('a deleted Deployment with a finalizer keeps its pods until it is gone', async (t) => {
  const cluster = new Cluster()
  cluster.create({ ...deployment('web'), metadata: { name: 'web', namespace: NS, finalizers: ['example.com/hold'] } })
  cluster.settle()
  cluster.delete({ ...DEPLOY, name: 'web' })
  cluster.settle()
  t.equal(pods(cluster).length, 1)
  t.notOk(
    pods(cluster)[0]?.metadata.deletionTimestamp,
    'no rollout for a deleting Deployment, and its owner still exists',
  )
})

t.test('load balancers get an address when ready', async (t) => {
  const cluster = new Cluster({ loadBalancersReady: false })
  cluster.create(service('a', 'LoadBalancer'))
  cluster.create(service('b', 'LoadBalancer'))
  cluster.create(service('c', 'NodePort'))
  cluster.settle()
  const lb = (name: string) =>
    (cluster.get({ apiVersion: 'v1', kind: 'Service', namespace: NS, name })?.status as any).loadBalancer
  t.strictSame(lb('a'), {})
  cluster.setLoadBalancerReady(NS, 'a', true)
  cluster.setLoadBalancerReady(NS, 'b', true)
  cluster.settle()
  t.match(lb('a'), { ingress: [{ ip: /^203\.0\.113\.\d+$/, ipMode: 'VIP' }] })
  t.not(lb('a').ingress[0].ip, lb('b').ingress[0].ip)
  t.strictSame(lb('c'), {})
  const ip = lb('a').ingress[0].ip
  t.equal(cluster.settle(), 0)
  t.equal(lb('a').ingress[0].ip, ip, 'the address is kept')
  cluster.setLoadBalancerReady(NS, 'a', false)
  cluster.settle()
  t.strictSame(lb('a'), {})
  t.strictSame(new Cluster().isLoadBalancerReady(NS, 'any'), true, 'ready by default')
})

t.test('load-balancer addresses do not collide', async (t) => {
  const probe = new Cluster()
  probe.create(service('a', 'LoadBalancer'))
  probe.settle()
  const ip = (probe.get({ apiVersion: 'v1', kind: 'Service', namespace: NS, name: 'a' })?.status as any).loadBalancer
    .ingress[0].ip
  const cluster = new Cluster()
  const squatter = cluster.create(service('squatter', 'ClusterIP'))
  cluster.updateStatus({ ...squatter, status: { loadBalancer: { ingress: [{ ip }] } } })
  cluster.create(service('a', 'LoadBalancer'))
  cluster.provisionLoadBalancers()
  t.not(
    (cluster.get({ apiVersion: 'v1', kind: 'Service', namespace: NS, name: 'a' })?.status as any).loadBalancer
      .ingress[0].ip,
    ip,
  )
})
