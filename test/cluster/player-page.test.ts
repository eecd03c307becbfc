// The player page (GET /play/{definition}) in a real browser, on the real API server: Chromium from the
// distribution driven by playwright-core (no browser download), the gateway against the suite's kube-apiserver, the
// hook server and its controller. What a player sees, read from the DOM: no instance, Start by keyboard, the start
// step by step then Running with the endpoint, the command and the countdown, Renew, Stop and Restart doing their
// job, the queue with its position, an error in words; two players in two browser contexts who never see each
// other's instance; the page embedded by a platform (another origin) that hands it tokens by postMessage, and a token
// that expires while the page is open. No request of any page carries a token in its URL.
//
// UPDATE_SCREENSHOTS=1 saves a screenshot of each state to docs/images/player-page-<state>.png.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { KubeConfig } from '@kubernetes/client-node'
import { SignJWT } from 'jose'
import { chromium, type BrowserContext, type Frame, type Page } from 'playwright-core'
import t from 'tap'
import { loadGatewayConfig } from '../../src/config/config-gateway.js'
import { buildGatewayApp } from '../../src/gateway/app.js'
import { loadPlatforms } from '../../src/gateway/identity.js'
import { kubeClient } from '../../src/gateway/kube.js'
import { challengeName } from '../../src/gateway/names.js'
import { expectedHost } from '../helpers/contract.js'
import { startSuite } from '../support/kube/harness.js'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const AUDIENCE = 'https://gateway.test'
const HS256 = 'the shared HS256 key of the suite platform, 32+ characters'
const EXPIRED = 'Your session has expired. Reload this page from the CTF platform to go on.'
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1'

// An owner holds one instance at a time, so a second one queues; pods come up as a kubelet brings them up (bound,
// containers started, then ready), so the start's steps are seen.
const suite = await startSuite(t, {
  components: ['gateway'],
  hookEnv: { OWNER_BUDGET: '1' },
  kubelet: { startup: () => ({ runningMs: 1500, readyMs: 4000 }) },
})
const s = await suite.scenario(t, 'player-page')
await s.create(s.definition('web-login'))
await s.create(s.definition('pwn-echo'))
await s.create(s.definition('pwn-echo', {}, 'gone-soon'))

// The platform: another origin, whose page embeds the player page and hands it the tokens the test queues.
const tokens: string[] = []
let gatewayOrigin = ''
const platform = createServer((request, response) => {
  if (request.url === '/token') {
    const next = tokens.shift()
    response.writeHead(next === undefined ? 404 : 200, { 'content-type': 'text/plain' }).end(next ?? '')
    return
  }
  response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<title>A CTF platform</title>
<iframe id="challenge" title="web-login" src="${gatewayOrigin}/play/web-login" width="360" height="600"></iframe>
<script>
const GATEWAY = ${JSON.stringify(gatewayOrigin)}
const frame = document.getElementById('challenge')
async function sendToken() {
  const answer = await fetch('/token')
  if (answer.status !== 200) return
  frame.contentWindow.postMessage({ type: 'challenge-hooks-token', token: await answer.text() }, GATEWAY)
}
window.addEventListener('message', (event) => {
  if (event.origin !== GATEWAY || event.source !== frame.contentWindow) return
  if (event.data.type === 'challenge-hooks-ready' || event.data.type === 'challenge-hooks-token-expired') sendToken()
})
window.sendToken = sendToken
</script>`)
})
await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve))
t.teardown(() => new Promise((resolve) => platform.close(resolve)))
const platformOrigin = `http://127.0.0.1:${(platform.address() as AddressInfo).port}`

// The gateway, on the real API server (its ServiceAccount's rights: test/cluster/gateway.test.ts).
const kubeconfig = new KubeConfig()
kubeconfig.loadFromFile(suite.kubeconfig)
const app = await buildGatewayApp(
  loadGatewayConfig({
    GATEWAY_AUDIENCE: AUDIENCE,
    GATEWAY_PLATFORMS_FILE: '-',
    GATEWAY_CORS_ORIGINS: platformOrigin,
    OWNER_BUDGET: '1',
  }),
  {
    kube: kubeClient(kubeconfig, 10_000),
    platforms: await loadPlatforms(
      JSON.stringify({ platforms: [{ name: 'ctf', namespaces: [s.ns], tokens: { hs256: HS256 } }] }),
    ),
    logger: false,
  },
)
t.teardown(() => app.close())
await app.listen({ port: 0, host: '127.0.0.1' })
gatewayOrigin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

/** A token as the platform mints it for `sub`, living `seconds`. */
const minted: string[] = []
async function mint(sub: string, seconds = 600): Promise<string> {
  const now = Math.floor(Date.now() / 1000)
  const token = await new SignJWT({ sub })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer('ctf')
    .setAudience(AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + seconds)
    .sign(new TextEncoder().encode(HS256))
  minted.push(token)
  return token
}

// Root (CI's containers) has no user namespaces for Chromium's sandbox.
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
})
t.teardown(() => browser.close())

