import { readFileSync } from 'node:fs'
import t from 'tap'
import { documentOfKind, runCli, type CliIo } from '../src/preview-command.js'
import { preview } from '../src/preview.js'
import { testConfig } from './helpers/app.js'
import { validateChildren } from './helpers/validate.js'
import { T0 } from './helpers/instant.js'

const NOW = new Date(T0)

function io(files: Record<string, string> = {}, env: Record<string, string> = {}) {
  const out: string[] = []
  const err: string[] = []
  const cli: CliIo = {
    readFile: (path) => {
      const text = files[path] ?? readFileSync(path, 'utf8')
      return text
    },
    stdout: { write: (text: string) => out.push(text) },
    stderr: { write: (text: string) => err.push(text) },
    env,
    now: () => NOW,
  }
  return { cli, out: () => out.join(''), err: () => err.join('') }
}

t.test('render the web example: the children to create, then Running with the endpoint', async (t) => {
  const { cli, out, err } = io({}, { BASE_DOMAIN: 'ctf.example.org' })
  const code = runCli(
    ['render', 'manifests/examples/web-login.yaml', 'manifests/examples/web-login.yaml', '--json'],
    cli,
  )
  t.equal(code, 0, err())
  const result = JSON.parse(out())
  t.match(result.first.status, { phase: 'Pending', reason: 'Starting' })
  t.strictSame(
    result.first.children.map((child: { kind: string }) => child.kind),
    ['Secret', 'NetworkPolicy', 'Pod', 'Service', 'Ingress'],
  )
  validateChildren(result.first.children)
  t.match(result.running.status, {
    phase: 'Running',
    endpoint: { type: 'HTTP', host: /^[0-9a-f]{16}\.ctf\.example\.org$/ },
  })
})

