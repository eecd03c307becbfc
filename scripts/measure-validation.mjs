// `node scripts/measure-validation.mjs` (after `npm run build`): what validation costs the hook server.
//
//  1. Cold start: `node dist/server.js` spawned, to the first 200 on /sync (test/fixtures/sync-new.json): the
//     median and the least of COLD_STARTS runs, and the CPU time the server had used by then (all its threads:
//     less disturbed than the wall clock on a busy machine).
//  2. A request's validation, per call, on test/fixtures/sync-running.json (a Running instance: its parent,
//     children, and the definition among the related objects): the request schema with the hook's ajv options,
//     and the definition's spec with ajv and with TypeBox's compiler; the median of ROUNDS timings of CALLS calls.
//  3. What compiling each costs once (at the first call in src/, in the build for dist/server.js).
//
// Nothing here asserts: it prints figures to compare before and after a change.
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { request } from 'node:http'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv } from 'ajv'
import { TypeCompiler } from '@sinclair/typebox/compiler'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const COLD_STARTS = Number(process.env.COLD_STARTS ?? 9)
const ROUNDS = 7
const CALLS = 20_000
const TOKEN = 'measure-0123456789abcdef0123456789abcdef'

const { SyncRequestSchema } = await import(join(root, 'dist/contract/protocol.js'))
const { DefinitionSpecSchema } = await import(join(root, 'dist/contract/api.js'))
const OPTIONS = { coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false, strict: false }

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

function post(port, path, body) {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode))
      },
    )
    req.on('error', () => resolve(0))
    req.end(body)
  })
}

/** CPU time of every thread of process `pid` so far, ms (Linux: /proc/<pid>/task/<tid>/schedstat, ns on CPU). */
function cpuMs(pid) {
  let ns = 0
  for (const tid of readdirSync(`/proc/${pid}/task`))
    ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])
  return ns / 1e6
}

async function coldStart(port) {
  const body = readFileSync(join(root, 'test/fixtures/sync-new.json'))
  const env = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    FLAG_SECRET: 'measure-fedcba9876543210fedcba9876543210',
    HOOK_TOKEN: TOKEN,
    HOST: '127.0.0.1',
    PORT: String(port),
    OPS_PORT: String(port + 1),
    LOG_LEVEL: 'warn',
  }
  const started = performance.now()
  const child = spawn(process.execPath, [join(root, 'dist/server.js')], { env, stdio: 'ignore' })
  try {
    for (;;) {
      if (performance.now() - started > 10_000) throw new Error('no 200 within 10 s')
      if ((await post(port, '/sync', body)) === 200) return [performance.now() - started, cpuMs(child.pid)]
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
  } finally {
    child.kill('SIGKILL')
    await new Promise((resolve) => child.once('exit', resolve))
  }
}

function perCall(check, value) {
  const timings = []
  for (let round = 0; round < ROUNDS; round++) {
    let ok = true
    const start = performance.now()
    for (let i = 0; i < CALLS; i++) ok = check(value) && ok
    timings.push(((performance.now() - start) * 1000) / CALLS)
    if (!ok) throw new Error('the value does not validate')
  }
  return median(timings)
}

function compileTime(compile) {
  const start = performance.now()
  const check = compile()
  return [check, performance.now() - start]
}

const starts = []
for (let i = 0; i < COLD_STARTS; i++) starts.push(await coldStart(18_480 + 2 * i))
const [wall, cpu] = [starts.map(([ms]) => ms), starts.map(([, ms]) => ms)]
console.log(
  `cold start, spawn to the first 200 on /sync: median ${median(wall).toFixed(0)} ms, least ${Math.min(...wall).toFixed(0)} ms; ` +
    `the server's CPU by then: median ${median(cpu).toFixed(0)} ms (${wall.map((ms) => ms.toFixed(0)).join(', ')})`,
)

const sync = JSON.parse(readFileSync(join(root, 'test/fixtures/sync-running.json'), 'utf8'))
const definition = Object.values(sync.related['ChallengeDefinition.challenge-hooks.dev/v1alpha1'])[0].spec
// As src/ compiles them at first use (no optimising pass), and as the build does for dist/server.js (ajv's default
// optimising pass; the definition's with verbose errors, for the words told to its author).
const ajvOf = (options) => new Ajv({ ...OPTIONS, ...options, validateSchema: false })
const [ajvRequest, ajvRequestMs] = compileTime(() => ajvOf({ code: { optimize: false } }).compile(SyncRequestSchema))
const [builtRequest, builtRequestMs] = compileTime(() => ajvOf({}).compile(SyncRequestSchema))
const [ajvDefinition, ajvDefinitionMs] = compileTime(() =>
  ajvOf({ verbose: true, code: { optimize: false } }).compile(DefinitionSpecSchema),
)
const [builtDefinition, builtDefinitionMs] = compileTime(() => ajvOf({ verbose: true }).compile(DefinitionSpecSchema))
const [typeboxDefinition, typeboxDefinitionMs] = compileTime(() => TypeCompiler.Compile(DefinitionSpecSchema))
const figures = [
  ['request (SyncRequestSchema), ajv as src/ compiles it', ajvRequestMs, perCall(ajvRequest, sync)],
  ['request (SyncRequestSchema), ajv as the build compiles it', builtRequestMs, perCall(builtRequest, sync)],
  ['definition spec, ajv as src/ compiles it', ajvDefinitionMs, perCall(ajvDefinition, definition)],
  ['definition spec, ajv as the build compiles it', builtDefinitionMs, perCall(builtDefinition, definition)],
  [
    'definition spec, TypeBox compiler (before)',
    typeboxDefinitionMs,
    perCall((value) => typeboxDefinition.Check(value), definition),
  ],
]
for (const [what, compileMs, us] of figures)
  console.log(`${what}: ${us.toFixed(2)} µs a call; compiled in ${compileMs.toFixed(1)} ms`)
