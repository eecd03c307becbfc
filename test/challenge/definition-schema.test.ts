// A ChallengeDefinition's spec as the contract writes it (src/contract/api.ts, DefinitionSpecSchema; definition.ts
// checks every definition against it with the hooks' validator, src/contract/validator.ts), one row per rule: valid specs, then specs that each
// break one rule. The CRD in manifests/ carries the same rules for the API server.
import t from 'tap'
import { compileSchema } from '../../src/contract/validator.js'
import { Bounds, DefinitionSpecSchema } from '../../src/contract/api.js'

type Json = Record<string, unknown>
const check = compileSchema(DefinitionSpecSchema)
const web = { name: 'web', image: 'web:1' }
const base = { pod: { containers: [web] }, expose: { type: 'HTTP', port: 80 } }
const spec = (changes: Json) => ({ ...base, ...changes })
const withContainer = (changes: Json) => spec({ pod: { containers: [{ ...web, ...changes }] } })
const withProbe = (probe: Json) => withContainer({ readinessProbe: probe })
const withResources = (requests: Json) => withContainer({ resources: { requests } })
const many = <T>(count: number, make: (i: number) => T): T[] => Array.from({ length: count }, (_, i) => make(i))
const x = (length: number) => 'x'.repeat(length)

t.test('DefinitionSpecSchema: what a definition may say', async (t) => {
  const rows: [string, Json][] = [
    ['the least spec', base],
    ['a field this release does not know, kept', spec({ futureField: 1 })],
    ['a uid and group to run as', withContainer({ securityContext: { runAsUser: 1000, runAsGroup: 0 } })],
    ...['TCP', 'UDP', 'SCTP'].map((protocol): [string, Json] => [
      `a ${protocol} port`,
      withContainer({ ports: [{ containerPort: 53, protocol }] }),
    ]),
    ['resources of one-letter and dotted names', withResources({ x: '1', 'example.com/gpu': 1 })],
    ['a probe on a named port', withProbe({ tcpSocket: { port: 'http' } })],
    [
      'an HTTPS probe with headers',
      withProbe({ httpGet: { path: '/', port: 80, scheme: 'HTTPS', httpHeaders: [{ name: 'X', value: 'y' }] } }),
    ],
    ['an HTTP probe', withProbe({ httpGet: { port: 80, scheme: 'HTTP' } })],
    ['a gRPC probe', withProbe({ grpc: { port: 9000, service: x(253) } })],
    ['an exec probe', withProbe({ exec: { command: many(Bounds.probeCommandItems, () => 'x') } })],
    ['Internet egress', spec({ network: { egress: 'Internet' } })],
    ['DNS egress', spec({ network: { egress: 'DNS' } })],
    ['a Baseline profile', spec({ security: { profile: 'Baseline', runtimeClassName: 'gvisor' } })],
    ['a Restricted profile', spec({ security: { profile: 'Restricted' } })],
    [
      'a Static flag',
      spec({
        flag: {
          mode: 'Static',
          prefix: x(64),
          suffix: x(64),
          env: 'CTF_FLAG',
          staticSecretRef: { name: x(253), key: x(253) },
        },
      }),
    ],
    ['a PerInstance flag', spec({ flag: { mode: 'PerInstance' } })],
    ['every exposure type', spec({ expose: { type: 'TLS', port: 1337, container: x(63) } })],
    // As the API server counts: characters, not UTF-16 units (each of these is two).
    ['a displayName of 128 characters outside the BMP', spec({ displayName: '🚩'.repeat(128) })],
  ]
  for (const [what, value] of rows) t.ok(check(value), what, { errors: check.errors })
})

