/** Builders asserted on whole objects, and every child of every variant validated with kubernetes-models. */
import { BlockList, isIP } from 'node:net'
import t from 'tap'
import {
  DEFAULT_GROUP,
  exposePolicy,
  internetPolicy,
  isolatePolicy,
  pod as podChild,
  renderChildren,
  service,
  type RenderInput,
} from '../../src/challenge/children.js'
import { resolveDefinition, type ResolvedDefinition } from '../../src/challenge/definition.js'
import { childNames, podLabels } from '../../src/challenge/names.js'
import { testConfig } from '../helpers/app.js'
import { validateChildren } from '../helpers/validate.js'
import type { Json } from '../helpers/world.js'
import { NON_PUBLIC_IPV4, NON_PUBLIC_IPV6 } from '../helpers/contract.js'

/** The operator of these tests allows the two RuntimeClasses the rows name. */
function definitionOf(spec: Json): ResolvedDefinition {
  const result = resolveDefinition('web', spec, { extendedResources: [], runtimeClasses: ['gvisor', 'kata'] })
  if (!result.found) throw new Error(result.message)
  return result.definition
}

function input(spec: Json, overrides: Partial<RenderInput> = {}): RenderInput {
  return {
    namespace: 'challenges',
    names: childNames('web-u-alice', UID),
    podLabels: podLabels(childNames('web-u-alice', UID)),
    definition: definitionOf(spec),
    parameters: {},
    flagData: 'ZmxhZ3t4fQ==',
    instanceId: '0123456789abcdef',
    owner: { kind: 'User', id: 'alice' },
    run: 2,
    admittedAt: '2026-11-22T12:00:00Z',
    config: testConfig(),
    withPod: true,
    ...overrides,
  }
}

const web = { pod: { containers: [{ name: 'web', image: 'ghcr.io/example/web:1' }] }, expose: { port: 8080 } }
const UID = '6f1c2a34-0000-4000-8000-00000000a11c'
const LABELS = {
  'app.kubernetes.io/managed-by': 'challenge-hooks',
  'challenge-hooks.dev/instance': 'web-u-alice',
  'challenge-hooks.dev/uid': UID,
}