/** Every URL a page of the suite asked for, and every JSON answer of /v1, by context. */
const urls: string[] = []
const answers = new Map<BrowserContext, { url: string; body: Record<string, unknown> }[]>()
async function context(): Promise<BrowserContext> {
  // A phone's width.
  const made = await browser.newContext({ viewport: { width: 360, height: 640 } })
  t.teardown(() => made.close())
  const seen: { url: string; body: Record<string, unknown> }[] = []
  answers.set(made, seen)
  made.on('request', (request) => urls.push(request.url()))
  made.on('response', (response) => {
    if (!response.url().includes('/v1/') || response.url().endsWith('/events')) return
    response.json().then(
      (body: Record<string, unknown>) => seen.push({ url: response.url(), body }),
      () => undefined,
    )
  })
  // Every text the phase heading shows, in order: the states a player saw go by. (Browser code is passed as text
  // here: the tests are type-checked without the DOM's types.)
  await made.addInitScript({
    content: `document.addEventListener('DOMContentLoaded', () => {
      const phase = document.getElementById('phase')
      window.phases = []
      new MutationObserver(() => window.phases.push(phase.textContent))
        .observe(phase, { childList: true, characterData: true, subtree: true })
    })`,
  })
  return made
}

/**
 * The little of the DOM the predicates below read in the page, typed here (the tests are type-checked without the
 * DOM's types). Predicates are functions, not text: the page's policy forbids eval, which a text predicate needs.
 */
interface InPage {
  document: {
    getElementById(id: string): { textContent: string | null; hidden: boolean } | null
    querySelectorAll(selector: string): { length: number }
  }
}

type Where = Page | Frame
const text = async (where: Where, id: string) => (await where.locator(`#${id}`).textContent()) as string
const shown = async (where: Where, id: string) => where.locator(`#${id}`).isVisible()
const enabled = async (where: Where, id: string) => where.locator(`#${id}`).isEnabled()
/** Waits until element `id` reads `value`. */
async function until(where: Where, id: string, value: string, timeout = 60_000): Promise<void> {
  await where.waitForFunction(
    (wanted) => (globalThis as unknown as InPage).document.getElementById(wanted.id)?.textContent === wanted.value,
    { id, value },
    {
      timeout,
    },
  )
}
/** Each action's button: shown, enabled, and the reason beside it. */
async function actions(where: Where) {
  const each = async (action: string) => [
    await shown(where, `action-${action}`),
    await enabled(where, action),
    await text(where, `why-${action}`),
  ]
  return {
    start: await each('start'),
    renew: await each('renew'),
    restart: await each('restart'),
    stop: await each('stop'),
  }
}
async function screenshot(page: Page, state: string): Promise<void> {
  if (SCREENSHOTS)
    await page.screenshot({ path: new URL(`../../docs/images/player-page-${state}.png`, import.meta.url).pathname })
}

const owner = (id: string) => ({ namespace: s.ns, definition: 'web-login', kind: 'User', id })
const webCommand = (id: string) => `http://${expectedHost(suite.flagSecret, owner(id), 'challenges.localhost')}/`
const ALICE = challengeName('web-login', { kind: 'User', id: 'alice' })
const BOB = challengeName('web-login', { kind: 'User', id: 'bob' })

const alice = await context()
const bob = await context()
const alicePage = await alice.newPage()
const bobPage = await bob.newPage()

