// The gateway process (src/gateway/main.ts) in-process, and its configuration (src/config/config-gateway.ts): a bad value
// stops the start with exit code 78 and the variable's name; a good one serves until the shutdown.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { loadGatewayConfig } from '../../src/config/config-gateway.js'
import { EX_CONFIG, startGateway } from '../../src/gateway/main.js'
import { startFakeApiServer } from './fake-apiserver.js'
import { AUDIENCE, CTFD_KEY, definition, PLATFORMS_YAML } from './support.js'

const dir = mkdtempSync(join(tmpdir(), 'gateway-process-'))
const platformsFile = join(dir, 'platforms.yaml')
writeFileSync(platformsFile, PLATFORMS_YAML)
const BASE = { GATEWAY_AUDIENCE: AUDIENCE, GATEWAY_PLATFORMS_FILE: platformsFile, PORT: '0', HOST: '127.0.0.1' }

t.test('the configuration: defaults, and each rule', async (t) => {
  t.strictSame(loadGatewayConfig(BASE), {
    port: 0,
    host: '127.0.0.1',
    logLevel: 'info',
    bodyLimit: 16384,
    audience: AUDIENCE,
    platformsFile,
    corsOrigins: [],
    rateLimit: 30,
    ownerBudget: 3,
    flagVerify: undefined,
    heartbeatSeconds: 15,
    retryAfterSeconds: 5,
  })
  const config = loadGatewayConfig({
    ...BASE,
    GATEWAY_CORS_ORIGINS: ' https://a.example , https://b.example,',
    FLAG_VERIFY_URL: 'http://hooks:8080/flags/verify',
    FLAG_VERIFY_TOKEN: 't',
  })
  t.strictSame(
    [config.corsOrigins, config.flagVerify],
    [['https://a.example', 'https://b.example'], { url: 'http://hooks:8080/flags/verify', token: 't' }],
  )
  const refused: [Record<string, string>, string][] = [
    [{ GATEWAY_PLATFORMS_FILE: platformsFile }, 'GATEWAY_AUDIENCE: is required'],
    [{ GATEWAY_AUDIENCE: AUDIENCE }, 'GATEWAY_PLATFORMS_FILE: is required'],
    [
      { ...BASE, FLAG_VERIFY_URL: 'http://x' },
      'FLAG_VERIFY_TOKEN: is required beside the other of FLAG_VERIFY_URL and FLAG_VERIFY_TOKEN',
    ],
    [
      { ...BASE, FLAG_VERIFY_TOKEN: 't' },
      'FLAG_VERIFY_URL: is required beside the other of FLAG_VERIFY_URL and FLAG_VERIFY_TOKEN',
    ],
    [
      { ...BASE, FLAG_VERIFY_URL: 'not a url', FLAG_VERIFY_TOKEN: 't' },
      'FLAG_VERIFY_URL: must be a URL, got "not a url"',
    ],
    [{ ...BASE, GATEWAY_RATE_LIMIT: '0' }, 'GATEWAY_RATE_LIMIT: must be between 1 and 100000, got 0'],
  ]
  for (const [env, message] of refused)
    t.throws(() => loadGatewayConfig(env), { name: 'ConfigError', message }, message)
})

function ports(env: Record<string, string>, extra: Record<string, unknown> = {}) {
  const written: string[] = []
  const exits: number[] = []
  let shutdown: (() => Promise<void>) | undefined
  return {
    written,
    exits,
    shutdown: () => (shutdown as () => Promise<void>)(),
    process: {
      env,
      stderr: { write: (text: string) => written.push(text) },
      exit: (code: number) => exits.push(code),
      onShutdown: (fn: () => Promise<void>) => {
        shutdown = fn
      },
      logger: false as const,
      ...extra,
    },
  }
}

t.test('a bad configuration stops the start with 78 and the variable', async (t) => {
  const rows: [Record<string, string>, string][] = [
    [{ ...BASE, GATEWAY_AUDIENCE: '' }, 'challenge-gateway: invalid configuration: GATEWAY_AUDIENCE: is required\n'],
    [
      { ...BASE, GATEWAY_PLATFORMS_FILE: join(dir, 'missing.yaml') },
      `challenge-gateway: invalid configuration: GATEWAY_PLATFORMS_FILE: cannot read ${join(dir, 'missing.yaml')}: ENOENT: no such file or directory, open '${join(dir, 'missing.yaml')}'\n`,
    ],
  ]
  const empty = join(dir, 'empty.yaml')
  writeFileSync(empty, 'platforms: []')
  rows.push([
    { ...BASE, GATEWAY_PLATFORMS_FILE: empty },
    'challenge-gateway: invalid configuration: GATEWAY_PLATFORMS_FILE: must hold a list `platforms` of at least one platform\n',
  ])
  for (const [env, message] of rows) {
    const run = ports(env)
    t.equal(await startGateway(run.process), undefined)
    t.strictSame([run.written, run.exits], [[message], [EX_CONFIG]])
  }
})

t.test(
  'serves on the API server of its kubeconfig, with flag checks when configured, until the shutdown',
  async (t) => {
    const fake = await startFakeApiServer(t)
    definition(fake, 'web')
    const run = ports(
      { ...BASE, FLAG_VERIFY_URL: 'http://127.0.0.1:1/flags/verify', FLAG_VERIFY_TOKEN: 'a-token' },
      { kubeconfig: fake.kubeconfig },
    )
    const app = await startGateway(run.process)
    t.ok(app)
    const port = (app?.server.address() as AddressInfo).port
    const answer = await fetch(`http://127.0.0.1:${port}/v1/instances/web`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${CTFD_KEY}`, 'challenge-owner': 'User:alice' },
    })
    t.equal(answer.status, 201)
    await run.shutdown()
    t.strictSame(run.exits, [0])
  },
)

t.test('a port taken: exit 1; without a kubeconfig of its own it reads the default one', async (t) => {
  const blocker = createServer()
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
  t.teardown(() => blocker.close())
  const taken = String((blocker.address() as AddressInfo).port)
  const kubeconfig = join(dir, 'kubeconfig.yaml')
  writeFileSync(
    kubeconfig,
    'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
  )
  const previous = process.env.KUBECONFIG
  process.env.KUBECONFIG = kubeconfig
  t.teardown(() => {
    if (previous === undefined) delete process.env.KUBECONFIG
    else process.env.KUBECONFIG = previous
  })
  const run = ports({ ...BASE, PORT: taken })
  t.equal(await startGateway(run.process), undefined)
  t.strictSame(run.exits, [1])
})