t.test('the Pod of the Restricted profile, whole', async (t) => {
  t.strictSame(podChild(input(web)), {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web-u-alice', labels: LABELS, annotations: { 'challenge-hooks.dev/run': '2' } },
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // No pod-level group: containerd refuses a group without a user (the sandbox has no image to take one from).
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      // First, and before the author's container may start: the pod's egress seen blocked (docs/api.md).
      initContainers: [
        {
          name: 'isolation-gate',
          image: 'ghcr.io/challenge-hooks/challenge-hooks:0.1.0',
          command: ['/nodejs/bin/node', '/app/dist/isolation-gate.js'],
          env: [
            { name: 'ISOLATION_GATE_TIMEOUT_SECONDS', value: '60' },
            { name: 'POLICY_ENFORCES_IPV6', value: 'false' },
          ],
          // The one container's, with its defaults: the pod asks for no more than without the gate.
          resources: {
            requests: { cpu: '50m', memory: '64Mi', 'ephemeral-storage': '64Mi' },
            limits: { cpu: '500m', memory: '256Mi', 'ephemeral-storage': '256Mi' },
          },
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65534,
            runAsGroup: 65534,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
        },
      ],
      containers: [
        {
          name: 'web',
          image: 'ghcr.io/example/web:1',
          env: [{ name: 'FLAG', valueFrom: { secretKeyRef: { name: 'web-u-alice-flag', key: 'flag' } } }],
          ports: [{ containerPort: 8080, protocol: 'TCP' }],
          resources: {
            requests: { cpu: '50m', memory: '64Mi', 'ephemeral-storage': '64Mi' },
            limits: { cpu: '500m', memory: '256Mi', 'ephemeral-storage': '256Mi' },
          },
          readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          // Not group 0 (root's on the node): the image's uid comes with no group, even from USER uid:gid.
          securityContext: {
            runAsGroup: 65534,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          volumeMounts: [
            { name: 'tmp', mountPath: '/tmp' },
            { name: 'flag', mountPath: '/flag', subPath: 'flag', readOnly: true },
          ],
        },
      ],
      volumes: [
        { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
        { name: 'flag', secret: { secretName: 'web-u-alice-flag', defaultMode: 0o444 } },
      ],
    },
  })
  t.equal(DEFAULT_GROUP, 65534, 'nogroup')
})

t.test(
  "pull Secrets: the pod names the definition's own and pulls every image at each start; the author's Secrets as variables",
  async (t) => {
    const spec = {
      pod: {
        containers: [
          {
            name: 'web',
            image: 'registry.example.org/alice/web:1',
            env: [
              { name: 'ADMIN_PASSWORD', valueFrom: { secretKeyRef: { name: 'alice-web', key: 'admin-password' } } },
              { name: 'MODE', value: 'hard' },
            ],
          },
          { name: 'bot', image: 'registry.example.org/alice/bot:1' },
        ],
        imagePullSecrets: [{ name: 'alice-pull' }],
      },
      expose: { port: 8080 },
    }
    const security = {
      runAsGroup: 65534,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    }
    const resources = {
      requests: { cpu: '50m', memory: '64Mi', 'ephemeral-storage': '64Mi' },
      limits: { cpu: '500m', memory: '256Mi', 'ephemeral-storage': '256Mi' },
    }
    const mounts = [
      { name: 'tmp', mountPath: '/tmp' },
      { name: 'flag', mountPath: '/flag', subPath: 'flag', readOnly: true },
    ]
    const flag = { name: 'FLAG', valueFrom: { secretKeyRef: { name: 'web-u-alice-flag', key: 'flag' } } }
    t.strictSame(podChild(input(spec)), {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-u-alice', labels: LABELS, annotations: { 'challenge-hooks.dev/run': '2' } },
      spec: {
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
        imagePullSecrets: [{ name: 'alice-pull' }],
        // The gate runs the hook's own image, pulled as the operator set it (no pull policy of the author's).
        initContainers: [
          {
            name: 'isolation-gate',
            image: 'ghcr.io/challenge-hooks/challenge-hooks:0.1.0',
            command: ['/nodejs/bin/node', '/app/dist/isolation-gate.js'],
            env: [
              { name: 'ISOLATION_GATE_TIMEOUT_SECONDS', value: '60' },
              { name: 'POLICY_ENFORCES_IPV6', value: 'false' },
            ],
            resources,
            securityContext: { ...security, runAsNonRoot: true, runAsUser: 65534 },
          },
        ],
        containers: [
          {
            name: 'web',
            image: 'registry.example.org/alice/web:1',
            imagePullPolicy: 'Always',
            env: [
              { name: 'ADMIN_PASSWORD', valueFrom: { secretKeyRef: { name: 'alice-web', key: 'admin-password' } } },
              { name: 'MODE', value: 'hard' },
              flag,
            ],
            ports: [{ containerPort: 8080, protocol: 'TCP' }],
            resources,
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
            securityContext: security,
            volumeMounts: mounts,
          },
          {
            name: 'bot',
            image: 'registry.example.org/alice/bot:1',
            imagePullPolicy: 'Always',
            env: [flag],
            resources,
            securityContext: security,
            volumeMounts: mounts,
          },
        ],
        volumes: [
          { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
          { name: 'flag', secret: { secretName: 'web-u-alice-flag', defaultMode: 0o444 } },
        ],
      },
    })
    validateChildren(renderChildren(input(spec)))
    // A parameter of the Challenge replaces the author's variable of its name, Secret reference and all.
    const overridden = podChild(input(spec, { parameters: { ADMIN_PASSWORD: 'from-the-platform' } }))
    t.strictSame(overridden.spec?.containers[0]?.env, [
      { name: 'MODE', value: 'hard' },
      { name: 'ADMIN_PASSWORD', value: 'from-the-platform' },
      flag,
    ])
  },
)

t.test(
  "the operator's pool for player pods: node selector, tolerations, a default RuntimeClass the definition may override",
  async (t) => {
    const pool = testConfig({
      instancePods: {
        nodeSelector: { 'challenge-hooks.dev/pool': 'challenges' },
        tolerations: [
          { key: 'challenge-hooks.dev/pool', operator: 'Equal', value: 'challenges', effect: 'NoSchedule' },
        ],
        runtimeClassName: 'gvisor',
      },
    })
    const spec = { pod: { containers: [{ name: 'app', image: 'app:1' }] }, expose: { port: 8080 } }
    const podOf = (built: unknown) => (built as { spec: Json }).spec
    const pooled = podOf(podChild(input(spec, { config: pool })))
    t.strictSame(pooled.nodeSelector, { 'challenge-hooks.dev/pool': 'challenges' })
    t.strictSame(pooled.tolerations, [
      { key: 'challenge-hooks.dev/pool', operator: 'Equal', value: 'challenges', effect: 'NoSchedule' },
    ])
    t.equal(pooled.runtimeClassName, 'gvisor', "the operator's default RuntimeClass")
    const kata = podOf(podChild(input({ ...spec, security: { runtimeClassName: 'kata' } }, { config: pool })))
    t.equal(kata.runtimeClassName, 'kata', "the definition's RuntimeClass wins")
    const plain = podOf(podChild(input(spec)))
    for (const field of ['nodeSelector', 'tolerations', 'runtimeClassName'])
      t.notOk(field in plain, `no ${field} unless configured`)
  },
)

t.test('Baseline, runtime class, author resources, probes, commands and several containers', async (t) => {
  const spec = {
    pod: {
      containers: [
        {
          name: 'db',
          image: 'postgres:16',
          resources: { limits: { memory: '1Gi' } },
          securityContext: { runAsUser: 0 },
        },
        {
          name: 'app',
          image: 'app:1',
          command: ['/app'],
          args: ['--port', '9000'],
          ports: [{ containerPort: 9000, name: 'http' }],
          readinessProbe: { httpGet: { path: '/health', port: 9000 } },
          securityContext: { runAsUser: 1000, runAsGroup: 1000 },
        },
      ],
    },
    expose: { container: 'app', port: 9000, type: 'Internal' },
    security: { profile: 'Baseline', runtimeClassName: 'gvisor' },
  }
  const built = podChild(input(spec)) as unknown as Json & { spec: Json & { containers: Json[] } }
  const pod = built.spec
  t.equal(pod.runtimeClassName, 'gvisor')
  t.strictSame(pod.securityContext, { seccompProfile: { type: 'RuntimeDefault' } }, 'Baseline may run as root')
  const [db, app] = pod.containers
  t.strictSame(
    db?.securityContext,
    {
      runAsUser: 0,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['NET_RAW'] },
    },
    "the runtime's default capabilities but NET_RAW (no forged packets)",
  )
  t.strictSame(db?.resources, {
    requests: { cpu: '50m', memory: '64Mi', 'ephemeral-storage': '64Mi' },
    limits: { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '256Mi' },
  })
  t.notOk(db && 'ports' in db, 'a container that is not exposed gets no port')
  t.notOk(db && 'readinessProbe' in db, 'nor a default probe')
  t.hasStrict(app, {
    command: ['/app'],
    args: ['--port', '9000'],
    ports: [{ containerPort: 9000, name: 'http' }],
    readinessProbe: { httpGet: { path: '/health' } },
  })
  t.hasStrict(app?.securityContext, { runAsUser: 1000, runAsGroup: 1000 })
  validateChildren(renderChildren(input(spec)))
})

t.test(
  'the isolation gate: the largest request and limit of the containers, the settings handed on, the same context under Baseline',
  async (t) => {
    const spec = {
      pod: {
        containers: [
          { name: 'db', image: 'db:1', resources: { requests: { cpu: '0.2' }, limits: { memory: '1Gi', cpu: 1 } } },
          {
            name: 'app',
            image: 'app:1',
            resources: {
              requests: { memory: '100M', 'ephemeral-storage': '100Mi' },
              limits: { 'nvidia.com/gpu': '1' },
            },
          },
          { name: 'cache', image: 'cache:1', resources: { limits: { 'ephemeral-storage': '2Gi' } } },
        ],
      },
      expose: { container: 'app', port: 8080 },
      security: { profile: 'Baseline' },
      // The limits add up to 2Gi + 2 × 256Mi of ephemeral storage: two units of cost.
      cost: 2,
    }
    const config = testConfig({
      isolationGate: {
        image: 'registry.example.org/mirror/challenge-hooks:0.1.0',
        target: '10.0.0.10:9153',
        timeoutSeconds: 20,
        ipv6Enforced: true,
      },
    })
    const definition = resolveDefinition('web', spec, {
      extendedResources: ['nvidia.com/gpu'],
      runtimeClasses: [],
    })
    if (!definition.found) throw new Error(definition.message)
    const built = podChild(input(web, { definition: definition.definition, config }))
    t.strictSame(built.spec?.initContainers, [
      {
        name: 'isolation-gate',
        image: 'registry.example.org/mirror/challenge-hooks:0.1.0',
        command: ['/nodejs/bin/node', '/app/dist/isolation-gate.js'],
        env: [
          { name: 'ISOLATION_GATE_TARGET', value: '10.0.0.10:9153' },
          { name: 'ISOLATION_GATE_TIMEOUT_SECONDS', value: '20' },
          { name: 'POLICY_ENFORCES_IPV6', value: 'true' },
        ],
        // cpu: db's 0.2 (200m) and 1; memory: app's 100M (above 64Mi) and db's 1Gi; storage: app's 100Mi and cache's
        // 2Gi. No GPU: the gate holds no extended resource.
        resources: {
          requests: { cpu: '0.2', memory: '100M', 'ephemeral-storage': '100Mi' },
          limits: { cpu: 1, memory: '1Gi', 'ephemeral-storage': '2Gi' },
        },
        securityContext: {
          runAsNonRoot: true,
          runAsUser: 65534,
          runAsGroup: 65534,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        },
      },
    ])
    t.strictSame(
      built.spec?.containers.map((each) => each.name),
      ['db', 'app', 'cache'],
      "the author's containers after it",
    )
    validateChildren([built])
  },
)

t.test(
  "a Restricted container's group: nogroup unless the definition names one, with or without a user; none on the pod",
  async (t) => {
    const contexts = (securityContexts: (Json | undefined)[], profile = 'Restricted') =>
      podChild(
        input({
          ...web,
          security: { profile },
          pod: {
            containers: securityContexts.map((securityContext, index) => ({
              name: `c${index}`,
              image: 'x',
              ...(securityContext ? { securityContext } : {}),
            })),
          },
          expose: { container: 'c0', port: 8080 },
        }),
      ).spec?.containers.map((each) => ({
        runAsUser: each.securityContext?.runAsUser,
        runAsGroup: each.securityContext?.runAsGroup,
      }))
    // No user named: the kubelet passes the image's uid (never its group) to the runtime, so the group must be set.
    t.strictSame(
      contexts([{ runAsUser: 10001 }, { runAsUser: 10002, runAsGroup: 3000 }, undefined, { runAsGroup: 4000 }]),
      [
        { runAsUser: 10001, runAsGroup: 65534 },
        { runAsUser: 10002, runAsGroup: 3000 },
        { runAsUser: undefined, runAsGroup: 65534 },
        { runAsUser: undefined, runAsGroup: 4000 },
      ],
    )
    t.strictSame(
      contexts([{ runAsUser: 0 }], 'Baseline'),
      [{ runAsUser: 0, runAsGroup: undefined }],
      'Baseline leaves the group to the image',
    )
  },
)

t.test('network policies: isolate, expose per exposure type, internet', async (t) => {
  const selector = { matchLabels: { 'challenge-hooks.dev/instance': 'web-u-alice', 'challenge-hooks.dev/uid': UID } }
  const config = testConfig({ ingressNamespace: 'traefik' })
  // docs/api.md, Children: one policy isolates a cold instance and holds its exposure rule.
  t.strictSame(isolatePolicy(input({ ...web, network: { egress: 'None' } }, { config })).spec, {
    podSelector: selector,
    policyTypes: ['Ingress', 'Egress'],
    ingress: [
      { from: [{ podSelector: selector }] },
      {
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'traefik' } } }],
        ports: [{ protocol: 'TCP', port: 8080 }],
      },
    ],
    egress: [{ to: [{ podSelector: selector }] }],
  })
  t.strictSame(
    isolatePolicy(input({ ...web, expose: { type: 'NodePort', port: 1337 } })).spec?.ingress,
    [{ from: [{ podSelector: selector }] }, { ports: [{ protocol: 'TCP', port: 1337 }] }],
    'a NodePort: its own pods, and the port from anywhere',
  )
  t.strictSame(
    isolatePolicy(input({ ...web, expose: { type: 'Internal', port: 1337 } })).spec?.ingress?.[1],
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
    "an Internal instance: the owner's pods, to the port",
  )
  // DNS: the kube-dns pods of kube-system only, never a pod labelled k8s-app=kube-dns in another namespace.
  t.strictSame(isolatePolicy(input(web)).spec?.egress?.[1], {
    to: [
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
        podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
      },
    ],
    ports: [
      { protocol: 'UDP', port: 53 },
      { protocol: 'TCP', port: 53 },
    ],
  })
  const elsewhere = testConfig({
    dns: {
      namespace: 'openshift-dns',
      podSelector: { 'dns.operator.openshift.io/daemonset-dns': 'default' },
      addresses: ['169.254.20.10/32'],
      port: 5353,
    },
  })
  t.strictSame(
    isolatePolicy(input(web, { config: elsewhere })).spec?.egress?.[1],
    {
      to: [
        {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'openshift-dns' } },
          podSelector: { matchLabels: { 'dns.operator.openshift.io/daemonset-dns': 'default' } },
        },
        { ipBlock: { cidr: '169.254.20.10/32' } },
      ],
      ports: [
        { protocol: 'UDP', port: 5353 },
        { protocol: 'TCP', port: 5353 },
      ],
    },
    'DNS elsewhere, on another port, and a node-local cache',
  )
  // A run served from a warm pool: the exposure rule alone, the pool's policy isolating the pod.
  t.strictSame(exposePolicy(input(web, { config })).spec?.ingress, [
    {
      from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'traefik' } } }],
      ports: [{ protocol: 'TCP', port: 8080 }],
    },
  ])
  t.strictSame(exposePolicy(input({ ...web, expose: { type: 'NodePort', port: 1337 } })).spec?.ingress, [
    { ports: [{ protocol: 'TCP', port: 1337 }] },
  ])
  t.strictSame(exposePolicy(input({ ...web, expose: { type: 'LoadBalancer', port: 1337 } })).spec?.ingress, [
    { ports: [{ protocol: 'TCP', port: 1337 }] },
  ])
  // Internal: only pods of the challenges namespace labelled with the owner's kind and id (no namespaceSelector: the
  // policy's own namespace), so neither another player's workstation nor a team of the same id reaches it.
  t.strictSame(exposePolicy(input({ ...web, expose: { type: 'Internal', port: 1337 } })).spec, {
    podSelector: selector,
    policyTypes: ['Ingress'],
    ingress: [
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
  })
  t.strictSame(
    exposePolicy(input({ ...web, expose: { type: 'Internal', port: 1337 } }, { owner: { kind: 'Team', id: 'red-7' } }))
      .spec?.ingress?.[0]?.from,
    [
      {
        podSelector: {
          matchLabels: { 'challenge-hooks.dev/owner': 'red-7', 'challenge-hooks.dev/owner-kind': 'Team' },
        },
      },
    ],
    "a team's instance: the team's pods",
  )
  const internet = internetPolicy(
    input(web, { config: testConfig({ clusterCidrs: ['203.0.113.0/24', '2001:db8::/32'] }) }),
  )
  t.strictSame(internet.spec, {
    podSelector: selector,
    policyTypes: ['Egress'],
    egress: [
      {
        to: [
          {
            ipBlock: {
              cidr: '0.0.0.0/0',
              except: [...NON_PUBLIC_IPV4, '203.0.113.0/24'],
            },
          },
          {
            ipBlock: {
              cidr: '::/0',
              except: [...NON_PUBLIC_IPV6, '2001:db8::/32'],
            },
          },
        ],
      },
    ],
  })
})

