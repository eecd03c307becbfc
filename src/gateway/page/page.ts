/**
 * GET /play/{definition}: the player page, one self-contained document (its style and script inline, nothing
 * loaded from elsewhere) that a platform links to or embeds in an iframe. It holds no data and needs no
 * credentials: the player's token reaches its script by the URL fragment or postMessage (./script.ts).
 *
 * Each answer carries a fresh nonce, and the Content-Security-Policy runs only the page's own script and style with
 * it, lets it call this origin only, and lets it be framed by the CORS allow-list's origins (by any page when the
 * list is empty: the page holds nothing until a token is handed to it, and a token is accepted by postMessage only
 * from the list's origins).
 */
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { DefinitionParams } from '../schemas.js'
import { PAGE_SCRIPT } from './script.js'
import { PAGE_STYLE } from './style.js'

/** An origin as a CSP source: scheme, host, port; anything else (a `;` would start another directive) is left out. */
const ORIGIN = /^https?:\/\/[A-Za-z0-9*.-]+(:\d{1,5})?$/

/** Who may frame the page: the allow-list's origins; any page when there is no list; none when none is usable. */
function ancestors(origins: readonly string[]): string {
  if (origins.length === 0) return '*'
  const usable = origins.filter((origin) => ORIGIN.test(origin))
  return usable.length === 0 ? "'none'" : usable.join(' ')
}

/** The policy of one answer: `nonce` is that answer's, `origins` the CORS allow-list. */
export function pagePolicy(nonce: string, origins: readonly string[]): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${ancestors(origins)}`,
  ].join('; ')
}

const escapeHtml = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;')

/** The document for `definition` (a name the route has checked), with the answer's nonce and the allowed origins. */
export function playerPage(definition: string, nonce: string, origins: readonly string[]): string {
  // JSON inside a script element: a `<` could close it, so none is left as it is.
  const config = JSON.stringify({ definition, origins }).replaceAll('<', '\\u003c')
  const name = escapeHtml(definition)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${name}: your instance</title>
<style nonce="${nonce}">${PAGE_STYLE}</style>
</head>
<body>
<main>
<h1>${name}</h1>
<p id="notice" role="alert" hidden></p>
<section aria-labelledby="phase">
<h2 id="phase">Loading</h2>
<p id="detail"></p>
<ol id="steps" aria-label="Steps of the start" hidden></ol>
<div id="connect" hidden>
<p class="muted">Connect with:</p>
<div class="command"><code id="command"></code><button id="copy" type="button" class="secondary">Copy</button></div>
<p id="countdown"></p>
</div>
<p id="facts" class="muted"></p>
</section>
<div id="actions">
<div class="action" id="action-start" hidden>
<button id="start" type="button" aria-describedby="why-start">Start</button>
<span id="why-start"></span>
</div>
<div class="action" id="action-renew" hidden>
<button id="renew" type="button" aria-describedby="why-renew">Renew</button>
<span id="why-renew"></span>
</div>
<div class="action" id="action-restart" hidden>
<button id="restart" type="button" class="secondary" aria-describedby="why-restart">Restart</button>
<span id="why-restart"></span>
</div>
<div class="action" id="action-stop" hidden>
<button id="stop" type="button" class="secondary" aria-describedby="why-stop">Stop</button>
<span id="why-stop"></span>
</div>
</div>
<p id="announce" class="visually-hidden" aria-live="polite"></p>
</main>
<script type="application/json" id="page-config">${config}</script>
<script nonce="${nonce}">${PAGE_SCRIPT}</script>
</body>
</html>
`
}

export async function playerPageRoute(app: FastifyInstance, options: { origins: readonly string[] }): Promise<void> {
  app.get<{ Params: DefinitionParams }>(
    '/play/:definition',
    { schema: { params: DefinitionParams, hide: true } },
    async (request, reply) => {
      const nonce = randomBytes(16).toString('base64')
      return reply
        .header('content-type', 'text/html; charset=utf-8')
        .header('content-security-policy', pagePolicy(nonce, options.origins))
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .header('x-content-type-options', 'nosniff')
        .send(playerPage(request.params.definition, nonce, options.origins))
    },
  )
}
