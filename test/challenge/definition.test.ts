import t from 'tap'
import { lookupDefinition, resolveDefinition } from '../../src/challenge/definition.js'
import { indexObjects } from '../../src/challenge/observed.js'
import { groups, NAMESPACE, webDefinition, type Json } from '../helpers/world.js'

const container = { name: 'web', image: 'ghcr.io/example/web:1' }
const minimal = { pod: { containers: [container] }, expose: { port: 8080 } }

t.test('defaults of the contract fill what the author left out', async (t) => {
  const result = resolveDefinition('web', minimal)
  t.strictSame(result, {
    found: true,
    definition: {
      name: 'web',
      containers: [container],
      imagePullSecrets: [],
      expose: { type: 'HTTP', container: 'web', port: 8080 },
      lifetimeSeconds: 1800,
      startupTimeoutSeconds: 300,
      maxRenewals: 2,
      cost: 1,
      availableFrom: undefined,
      availableUntil: undefined,
      egress: 'DNS',
      profile: 'Restricted',
      runtimeClassName: undefined,
      flag: { mode: 'PerOwner', prefix: 'flag{', suffix: '}', env: 'FLAG', staticSecretRef: undefined },
      pool: undefined,
      prepull: 'Off',
    },
  })
})

t.test('explicit values are kept', async (t) => {
  const result = resolveDefinition(
    'web',
    {
      ...minimal,
      expose: { type: 'NodePort', container: 'web', port: 1337 },
      lifetimeSeconds: 600,
      startupTimeoutSeconds: 60,
      maxRenewals: 0,
      cost: 2,
      availableFrom: '2026-11-22T10:00:00Z',
      availableUntil: '2026-11-23T10:00:00Z',
      network: { egress: 'Internet' },
      security: { profile: 'Baseline', runtimeClassName: 'gvisor' },
      flag: {
        mode: 'Static',
        prefix: 'CTF{',
        suffix: '}',
        env: 'SECRET_FLAG',
        staticSecretRef: { name: 'flag', key: 'value' },
      },
    },
    { extendedResources: [], runtimeClasses: ['gvisor'] },
  )
  t.ok(result.found)
  if (!result.found) return
  t.match(result.definition, {
    expose: { type: 'NodePort', port: 1337 },
    lifetimeSeconds: 600,
    cost: 2,
    availableFrom: Date.parse('2026-11-22T10:00:00Z'),
    availableUntil: Date.parse('2026-11-23T10:00:00Z'),
    egress: 'Internet',
    profile: 'Baseline',
    runtimeClassName: 'gvisor',
    flag: { mode: 'Static', prefix: 'CTF{', env: 'SECRET_FLAG', staticSecretRef: { name: 'flag', key: 'value' } },
  })
})

const withContainer = (extra: Json): Json => ({ ...minimal, pod: { containers: [{ ...container, ...extra }] } })

