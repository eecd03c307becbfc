// `npm run build` bundles the server into dist/server.js (scripts/bundle.mjs): that one file, copied alone into an
// empty directory (no node_modules, no package.json), starts and answers every hook and probe as the pod runs it. The
// isolation gate's bundle, dist/isolation-gate.js, runs alone the same way.
// The time from spawn to the first 200 on /sync is reported, not asserted: `npm run bench` measures cold starts.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildTestApp } from '../helpers/app.js'
import { AUTH, repoRoot, send, startServer, SYNC_BODY, TOKEN } from '../support/load/harness.js'

const FIRST_SYNC = readFileSync(join(repoRoot, 'test/fixtures/sync-new.json'))
const CUSTOMIZE = readFileSync(join(repoRoot, 'test/fixtures/customize.json'))

t.test('dist/server.js alone, in an empty directory, serves the hooks and the probes', async (t) => {
  t.match(
    readFileSync(join(repoRoot, 'dist/server.js'), 'utf8'),
    /PRECOMPILED=\{sync,customize,poolSync,poolCustomize\}/,
    'the request validators were compiled by the build',
  )
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-bundle-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  copyFileSync(join(repoRoot, 'dist/server.js'), join(dir, 'server.js'))
  const spawned = performance.now()
  const server = await startServer(t, {}, { entry: join(dir, 'server.js'), cwd: dir })
  const sync = await send(server.port, 'POST', '/sync', { body: FIRST_SYNC, headers: AUTH })
  const firstOk = performance.now() - spawned
  t.equal(sync.statusCode, 200, '/sync')
  t.match(JSON.parse(sync.body), { status: { phase: 'Pending' }, children: Array })
  t.equal(
    (await send(server.port, 'POST', '/customize', { body: CUSTOMIZE, headers: AUTH })).statusCode,
    200,
    '/customize',
  )
  const pool = { parent: { metadata: { name: 'web', namespace: 'challenges', uid: 'u' }, spec: {} } }
  const poolSync = await send(server.port, 'POST', '/pools/sync', {
    body: Buffer.from(JSON.stringify(pool)),
    headers: AUTH,
  })
  t.equal(poolSync.statusCode, 200, '/pools/sync')
  t.match(JSON.parse(poolSync.body), { status: { pool: { state: 'Off' } }, children: [] })
  // The bundle validates with the validators the build compiled (scripts/bundle.mjs); the tests' app compiles them
  // with ajv at first use. Bad bodies get the same answers from both.
  const app = await buildTestApp(t, { hookToken: TOKEN })
  const running = JSON.parse(SYNC_BODY.toString('utf8')) as {
    parent: { metadata: Record<string, unknown>; spec: Record<string, unknown> }
  }
  const broken = (change: (body: typeof running) => void) => {
    const body = structuredClone(running)
    change(body)
    return body
  }
  for (const [path, body] of [
    ['/sync', {}],
    ['/sync', broken((b) => Object.assign(b, { finalizing: 'yes' }))],
    ['/sync', broken((b) => delete b.parent.metadata.namespace)],
    ['/sync', broken((b) => Object.assign(b.parent.spec, { owner: { kind: 'Robot', id: 'x' } }))],
    ['/finalize', broken((b) => Object.assign(b, { children: [] }))],
    ['/customize', { parent: 'x' }],
    ['/customize', { controller: {}, parent: { metadata: { name: 3 } } }],
    ['/pools/sync', { parent: { metadata: { name: 'web', namespace: 'challenges' }, spec: {} } }],
    ['/pools/customize', { parent: { metadata: { name: 'web', namespace: 'challenges', uid: 'u' }, spec: 'x' } }],
  ] as const) {
    const payload = JSON.stringify(body)
    const fromBundle = await send(server.port, 'POST', path, { body: Buffer.from(payload), headers: AUTH })
    const fromApp = await app.inject({
      method: 'POST',
      url: path,
      payload,
      headers: { 'content-type': 'application/json', ...AUTH },
    })
    t.equal(fromBundle.statusCode, 400, `${path} ${payload.slice(0, 60)}: 400`)
    t.strictSame(JSON.parse(fromBundle.body), fromApp.json(), `the same answer as ajv's: ${fromApp.json().message}`)
  }
  t.equal((await send(server.opsPort, 'GET', '/readyz')).statusCode, 200, '/readyz')
  const metrics = await send(server.opsPort, 'GET', '/metrics')
  t.match(
    metrics.body,
    /challenge_hooks_hook_duration_seconds_count\{hook="sync",code="200"\} 1/,
    '/metrics counts the call',
  )
  // The definition's check too: the bundle's compiled by the build, the app's at first use; the same message.
  const invalid = JSON.parse(SYNC_BODY.toString('utf8')) as {
    related: Record<string, Record<string, { spec: { pod: Record<string, unknown> } }>>
  }
  Object.assign(
    (
      invalid.related['ChallengeDefinition.challenge-hooks.dev/v1alpha1']?.['web-login'] as {
        spec: { pod: Record<string, unknown> }
      }
    ).spec.pod,
    { hostNetwork: true },
  )
  const fromBundle = JSON.parse(
    (await send(server.port, 'POST', '/sync', { body: Buffer.from(JSON.stringify(invalid)), headers: AUTH })).body,
  ) as { status: { message?: string } }
  const fromApp = (await app.inject({ method: 'POST', url: '/sync', payload: invalid, headers: AUTH })).json<{
    status: { message?: string }
  }>()
  t.match(
    fromBundle.status,
    { reason: 'DefinitionInvalid', message: /spec\.pod\.hostNetwork: is not allowed/ },
    'an invalid definition, told by the bundle',
  )
  t.equal(fromApp.status.message, fromBundle.status.message, 'as the app tells it')
  t.strictSame(server.errors(), [], 'nothing logged at level error')
  t.comment(
    `measured: spawn to the first 200 on /sync ${firstOk.toFixed(0)} ms (with the "serving" line polled every 20 ms)`,
  )
})

