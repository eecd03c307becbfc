// The copies of src/config/config.ts's table of variables: docs/configuration.md and the comments of
// manifests/config.env are what `npm run write:config-docs` writes, and every default they show is the one loadConfig
// applies.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { configEnv, configurationPage } from '../../src/config/config-docs.js'
import { GATEWAY_VARIABLES, loadGatewayConfig } from '../../src/config/config-gateway.js'
import { loadConfig, VARIABLES } from '../../src/config/config.js'

const root = join(import.meta.dirname, '../..')
const read = (file: string) => readFileSync(join(root, file), 'utf8')
const RUN = 'run `npm run write:config-docs` and commit what it writes'

t.test('docs/configuration.md is the table', async (t) => {
  t.equal(read('docs/configuration.md'), configurationPage(), RUN)
  const page = configurationPage()
  for (const name of Object.keys(VARIABLES)) t.match(page, `| \`${name}\` |`, `${name} has its row`)
})

t.test("manifests/config.env: its comments are the table's, its values its own", async (t) => {
  const file = read('manifests/config.env')
  t.equal(file, configEnv(file), RUN)
  t.equal(configEnv(file), configEnv(configEnv(file)), 'rendering again changes nothing')
  t.match(
    configEnv('#OWNER_BUDGET=5\n# a hand-written comment\nPORT=1\n'),
    /\n# PORT: listen port[^]*\nPORT=1\n\n[^]*#OWNER_BUDGET=5\n$/,
    'the values kept, in the order of the table',
  )
  t.throws(
    () => configEnv('OWNER_BUDGETS=3\n'),
    /manifests\/config\.env sets OWNER_BUDGETS, which src\/config\/config\.ts does not read/,
  )
})

t.test('every default the docs show as a value is the default loadConfig applies', async (t) => {
  const defaults = loadConfig({})
  let checked = 0
  for (const [name, variable] of Object.entries(VARIABLES)) {
    const shown: string = 'default' in variable ? variable.default : (variable.parser.shown ?? 'unset')
    const value = /^`([^`]+)`$/.exec(shown)?.[1]
    if (value === undefined || Object.hasOwn(VARIABLES, value)) continue
    t.strictSame(loadConfig({ [name]: value }), defaults, `${name}=${value} is the default`)
    checked++
  }
  t.ok(checked >= 20, `${checked} defaults checked`)
  t.strictSame(
    loadConfig({ BASE_DOMAIN: 'ctf.example.org' }).tlsBaseDomain,
    'ctf.example.org',
    'TLS_BASE_DOMAIN: BASE_DOMAIN',
  )
  t.strictSame(
    loadConfig({ TLS_ROUTING: 'GatewayAPI', GATEWAY: 'gw/ctf' }).tlsRouting,
    defaults.tlsRouting,
    'TLS_ROUTING: GatewayAPI',
  )
})

t.test(
  "the gateway's variables: each has its row, and each default shown is the one loadGatewayConfig applies",
  async (t) => {
    const page = configurationPage()
    const required = { GATEWAY_AUDIENCE: 'https://gateway.test', GATEWAY_PLATFORMS_FILE: '/platforms.yaml' }
    const defaults = loadGatewayConfig(required)
    let checked = 0
    for (const [name, variable] of Object.entries(GATEWAY_VARIABLES)) {
      const shown = variable.parser.shown ?? 'unset'
      t.match(page, `| \`${name}\` | ${shown} |`, `${name} has its row`)
      const value = /^`([^`]+)`$/.exec(shown)?.[1]
      if (value === undefined) continue
      t.strictSame(loadGatewayConfig({ ...required, [name]: value }), defaults, `${name}=${value} is the default`)
      checked++
    }
    t.strictSame(
      checked,
      8,
      'PORT, HOST, LOG_LEVEL, BODY_LIMIT, GATEWAY_RATE_LIMIT, OWNER_BUDGET and the two in seconds',
    )
  },
)
