// The import rules of eslint.config.js (docs/design.md, "The layers"; docs/development.md, "Test layout"): a bad
// import of each kind, linted as if it were in the file named, gets the one finding its rule writes; a good one
// gets none. ESLint runs with the project's configuration as `npm run lint` reads it, less type information (no
// import rule needs it, and a type-aware run costs a program per file) and less every rule but the two that hold the
// layers.
import { join } from 'node:path'
import { ESLint } from 'eslint'
import t from 'tap'
import tseslint from 'typescript-eslint'
import { repoRoot } from '../support/kube/controlplane.js'

const eslint = new ESLint({
  cwd: repoRoot,
  overrideConfig: tseslint.configs.disableTypeChecked,
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports' || ruleId === 'no-restricted-syntax',
})

/** Each finding of `code` in the file `path` (from the repository's root), as `rule: message`. */
async function findings(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(repoRoot, path) })
  return result!.messages.map((m) => `${m.ruleId}: ${m.message}`)
}

const CHALLENGE =
  'src/challenge/ is the pure core: it imports only src/config/ and src/contract/ (and itself), no HTTP server, logger, metrics, files or sockets.'
const CONFIG = 'src/config/ imports only src/contract/.'
const CONTRACT = 'src/contract/ is the wire and CRD contract: it imports nothing of the project.'
const SHELL =
  'src/http/, src/gateway/ and the preview (src/preview.ts, src/preview-command.ts) import neither each other nor a process entry.'
const FLAT = 'This folder is flat: the import rules of eslint.config.js count one ../ to leave it.'
const SUITE =
  'A suite (the fast one, test/cluster/, test/node/, test/load/) imports only its own files, test/support/, test/helpers/ and the code under test: what suites share lives in test/support/.'
const SHARED = 'test/support/ and test/helpers/ import no suite: a suite imports them, never the other way round.'
const BENCH = 'The benchmarks import test/support/ and test/helpers/, never a suite.'

/** The finding of no-restricted-imports for `source`, with the pattern's message. */
const restricted = (source: string, message: string) =>
  `no-restricted-imports: '${source}' import is restricted from being used by a pattern. ${message}`

t.test('src/challenge/: no HTTP server, logger, metrics, files, sockets, nor a layer above', async (t) => {
  const code = [
    "import Fastify from 'fastify'",
    "import cors from '@fastify/cors'",
    "import pino from 'pino'",
    "import { Registry } from 'prom-client'",
    "import { readFileSync } from 'node:fs'",
    "import { readFile } from 'node:fs/promises'",
    "import { connect } from 'net'",
    "import { buildApp } from '../http/app.js'",
    "import { kubeClient } from '../gateway/kube.js'",
    "import { EX_CONFIG } from '../main.js'",
    "export { preview } from '../preview.js'",
  ].join('\n')
  t.strictSame(await findings('src/challenge/lifecycle.ts', code), [
    restricted('fastify', CHALLENGE),
    restricted('@fastify/cors', CHALLENGE),
    restricted('pino', CHALLENGE),
    restricted('prom-client', CHALLENGE),
    restricted('node:fs', CHALLENGE),
    restricted('node:fs/promises', CHALLENGE),
    restricted('net', CHALLENGE),
    restricted('../http/app.js', CHALLENGE),
    restricted('../gateway/kube.js', CHALLENGE),
    restricted('../main.js', CHALLENGE),
    restricted('../preview.js', CHALLENGE),
  ])
  const good = [
    "import { createHash } from 'node:crypto'",
    "import type { IPod } from 'kubernetes-models/v1/Pod'",
    "import { loadConfig } from '../config/config.js'",
    "import { Phase } from '../contract/api.js'",
    "import { field } from './read.js'",
  ].join('\n')
  t.strictSame(await findings('src/challenge/lifecycle.ts', good), [], 'config, contract, itself and node:crypto')
})

t.test('src/config/ imports only the contract; src/contract/ nothing of the project', async (t) => {
  t.strictSame(
    await findings(
      'src/config/config-docs.ts',
      "import { EX_CONFIG } from '../main.js'\nimport { sync } from '../challenge/hooks.js'\nimport { DNS_LABEL } from '../contract/patterns.js'\nimport { VARIABLES } from './config.js'",
    ),
    [restricted('../main.js', CONFIG), restricted('../challenge/hooks.js', CONFIG)],
  )
  t.strictSame(
    await findings(
      'src/contract/protocol.ts',
      "import { ChallengeSpecSchema } from '../challenge/api.js'\nexport { loadConfig } from '../config/config.js'\nimport { NON_EMPTY_LABEL_VALUE } from './patterns.js'\nimport { Type } from '@sinclair/typebox'",
    ),
    [restricted('../challenge/api.js', CONTRACT), restricted('../config/config.js', CONTRACT)],
  )
})

