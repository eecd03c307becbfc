import t from 'tap'
import { lookupDefinition, resolveDefinition } from '../../src/challenge/definition.js'
import { indexObjects } from '../../src/challenge/observed.js'
import { groups, NAMESPACE, webDefinition, type Json } from '../helpers/world.js'

const container = { name: 'web', image: 'ghcr.io/example/web:1' }
const minimal = { pod: { containers: [container] }, expose: { port: 8080 } }

t.test('defaults of the contract fill what the author left out', async (t) => {
  const result = resolveDefinition('web', minimal)
  t.same(result, {
    found: true,
    definition: {
      name: 'web',
      containers: [container],
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
    },
  })
})

t.test('explicit values are kept', async (t) => {
  const result = resolveDefinition('web', {
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
    flag: { mode: 'Static', prefix: 'CTF{', suffix: '}', env: 'SECRET_FLAG', staticSecretRef: { name: 'flag', key: 'value' } },
  })
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
  ['privileged', withContainer({ securityContext: { privileged: true } }), /containers\[0\]\.securityContext\.privileged: is not allowed/],
  ['added capabilities', withContainer({ securityContext: { capabilities: { add: ['NET_ADMIN'] } } }), /securityContext\.capabilities: is not allowed/],
  ['host network', { ...minimal, pod: { containers: [container], hostNetwork: true } }, /spec\.pod\.hostNetwork: is not allowed/],
  ['host PID', { ...minimal, pod: { containers: [container], hostPID: true } }, /spec\.pod\.hostPID: is not allowed/],
  ['hostPath volumes', { ...minimal, pod: { containers: [container], volumes: [{ hostPath: { path: '/' } }] } }, /spec\.pod\.volumes: is not allowed/],
  ['host ports', withContainer({ ports: [{ containerPort: 80, hostPort: 80 }] }), /ports\[0\]\.hostPort: is not allowed/],
  ['env from other Secrets', withContainer({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'other-flag', key: 'flag' } } }] }), /env\[0\]\.valueFrom: is not allowed/],
  ['root under Restricted', withContainer({ securityContext: { runAsUser: 0 } }), /runAsUser: 0 \(root\) is not allowed by the Restricted profile/],
  ['no containers', { ...minimal, pod: { containers: [] } }, /spec\.pod\.containers: Expected array length to be greater or equal to 1/],
  ['nine containers', { ...minimal, pod: { containers: Array.from({ length: 9 }, (_, i) => ({ name: `c${i}`, image: 'x' })) } }, /spec\.pod\.containers: Expected array length to be less or equal to 8/],
  ['missing image', { ...minimal, pod: { containers: [{ name: 'web' }] } }, /containers\[0\]\.image: Expected required property/],
  ['port out of range', { ...minimal, expose: { port: 70000 } }, /spec\.expose\.port: Expected integer to be less or equal to 65535/],
  ['unknown expose type', { ...minimal, expose: { type: 'UDP', port: 1 } }, /spec\.expose\.type/],
  ['duplicate container names', { ...minimal, pod: { containers: [container, container] } }, /the name "web" is used twice/],
  ['exposing a missing container', { ...minimal, expose: { container: 'api', port: 1 } }, /spec\.expose\.container: no container is named "api"/],
  ['the flag variable set by the author', withContainer({ env: [{ name: 'FLAG', value: 'x' }] }), /FLAG is reserved for the flag/],
  ['Static without a Secret', { ...minimal, flag: { mode: 'Static' } }, /spec\.flag\.staticSecretRef: required when flag\.mode is Static/],
  ['a date that is no date', { ...minimal, availableFrom: '2026-13-45T99:99:99Z' }, /spec\.availableFrom: "2026-13-45T99:99:99Z" is not a date-time/],
  ['no spec', undefined, /is invalid: spec: Expected object/],
  ['a quantity that is none', withContainer({ resources: { limits: { cpu: 'lots' } } }), /resources\.limits\.cpu/],
  ['a negative quantity', withContainer({ resources: { requests: { memory: -1 } } }), /resources\.requests\.memory/],
  ['a probe handler that is no object', withContainer({ readinessProbe: { exec: 'rm -rf /' } }), /readinessProbe\.exec: Expected object/],
  ['an unknown probe field', withContainer({ readinessProbe: { tcpSocket: { port: 80 }, magic: true } }), /readinessProbe\.magic: is not allowed/],
  ['a port name the API refuses', withContainer({ ports: [{ containerPort: 80, name: 'HTTP_PORT' }] }), /ports\[0\]\.name/],
  // The kubelet connects to a probe's host from the node's network: metadata, node services, other players' pods.
  ['an httpGet probe with a host', withContainer({ readinessProbe: { httpGet: { port: 80, host: '169.254.169.254' } } }), /containers\[0\]\.readinessProbe\.httpGet\.host: is not allowed/],
  ['a tcpSocket probe with a host', withContainer({ readinessProbe: { tcpSocket: { port: 6443, host: '10.0.0.1' } } }), /containers\[0\]\.readinessProbe\.tcpSocket\.host: is not allowed/],
  ['a lifecycle handler (with a host)', withContainer({ lifecycle: { postStart: { httpGet: { port: 80, host: '10.96.0.1' } } } }), /containers\[0\]\.lifecycle: is not allowed/],
  ['a preStop handler', withContainer({ lifecycle: { preStop: { tcpSocket: { port: 80, host: 'node.local' } } } }), /containers\[0\]\.lifecycle: is not allowed/],
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

t.test('valid quantities and probes pass', async (t) => {
  const spec = withContainer({
    resources: { requests: { cpu: '250m', memory: '64Mi', 'ephemeral-storage': '1G' }, limits: { cpu: 1.5, 'nvidia.com/gpu': '1' } },
    readinessProbe: { httpGet: { path: '/', port: 'http', scheme: 'HTTP', httpHeaders: [{ name: 'X', value: 'y' }] }, periodSeconds: 5, successThreshold: 2 },
    ports: [{ containerPort: 8080, name: 'http' }],
  })
  t.equal(resolveDefinition('web', spec).found, true)
  for (const probe of [{ exec: { command: ['true'] } }, { tcpSocket: { port: 8080 } }, { grpc: { port: 9000 } }]) {
    t.equal(resolveDefinition('web', withContainer({ readinessProbe: probe })).found, true, String(Object.keys(probe)[0]))
  }
})

t.test('Baseline allows running as root, nothing more', async (t) => {
  const spec = { ...withContainer({ securityContext: { runAsUser: 0 } }), security: { profile: 'Baseline' } }
  t.equal(resolveDefinition('web', spec).found, true)
  const privileged = { ...withContainer({ securityContext: { privileged: true } }), security: { profile: 'Baseline' } }
  t.equal(resolveDefinition('web', privileged).found, false)
})

t.test('lookup by name among related objects', async (t) => {
  const related = indexObjects(groups([webDefinition()]), NAMESPACE)
  t.equal(lookupDefinition(related, 'web-login').found, true)
  t.same(lookupDefinition(related, 'other'), {
    found: false,
    reason: 'DefinitionNotFound',
    message: 'ChallengeDefinition "other" does not exist in this namespace.',
  })
})
