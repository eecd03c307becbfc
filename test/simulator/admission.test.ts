import t from 'tap'
import { Cluster } from '../support/simulator/cluster.js'
import type { KubeObject } from '../support/simulator/objects.js'
import { deployment, NS, secret, service } from './fixtures.js'

const get = (cluster: Cluster, obj: KubeObject) =>
  cluster.get({
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    namespace: String(obj.metadata.namespace),
    name: obj.metadata.name,
  }) as KubeObject

t.test('names, namespaces, labels and annotations are validated', async (t) => {
  const cluster = new Cluster()
  const cases: Array<[string, KubeObject, RegExp]> = [
    ['Service names are DNS-1035 labels', service('1-starts-with-digit'), /metadata.name/],
    ['Service names have at most 63 chars', service(`s${'x'.repeat(63)}`), /at most 63/],
    ['other names are DNS-1123 subdomains', secret('Upper'), /metadata.name/],
    [
      'a name is required',
      { apiVersion: 'v1', kind: 'Secret', metadata: { namespace: NS } } as unknown as KubeObject,
      /metadata.name/,
    ],
    ['a namespace is required', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } }, /metadata.namespace/],
    [
      'label values have at most 63 chars',
      { ...secret('s'), metadata: { name: 's', namespace: NS, labels: { a: 'x'.repeat(64) } } },
      /label value/,
    ],
    [
      'label values are strings',
      { ...secret('s'), metadata: { name: 's', namespace: NS, labels: { a: 1 as unknown as string } } },
      /label value/,
    ],
    [
      'label keys are qualified names',
      { ...secret('s'), metadata: { name: 's', namespace: NS, labels: { 'a b': 'c' } } },
      /metadata.labels/,
    ],
    [
      'label key prefixes are DNS subdomains',
      { ...secret('s'), metadata: { name: 's', namespace: NS, labels: { 'Bad_/x': 'c' } } },
      /metadata.labels/,
    ],
    [
      'annotation keys too',
      { ...secret('s'), metadata: { name: 's', namespace: NS, annotations: { '-x': 'c' } } },
      /metadata.annotations/,
    ],
    [
      'annotations are at most 256 KiB',
      { ...secret('s'), metadata: { name: 's', namespace: NS, annotations: { big: 'x'.repeat(262144) } } },
      /Too long/,
    ],
  ]
  for (const [name, obj, message] of cases) t.throws(() => cluster.create(obj), { reason: 'Invalid', message }, name)
  const ok = cluster.create({
    ...secret('s.with.dots'),
    metadata: {
      name: 's.with.dots',
      namespace: NS,
      labels: { 'example.com/key': '', plain: 'v-1.2_3' },
      annotations: { 'a.b/c': 'anything at all' },
    },
  })
  t.ok(ok.metadata.uid)
})

t.test('Services get clusterIP, defaults and deterministic nodePorts, kept across updates', async (t) => {
  const cluster = new Cluster()
  const svc = cluster.create(service('web'))
  const spec = svc.spec as any
  t.match(spec, {
    type: 'NodePort',
    sessionAffinity: 'None',
    internalTrafficPolicy: 'Cluster',
    externalTrafficPolicy: 'Cluster',
    clusterIP: /^10\.96\.\d+\.\d+$/,
  })
  t.strictSame(spec.clusterIPs, [spec.clusterIP])
  t.match(spec.ports[0], { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' })
  t.ok(spec.ports[0].nodePort >= 30000 && spec.ports[0].nodePort <= 32767)
  t.strictSame(svc.status, { loadBalancer: {} })
  t.strictSame(
    (new Cluster().create(service('web')).spec as any).ports[0].nodePort,
    spec.ports[0].nodePort,
    'deterministic',
  )

  // A full replace that omits the allocated values keeps them (the API server patches them back in).
  const replaced = cluster.update({ ...service('web'), metadata: svc.metadata })
  t.equal((replaced.spec as any).clusterIP, spec.clusterIP)
  t.equal((replaced.spec as any).ports[0].nodePort, spec.ports[0].nodePort)
  // A new port gets its own nodePort; changing to ClusterIP releases them.
  const twoPorts = cluster.update({
    ...replaced,
    spec: { ...(replaced.spec as object), ports: [...(replaced.spec as any).ports, { port: 81, targetPort: 'x' }] },
  })
  const ports = (twoPorts.spec as any).ports
  t.not(ports[1].nodePort, ports[0].nodePort)
  t.equal(ports[1].targetPort, 'x')
  const clusterIP = cluster.update({ ...twoPorts, spec: { ...(twoPorts.spec as object), type: 'ClusterIP' } })
  t.notOk((clusterIP.spec as any).ports.some((p: any) => 'nodePort' in p))
  t.notOk('externalTrafficPolicy' in (cluster.create(service('internal', 'ClusterIP')).spec as object))

  const headless = cluster.create({
    ...service('headless', 'ClusterIP'),
    spec: { clusterIP: 'None', ports: [{ port: 1 }] },
  })
  t.equal((headless.spec as any).clusterIP, 'None')
  const bare = cluster.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'bare', namespace: NS } })
  t.match(bare.spec, { type: 'ClusterIP' })
})