const refused: [string, unknown, RegExp][] = [
  [
    'privileged',
    withContainer({ securityContext: { privileged: true } }),
    /containers\[0\]\.securityContext\.privileged: is not allowed/,
  ],
  [
    'added capabilities',
    withContainer({ securityContext: { capabilities: { add: ['NET_ADMIN'] } } }),
    /securityContext\.capabilities: is not allowed/,
  ],
  [
    'host network',
    { ...minimal, pod: { containers: [container], hostNetwork: true } },
    /spec\.pod\.hostNetwork: is not allowed/,
  ],
  ['host PID', { ...minimal, pod: { containers: [container], hostPID: true } }, /spec\.pod\.hostPID: is not allowed/],
  [
    'hostPath volumes',
    { ...minimal, pod: { containers: [container], volumes: [{ hostPath: { path: '/' } }] } },
    /spec\.pod\.volumes: is not allowed/,
  ],
  [
    'host ports',
    withContainer({ ports: [{ containerPort: 80, hostPort: 80 }] }),
    /ports\[0\]\.hostPort: is not allowed/,
  ],
  [
    'a variable with a field a variable does not have',
    withContainer({ env: [{ name: 'MODE', value: 'easy', fieldPath: 'metadata.name' }] }),
    /containers\[0\]\.env\[0\]\.fieldPath: is not allowed/,
  ],
  // A Secret a variable reads: never an instance's flag Secret, never another source than a Secret, one source.
  [
    "env from an instance's flag Secret",
    withContainer({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'web-u-bob-flag', key: 'flag' } } }] }),
    /^ChallengeDefinition "web" is invalid: spec\.pod\.containers\[0\]\.env\[0\]\.valueFrom\.secretKeyRef\.name: a name ending in -flag is reserved for the instances' own flag Secrets\.$/,
  ],
  [
    'env from a ConfigMap',
    withContainer({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'settings', key: 'x' } } }] }),
    /spec\.pod\.containers\[0\]\.env\[0\]\.valueFrom\.configMapKeyRef: is not allowed/,
  ],
  [
    "env from the pod's own fields",
    withContainer({ env: [{ name: 'X', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }] }),
    /spec\.pod\.containers\[0\]\.env\[0\]\.valueFrom\.fieldRef: is not allowed/,
  ],
  [
    'env from resources',
    withContainer({ env: [{ name: 'X', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } }] }),
    /spec\.pod\.containers\[0\]\.env\[0\]\.valueFrom\.resourceFieldRef: is not allowed/,
  ],
  [
    'a valueFrom with no source',
    withContainer({ env: [{ name: 'X', valueFrom: {} }] }),
    /^ChallengeDefinition "web" is invalid: spec\.pod\.containers\[0\]\.env\[0\]\.valueFrom: needs secretKeyRef, the only source allowed\.$/,
  ],
  [
    'an optional Secret key (the container would start without it, in silence)',
    withContainer({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'a-x', key: 'k', optional: true } } }] }),
    /spec\.pod\.containers\[0\]\.env\[0\]\.valueFrom\.secretKeyRef\.optional: is not allowed/,
  ],
  [
    'a value and a Secret for one variable',
    withContainer({ env: [{ name: 'X', value: 'v', valueFrom: { secretKeyRef: { name: 'a-x', key: 'k' } } }] }),
    /^ChallengeDefinition "web" is invalid: spec\.pod\.containers\[0\]\.env\[0\]: X has both value and valueFrom; give one\.$/,
  ],
  [
    'a Secret reference that is no DNS name',
    withContainer({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'Alice_Secret', key: 'k' } } }] }),
    /spec\.pod\.containers\[0\]\.env\[0\]\.valueFrom\.secretKeyRef\.name/,
  ],
  [
    'one pull Secret named twice',
    { ...minimal, pod: { containers: [container], imagePullSecrets: [{ name: 'pull' }, { name: 'pull' }] } },
    /^ChallengeDefinition "web" is invalid: spec\.pod\.imagePullSecrets: the Secret "pull" is named twice\.$/,
  ],
  [
    'nine pull Secrets',
    {
      ...minimal,
      pod: { containers: [container], imagePullSecrets: Array.from({ length: 9 }, (_, i) => ({ name: `p${i}` })) },
    },
    /spec\.pod\.imagePullSecrets: Expected array length to be less or equal to 8/,
  ],
  [
    'a pull Secret with more than a name',
    { ...minimal, pod: { containers: [container], imagePullSecrets: [{ name: 'pull', namespace: 'other' }] } },
    /spec\.pod\.imagePullSecrets\[0\]\.namespace: is not allowed/,
  ],
  [
    'root under Restricted',
    withContainer({ securityContext: { runAsUser: 0 } }),
    /runAsUser: 0 \(root\) is not allowed by the Restricted profile/,
  ],
  [
    "root's group under Restricted",
    withContainer({ securityContext: { runAsUser: 1000, runAsGroup: 0 } }),
    /^ChallengeDefinition "web" is invalid: spec\.pod\.containers\[0\]\.securityContext\.runAsGroup: 0 \(root's group\) is not allowed by the Restricted profile; use another group or security\.profile Baseline\.$/,
  ],
  [
    "root's group under Restricted, without a user",
    { ...minimal, pod: { containers: [container, { name: 'side', image: 'x', securityContext: { runAsGroup: 0 } }] } },
    /spec\.pod\.containers\[1\]\.securityContext\.runAsGroup: 0 \(root's group\)/,
  ],
  [
    'a pod-level group',
    { ...minimal, pod: { containers: [container], securityContext: { fsGroup: 0 } } },
    /spec\.pod\.securityContext: is not allowed/,
  ],
  [
    'pod-level supplementary groups',
    { ...minimal, pod: { containers: [container], securityContext: { supplementalGroups: [0] } } },
    /spec\.pod\.securityContext: is not allowed/,
  ],
  [
    'no containers',
    { ...minimal, pod: { containers: [] } },
    /spec\.pod\.containers: Expected array length to be greater or equal to 1/,
  ],
  [
    'nine containers',
    { ...minimal, pod: { containers: Array.from({ length: 9 }, (_, i) => ({ name: `c${i}`, image: 'x' })) } },
    /spec\.pod\.containers: Expected array length to be less or equal to 8/,
  ],
  [
    'missing image',
    { ...minimal, pod: { containers: [{ name: 'web' }] } },
    /containers\[0\]\.image: Expected required property/,
  ],
  [
    'port out of range',
    { ...minimal, expose: { port: 70000 } },
    /spec\.expose\.port: Expected integer to be less or equal to 65535/,
  ],
  ['unknown expose type', { ...minimal, expose: { type: 'UDP', port: 1 } }, /spec\.expose\.type/],
  [
    'duplicate container names',
    { ...minimal, pod: { containers: [container, container] } },
    /the name "web" is used twice/,
  ],
  [
    "a container named like the pod's isolation gate",
    { ...minimal, pod: { containers: [container, { name: 'isolation-gate', image: 'x' }] } },
    /^ChallengeDefinition "web" is invalid: spec\.pod\.containers\[1\]\.name: isolation-gate is the name of the isolation gate, the pod's init container; rename the container\.$/,
  ],
  [
    'exposing a missing container',
    { ...minimal, expose: { container: 'api', port: 1 } },
    /spec\.expose\.container: no container is named "api"/,
  ],
  [
    'the flag variable set by the author',
    withContainer({ env: [{ name: 'FLAG', value: 'x' }] }),
    /FLAG is reserved for the flag/,
  ],
  [
    'Static without a Secret',
    { ...minimal, flag: { mode: 'Static' } },
    /spec\.flag\.staticSecretRef: required when flag\.mode is Static/,
  ],
  [
    'a date that is no date',
    { ...minimal, availableFrom: '2026-13-45T09:09:09Z' },
    /spec\.availableFrom: "2026-13-45T09:09:09Z" is not a date-time/,
  ],
  ['no spec', undefined, /is invalid: spec: Expected object/],
  ['a quantity that is none', withContainer({ resources: { limits: { cpu: 'lots' } } }), /resources\.limits\.cpu/],
  ['a negative quantity', withContainer({ resources: { requests: { memory: -1 } } }), /resources\.requests\.memory/],
  [
    'a probe handler that is no object',
    withContainer({ readinessProbe: { exec: 'rm -rf /' } }),
    /readinessProbe\.exec: Expected object/,
  ],
  [
    'an unknown probe field',
    withContainer({ readinessProbe: { tcpSocket: { port: 80 }, magic: true } }),
    /readinessProbe\.magic: is not allowed/,
  ],
  [
    'a port name the API refuses',
    withContainer({ ports: [{ containerPort: 80, name: 'HTTP_PORT' }] }),
    /ports\[0\]\.name/,
  ],
  // The kubelet connects to a probe's host from the node's network: metadata, node services, other players' pods.
  [
    'an httpGet probe with a host',
    withContainer({ readinessProbe: { httpGet: { port: 80, host: '169.254.169.254' } } }),
    /containers\[0\]\.readinessProbe\.httpGet\.host: is not allowed/,
  ],
  [
    'a tcpSocket probe with a host',
    withContainer({ readinessProbe: { tcpSocket: { port: 6443, host: '10.0.0.1' } } }),
    /containers\[0\]\.readinessProbe\.tcpSocket\.host: is not allowed/,
  ],
  // What the API server would refuse: the pod would never be created and the player would see a bare StartupTimeout.
  [
    'a request above the default limit',
    withContainer({ resources: { requests: { memory: '1Gi' } } }),
    /^ChallengeDefinition "web" is invalid: spec\.pod\.containers\[0\]\.resources\.requests\.memory: 1Gi is above its limit 256Mi \(the default, as limits\.memory is unset\)\.$/,
  ],
  [
    'a request above its own limit',
    withContainer({ resources: { requests: { cpu: 2 }, limits: { cpu: '1500m' } } }),
    /resources\.requests\.cpu: 2 is above its limit 1500m\.$/,
  ],
  [
    'a cpu limit of "0"',
    withContainer({ resources: { limits: { cpu: '0' } } }),
    /containers\[0\]\.resources\.limits\.cpu: must be above 0/,
  ],
  [
    'a memory limit of 0',
    withContainer({ resources: { requests: { memory: 0 }, limits: { memory: 0 } } }),
    /resources\.limits\.memory: must be above 0/,
  ],
  [
    // The CRD holds a quantity as a whole number or a string (x-kubernetes-int-or-string): '1.5' is written so.
    'a fractional number as a quantity',
    withContainer({ resources: { limits: { cpu: 1.5 } } }),
    /^ChallengeDefinition "web" is invalid: spec\.pod\.containers\[0\]\.resources\.limits\.cpu: Expected union value\.$/,
  ],
  [
    'a quantity out of range',
    withContainer({ resources: { limits: { memory: '1e999' } } }),
    /resources\.limits\.memory: "1e999" is not a quantity/,
  ],
  [
    'a probe with two handlers',
    withContainer({ readinessProbe: { tcpSocket: { port: 80 }, exec: { command: ['true'] } } }),
    /containers\[0\]\.readinessProbe: needs exactly one handler of exec, httpGet, tcpSocket, grpc, got exec, tcpSocket/,
  ],
  [
    'a probe with no handler',
    withContainer({ readinessProbe: { periodSeconds: 5 } }),
    /readinessProbe: needs exactly one handler of exec, httpGet, tcpSocket, grpc, got none/,
  ],
  [
    'two ports of one name',
    withContainer({
      ports: [
        { containerPort: 80, name: 'http' },
        { containerPort: 81, name: 'http' },
      ],
    }),
    /containers\[0\]\.ports: the name "http" is used twice/,
  ],
  [
    'an extended resource the operator did not allow',
    withContainer({ resources: { limits: { 'nvidia.com/gpu': '1' } } }),
    /resources\.limits\.nvidia\.com\/gpu: the resource nvidia\.com\/gpu is not allowed here \(the operator allows extended resources with ALLOWED_EXTENDED_RESOURCES\)/,
  ],
  // Keys that name a prototype are plain data to the parser; the definition that carries them is refused, alone.
  [
    'a __proto__ key',
    JSON.parse(
      '{"pod":{"containers":[{"name":"web","image":"x"}],"__proto__":{"hostNetwork":true}},"expose":{"port":80}}',
    ),
    /is invalid: spec\.pod\.__proto__: the key is refused \(it names an object prototype\)\.$/,
  ],
  [
    'a constructor.prototype key',
    { ...minimal, notes: [{ constructor: { prototype: { polluted: true } } }] },
    /spec\.notes\[0\]\.constructor\.prototype: the key is refused/,
  ],
  [
    'a lifecycle handler (with a host)',
    withContainer({ lifecycle: { postStart: { httpGet: { port: 80, host: '10.96.0.1' } } } }),
    /containers\[0\]\.lifecycle: is not allowed/,
  ],
  [
    'a preStop handler',
    withContainer({ lifecycle: { preStop: { tcpSocket: { port: 80, host: 'node.local' } } } }),
    /containers\[0\]\.lifecycle: is not allowed/,
  ],
  // Every instance's flag Secret is <instance>-flag: a Static Secret named so could be an instance's own name.
  [
    'a Static flag Secret named like an instance flag Secret',
    { ...minimal, flag: { mode: 'Static', staticSecretRef: { name: 'web-login-flag', key: 'flag' } } },
    /^ChallengeDefinition "web" is invalid: spec\.flag\.staticSecretRef\.name: a name ending in -flag is reserved for the instances' own flag Secrets; rename the Secret\.$/,
  ],
  [
    'a RuntimeClass the operator did not allow',
    { ...minimal, security: { runtimeClassName: 'runc-unsandboxed' } },
    /^ChallengeDefinition "web" is invalid: spec\.security\.runtimeClassName: the RuntimeClass runc-unsandboxed is not one the operator allows \(none is allowed; ALLOWED_RUNTIME_CLASSES\)\.$/,
  ],
  // Author text in a message a player may read is quoted, never markup.
  [
    'a field name that is markup',
    { ...minimal, pod: { containers: [container], '<img src=x onerror=alert(1)>': true } },
    /^ChallengeDefinition "web" is invalid: spec\.pod\["\\u003cimg src=x onerror=alert\(1\)\\u003e"\]: is not allowed\.$/,
  ],
  [
    'an exposed container name that is markup',
    { ...minimal, expose: { container: '<b>x</b>', port: 1 } },
    /^ChallengeDefinition "web" is invalid: spec\.expose\.container: no container is named "\\u003cb\\u003ex\\u003c\/b\\u003e"\.$/,
  ],
  [
    'a date-time the schema refuses, in words',
    { ...minimal, availableUntil: 'tomorrow' },
    /spec\.availableUntil: is not a date-time \(RFC 3339, such as 2026-11-27T18:00:00Z\)\.$/,
  ],
]

t.test('a definition asking for what the profile forbids is refused, naming the field', async (t) => {
  for (const [what, spec, message] of refused) {
    const result = resolveDefinition('web', spec)
    t.equal(result.found, false, what)
    if (!result.found) {
      t.equal(result.reason, 'DefinitionInvalid', what)
      t.match(result.message, message, what)
    }
  }
})

t.test("pull Secrets and the author's Secrets are kept as written", async (t) => {
  const spec = {
    ...minimal,
    pod: {
      containers: [
        {
          ...container,
          env: [
            { name: 'ADMIN_PASSWORD', valueFrom: { secretKeyRef: { name: 'alice-web', key: 'admin-password' } } },
            { name: 'MODE', value: 'hard' },
          ],
        },
      ],
      imagePullSecrets: [{ name: 'alice-pull' }, { name: 'shared-pull' }],
    },
  }
  const result = resolveDefinition('web', spec)
  t.strictSame(result.found ? [result.definition.imagePullSecrets, result.definition.containers] : result, [
    ['alice-pull', 'shared-pull'],
    spec.pod.containers,
  ])
})

t.test('valid quantities and probes pass', async (t) => {
  const spec = withContainer({
    resources: {
      requests: { cpu: '250m', memory: '64Mi', 'ephemeral-storage': '100Mi' },
      limits: { cpu: '1.5', 'nvidia.com/gpu': 1 },
    },
    readinessProbe: {
      httpGet: { path: '/', port: 'http', scheme: 'HTTP', httpHeaders: [{ name: 'X', value: 'y' }] },
      periodSeconds: 5,
      successThreshold: 2,
    },
    ports: [{ containerPort: 8080, name: 'http' }],
  })
  t.equal(
    resolveDefinition('web', spec, { extendedResources: ['nvidia.com/gpu'], runtimeClasses: [] }).found,
    true,
    'an extended resource the operator allows',
  )
  t.equal(resolveDefinition('web', spec).found, false, 'the same, not allowed')
  const equalWrittenApart = withContainer({
    resources: { requests: { cpu: '0.5', memory: '1Gi' }, limits: { cpu: '500m', memory: '1024Mi' } },
  })
  t.equal(resolveDefinition('web', equalWrittenApart).found, true, 'a request equal to its limit, written another way')
  const guaranteed = withContainer({
    resources: { requests: { cpu: '1', memory: '1G' }, limits: { cpu: 1, memory: '1e9' } },
  })
  t.equal(resolveDefinition('web', guaranteed).found, true, 'requests equal to limits')
  const gpu = (resources: Json) =>
    resolveDefinition('web', withContainer({ resources }), {
      extendedResources: ['nvidia.com/gpu'],
      runtimeClasses: [],
    })
  t.match(gpu({ requests: { 'nvidia.com/gpu': 1 } }), {
    found: false,
    message: /resources\.limits\.nvidia\.com\/gpu: required beside requests\.nvidia\.com\/gpu/,
  })
  t.match(gpu({ requests: { 'nvidia.com/gpu': 1 }, limits: { 'nvidia.com/gpu': 2 } }), {
    found: false,
    message: /resources\.requests\.nvidia\.com\/gpu: must equal its limit \(2\)/,
  })
  t.hasStrict(gpu({ requests: { 'nvidia.com/gpu': 2 }, limits: { 'nvidia.com/gpu': '2' } }), { found: true })
  for (const probe of [{ exec: { command: ['true'] } }, { tcpSocket: { port: 8080 } }, { grpc: { port: 9000 } }]) {
    t.equal(
      resolveDefinition('web', withContainer({ readinessProbe: probe })).found,
      true,
      String(Object.keys(probe)[0]),
    )
  }
})

t.test('Baseline allows running as root, nothing more', async (t) => {
  const spec = { ...withContainer({ securityContext: { runAsUser: 0 } }), security: { profile: 'Baseline' } }
  t.equal(resolveDefinition('web', spec).found, true)
  const group = { ...withContainer({ securityContext: { runAsGroup: 0 } }), security: { profile: 'Baseline' } }
  t.equal(resolveDefinition('web', group).found, true, "root's group too")
  const privileged = { ...withContainer({ securityContext: { privileged: true } }), security: { profile: 'Baseline' } }
  t.equal(resolveDefinition('web', privileged).found, false)
})

t.test('RuntimeClasses: only those the operator names', async (t) => {
  const spec = { ...minimal, security: { runtimeClassName: 'gvisor' } }
  t.equal(
    resolveDefinition('web', spec, { extendedResources: [], runtimeClasses: ['gvisor', 'kata'] }).found,
    true,
    'allowed',
  )
  t.match(resolveDefinition('web', spec, { extendedResources: [], runtimeClasses: ['kata'] }), {
    found: false,
    message: /the RuntimeClass gvisor is not one the operator allows \(allowed: kata; ALLOWED_RUNTIME_CLASSES\)/,
  })
})

t.test('a refused RuntimeClass: the message lists every allowed one, comma-separated', async (t) => {
  const spec = { ...minimal, security: { runtimeClassName: 'runc' } }
  t.strictSame(resolveDefinition('web', spec, { extendedResources: [], runtimeClasses: ['gvisor', 'kata'] }), {
    found: false,
    reason: 'DefinitionInvalid',
    message:
      'ChallengeDefinition "web" is invalid: spec.security.runtimeClassName: the RuntimeClass runc is not one the operator allows (allowed: gvisor, kata; ALLOWED_RUNTIME_CLASSES).',
  })
})

t.test('lookup by name among related objects', async (t) => {
  const related = indexObjects(groups([webDefinition()]), NAMESPACE)
  t.equal(lookupDefinition(related, 'web-login').found, true)
  t.strictSame(lookupDefinition(related, 'other'), {
    found: false,
    reason: 'DefinitionNotFound',
    message: 'ChallengeDefinition "other" does not exist in this namespace.',
  })
})

t.test("cost holds what an instance may use: its containers' limits, at most one COST_UNIT per unit", async (t) => {
  // The default unit is cpu 2, memory 2Gi, ephemeral-storage 2Gi; a container that sets no limit has 500m, 256Mi, 256Mi.
  const containers = (count: number, limits: Json = {}) =>
    Array.from({ length: count }, (_, i) => ({ name: `c${i}`, image: 'x', resources: { limits } }))
  const spec = (cost: number | undefined, list: Json[]) => ({
    ...minimal,
    ...(cost === undefined ? {} : { cost }),
    pod: { containers: list },
    expose: { port: 8080, container: 'c0' },
  })
  const refusal = (result: ReturnType<typeof resolveDefinition>) => (result.found ? 'accepted' : result.message)
  const rows: [string, Json, string, Parameters<typeof resolveDefinition>[2]?][] = [
    [
      'cost 0 with the largest limits (8 containers of 2 cpu and 2Gi): refused',
      spec(0, containers(8, { cpu: '2', memory: '2Gi', 'ephemeral-storage': '2Gi' })),
      'ChallengeDefinition "web" is invalid: spec.cost: the cpu limits of all containers add up to 16, above the 2 that cost 0 may hold (2 per unit, COST_UNIT; one unit when the cost is 0); raise spec.cost to 8 or lower the limits.',
    ],
    ['the same at cost 8', spec(8, containers(8, { cpu: '2', memory: '2Gi', 'ephemeral-storage': '2Gi' })), 'accepted'],
    ['cost 0: four containers of the defaults fill one unit', spec(0, containers(4)), 'accepted'],
    [
      'cost 0: a fifth is one too many',
      spec(0, containers(5)),
      'ChallengeDefinition "web" is invalid: spec.cost: the cpu limits of all containers add up to 2500m, above the 2 that cost 0 may hold (2 per unit, COST_UNIT; one unit when the cost is 0); raise spec.cost to 2 or lower the limits.',
    ],
    ['the default cost (1): one container of the defaults', spec(undefined, containers(1)), 'accepted'],
    [
      'the default cost: memory one Mi above the unit, the limits written apart',
      spec(undefined, [
        { name: 'c0', image: 'x', resources: { limits: { memory: '1Gi' } } },
        { name: 'c1', image: 'x', resources: { limits: { memory: '1025Mi' } } },
      ]),
      'ChallengeDefinition "web" is invalid: spec.cost: the memory limits of all containers add up to 2049Mi, above the 2Gi that cost 1 may hold (2Gi per unit, COST_UNIT; one unit when the cost is 0); raise spec.cost to 2 or lower the limits.',
    ],
    [
      'ephemeral storage counts too, in bytes',
      spec(1, containers(1, { 'ephemeral-storage': '2147483649' })),
      'ChallengeDefinition "web" is invalid: spec.cost: the ephemeral-storage limits of all containers add up to 2147483649, above the 2Gi that cost 1 may hold (2Gi per unit, COST_UNIT; one unit when the cost is 0); raise spec.cost to 2 or lower the limits.',
    ],
    [
      "the operator's unit",
      spec(3, containers(2, { cpu: '700m' })),
      'ChallengeDefinition "web" is invalid: spec.cost: the cpu limits of all containers add up to 1400m, above the 750m that cost 3 may hold (250m per unit, COST_UNIT; one unit when the cost is 0); raise spec.cost to 6 or lower the limits.',
      {
        extendedResources: [],
        runtimeClasses: [],
        costUnit: { cpu: '250m', memory: '1Gi', 'ephemeral-storage': '1Gi' },
      },
    ],
    [
      'three tenths of a core are three units of a tenth, though the floats add up to a hair more',
      spec(1, containers(3, { cpu: '100m' })),
      'ChallengeDefinition "web" is invalid: spec.cost: the cpu limits of all containers add up to 300m, above the 100m that cost 1 may hold (100m per unit, COST_UNIT; one unit when the cost is 0); raise spec.cost to 3 or lower the limits.',
      {
        extendedResources: [],
        runtimeClasses: [],
        costUnit: { cpu: '100m', memory: '1Gi', 'ephemeral-storage': '1Gi' },
      },
    ],
    [
      'kibibytes',
      spec(1, [{ name: 'c0', image: 'x', resources: { requests: { memory: '1Ki' }, limits: { memory: '1025Ki' } } }]),
      'ChallengeDefinition "web" is invalid: spec.cost: the memory limits of all containers add up to 1025Ki, above the 1Mi that cost 1 may hold (1Mi per unit, COST_UNIT; one unit when the cost is 0); raise spec.cost to 2 or lower the limits.',
      { extendedResources: [], runtimeClasses: [], costUnit: { cpu: '1', memory: '1Mi', 'ephemeral-storage': '1Gi' } },
    ],
    [
      'exactly what the largest cost holds: raise the cost to 100',
      spec(99, containers(1, { cpu: '100m' })),
      'ChallengeDefinition "web" is invalid: spec.cost: the cpu limits of all containers add up to 100m, above the 99m that cost 99 may hold (1m per unit, COST_UNIT; one unit when the cost is 0); raise spec.cost to 100 or lower the limits.',
      { extendedResources: [], runtimeClasses: [], costUnit: { cpu: '1m', memory: '1Gi', 'ephemeral-storage': '1Gi' } },
    ],
    [
      'more than the largest cost could hold: only lower limits help',
      spec(100, containers(1)),
      'ChallengeDefinition "web" is invalid: spec.cost: the cpu limits of all containers add up to 500m, above the 100m that cost 100 may hold (1m per unit, COST_UNIT; one unit when the cost is 0); lower the limits.',
      { extendedResources: [], runtimeClasses: [], costUnit: { cpu: '1m', memory: '1Gi', 'ephemeral-storage': '1Gi' } },
    ],
  ]
  for (const [what, definition, expected, policy] of rows)
    t.equal(refusal(resolveDefinition('web', definition, policy)), expected, what)
})
