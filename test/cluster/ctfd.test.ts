// The CTFd plugin (integrations/ctfd/) in a real CTFd, on the gateway and the real control plane: an admin creates
// an instanced challenge through CTFd's API; two teams open its modal in Chromium, start, see Running with their own
// endpoints and renew; one team's flag is accepted and stops its instance; the other team's submission of that flag
// is refused and reported on the plugin's admin page; an expired instance's flag is still accepted; the admin page
// shows, stops and restarts instances.
//
// CTFd comes from the environment as an operator's `pip install` gives it: CTFD_DIR (a CTFd 3.8 source tree) and
// CTFD_PYTHONPATH (the libraries it needs beyond Debian's python3 packages; .ci/run unpacks both into a cache). It
// runs on Debian's /usr/bin/python3 (CTFD_PYTHON), with SQLite, UPDATE_CHECK=false, on loopback, from a copy of the
// tree (CTFd keeps its cache in the tree's .data), one server for the file. The stand-ins of two imports CTFd makes
// at start (nh3, boto3) are in test/support/ctfd/stand-ins/.
import { spawn } from 'node:child_process'
import { createHmac } from 'node:crypto'
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { chromium, request, type BrowserContext, type Frame, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { loadGatewayConfig } from '../../src/config/config-gateway.js'
import { buildGatewayApp } from '../../src/gateway/app.js'
import { flagChecker } from '../../src/gateway/flag-client.js'
import { loadPlatforms } from '../../src/gateway/identity.js'
import { kubeClient } from '../../src/gateway/kube.js'
import { challengeName } from '../../src/gateway/names.js'
import { expectedHost } from '../helpers/contract.js'
import { repoRoot } from '../support/kube/controlplane.js'
import { startSuite, type Suite } from '../support/kube/harness.js'
import { toolMissing } from '../support/tools.js'

const CTFD_DIR = process.env.CTFD_DIR ?? ''
const CTFD_PYTHONPATH = process.env.CTFD_PYTHONPATH ?? ''
const PYTHON = process.env.CTFD_PYTHON ?? '/usr/bin/python3'
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const FLAG_VERIFY_TOKEN = 'flag-verify-token-of-the-ctfd-suite-0123456789'
const KEY = 'platform-key-of-the-ctfd-suite-0123456789abcdef'
const HS256 = 'the HS256 token key of the ctfd suite, 32+ characters'
const AUDIENCE = 'https://gateway.ctfd.test'
const PASSWORD = 'a password of the suite'

const missing = !existsSync(join(CTFD_DIR, 'CTFd', '__init__.py'))
  ? 'CTFD_DIR names no CTFd source tree (set CTFD_DIR and CTFD_PYTHONPATH; integrations/ctfd/README.md)'
  : !existsSync(PYTHON)
    ? `${PYTHON} is missing (Debian's python3 with CTFd's packages)`
    : undefined
if (missing !== undefined) {
  t.plan(0, toolMissing(missing))
} else {
  await run()
}

async function run(): Promise<void> {
  const suite = await startSuite(t, { components: ['gateway'], hookEnv: { FLAG_VERIFY_TOKEN } })
  // Everything in one subtest: tap ends its root test when it goes idle after an assertion, which the awaits
  // between the steps below would do.
  await t.test('an instanced challenge in a real CTFd', async (t) => body(t, suite))
}

async function body(t: Test, suite: Suite): Promise<void> {
  const s = await suite.scenario(t, 'ctfd')
  await s.create(s.definition('web-login'))

  // The gateway (as the player page's test runs it), its platform "ctfd" scoped to the scenario's namespace.
  const kubeconfig = new KubeConfig()
  kubeconfig.loadFromFile(suite.kubeconfig)
  const gatewayApp = await buildGatewayApp(
    loadGatewayConfig({ GATEWAY_AUDIENCE: AUDIENCE, GATEWAY_PLATFORMS_FILE: '-' }),
    {
      kube: kubeClient(kubeconfig, 10_000),
      platforms: await loadPlatforms(
        JSON.stringify({ platforms: [{ name: 'ctfd', namespaces: [s.ns], keys: [KEY], tokens: { hs256: HS256 } }] }),
      ),
      logger: false,
      checkFlag: flagChecker(`${suite.hookUrl}/flags/verify`, FLAG_VERIFY_TOKEN, 10_000),
    },
  )
  t.teardown(() => gatewayApp.close())
  await gatewayApp.listen({ port: 0, host: '127.0.0.1' })
  const gateway = `http://127.0.0.1:${(gatewayApp.server.address() as AddressInfo).port}`

  // CTFd: a copy of the tree with the plugin linked in, a fresh database, loopback only.
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-ctfd-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(CTFD_DIR, join(dir, 'ctfd'), {
    recursive: true,
    filter: (source) => !source.endsWith('/.data') && !source.endsWith('/.git'),
  })
  symlinkSync(join(repoRoot, 'integrations', 'ctfd'), join(dir, 'ctfd', 'CTFd', 'plugins', 'challenge_hooks'))
  const ctfdProcess = spawn(PYTHON, [join(repoRoot, 'test', 'support', 'ctfd', 'serve.py')], {
    cwd: join(dir, 'ctfd'),
    env: {
      PATH: process.env.PATH,
      HOME: dir,
      PYTHONPATH: [
        join(dir, 'ctfd'),
        join(repoRoot, 'test', 'support', 'ctfd', 'stand-ins'),
        ...CTFD_PYTHONPATH.split(':').filter((entry) => entry !== ''),
      ].join(':'),
      SECRET_KEY: 'the ctfd suite secret key',
      DATABASE_URL: `sqlite:///${join(dir, 'ctfd.db')}`,
      REDIS_URL: '',
      UPDATE_CHECK: 'false',
      CHALLENGE_HOOKS_GATEWAY_URL: gateway,
      CHALLENGE_HOOKS_GATEWAY_KEY: KEY,
      CHALLENGE_HOOKS_TOKEN_KEY: HS256,
      CHALLENGE_HOOKS_AUDIENCE: AUDIENCE,
      CHALLENGE_HOOKS_PLATFORM: 'ctfd',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let ctfdLog = ''
  ctfdProcess.stderr.on('data', (chunk: Buffer) => (ctfdLog = (ctfdLog + chunk.toString()).slice(-8000)))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        if (ctfdProcess.exitCode !== null) return resolve()
        ctfdProcess.once('exit', () => resolve())
        ctfdProcess.kill('SIGTERM')
      }),
  )
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    ctfdProcess.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /listening (\d+)/.exec(out)
      if (match !== null) resolve(Number(match[1]))
    })
    ctfdProcess.once('exit', (code) => reject(new Error(`CTFd exited (${code}):\n${ctfdLog}`)))
  })
  const ctfd = `http://127.0.0.1:${port}`

  // The admin's side, as CTFd's own pages and API take it: /setup with the form's nonce, then an API token.
  // Playwright's request context keeps the session cookie as a browser would (werkzeug closes every connection,
  // which node's fetch races with when it reuses one).
  const http = await request.newContext({ baseURL: ctfd })
  t.teardown(() => http.dispose())
  const nonceOf = (html: string) => (/csrfNonce': "([0-9a-f]+)"/.exec(html) as RegExpExecArray)[1] as string
  const setupPage = await (await http.get('/setup')).text()
  const setup = await http.post('/setup', {
    form: {
      nonce: (/name="nonce"[^>]*value="([0-9a-f]+)"/.exec(setupPage) as RegExpExecArray)[1] as string,
      ctf_name: 'challenge-hooks suite',
      ctf_description: '',
      user_mode: 'teams',
      name: 'admin',
      email: 'admin@example.org',
      password: PASSWORD,
      ctf_theme: 'core',
      theme_color: '',
      start: '',
      end: '',
    },
    maxRedirects: 0,
  })
  // Top-level assertions would end tap's root test while it awaits: a step that fails throws instead.
  if (setup.status() !== 302) throw new Error(`CTFd's /setup answered ${setup.status()}:\n${ctfdLog}`)
  const madeToken = await http.post('/api/v1/tokens', {
    headers: { 'csrf-token': nonceOf(await (await http.get('/admin/statistics')).text()) },
    data: { description: 'the suite' },
  })
  const apiToken = ((await madeToken.json()) as { data: { value: string } }).data.value
  const api = async (method: string, path: string, body?: unknown) => {
    const answer = await http.fetch(`/api/v1${path}`, {
      method,
      headers: { authorization: `Token ${apiToken}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { data: body }),
    })
    return {
      status: answer.status(),
      body: (await answer.json()) as { success: boolean; data: Record<string, unknown> },
    }
  }

  await t.test(
    'the challenge type is registered, its form lists the definitions, and a definition that is not a name is refused',
    async (t) => {
      const types = await api('GET', '/challenges/types')
      const instanced = types.body.data.instanced as { create: string }
      t.strictSame(
        instanced.create.match(/<option value="[^"]*">[^<]*<\/option>/g),
        ['<option value="web-login">web-login (PerOwner flags)</option>'],
        "the admin form lists the gateway's definitions",
      )
      const refused = await api('POST', '/challenges', {
        name: 'bad',
        category: 'web',
        description: '',
        value: 100,
        state: 'visible',
        type: 'instanced',
        definition: 'Web Login',
      })
      t.strictSame(refused, {
        status: 400,
        body: {
          message: "definition must be a ChallengeDefinition's name (lowercase letters, digits and '-', at most 63)",
        },
      })
    },
  )

  const created = await api('POST', '/challenges', {
    name: 'Web login',
    category: 'web',
    description: 'Log in as the admin.',
    value: 100,
    state: 'visible',
    type: 'instanced',
    definition: 'web-login',
    stop_on_correct: true,
  })
  if (created.status !== 200) throw new Error(`the challenge was not created: ${JSON.stringify(created.body)}`)
  const challengeId = created.body.data.id as number

  // Two teams of one player each, made by the admin.
  const teams: { name: string; id: number; user: string }[] = []
  for (const name of ['red', 'blue']) {
    const user = await api('POST', '/users', {
      name: `${name}-player`,
      email: `${name}@example.org`,
      password: PASSWORD,
    })
    const team = await api('POST', '/teams', { name, email: `${name}-team@example.org`, password: PASSWORD })
    await api('POST', `/teams/${team.body.data.id as number}/members`, { user_id: user.body.data.id })
    teams.push({ name, id: team.body.data.id as number, user: `${name}-player` })
  }
  const [red, blue] = teams as [(typeof teams)[0], (typeof teams)[0]]
  const instanceOf = (team: { id: number }) => challengeName('web-login', { kind: 'Team', id: String(team.id) })
  const commandOf = (team: { id: number }) =>
    `http://${expectedHost(suite.flagSecret, { namespace: s.ns, definition: 'web-login', kind: 'Team', id: String(team.id) }, 'challenges.localhost')}/`
  const flagOf = (team: { id: number }) =>
    `flag{${createHmac('sha256', suite.flagSecret).update(`${s.ns}/web-login/Team/${team.id}`).digest('hex').slice(0, 32)}}`

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  })
  t.teardown(() => browser.close())
  /** Every URL the browser asked for: no key, and no token but in a fragment. */
  const urls: string[] = []
  async function loggedIn(name: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext()
    t.teardown(() => context.close())
    context.on('request', (request) => urls.push(request.url()))
    const tab = await context.newPage()
    await tab.goto(`${ctfd}/login`)
    await tab.fill('input[name=name]', name)
    await tab.fill('input[name=password]', PASSWORD)
    await Promise.all([tab.waitForURL((url) => !url.pathname.startsWith('/login')), tab.click('input[type=submit]')])
    return { context, page: tab }
  }
  const text = async (where: Frame, id: string) => (await where.locator(`#${id}`).textContent()) as string
  async function until(where: Frame, id: string, value: string, timeout = 60_000): Promise<void> {
    await where.waitForFunction(
      (wanted) =>
        (
          globalThis as unknown as { document: { getElementById(id: string): { textContent: string | null } | null } }
        ).document.getElementById(wanted.id)?.textContent === wanted.value,
      { id, value },
      { timeout },
    )
  }
  /** Opens the challenge's modal on /challenges and returns the player page's frame inside it. */
  async function openModal(tab: Page): Promise<Frame> {
    await tab.goto(`${ctfd}/challenges`)
    await tab.click('button.challenge-button')
    const iframe = await tab.waitForSelector('iframe.challenge-hooks-player')
    const frame = (await iframe.contentFrame()) as Frame
    await frame.waitForURL((url) => url.origin === gateway)
    return frame
  }
  async function submit(tab: Page, flag: string): Promise<{ status: string; message: string }> {
    const nonce = await tab.evaluate<string>('init.csrfNonce')
    const answer = await tab.request.post(`${ctfd}/api/v1/challenges/attempt`, {
      headers: { 'csrf-token': nonce, 'content-type': 'application/json' },
      data: { challenge_id: challengeId, submission: flag },
    })
    return ((await answer.json()) as { data: { status: string; message: string } }).data
  }

  const players = { red: await loggedIn(red.user), blue: await loggedIn(blue.user) }

  await t.test('two teams open the modal, start, see Running with their own endpoints, and renew', async (t) => {
    for (const [team, { page: tab }] of [
      [red, players.red],
      [blue, players.blue],
    ] as const) {
      const frame = await openModal(tab)
      await until(frame, 'phase', 'No instance yet', 30_000)
      await frame.click('#start')
      await until(frame, 'phase', 'Running')
      t.equal(await text(frame, 'command'), commandOf(team), `${team.name} sees its own endpoint`)
      await frame.click('#renew')
      await s.until(instanceOf(team), (st) => st.renewalsApplied === 1, `${team.name} renewed once`)
    }
    t.not(commandOf(red), commandOf(blue))
    const stored = (await s.get(instanceOf(red))) as unknown as { spec: { owner: unknown } }
    t.strictSame(stored.spec.owner, { kind: 'Team', id: String(red.id) }, 'the owner is the CTFd team')
    t.strictSame(
      urls.filter((url) => url.includes(KEY) || url.includes(HS256) || /[?&]token=/.test(url)),
      [],
      'no key in any URL the browser asked for, and no token in a query',
    )
    const publicData = await (await players.red.page.request.get(`${ctfd}/api/v1/challenges/${challengeId}`)).text()
    t.strictSame(
      [publicData.includes(KEY), publicData.includes(HS256), publicData.includes('/plugins/challenge_hooks/play/')],
      [false, false, true],
      "the challenge's public data holds no key, only the plugin's own route for the frame",
    )
  })

  async function adminPage(): Promise<Page> {
    const { page: tab } = await loggedIn('admin')
    await tab.goto(`${ctfd}/admin/challenge_hooks`)
    return tab
  }
  const rowsOf = async (tab: Page) =>
    (await tab.locator('#challenge-hooks-instances tbody tr[data-owner]').all()).length === 0
      ? []
      : await Promise.all(
          (await tab.locator('#challenge-hooks-instances tbody tr[data-owner]').all()).map(async (row) => [
            (await row.locator('.team').textContent()) as string,
            (await row.locator('.challenge').textContent()) as string,
            (await row.locator('.phase').textContent()) as string,
          ]),
        )
  const admin = await adminPage()

  await t.test('the admin page lists the instances by team, challenge and phase', async (t) => {
    t.strictSame(await rowsOf(admin), [
      [`blue (Team:${blue.id})`, 'Web login', 'Running (Ready)'],
      [`red (Team:${red.id})`, 'Web login', 'Running (Ready)'],
    ])
  })

  await t.test("red's flag is accepted and stops its instance", async (t) => {
    t.strictSame(await submit(players.red.page, flagOf(red)), { status: 'correct', message: 'Correct' })
    const status = await s.until(instanceOf(red), (st) => st.phase === 'Deleted', 'stopped on the correct flag')
    t.equal(status.reason, 'Solved')
  })

  await t.test("blue's submission of red's flag is refused and reported", async (t) => {
    t.strictSame(await submit(players.blue.page, flagOf(red)), { status: 'incorrect', message: 'Incorrect' })
    await admin.goto(`${ctfd}/admin/challenge_hooks`)
    t.strictSame(await admin.locator('#challenge-hooks-shared-flags .reason').allTextContents(), [
      `blue (Team:${blue.id}) submitted the flag of red (Team:${red.id}) for Web login`,
    ])
  })

  await t.test('the admin page stops and restarts an instance', async (t) => {
    const row = `#challenge-hooks-instances tr[data-owner="Team:${blue.id}"]`
    await Promise.all([admin.waitForURL(/message=/), admin.click(`${row} button.stop`)])
    t.equal(
      await admin.locator('#challenge-hooks-message').textContent(),
      `stop of Web login for Team:${blue.id}: requested`,
    )
    await s.until(instanceOf(blue), (st) => st.phase === 'Deleted' && st.reason === 'Stopped', 'stopped by the admin')
    await admin.goto(`${ctfd}/admin/challenge_hooks`)
    t.strictSame(await rowsOf(admin), [
      [`blue (Team:${blue.id})`, 'Web login', 'Deleted (Stopped)'],
      [`red (Team:${red.id})`, 'Web login', 'Deleted (Solved)'],
    ])
    await Promise.all([admin.waitForURL(/message=/), admin.click(`${row} button.restart`)])
    await s.until(instanceOf(blue), (st) => st.phase === 'Running', 'restarted by the admin', 60_000)
  })

  await t.test("after blue's instance expired, blue's flag is still accepted", async (t) => {
    await s.advance(1800)
    const status = await s.until(instanceOf(blue), (st) => st.phase === 'Deleted', 'expired')
    t.equal(status.reason, 'Expired')
    t.strictSame(await submit(players.blue.page, flagOf(blue)), { status: 'correct', message: 'Correct' })
  })
}
