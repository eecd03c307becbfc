// `npm run build` bundles the server into dist/server.js (scripts/bundle.mjs): that one file, copied alone into an
// empty directory (no node_modules, no package.json), starts and answers every hook and probe as the pod runs it.
// The time from spawn to the first 200 on /sync is reported, not asserted: `npm run bench` measures cold starts.
import t from 'tap'
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AUTH, repoRoot, send, startServer } from './harness.js'

const FIRST_SYNC = readFileSync(join(repoRoot, 'test/fixtures/sync-new.json'))
const CUSTOMIZE = readFileSync(join(repoRoot, 'test/fixtures/customize.json'))

t.test('dist/server.js alone, in an empty directory, serves the hooks and the probes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-bundle-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  copyFileSync(join(repoRoot, 'dist/server.js'), join(dir, 'server.js'))
  const spawned = performance.now()
  const server = await startServer(t, {}, { entry: join(dir, 'server.js'), cwd: dir })
  const sync = await send(server.port, 'POST', '/sync', { body: FIRST_SYNC, headers: AUTH })
  const firstOk = performance.now() - spawned
  t.equal(sync.statusCode, 200, '/sync')
  t.match(JSON.parse(sync.body), { status: { phase: 'Pending' }, children: Array })
  t.equal((await send(server.port, 'POST', '/customize', { body: CUSTOMIZE, headers: AUTH })).statusCode, 200, '/customize')
  t.equal((await send(server.opsPort, 'GET', '/readyz')).statusCode, 200, '/readyz')
  const metrics = await send(server.opsPort, 'GET', '/metrics')
  t.match(metrics.body, /challenge_hooks_hook_duration_seconds_count\{hook="sync",code="200"\} 1/, '/metrics counts the call')
  t.same(server.errors(), [], 'nothing logged at level error')
  t.comment(`measured: spawn to the first 200 on /sync ${firstOk.toFixed(0)} ms (with the "serving" line polled every 20 ms)`)
})