t.test('dist/isolation-gate.js alone passes where its target refuses, and fails where it answers', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-gate-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  copyFileSync(join(repoRoot, 'dist/isolation-gate.js'), join(dir, 'isolation-gate.js'))
  const listener = createServer((socket) => socket.end())
  listener.listen(0, '127.0.0.1')
  await once(listener, 'listening')
  t.teardown(() => listener.close())
  const open = (listener.address() as AddressInfo).port
  const closed = createServer()
  closed.listen(0, '127.0.0.1')
  await once(closed, 'listening')
  const refused = (closed.address() as AddressInfo).port
  closed.close()
  // This machine's own IPv6 addresses are none of the gate's business here.
  const env = { PATH: process.env.PATH, POLICY_ENFORCES_IPV6: 'true' }
  const run = (extra: Record<string, string>) =>
    spawnSync(process.execPath, [join(dir, 'isolation-gate.js')], {
      cwd: dir,
      env: { ...env, ...extra },
      encoding: 'utf8',
    })
  const passed = run({ ISOLATION_GATE_TARGET: `127.0.0.1:${refused}` })
  t.equal(passed.status, 0, passed.stderr)
  t.match(JSON.parse(passed.stdout), {
    isolationGate: 'enforced',
    target: `127.0.0.1:${refused}`,
    lastReachedAt: null,
    attempts: 3,
    reached: 0,
  })
  const failed = run({ ISOLATION_GATE_TARGET: `127.0.0.1:${open}`, ISOLATION_GATE_TIMEOUT_SECONDS: '1' })
  t.equal(failed.status, 1)
  t.equal(failed.stdout, '')
  t.match(
    failed.stderr,
    new RegExp(
      `^Egress isolation is not in force: 127\\.0\\.0\\.1:${open} \\(ISOLATION_GATE_TARGET\\), which every egress mode forbids, accepted (\\d+) of \\1 connections over 1 s`,
    ),
  )
})
