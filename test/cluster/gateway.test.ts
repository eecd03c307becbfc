// The gateway against the real API server, as its own ServiceAccount (a token the API server issued for
// challenge-gateway, with only the component's rights): ensure, the events stream from Pending to Running, renew,
// restart, stop, delete; flags checked through the hook server's POST /flags/verify, another owner's detected, and
// checked again after the teardown and after the record is deleted. The ServiceAccount may not read Secrets.
import { KubeConfig } from '@kubernetes/client-node'
import { createHmac } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { request } from 'node:http'
import t from 'tap'
import { loadGatewayConfig } from '../../src/config/config-gateway.js'
import { buildGatewayApp } from '../../src/gateway/app.js'
import { flagChecker } from '../../src/gateway/flag-client.js'
import { loadPlatforms } from '../../src/gateway/identity.js'
import { KubeError, kubeClient } from '../../src/gateway/kube.js'
import { challengeName } from '../../src/gateway/names.js'
import { eventually } from '../support/eventually.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import { startSuite, type Json } from '../support/kube/harness.js'

const FLAG_VERIFY_TOKEN = 'flag-verify-token-of-the-cluster-suite-0123456789'
const KEY = 'platform-key-of-the-cluster-suite-0123456789abcdef'
const SA = 'system:serviceaccount:challenge-hooks:challenge-gateway'
const suite = await startSuite(t, { components: ['gateway'], hookEnv: { FLAG_VERIFY_TOKEN } })

t.test('the ServiceAccount: Challenges and definitions where it is bound, never Secrets', async (t) => {
  const canI = async (verb: string, resource: string, ns: string) =>
    (await suite.kubectl(['auth', 'can-i', verb, resource, '-n', ns, `--as=${SA}`])).stdout.trim()
  for (const verb of ['create', 'get', 'list', 'watch', 'patch', 'delete'])
    t.equal(await canI(verb, 'challenges.challenge-hooks.dev', 'challenges'), 'yes', `${verb} challenges`)
  for (const verb of ['get', 'list', 'watch'])
    t.equal(await canI(verb, 'challengedefinitions.challenge-hooks.dev', 'challenges'), 'yes', `${verb} definitions`)
  for (const [verb, resource, ns] of [
    ['get', 'secrets', 'challenges'],
    ['list', 'secrets', 'challenges'],
    ['get', 'secrets', 'challenge-hooks'],
    ['update', 'challenges.challenge-hooks.dev/status', 'challenges'],
    ['create', 'challengedefinitions.challenge-hooks.dev', 'challenges'],
    ['create', 'challenges.challenge-hooks.dev', 'kube-system'],
  ])
    t.equal(await canI(verb as string, resource as string, ns as string), 'no', `not ${verb} ${resource} in ${ns}`)
})