t.test('the -internet policy: which addresses an instance can reach, checked address by address', async (t) => {
  const policy = internetPolicy(input(web))
  const blocks = (policy.spec?.egress?.[0]?.to ?? []).map((peer) => peer.ipBlock as { cidr: string; except: string[] })
  /**
   * Allowed: inside a block's cidr and outside all of its exceptions, as the CNI evaluates an ipBlock. A connection
   * to an IPv4-mapped address (`::ffff:a.b.c.d`) leaves the pod as IPv4, to a.b.c.d.
   */
  const reachable = (target: string): boolean => {
    const address = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(target)?.[1] ?? target
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    return blocks.some((block) => {
      const [cidrAddress = '', bits = ''] = block.cidr.split('/')
      if ((isIP(cidrAddress) === 6 ? 'ipv6' : 'ipv4') !== family) return false
      const excluded = new BlockList()
      for (const cidr of block.except) {
        const [network = '', prefix = ''] = cidr.split('/')
        excluded.addSubnet(network, Number(prefix), isIP(network) === 6 ? 'ipv6' : 'ipv4')
      }
      return Number(bits) === 0 && !excluded.check(address, family)
    })
  }
  for (const address of [
    '169.254.169.254', // cloud metadata
    '168.63.129.16', // Azure's platform address (wireserver, DNS, DHCP)
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '100.64.0.1',
    '127.0.0.1',
    '0.0.0.0',
    '224.0.0.251',
    '255.255.255.255',
    '::1',
    'fd00::1',
    'fc00::1',
    'fe80::1',
    'ff02::1',
    '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
    '64:ff9b::a00:1', // NAT64 of 10.0.0.1
    '64:ff9b:1::a00:1', // local-use NAT64
    '::ffff:169.254.169.254',
    '::ffff:10.0.0.1', // IPv4-mapped: sent as IPv4, so the IPv4 exceptions hold
  ]) {
    t.notOk(reachable(address), `${address} is out of reach`)
  }
  for (const address of ['1.1.1.1', '8.8.8.8', '168.63.129.17', '2606:4700:4700::1111', '2001:4860:4860::8888']) {
    t.ok(reachable(address), `${address} (public) is reachable`)
  }
})

