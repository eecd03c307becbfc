import { readFileSync } from 'node:fs'
import t from 'tap'
import { documentOfKind, preview, runCli, type CliIo } from '../src/preview.js'
import { testConfig } from './helpers/app.js'
import { validateChildren } from './helpers/validate.js'

const NOW = new Date('2026-11-22T12:00:00Z')

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
  const code = runCli(['render', 'manifests/examples/web-login.yaml', 'manifests/examples/web-login.yaml', '--json'], cli)
  t.equal(code, 0, err())
  const result = JSON.parse(out())
  t.match(result.first.status, { phase: 'Pending', reason: 'Starting' })
  t.same(result.first.children.map((child: { kind: string }) => child.kind), ['Secret', 'NetworkPolicy', 'NetworkPolicy', 'Deployment', 'Service', 'Ingress'])
  validateChildren(result.first.children)
  t.match(result.running.status, { phase: 'Running', endpoint: { type: 'HTTP', host: /^[0-9a-f]{16}\.ctf\.example\.org$/ } })
})

t.test('render the netcat example as YAML', async (t) => {
  const { cli, out } = io({}, { PUBLIC_HOST: 'ctf.example.org' })
  t.equal(runCli(['render', 'manifests/examples/pwn-echo.yaml', 'manifests/examples/pwn-echo.yaml'], cli), 0)
  t.match(out(), /^# First sync: Pending \/ Starting: The instance is starting\.\n# 5 children to create\n/)
  t.match(out(), /# Once the workload is ready: Running \/ Ready/)
  t.match(out(), /connection: nc ctf\.example\.org 30000/)
})

t.test('a LoadBalancer definition shows the address the cluster would give', async (t) => {
  const definition = { apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'ChallengeDefinition', metadata: { name: 'lb' }, spec: { pod: { containers: [{ name: 'c', image: 'x' }] }, expose: { type: 'LoadBalancer', port: 9 } } }
  const challenge = { apiVersion: 'challenge-hooks.dev/v1alpha1', kind: 'Challenge', metadata: { name: 'lb-u-bob', namespace: 'ctf' }, spec: { definitionRef: { name: 'lb' }, owner: { kind: 'Team', id: 'bob' } } }
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
  const broken = io({ 'broken.yaml': 'kind: [' , 'empty.yaml': 'kind: ConfigMap\n' })
  t.equal(runCli(['render', 'broken.yaml', 'broken.yaml'], broken.cli), 1)
  t.match(broken.err(), /^challenge-hooks render: broken\.yaml: /)
  const none = io({ 'empty.yaml': 'kind: ConfigMap\n---\n' })
  t.equal(runCli(['render', 'empty.yaml', 'empty.yaml'], none.cli), 1)
  t.match(none.err(), /empty\.yaml: no ChallengeDefinition document/)
  const noChallenge = io({ 'c.yaml': 'kind: Challenge\nmetadata: {name: c}\nspec: {owner: {kind: User, id: NOT_SAFE}, definitionRef: {name: web-login}}\n' })
  t.equal(runCli(['render', 'manifests/examples/web-login.yaml', 'c.yaml'], noChallenge.cli), 1)
  t.match(noChallenge.err(), /the Challenge is invalid: \/spec\/owner\/id/)
  const badEnv = io({}, { OWNER_BUDGET: 'lots' })
  t.equal(runCli(['render', 'manifests/examples/web-login.yaml', 'manifests/examples/web-login.yaml'], badEnv.cli), 1)
  t.match(badEnv.err(), /OWNER_BUDGET: must be a whole number/)
  t.throws(() => documentOfKind('just a string', 'Challenge', 'x.yaml'), /x\.yaml: no Challenge document/)
})
