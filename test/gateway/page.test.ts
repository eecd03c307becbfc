// The player page (src/gateway/page/): what GET /play/{definition} answers (the document, its policy, its framing),
// the definition name checked, and the page's script read as text: no URL it builds carries anything but the API's
// path, and the document loads nothing from elsewhere. Its behaviour in a real browser:
// test/cluster/player-page.test.ts.
import { Script } from 'node:vm'
import t from 'tap'
import { pagePolicy } from '../../src/gateway/page/page.js'
import { PAGE_SCRIPT } from '../../src/gateway/page/script.js'
import { startFakeApiServer } from './fake-apiserver.js'
import { gatewayApp } from './support.js'

const nonceOf = (html: string) => /<script nonce="([^"]+)">/.exec(html)?.[1]

t.test(
  'GET /play/{definition}: the page, without credentials, with a fresh nonce in its policy each time',
  async (t) => {
    const fake = await startFakeApiServer(t)
    const app = await gatewayApp(t, fake)
    const first = await app.inject({ method: 'GET', url: '/play/web-login' })
    const second = await app.inject({ method: 'GET', url: '/play/web-login' })
    t.equal(first.statusCode, 200)
    const nonce = nonceOf(first.body) as string
    t.match(nonce, /^[A-Za-z0-9+/]{22}==$/, '16 random bytes')
    t.not(nonceOf(second.body), nonce, 'another nonce for another answer')
    t.strictSame(
      [
        first.headers['content-type'],
        first.headers['content-security-policy'],
        first.headers['cache-control'],
        first.headers['referrer-policy'],
        first.headers['x-content-type-options'],
        first.headers['x-frame-options'],
      ],
      [
        'text/html; charset=utf-8',
        `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; ` +
          `img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors *`,
        'no-store',
        'no-referrer',
        'nosniff',
        undefined,
      ],
    )
    t.equal(first.body.split(`nonce="${nonce}"`).length - 1, 2, 'the style and the script carry the nonce')
    t.match(first.body, '<title>web-login: your instance</title>')
    t.match(
      first.body,
      '<script type="application/json" id="page-config">{"definition":"web-login","origins":[]}</script>',
    )
    t.strictSame(fake.requests, [], 'the page asks the API server nothing')
  },
)

t.test('the page may be framed by the CORS allow-list, and takes tokens by postMessage from it only', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake, {
    GATEWAY_CORS_ORIGINS: 'https://ctf.example.org, http://localhost:8000',
  })
  const answer = await app.inject({ method: 'GET', url: '/play/web' })
  t.match(
    answer.headers['content-security-policy'],
    /; frame-ancestors https:\/\/ctf\.example\.org http:\/\/localhost:8000$/,
  )
  t.match(answer.body, '{"definition":"web","origins":["https://ctf.example.org","http://localhost:8000"]}')
  t.match(PAGE_SCRIPT, 'if (config.origins.indexOf(event.origin) < 0) return\n')
})

t.test('an origin that is not one (a `;`, a path) is left out of the policy; none usable: no framing', async (t) => {
  t.strictSame(
    [
      pagePolicy('n', ['https://ctf.example.org; script-src *', 'https://ok.example.org']).split('; ').at(-1),
      pagePolicy('n', ['https://ctf.example.org/path']).split('; ').at(-1),
      pagePolicy('n', ['https://ctf.example.org:8443', 'https://*.example.org']).split('; ').at(-1),
    ],
    [
      'frame-ancestors https://ok.example.org',
      "frame-ancestors 'none'",
      'frame-ancestors https://ctf.example.org:8443 https://*.example.org',
    ],
  )
})

t.test('the allow-list is written into the page as JSON that cannot close its script element', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake, { GATEWAY_CORS_ORIGINS: 'https://x.example.org/</script><script>alert(1)' })
  const answer = await app.inject({ method: 'GET', url: '/play/web' })
  t.match(
    answer.body,
    '{"definition":"web","origins":["https://x.example.org/\\u003c/script>\\u003cscript>alert(1)"]}</script>',
  )
  t.equal(answer.body.split('</script>').length - 1, 2, 'two script elements, each closed once')
})

t.test('a name that is not a definition name: 400 naming the problem, as JSON', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  for (const name of ['Web', 'web_login', '-web', 'a'.repeat(64), '%3Cscript%3E']) {
    const answer = await app.inject({ method: 'GET', url: `/play/${name}` })
    t.strictSame(
      [answer.statusCode, answer.headers['content-type'], answer.json().error],
      [400, 'application/json; charset=utf-8', 'Bad Request'],
      name,
    )
    t.match(answer.json().message, /^params\.definition must (match pattern|NOT have more than 63 characters)/, name)
  }
})

t.test("the page's script: it compiles, and no URL it builds holds anything but the API's path", async (t) => {
  t.doesNotThrow(() => new Script(PAGE_SCRIPT), 'valid JavaScript (compiled, not run)')
  const literals = [...PAGE_SCRIPT.matchAll(/'((?:[^'\\\n]|\\.)*)'/g)].map((match) => match[1] as string)
  t.strictSame(
    literals.filter((literal) => literal.startsWith('/')),
    // '/' is base64url's `_` turned back into base64 to read the token's exp.
    ['/v1/instances/', '/', '/events', '/renew', '/restart', '/stop'],
    'the paths it calls',
  )
  t.strictSame(
    literals.filter((literal) => /[?&]|token=/.test(literal) || /^https?:/.test(literal)),
    [],
    'no query string, no other origin',
  )
  const fetches = [...PAGE_SCRIPT.matchAll(/fetch\(([^,)]+)[,)]/g)].map((match) => match[1])
  t.strictSame(fetches, ['api + path', "api + '/events'"], 'every fetch goes to the API on this origin')
  t.strictSame(
    [...PAGE_SCRIPT.matchAll(/\btoken\b[^\n]*/g)]
      .map((match) => match[0])
      .filter((line) => /url|location|href/i.test(line)),
    [],
    'the token is never put in a location',
  )
  t.match(PAGE_SCRIPT, "var all = { authorization: 'Bearer ' + token }", 'the token travels in the header')
  t.match(PAGE_SCRIPT, "history.replaceState(null, '', location.pathname)", 'the fragment is taken off the address bar')
})

t.test('the document loads nothing from elsewhere and is usable by keyboard and screen readers', async (t) => {
  const fake = await startFakeApiServer(t)
  const app = await gatewayApp(t, fake)
  const html = (await app.inject({ method: 'GET', url: '/play/web' })).body
  t.strictSame(html.match(/\b(src|href|action)=|url\(|@import|https?:\/\//g), null, 'no external resource')
  t.strictSame(
    [...html.matchAll(/<button id="([a-z]+)" type="button"/g)].map((match) => match[1]),
    ['copy', 'start', 'renew', 'restart', 'stop'],
    'real buttons',
  )
  t.match(html, '<p id="announce" class="visually-hidden" aria-live="polite"></p>')
  t.match(html, '<meta name="viewport" content="width=device-width, initial-scale=1">')
  t.match(html, 'button:focus-visible')
})