t.test('allocations skip addresses and ports already in use', async (t) => {
  const probe = new Cluster()
  const taken = probe.create(service('web')).spec as any
  const cluster = new Cluster()
  cluster.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'no-ports', namespace: NS }, spec: {} })
  const squatter = service('squatter')
  ;(squatter.spec as any).clusterIP = taken.clusterIP
  ;(squatter.spec as any).ports[0].nodePort = taken.ports[0].nodePort
  cluster.create(squatter)
  const web = cluster.create(service('web')).spec as any
  t.not(web.clusterIP, taken.clusterIP)
  t.not(web.ports[0].nodePort, taken.ports[0].nodePort)
})

t.test('Secrets: stringData is merged into data; data must be base64', async (t) => {
  const cluster = new Cluster()
  const s = cluster.create({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: NS },
    stringData: { flag: 'flag{y}', n: 1 },
  })
  t.strictSame(s.data, { flag: Buffer.from('flag{y}').toString('base64'), n: 'MQ==' })
  t.equal(s.type, 'Opaque')
  t.notOk('stringData' in s)
  t.throws(() => cluster.create({ ...secret('bad'), data: { flag: 'not base64!' } }), {
    reason: 'Invalid',
    message: /base64/,
  })
  t.throws(() => cluster.create({ ...secret('bad'), data: { flag: 42 } }), { reason: 'Invalid', message: /./ })
})

t.test('Deployments: selector rules and defaults', async (t) => {
  const cluster = new Cluster()
  const d = cluster.create(deployment('web'))
  const spec = d.spec as any
  t.match(spec, { replicas: 1, revisionHistoryLimit: 10, progressDeadlineSeconds: 600, strategy: { type: 'Recreate' } })
  t.match(spec.template.spec, {
    restartPolicy: 'Always',
    dnsPolicy: 'ClusterFirst',
    terminationGracePeriodSeconds: 30,
    schedulerName: 'default-scheduler',
    securityContext: {},
  })
  t.match(spec.template.spec.containers[0], {
    imagePullPolicy: 'IfNotPresent',
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
  })
  const noReplicas = deployment('latest', { image: 'nginx:latest' })
  delete (noReplicas.spec as any).replicas
  delete (noReplicas.spec as any).strategy
  const latest = cluster.create(noReplicas).spec as any
  t.equal(latest.template.spec.containers[0].imagePullPolicy, 'Always')
  t.equal(latest.replicas, 1)
  t.match(latest.strategy, { type: 'RollingUpdate' })
  t.equal(
    (cluster.create(deployment('untagged', { image: 'nginx' })).spec as any).template.spec.containers[0]
      .imagePullPolicy,
    'Always',
  )

  const expressions = deployment('expr')
  ;(expressions.spec as any).selector = { matchExpressions: [{ key: 'app', operator: 'In', values: ['expr'] }] }
  t.ok(cluster.create(expressions))

  t.throws(
    () => cluster.create({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'nospec', namespace: NS } }),
    { message: /spec.selector: Required/ },
  )
  const mismatch = deployment('mismatch')
  ;(mismatch.spec as any).selector = { matchLabels: { app: 'other' } }
  t.throws(() => cluster.create(mismatch), { message: /does not match template/ })
  const noContainers = deployment('empty')
  delete (noContainers.spec as any).template.spec.containers
  t.throws(() => cluster.create(noContainers), { message: /containers: Required/ })

  const moved = get(cluster, d)
  ;(moved.spec as any).selector = { matchLabels: { app: 'web', tier: 'x' } }
  ;(moved.spec as any).template.metadata.labels.tier = 'x'
  t.throws(() => cluster.update(moved), { message: /field is immutable/ })
})