t.test(
  'without a token the page waits for one, and takes none by postMessage from an origin not allowed',
  async (t) => {
    const page = await (await context()).newPage()
    await page.goto(`${gatewayOrigin}/play/web-login`)
    await until(page, 'phase', 'Waiting for your session')
    const why = 'Open this page from the challenge on your CTF platform.'
    t.strictSame(
      [await text(page, 'detail'), (await actions(page)).start, await shown(page, 'action-renew')],
      [why, [true, false, why], false],
    )
    const token = await mint('User:mallory')
    // The page's own origin is not in the allow-list: its message is dropped (the page's listener runs first).
    await page.evaluate(`new Promise((resolve) => {
    window.addEventListener('message', () => setTimeout(resolve, 0), { once: true })
    window.postMessage({ type: 'challenge-hooks-token', token: ${JSON.stringify(token)} }, '*')
  })`)
    t.strictSame(
      [await text(page, 'phase'), urls.filter((url) => url.includes('/v1/'))],
      ['Waiting for your session', []],
    )
  },
)

t.test('Start by keyboard, the start step by step, Running with the endpoint and command, Renew', async (t) => {
  await alicePage.goto(`${gatewayOrigin}/play/web-login#token=${await mint('User:alice')}`)
  await until(alicePage, 'phase', 'No instance yet')
  t.equal(alicePage.url(), `${gatewayOrigin}/play/web-login`, 'the fragment is off the address bar')
  t.strictSame(
    [await text(alicePage, 'detail'), await actions(alicePage)],
    [
      'Start one when you are ready.',
      {
        start: [true, true, ''],
        renew: [false, false, ''],
        restart: [false, false, ''],
        stop: [false, false, ''],
      },
    ],
  )
  await screenshot(alicePage, 'none')

  await alicePage.evaluate('window.phases.splice(0)')
  await alicePage.keyboard.press('Tab')
  t.equal(await alicePage.evaluate('document.activeElement.id'), 'start', 'Tab reaches Start')
  t.equal(
    await alicePage.evaluate('getComputedStyle(document.activeElement).outlineStyle'),
    'solid',
    'the focus is visible',
  )
  await alicePage.keyboard.press('Enter')

  // The start's steps, while the instance is admitted and Pending.
  await alicePage.waitForFunction(
    () => (globalThis as unknown as InPage).document.querySelectorAll('#steps li').length === 5,
    undefined,
    {
      timeout: 60_000,
    },
  )
  const steps = await alicePage.locator('#steps li').allTextContents()
  t.strictSame(
    steps.map((step) => step.split(': ')[0]),
    ['A slot of your budget', 'Placed on a node', 'Containers started', 'Ready inside', 'Reachable from outside'],
  )
  t.equal(steps[0], 'A slot of your budget: done')
  await screenshot(alicePage, 'starting')

  await until(alicePage, 'phase', 'Running')
  const phases = await alicePage.evaluate<string[]>('window.phases')
  const changes = phases.filter((phase, index) => phase !== phases[index - 1])
  t.match(changes.join(' '), /^(Requested )?Starting Running$/, `Starting, then Running (${changes.join(', ')})`)

  const status = await s.status(ALICE)
  t.strictSame(
    [
      await text(alicePage, 'detail'),
      await text(alicePage, 'command'),
      await shown(alicePage, 'steps'),
      await text(alicePage, 'facts'),
      await text(alicePage, 'announce'),
      await actions(alicePage),
    ],
    [
      status.message,
      webCommand('alice'),
      false,
      'Budget: 1 of 1 in use. Renewals: 0 of 2.',
      `Running. ${status.message}`,
      {
        start: [false, false, ''],
        renew: [true, true, ''],
        restart: [true, true, ''],
        stop: [true, true, ''],
      },
    ],
  )
  t.match(await text(alicePage, 'countdown'), /^Expires in (29|30):[0-5]\d$/)

  await alice.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: gatewayOrigin })
  await alicePage.click('#copy')
  await until(alicePage, 'copy', 'Copied')
  t.equal(await alicePage.evaluate('navigator.clipboard.readText()'), webCommand('alice'), 'the copy button')
  await screenshot(alicePage, 'running')

  await alicePage.click('#renew')
  await until(alicePage, 'facts', 'Budget: 1 of 1 in use. Renewals: 1 of 2.')
  t.equal((await s.status(ALICE)).renewalsApplied, 1, 'the API server has the renewal')
})

t.test('two players in two browsers: each sees their own instance, never the other', async (t) => {
  await bobPage.goto(`${gatewayOrigin}/play/web-login#token=${await mint('User:bob')}`)
  await until(bobPage, 'phase', 'No instance yet', 30_000)
  await bobPage.click('#start')
  await until(bobPage, 'phase', 'Running')
  t.strictSame(
    [await text(bobPage, 'command'), await text(alicePage, 'command'), await text(alicePage, 'phase')],
    [webCommand('bob'), webCommand('alice'), 'Running'],
  )
  t.not(webCommand('bob'), webCommand('alice'))
  // The answers that name an instance (a 404 of "no instance yet" names none).
  const names = (context: BrowserContext) => [
    ...new Set(answers.get(context)?.flatMap((answer) => (answer.body.name === undefined ? [] : [answer.body.name]))),
  ]
  t.strictSame([names(alice), names(bob)], [[ALICE], [BOB]], 'every answer of /v1 each browser got')
})