t.test(
  'ensure, events, renew, restart, stop, delete, flags: as the ServiceAccount, on the real API server',
  async (t) => {
    const s = await suite.scenario(t, 'gateway')
    // One RoleBinding per challenges namespace, as docs/install.md says.
    await kubectlOk(suite.kubectl, [
      '-n',
      s.ns,
      'create',
      'rolebinding',
      'challenge-gateway',
      '--clusterrole=challenge-gateway',
      `--serviceaccount=challenge-hooks:challenge-gateway`,
    ])
    await s.create(s.definition('web-login'))

    const token = (
      await kubectlOk(suite.kubectl, ['-n', 'challenge-hooks', 'create', 'token', 'challenge-gateway'])
    ).stdout.trim()
    const admin = new KubeConfig()
    admin.loadFromFile(suite.kubeconfig)
    const cluster = admin.getCurrentCluster() as NonNullable<ReturnType<KubeConfig['getCurrentCluster']>>
    const asGateway = new KubeConfig()
    asGateway.loadFromOptions({
      clusters: [cluster],
      users: [{ name: 'challenge-gateway', token }],
      contexts: [{ name: 'gateway', cluster: cluster.name, user: 'challenge-gateway' }],
      currentContext: 'gateway',
    })
    const kube = kubeClient(asGateway, 10_000)
    await t.rejects(kube.call('GET', `/api/v1/namespaces/${s.ns}/secrets`), { name: 'KubeError', statusCode: 403 })
    t.ok(
      (await kube.call('GET', `/api/v1/namespaces/${s.ns}/secrets`).catch((error: KubeError) => error)) instanceof
        KubeError,
    )

    const platforms = await loadPlatforms(
      JSON.stringify({ platforms: [{ name: 'ctf', namespaces: [s.ns], keys: [KEY] }] }),
    )
    const app = await buildGatewayApp(
      loadGatewayConfig({ GATEWAY_AUDIENCE: 'https://gateway.test', GATEWAY_PLATFORMS_FILE: '-' }),
      {
        kube,
        platforms,
        logger: false,
        checkFlag: flagChecker(`${suite.hookUrl}/flags/verify`, FLAG_VERIFY_TOKEN, 10_000),
      },
    )
    t.teardown(() => app.close())
    await app.listen({ port: 0, host: '127.0.0.1' })
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    const call = async (method: string, path: string, owner = 'User:alice', body?: Json) => {
      const answer = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${KEY}`,
          'challenge-owner': owner,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      return { status: answer.status, body: (await answer.json()) as Json }
    }
    const alice = challengeName('web-login', { kind: 'User', id: 'alice' })

    const created = await call('PUT', '/v1/instances/web-login')
    t.strictSame([created.status, created.body.name, created.body.namespace], [201, alice, s.ns])
    // Retried: a connection the loaded API server resets is not what this asserts.
    const stored = (await eventually('the stored Challenge', () => s.get(alice))) as unknown as {
      metadata: Json
      spec: Json
    }
    t.strictSame(
      [stored.metadata.labels, stored.spec.owner],
      [
        { 'challenge-hooks.dev/owner': 'alice', 'challenge-hooks.dev/definition': 'web-login' },
        { kind: 'User', id: 'alice' },
      ],
    )
    t.equal((await call('PUT', '/v1/instances/web-login')).status, 200, 'a second ensure changes nothing')

    // What the platform's backend may set on the Challenge it ensures, and the CRD's own refusal in the API's words.
    const settings = { deadline: '2030-01-01T00:00:00Z', lifetimeSeconds: 600, parameters: { LEVEL: 'hard' } }
    t.equal((await call('PUT', '/v1/instances/web-login', 'User:carol', settings)).status, 201)
    const carol = (await eventually("carol's Challenge", () =>
      s.get(challengeName('web-login', { kind: 'User', id: 'carol' })),
    )) as unknown as { spec: Json }
    t.strictSame(carol.spec, {
      definitionRef: { name: 'web-login' },
      owner: { kind: 'User', id: 'carol' },
      ...settings,
      // The CRD's defaults.
      desiredState: 'Running',
      renewals: 0,
      restarts: 0,
    })
    const refused = await call('PUT', '/v1/instances/web-login', 'User:dave', { parameters: { constructor: 'x' } })
    t.equal(refused.status, 400, JSON.stringify(refused.body))
    t.match(refused.body.message, /parameters/, 'the API server names the field')
    t.equal(await s.get(challengeName('web-login', { kind: 'User', id: 'dave' })), undefined, 'nothing created')

    // The events stream, opened right after the create: the phases it shows until Running.
    const phases: string[] = []
    const stream = request(`${base}/v1/instances/web-login/events`, {
      headers: { authorization: `Bearer ${KEY}`, 'challenge-owner': 'User:alice' },
    })
    stream.on('response', (res) => {
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        for (const match of chunk.matchAll(/^data: (.*)$/gm))
          phases.push(String((JSON.parse(match[1] as string) as Json).phase))
      })
    })
    // Destroyed at the teardown: the error that ends it then is expected.
    stream.on('error', () => undefined)
    stream.end()
    t.teardown(() => stream.destroy())
    await eventually(
      'Running on the stream',
      () => phases.includes('Running'),
      () => phases.join(', '),
      { timeoutMs: 60_000 },
    )
    const seen = phases.filter((phase, index) => phase !== phases[index - 1])
    t.match(seen.join(' '), /^(None )?Pending( Pending)* Running$/, `Pending, then Running (${seen.join(', ')})`)

    const running = await call('GET', '/v1/instances/web-login')
    t.strictSame(
      [running.body.phase, running.body.actions, typeof running.body.command],
      ['Running', { renew: { allowed: true }, restart: { allowed: true }, stop: { allowed: true } }, 'string'],
    )
    t.equal((await call('POST', '/v1/instances/web-login/renew')).status, 202)
    await s.until(alice, (st) => st.renewalsApplied === 1, 'renewed once')
    t.equal((await call('POST', '/v1/instances/web-login/restart')).status, 202)
    await s.until(alice, (st) => st.phase === 'Running' && st.run === 1, 'Running (run 1)', 60_000)

    const flagOf = (id: string) =>
      `flag{${createHmac('sha256', suite.flagSecret).update(`${s.ns}/web-login/User/${id}`).digest('hex').slice(0, 32)}}`
    t.equal((await call('PUT', '/v1/instances/web-login', 'User:bob')).status, 201)
    const verify = (flag: string) => call('POST', '/v1/flags/verify', 'User:alice', { definition: 'web-login', flag })
    t.strictSame((await verify(flagOf('alice'))).body, { result: 'correct' })
    t.strictSame((await verify(flagOf('bob'))).body, { result: 'anotherOwner', owner: { kind: 'User', id: 'bob' } })
    t.strictSame((await verify('flag{0123456789abcdef0123456789abcdef}')).body, { result: 'incorrect' })

    const stopped = await call('POST', '/v1/instances/web-login/stop')
    t.equal(stopped.status, 202)
    await s.until(alice, (st) => st.phase === 'Deleted' && st.reason === 'Stopped', 'Deleted / Stopped')
    await eventually('the teardown', async () => (await s.children(alice)).length === 0 || undefined, undefined, {
      timeoutMs: 60_000,
    })
    t.strictSame((await verify(flagOf('alice'))).body, { result: 'correct' }, 'after the teardown')

    t.strictSame(await call('DELETE', '/v1/instances/web-login'), { status: 202, body: { deleted: 'web-login' } })
    await eventually('the record gone', async () => (await s.get(alice)) === undefined, undefined, {
      timeoutMs: 60_000,
    })
    t.strictSame((await verify(flagOf('alice'))).body, { result: 'correct' }, 'after the record is deleted')
    // The gateway reads its watch, which tells of the record's end a moment after the API server made it.
    await eventually("the gateway's 404", async () => (await call('GET', '/v1/instances/web-login')).status === 404)
    t.strictSame((await verify(flagOf('bob'))).body, { result: 'anotherOwner', owner: { kind: 'User', id: 'bob' } })
  },
)