t.test('defaults a v1.37 API server stores: pod specs, Pods, Services (read off a real one)', async (t) => {
  const cluster = new Cluster()
  const probe = { httpGet: { path: '/', port: 8080 }, periodSeconds: 5 }
  const template = {
    metadata: { labels: { app: 'w' } },
    spec: { containers: [{ name: 'c', image: 'i:1', ports: [{ containerPort: 8080 }], readinessProbe: probe }] },
  }
  const stored = cluster.create({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'w', namespace: 'ns' },
    spec: { selector: { matchLabels: { app: 'w' } }, template },
  })
  const container = (stored.spec as any).template.spec.containers[0]
  t.strictSame(container.ports, [{ containerPort: 8080, protocol: 'TCP' }], 'container ports: protocol TCP')
  t.strictSame(
    container.readinessProbe,
    {
      httpGet: { path: '/', port: 8080, scheme: 'HTTP' },
      periodSeconds: 5,
      timeoutSeconds: 1,
      successThreshold: 1,
      failureThreshold: 3,
    },
    'probe defaults',
  )

  const pod = cluster.create({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'ns' },
    spec: { enableServiceLinks: false, containers: [{ name: 'c', image: 'i:1' }] },
  })
  t.match(
    pod.spec,
    {
      serviceAccountName: 'default',
      serviceAccount: 'default',
      priority: 0,
      preemptionPolicy: 'PreemptLowerPriority',
      enableServiceLinks: false,
    },
    'admission plugins: service account, priority',
  )
  t.strictSame(
    (pod.spec as any).tolerations.map((x: any) => `${x.key}:${x.effect}:${x.tolerationSeconds}`),
    ['node.kubernetes.io/not-ready:NoExecute:300', 'node.kubernetes.io/unreachable:NoExecute:300'],
    'DefaultTolerationSeconds',
  )

  const svc = cluster.create({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 's', namespace: 'ns' },
    spec: { ports: [{ port: 80 }] },
  })
  t.match(svc.spec, { ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack' }, 'single-stack IPv4')
  t.equal(svc.metadata.generation, undefined, 'Services carry no generation')
})

t.test('NetworkPolicy ipBlocks, as a v1.37 API server validates them', async (t) => {
  const cluster = new Cluster()
  const policy = (cidr: string, except: string[]) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: `p${Math.random().toString(36).slice(2, 8)}`, namespace: 'ns' },
    spec: { podSelector: {}, egress: [{ to: [{ ipBlock: { cidr, except } }] }] },
  })
  t.ok(cluster.create(policy('0.0.0.0/0', ['10.0.0.0/8', '169.254.169.254/32'])), 'IPv4 exceptions inside the cidr')
  t.ok(
    cluster.create(policy('::/0', ['::1/128', '64:ff9b::/96', 'fc00::/7', '64:ff9b::a9fe:a9fe/128'])),
    'IPv6 exceptions inside the cidr',
  )
  t.throws(
    () => cluster.create(policy('::/0', ['::ffff:0:0/96'])),
    { message: /except\[0\]: Invalid value: "::ffff:0:0\/96": must not have an IPv4-mapped IPv6 address/ },
    'IPv4-mapped: refused',
  )
  t.throws(
    () => cluster.create(policy('10.0.0.0/8', ['192.168.0.0/16'])),
    { message: /must be a strict subset of `cidr`/ },
    'outside the cidr',
  )
  t.throws(
    () => cluster.create(policy('10.0.0.0/8', ['10.0.0.0/8'])),
    { message: /must be a strict subset/ },
    'equal is not strict',
  )
  t.throws(
    () => cluster.create(policy('0.0.0.0/0', ['fc00::/7'])),
    { message: /must be a strict subset/ },
    'another family',
  )
  t.throws(
    () => cluster.create(policy('10.0.0.0/33', [])),
    { message: /cidr: Invalid value: "10.0.0.0\/33": must be a valid CIDR value/ },
    'a prefix too long',
  )
  t.throws(() => cluster.create(policy('banana', [])), { message: /must be a valid CIDR value/ }, 'not an address')
})