t.test('src/http/, src/gateway/ and the preview: neither each other nor a process entry', async (t) => {
  t.strictSame(
    await findings(
      'src/http/routes/metacontroller-hooks.ts',
      "import { start } from '../../main.js'\nimport { kubeClient } from '../../gateway/kube.js'\nimport { sync } from '../../challenge/hooks.js'",
    ),
    [restricted('../../main.js', SHELL), restricted('../../gateway/kube.js', SHELL)],
  )
  t.strictSame(
    await findings(
      'src/gateway/app.ts',
      "import { buildApp } from '../http/app.js'\nimport { GATE } from '../gate.js'\nimport { GATE_CONTAINER } from '../challenge/gate.js'",
    ),
    [restricted('../http/app.js', SHELL), restricted('../gate.js', SHELL)],
  )
  t.strictSame(
    await findings(
      'src/preview.ts',
      "import { buildApp } from './http/app.js'\nimport { sync } from './challenge/hooks.js'",
    ),
    [restricted('./http/app.js', SHELL)],
  )
  t.strictSame(
    await findings(
      'src/preview-command.ts',
      "import { preview } from './preview.js'\nimport { runCli } from './cli.js'\nimport { GATE } from './gate.js'",
    ),
    [restricted('./cli.js', SHELL), restricted('./gate.js', SHELL)],
  )
  t.strictSame(await findings('src/http/app.ts', "import { runCli } from '../preview-command.js'"), [
    restricted('../preview-command.js', SHELL),
  ])
})

t.test('a suite imports no other suite; what they share is in test/support/', async (t) => {
  t.strictSame(
    await findings(
      'test/node/internal.test.ts',
      "import { createNamespace } from '../cluster/harness.js'\nimport { startNodeSuite } from '../support/node/harness.js'\nimport { world } from '../helpers/world.js'\nimport { loadConfig } from '../../src/config/config.js'\nimport { table } from './routing.js'",
    ),
    [restricted('../cluster/harness.js', SUITE)],
  )
  t.strictSame(await findings('test/cluster/lifecycle.test.ts', "import { send } from '../load/flood.js'"), [
    restricted('../load/flood.js', SUITE),
  ])
  t.strictSame(await findings('test/cluster/lifecycle.test.ts', "import { drive } from '../e2e/harness.js'"), [
    restricted('../e2e/harness.js', SUITE),
  ])
  t.strictSame(
    await findings(
      'test/challenge/hooks.test.ts',
      "import { startSuite } from '../cluster/harness.js'\nimport { sample } from '../http/http-client.js'",
    ),
    [restricted('../cluster/harness.js', SUITE)],
    'the fast suite is one suite: test/challenge/ may import test/http/',
  )
  t.strictSame(
    await findings(
      'test/fixtures.test.ts',
      "import { probe } from './load/harness.js'\nimport { startWorld } from './e2e/harness.js'",
    ),
    [restricted('./load/harness.js', SUITE)],
  )
})

t.test('test/support/ and test/helpers/ import no suite; the benchmarks import no suite', async (t) => {
  t.strictSame(
    await findings(
      'test/support/kube/harness.ts',
      "import { table } from '../../cluster/printing.js'\nimport { Json } from '../../helpers/world.js'\nimport { Rest } from './rest.js'\nimport { resourceByName } from '../simulator/index.js'",
    ),
    [restricted('../../cluster/printing.js', SHARED)],
  )
  t.strictSame(await findings('test/support/processes.ts', "import { table } from '../node/routing.js'"), [
    restricted('../node/routing.js', SHARED),
  ])
  t.strictSame(await findings('test/helpers/world.ts', "import { startWorld } from '../e2e/harness.js'"), [
    restricted('../e2e/harness.js', SHARED),
  ])
  t.strictSame(
    await findings(
      'bench/shedding/run.ts',
      "import { probe } from '../../test/load/harness.js'\nimport { startServer } from '../../test/support/load/harness.js'\nimport { example } from '../../test/helpers/examples.js'",
    ),
    [restricted('../../test/load/harness.js', BENCH)],
  )
  t.strictSame(await findings('bench/server/processes.ts', "import { banner } from '../../test/node/timing.js'"), [
    restricted('../../test/node/timing.js', BENCH),
  ])
})

t.test('the folders whose rules count ../ are flat', async (t) => {
  t.strictSame(await findings('src/challenge/deeper/rule.ts', 'export const rule = 1'), [
    `no-restricted-syntax: ${FLAT}`,
  ])
  t.strictSame(await findings('test/cluster/deeper/x.test.ts', 'export const x = 1'), [`no-restricted-syntax: ${FLAT}`])
  t.strictSame(await findings('test/support/kube/deeper/x.ts', 'export const x = 1'), [`no-restricted-syntax: ${FLAT}`])
  t.strictSame(await findings('src/http/routes/deeper.ts', 'export const x = 1'), [], 'src/http/ may nest')
})
