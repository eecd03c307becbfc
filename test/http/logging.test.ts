import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildApp, loggerOptions } from '../../src/http/app.js'
import type { Config } from '../../src/config/config.js'
import { FIXED_NOW, testConfig } from '../helpers/app.js'
import { logCapture, type LogCapture } from './log-capture.js'
import { customizeRequest, finalizingRequest, newRequest, runningRequest } from '../helpers/hook-requests.js'

const TOKEN = 'log-canary-token-7f3a9c1e5b2d4f60'

type Tap = { teardown(fn: () => unknown): void }

/** The production logger options (level from the config, redaction) writing to memory. */
async function loggedApp(
  t: Tap,
  overrides: Partial<Config>,
  level: string,
): Promise<{ app: FastifyInstance; log: LogCapture }> {
  const config = testConfig(overrides)
  const log = logCapture()
  const app = await buildApp(config, {
    logger: { ...loggerOptions(config), level, stream: log.stream },
    now: () => FIXED_NOW,
  })
  t.teardown(() => app.close())
  return { app, log }
}

t.test(
  'one JSON line per hook call: reqId, hook, parent ns/name, phase, reason, children, status code, duration',
  async (t) => {
    const { app, log } = await loggedApp(t, {}, 'info')
    const calls = [
      ['/sync', newRequest()],
      ['/sync', runningRequest()],
      ['/finalize', finalizingRequest()],
      ['/customize', customizeRequest()],
    ] as const
    for (const [url, payload] of calls) {
      t.equal((await app.inject({ method: 'POST', url, payload })).statusCode, 200, url)
    }
    await app.inject({
      method: 'POST',
      url: '/sync',
      payload: '{"parent": 1}',
      headers: { 'content-type': 'application/json' },
    })
    await app.ops.inject({ method: 'GET', url: '/healthz' })
    await app.ops.inject({ method: 'GET', url: '/metrics' })

    const answered = log.entries().filter((entry) => entry.msg === 'hook answered')
    t.equal(answered.length, 5, 'one line per hook call, none for health or metrics')
    const parent = 'challenges/web-login-u-alice'
    t.match(answered, [
      { level: 30, hook: 'sync', parent, phase: 'Pending', reason: 'Starting', children: 4, statusCode: 200 },
      { level: 30, hook: 'sync', parent, phase: 'Running', reason: 'Ready', children: 5, statusCode: 200 },
      { level: 30, hook: 'finalize', parent, phase: 'Terminating', reason: 'Deleting', children: 3, statusCode: 200 },
      { level: 30, hook: 'customize', parent, statusCode: 200 },
      { level: 30, hook: 'sync', statusCode: 400 },
    ])
    t.equal(answered[3]?.phase, undefined, 'customize decides no phase')
    t.equal(answered[4]?.parent, undefined, 'a refused body has no parent')
    for (const entry of answered) {
      t.type(entry.reqId, 'string')
      t.type(entry.durationMs, 'number')
      t.ok((entry.durationMs as number) >= 0)
    }
    t.equal(new Set(answered.map((entry) => entry.reqId)).size, 5, 'a request id per call')
    const other = log.entries().filter((entry) => entry.msg !== 'hook answered')
    t.strictSame(other, [], 'nothing else: a refused body is the same one line, with its status code')
  },
)

t.test('at level trace, neither the bearer token nor any flag reaches the log', async (t) => {
  const { app, log } = await loggedApp(t, { hookToken: TOKEN }, 'trace')
  const auth = { authorization: `Bearer ${TOKEN}` }
  const flags = new Set<string>()
  const collectFlags = (body: string) => {
    for (const child of JSON.parse(body).children ?? []) {
      if (child.kind === 'Secret') {
        flags.add(child.data.flag)
        flags.add(Buffer.from(child.data.flag, 'base64').toString('utf8'))
      }
    }
  }
  for (const [url, payload] of [
    ['/sync', newRequest()],
    ['/sync', runningRequest()],
    ['/finalize', finalizingRequest()],
    ['/customize', customizeRequest()],
  ] as const) {
    const response = await app.inject({ method: 'POST', url, payload, headers: auth })
    t.equal(response.statusCode, 200)
    if (url !== '/customize') collectFlags(response.body)
  }
  // Refused calls that carry a flag in their body, or the token in a wrong header.
  const withFlag = runningRequest() as { parent: { metadata: { name?: string } } }
  delete withFlag.parent.metadata.name
  t.equal((await app.inject({ method: 'POST', url: '/sync', payload: withFlag, headers: auth })).statusCode, 400)
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/sync',
        payload: newRequest(),
        headers: { authorization: `Basic ${TOKEN}` },
      })
    ).statusCode,
    401,
  )
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/sync',
        payload: newRequest(),
        headers: { authorization: `Bearer ${TOKEN}x` },
      })
    ).statusCode,
    401,
  )
  const bad = runningRequest() as { parent: { spec: { owner: { kind: string } } } }
  bad.parent.spec.owner.kind = 'Robot'
  t.equal((await app.inject({ method: 'POST', url: '/sync', payload: bad, headers: auth })).statusCode, 400)

  t.ok(flags.size >= 2, 'flags were answered')
  const text = log.text()
  t.ok(text.length > 0, 'something was logged')
  t.notOk(text.includes(TOKEN), 'the token is never logged')
  for (const flag of flags) {
    t.notOk(text.includes(flag), `the flag (${flag.length} chars) is never logged`)
    const secretPart = /^flag\{([0-9a-f]{32})\}$/.exec(flag)?.[1]
    if (secretPart) t.notOk(text.includes(secretPart), 'nor its secret part')
  }
  t.match(
    log.entries().filter((entry) => entry.msg === 'hook call without a valid bearer token'),
    [
      { level: 40, hook: '/sync' },
      { level: 40, hook: '/sync' },
    ],
  )
})

t.test('redaction covers the authorization header and flag fields wherever a log line carries them', async (t) => {
  const { app, log } = await loggedApp(t, {}, 'trace')
  await app.ready()
  app.log.info({ req: { headers: { authorization: `Bearer ${TOKEN}` } }, headers: { authorization: TOKEN } }, 'headers')
  app.log.info({ flag: 'flag{a}', secret: { flag: 'flag{b}' }, data: { flag: 'ZmxhZ3tjfQ==' } }, 'flags')
  const text = log.text()
  t.notOk(text.includes(TOKEN))
  t.notMatch(text, /flag\{a\}|flag\{b\}|ZmxhZ3tjfQ==/)
  t.match(log.entries(), [
    { headers: { authorization: '[redacted]' } },
    { flag: '[redacted]', secret: { flag: '[redacted]' }, data: { flag: '[redacted]' } },
  ])
})