t.test('services by exposure type, and which children each variant gets', async (t) => {
  t.strictSame(service(input(web)).spec, {
    type: 'ClusterIP',
    selector: { 'challenge-hooks.dev/instance': 'web-u-alice', 'challenge-hooks.dev/uid': UID },
    ports: [{ name: 'challenge', protocol: 'TCP', port: 8080, targetPort: 8080 }],
  })
  const variants: [string, Json, string[]][] = [
    ['HTTP', web, ['Secret', 'NetworkPolicy', 'Pod', 'Service', 'Ingress']],
    [
      'NodePort + Internet',
      { ...web, expose: { type: 'NodePort', port: 1 }, network: { egress: 'Internet' } },
      ['Secret', 'NetworkPolicy', 'NetworkPolicy', 'Pod', 'Service'],
    ],
    [
      'LoadBalancer',
      { ...web, expose: { type: 'LoadBalancer', port: 1 } },
      ['Secret', 'NetworkPolicy', 'Pod', 'Service'],
    ],
  ]
  for (const [name, spec, kinds] of variants) {
    const children = renderChildren(input(spec))
    t.strictSame(
      children.map((child) => child.kind),
      kinds,
      name,
    )
    validateChildren(children)
    for (const child of children) {
      t.strictSame(child.metadata.labels, LABELS, `${name}: ${child.kind} labels`)
      for (const field of ['status', 'ownerReferences', 'resourceVersion', 'uid']) {
        t.notOk(field in child || field in child.metadata, `${name}: ${child.kind} has no ${field}`)
      }
    }
  }
})