t.test('DefinitionSpecSchema: each rule refuses', async (t) => {
  const rows: [string, Json][] = [
    ['a container name with capitals', withContainer({ name: 'Web' })],
    ['a container name with an underscore', withContainer({ name: 'web_1' })],
    ['an empty image', withContainer({ image: '' })],
    ['an image of 513 characters', withContainer({ image: x(513) })],
    ['a command item past its bound', withContainer({ command: [x(Bounds.text + 1)] })],
    ['one command item too many', withContainer({ command: many(Bounds.commandItems + 1, () => 'x') })],
    ['an args item past its bound', withContainer({ args: [x(Bounds.text + 1)] })],
    ['one args item too many', withContainer({ args: many(Bounds.argsItems + 1, () => 'x') })],
    [
      'one env variable too many',
      withContainer({ env: many(Bounds.envItems + 1, (i) => ({ name: `V${i}`, value: '' })) }),
    ],
    ['an env name that is no variable name', withContainer({ env: [{ name: 'not-a-name', value: '' }] })],
    ['an env value past its bound', withContainer({ env: [{ name: 'V', value: x(Bounds.text + 1) }] })],
    ['one port too many', withContainer({ ports: many(Bounds.ports + 1, (i) => ({ containerPort: 1000 + i })) })],
    ['a port protocol outside TCP, UDP, SCTP', withContainer({ ports: [{ containerPort: 80, protocol: 'HTTP' }] })],
    ['a negative uid', withContainer({ securityContext: { runAsUser: -1 } })],
    ['a security setting beyond uid and group', withContainer({ securityContext: { privileged: true } })],
    ['a quantity that does not parse', withResources({ cpu: 'lots' })],
    ['a quantity of 65 characters', withResources({ cpu: '1'.repeat(65) })],
    ['a negative number', withResources({ cpu: -1 })],
    ['a resource name starting with a capital', withResources({ Xcpu: '1' })],
    ['a resource name ending with a dash', withResources({ 'cpu-': '1' })],
    ['a resource name of 254 characters', withResources({ [`a${x(253)}`]: '1' })],
    [
      'one resource name too many',
      withResources(Object.fromEntries(many(Bounds.resourceNames + 1, (i): [string, string] => [`r${i}`, '1']))),
    ],
    ['resources beyond requests and limits', withContainer({ resources: { claims: [] } })],
    ['a probe port name with an underscore', withProbe({ tcpSocket: { port: 'http_1' } })],
    ['a probe port name of 16 characters', withProbe({ tcpSocket: { port: x(16) } })],
    ['a probe port name that is empty', withProbe({ tcpSocket: { port: '' } })],
    ['a tcpSocket with a host', withProbe({ tcpSocket: { port: 80, host: '169.254.169.254' } })],
    ['an exec probe without a command', withProbe({ exec: { command: [] } })],
    ['one exec item too many', withProbe({ exec: { command: many(Bounds.probeCommandItems + 1, () => 'x') } })],
    ['an exec item past its bound', withProbe({ exec: { command: [x(Bounds.probeText + 1)] } })],
    ['an exec probe with more than a command', withProbe({ exec: { command: ['x'], workingDir: '/' } })],
    ['an HTTP probe path past its bound', withProbe({ httpGet: { port: 80, path: x(Bounds.path + 1) } })],
    ['an HTTP probe scheme outside HTTP and HTTPS', withProbe({ httpGet: { port: 80, scheme: 'FTP' } })],
    ['an HTTP probe with a host', withProbe({ httpGet: { port: 80, host: '169.254.169.254' } })],
    ['a header without a name', withProbe({ httpGet: { port: 80, httpHeaders: [{ name: '', value: 'y' }] } })],
    [
      'a header name of 129 characters',
      withProbe({ httpGet: { port: 80, httpHeaders: [{ name: x(129), value: 'y' }] } }),
    ],
    [
      'a header value past its bound',
      withProbe({ httpGet: { port: 80, httpHeaders: [{ name: 'X', value: x(Bounds.probeText + 1) }] } }),
    ],
    [
      'a header with more than a name and value',
      withProbe({ httpGet: { port: 80, httpHeaders: [{ name: 'X', value: 'y', extra: 1 }] } }),
    ],
    [
      'one header too many',
      withProbe({
        httpGet: { port: 80, httpHeaders: many(Bounds.probeHeaders + 1, (i) => ({ name: `X${i}`, value: 'y' })) },
      }),
    ],
    ['a gRPC service of 254 characters', withProbe({ grpc: { port: 9000, service: x(254) } })],
    ['a gRPC probe with more than a port and service', withProbe({ grpc: { port: 9000, extra: 1 } })],
    ['a probe without anything', withProbe({})],
    ['a probe with an unknown field', withProbe({ tcpSocket: { port: 80 }, terminationGracePeriodSeconds: 1 })],
    ['a container with an unknown field', withContainer({ volumeMounts: [] })],
    ['no container', spec({ pod: { containers: [] } })],
    ['nine containers', spec({ pod: { containers: many(9, (i) => ({ name: `c${i}`, image: 'i' })) } })],
    ['a pod with more than containers', spec({ pod: { containers: [web], volumes: [] } })],
    ['a displayName of 129 characters', spec({ displayName: x(129) })],
    ['an exposed container name of 64 characters', spec({ expose: { port: 80, container: x(64) } })],
    ['an exposure with an unknown field', spec({ expose: { port: 80, nodePort: 30000 } })],
    ['an exposure type outside the contract', spec({ expose: { type: 'UDP', port: 80 } })],
    ['an egress outside the contract', spec({ network: { egress: 'Some' } })],
    ['a network with an unknown field', spec({ network: { egress: 'DNS', ingress: 'All' } })],
    ['a profile outside the contract', spec({ security: { profile: 'Privileged' } })],
    ['a runtimeClassName that is no DNS label', spec({ security: { runtimeClassName: 'G_visor' } })],
    ['a security setting beyond profile and runtime class', spec({ security: { hostNetwork: true } })],
    ['a flag prefix of 65 characters', spec({ flag: { prefix: x(65) } })],
    ['a flag suffix of 65 characters', spec({ flag: { suffix: x(65) } })],
    ['a flag variable that is no variable name', spec({ flag: { env: 'the-flag' } })],
    ['a flag mode outside the contract', spec({ flag: { mode: 'PerTeam' } })],
    ['a static Secret reference without a name', spec({ flag: { mode: 'Static', staticSecretRef: { key: 'flag' } } })],
    ['a static Secret reference without a key', spec({ flag: { mode: 'Static', staticSecretRef: { name: 'flags' } } })],
    ['an empty static Secret name', spec({ flag: { mode: 'Static', staticSecretRef: { name: '', key: 'flag' } } })],
    [
      'a static Secret name of 254 characters',
      spec({ flag: { mode: 'Static', staticSecretRef: { name: x(254), key: 'flag' } } }),
    ],
    ['an empty static Secret key', spec({ flag: { mode: 'Static', staticSecretRef: { name: 'flags', key: '' } } })],
    [
      'a static Secret key of 254 characters',
      spec({ flag: { mode: 'Static', staticSecretRef: { name: 'flags', key: x(254) } } }),
    ],
    ['a flag with an unknown field', spec({ flag: { value: 'flag{fixed}' } })],
  ]
  for (const [what, value] of rows) t.notOk(check(value), what)
})