t.test('the queue with its position; Stop; an error in words', async (t) => {
  const page = await alice.newPage()
  await page.goto(`${gatewayOrigin}/play/pwn-echo#token=${await mint('User:alice')}`)
  await until(page, 'phase', 'No instance yet', 30_000)
  await page.click('#start')
  await until(page, 'phase', 'Queued')
  t.strictSame(
    [await text(page, 'detail'), await shown(page, 'connect')],
    ['Position 1 in your queue: it starts when your budget has room.', false],
  )
  await screenshot(page, 'queued')
  await page.click('#stop')
  await until(page, 'phase', 'Ended')
  await page.close()

  await alicePage.click('#stop')
  await until(alicePage, 'phase', 'Ended')
  const status = await s.status(ALICE)
  t.strictSame(
    [status.phase, status.reason, await text(alicePage, 'detail'), await shown(alicePage, 'connect')],
    ['Deleted', 'Stopped', status.message, false],
  )
  t.strictSame((await actions(alicePage)).stop, [true, false, 'The instance is already stopped.'])
  t.strictSame((await actions(alicePage)).renew, [
    true,
    false,
    'Only a running instance can be renewed; this one is Deleted.',
  ])
  await screenshot(alicePage, 'ended')

  // carol's instance of a definition an author then deletes.
  const carol = await (await context()).newPage()
  await carol.goto(`${gatewayOrigin}/play/gone-soon#token=${await mint('User:carol')}`)
  await until(carol, 'phase', 'No instance yet', 30_000)
  await carol.click('#start')
  await until(carol, 'phase', 'Running')
  await suite.kubectl(['-n', s.ns, 'delete', 'challengedefinition', 'gone-soon'])
  await s.advance(0)
  await until(carol, 'phase', 'Error')
  const error = await s.status(challengeName('gone-soon', { kind: 'User', id: 'carol' }))
  t.strictSame(
    [error.reason, await text(carol, 'detail')],
    ['DefinitionNotFound', `The challenge no longer exists. ${error.message}`],
  )
  await screenshot(carol, 'error')
})

t.test('embedded by a platform: tokens by postMessage, one that expires while the page is open; Restart', async (t) => {
  const page = await (await context()).newPage()
  tokens.push(await mint('User:alice', 8))
  await page.goto(platformOrigin)
  const frame = await (async () => {
    await page.waitForSelector('#challenge')
    return (await (await page.$('#challenge'))?.contentFrame()) as Frame
  })()
  await until(frame, 'phase', 'Ended', 30_000)
  t.strictSame(await shown(frame, 'notice'), false)
  // The token's 8 seconds pass with the page open.
  await until(frame, 'notice', EXPIRED, 30_000)
  t.strictSame(
    [await shown(frame, 'notice'), (await actions(frame)).restart, await text(frame, 'announce')],
    [true, [true, false, 'Your session has expired.'], EXPIRED],
  )
  await screenshot(page, 'expired')

  // The platform hands over a new token: the page goes on.
  tokens.push(await mint('User:alice'))
  await page.evaluate('window.sendToken()')
  await frame.waitForFunction(
    () => (globalThis as unknown as InPage).document.getElementById('notice')?.hidden,
    undefined,
    {
      timeout: 30_000,
    },
  )
  await until(frame, 'phase', 'Ended', 30_000)
  t.strictSame((await actions(frame)).restart, [true, true, ''])

  // Restart, from the embedded page: a new run of the stopped instance.
  await frame.click('#restart')
  await until(frame, 'phase', 'Running')
  t.strictSame([await text(frame, 'command'), (await s.status(ALICE)).run], [webCommand('alice'), 1])
})

t.test('no page ever put a token in a URL', async (t) => {
  t.ok(minted.length >= 6, `${minted.length} tokens minted`)
  t.strictSame(
    urls.filter((url) => minted.some((token) => url.includes(token))),
    [],
  )
  t.strictSame(
    urls.filter((url) => url.includes('?')),
    [],
  )
})