t.test('render the netcat example as YAML', async (t) => {
  const { cli, out } = io({}, { PUBLIC_HOST: 'ctf.example.org' })
  t.equal(runCli(['render', 'manifests/examples/pwn-echo.yaml', 'manifests/examples/pwn-echo.yaml'], cli), 0)
  t.match(out(), /^# First sync: Pending \/ Starting: The instance is starting\.\n# 4 children to create\n/)
  t.match(out(), /# Once the workload is ready: Running \/ Ready/)
  t.match(out(), /connection: nc ctf\.example\.org 30000/)
})

t.test('Internet egress without CLUSTER_CIDRS: the preview warns first; with CLUSTER_CIDRS it does not', async (t) => {
  const definition = documentOfKind(
    readFileSync('manifests/examples/web-login.yaml', 'utf8'),
    'ChallengeDefinition',
    'web-login.yaml',
  )
  const internet = { ...definition, spec: { ...(definition.spec as object), network: { egress: 'Internet' } } }
  const challenge = documentOfKind(
    readFileSync('manifests/examples/web-login.yaml', 'utf8'),
    'Challenge',
    'web-login.yaml',
  )
  const warned = preview(internet, challenge, { config: testConfig(), now: NOW })
  t.match(warned.warnings, [/^network\.egress Internet with CLUSTER_CIDRS unset: .*Set CLUSTER_CIDRS/])
  const { cli, out } = io({ 'internet.yaml': JSON.stringify(internet), 'challenge.yaml': JSON.stringify(challenge) })
  t.equal(runCli(['render', 'internet.yaml', 'challenge.yaml'], cli), 0)
  t.match(out(), /^# Warning: network\.egress Internet with CLUSTER_CIDRS unset/, 'the first line of the preview')
  t.strictSame(
    preview(internet, challenge, { config: testConfig({ clusterCidrs: ['203.0.113.0/24'] }), now: NOW }).warnings,
    [],
    'CLUSTER_CIDRS set',
  )
  t.strictSame(preview(definition, challenge, { config: testConfig(), now: NOW }).warnings, [], 'DNS egress')
})

t.test(
  'render the TLS example: the TLSRoute to create, then Running with ncat --ssl once the Gateway accepted it',
  async (t) => {
    const tls = 'manifests/examples/tls/pwn-tls.yaml'
    const { cli, out, err } = io(
      {},
      { GATEWAY: 'gateway-system/challenges', GATEWAY_TLS_LISTENER: 'tls', TLS_BASE_DOMAIN: 'tcp.ctf.example.org' },
    )
    t.equal(runCli(['render', tls, tls], cli), 0, err())
    t.match(out(), /^# First sync: Pending \/ Starting: The instance is starting\.\n# 5 children to create\n/)
    t.match(
      out(),
      /\nkind: TLSRoute\n[\s\S]*sectionName: tls\n[\s\S]*hostnames:\n {4}- [0-9a-f]{16}\.tcp\.ctf\.example\.org\n/,
    )
    t.match(
      out(),
      /# Once the workload is ready: Running \/ Ready\n[\s\S]*type: TLS\n[\s\S]*port: 443\n[\s\S]*connection: ncat --ssl [0-9a-f]{16}\.tcp\.ctf\.example\.org 443\n/,
    )
    const traefik = io({}, { TLS_ROUTING: 'Traefik', TLS_PORT: '1337' })
    t.equal(runCli(['render', tls, tls, '--json'], traefik.cli), 0)
    const result = JSON.parse(traefik.out())
    t.equal(result.first.children.at(-1).kind, 'IngressRouteTCP')
    validateChildren(result.first.children)
    t.match(result.running.status.endpoint, {
      type: 'TLS',
      port: 1337,
      connection: /^ncat --ssl [0-9a-f]{16}\.challenges\.localhost 1337$/,
    })
    const unset = io()
    t.equal(runCli(['render', tls, tls], unset.cli), 1, 'without GATEWAY (or TLS_ROUTING=Traefik) the author sees why')
    t.match(
      unset.out(),
      /^# First sync: Error \/ ConfigError: TLS challenges cannot be exposed yet: the operator has not set GATEWAY/,
    )
  },
)

t.test('HTTP through Gateway API or Traefik: the route, and an https endpoint', async (t) => {
  for (const [env, kind] of [
    [{ HTTP_ROUTING: 'GatewayAPI', GATEWAY: 'gateway-system/challenges' }, 'HTTPRoute'],
    [{ HTTP_ROUTING: 'Traefik' }, 'IngressRoute'],
  ] as const) {
    const { cli, out } = io({}, env)
    t.equal(
      runCli(['render', 'manifests/examples/web-login.yaml', 'manifests/examples/web-login.yaml', '--json'], cli),
      0,
      kind,
    )
    const result = JSON.parse(out())
    t.equal(result.first.children.at(-1).kind, kind)
    t.match(
      result.running.status,
      { phase: 'Running', endpoint: { type: 'HTTP', port: 443, url: /^https:\/\// } },
      kind,
    )
  }
})

t.test('a LoadBalancer definition shows the address the cluster would give', async (t) => {
  const definition = {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    metadata: { name: 'lb' },
    spec: { pod: { containers: [{ name: 'c', image: 'x' }] }, expose: { type: 'LoadBalancer', port: 9 } },
  }
  const challenge = {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    metadata: { name: 'lb-u-bob', namespace: 'ctf' },
    spec: { definitionRef: { name: 'lb' }, owner: { kind: 'Team', id: 'bob' } },
  }
  const result = preview(definition, challenge, { config: testConfig(), now: NOW })
  t.match(result.running.status.endpoint, { type: 'LoadBalancer', host: '192.0.2.1', port: 9 })
  t.equal((result.first.children[0] as { metadata: { name: string } }).metadata.name, 'lb-u-bob-flag')
})

t.test('a refused definition is printed with its reason and exit code 1', async (t) => {
  const bad = `apiVersion: challenge-hooks.dev/v1alpha1
kind: ChallengeDefinition
metadata: {name: web-login}
spec:
  pod: {containers: [{name: app, image: x, securityContext: {privileged: true}}]}
  expose: {port: 80}
`
  const { cli, out } = io({ 'bad.yaml': bad })
  t.equal(runCli(['render', 'bad.yaml', 'manifests/examples/web-login.yaml'], cli), 1)
  t.match(out(), /# First sync: Error \/ DefinitionInvalid: .*securityContext\.privileged: is not allowed/)
  t.notMatch(out(), /Once the workload is ready/)
})

t.test('usage and input errors', async (t) => {
  for (const argv of [[], ['render'], ['render', 'a'], ['show', 'a', 'b']]) {
    const { cli, err } = io()
    t.equal(runCli(argv, cli), 2, argv.join(' '))
    t.match(err(), /^usage: challenge-hooks render/)
  }
  const flagged = io()
  t.equal(runCli(['render', 'a.yaml', 'b.yaml', '--yaml'], flagged.cli), 2, 'an unknown flag')
  t.match(
    flagged.err(),
    /^challenge-hooks render: Unknown option '--yaml'.*\nusage: challenge-hooks render/s,
    'names the flag, then the usage',
  )
  const broken = io({ 'broken.yaml': 'kind: [', 'empty.yaml': 'kind: ConfigMap\n' })
  t.equal(runCli(['render', 'broken.yaml', 'broken.yaml'], broken.cli), 1)
  t.match(broken.err(), /^challenge-hooks render: broken\.yaml: /)
  const none = io({ 'empty.yaml': 'kind: ConfigMap\n---\n' })
  t.equal(runCli(['render', 'empty.yaml', 'empty.yaml'], none.cli), 1)
  t.match(none.err(), /empty\.yaml: no ChallengeDefinition document/)
  const noChallenge = io({
    'c.yaml':
      'kind: Challenge\nmetadata: {name: c}\nspec: {owner: {kind: User, id: NOT_SAFE}, definitionRef: {name: web-login}}\n',
  })
  t.equal(runCli(['render', 'manifests/examples/web-login.yaml', 'c.yaml'], noChallenge.cli), 1)
  t.match(noChallenge.err(), /the Challenge is invalid: \/spec\/owner\/id/)
  const badEnv = io({}, { OWNER_BUDGET: 'lots' })
  t.equal(runCli(['render', 'manifests/examples/web-login.yaml', 'manifests/examples/web-login.yaml'], badEnv.cli), 1)
  t.match(badEnv.err(), /OWNER_BUDGET: must be a whole number/)
  t.throws(() => documentOfKind('just a string', 'Challenge', 'x.yaml'), /x\.yaml: no Challenge document/)
})
