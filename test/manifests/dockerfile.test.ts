// The Dockerfile, read as text (no Docker engine here): multi-stage on the Node major of .node-version, every base
// pinned by digest, a runtime of node and the bundled server only (no node_modules: dist/server.js carries its
// dependencies), non-root, exec-form start, and every file it copies from the build context present and let
// through .dockerignore.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { repoRoot } from '../helpers/manifests.js'
import { GATE_COMMAND } from '../../src/challenge/gate.js'

interface Instruction {
  keyword: string
  args: string
}
interface Stage {
  from: string
  name?: string
  instructions: Instruction[]
}

function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = []
  const logical = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
  for (const line of logical) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? []
    if (keyword.toUpperCase() === 'FROM') {
      const [, from = '', name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args) ?? []
      stages.push({ from, name, instructions: [] })
    } else {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args })
    }
  }
  return stages
}

const stages = parseDockerfile(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'))
const final = stages.at(-1) as Stage
const all = (stage: Stage, keyword: string) =>
  stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args)
const nodeMajor = readFileSync(join(repoRoot, '.node-version'), 'utf8').trim().split('.')[0] as string
/** The Node major of an official node image or a distroless Node image, or undefined for any other image. */
const majorOf = (image: string) => /^(?:node:|gcr\.io\/distroless\/nodejs)(\d+)[-:.@]/.exec(image)?.[1]

t.test(`multi-stage, every stage on Node ${nodeMajor} (.node-version), every base pinned by digest`, async (t) => {
  t.ok(stages.length >= 2, 'at least two FROM')
  const bases = stages.map((s) => s.from).filter((from) => !stages.some((o) => o.name === from))
  for (const base of bases) {
    t.strictSame(majorOf(base), nodeMajor, `${base}: Node ${nodeMajor}`)
    t.match(base, /@sha256:[0-9a-f]{64}$/, `${base}: pinned by digest`)
  }
  t.strictSame(majorOf(final.from), nodeMajor, 'the runtime is a Node image')
})

t.test('build stage: npm ci and npm run build', async (t) => {
  const build = stages.find((s) => all(s, 'RUN').some((r) => /npm run build/.test(r))) as Stage
  t.ok(build, 'a stage runs npm run build')
  t.match(all(build, 'RUN').join('\n'), /npm ci(?! --omit)/, 'with all dependencies (TypeScript is a devDependency)')
})

t.test('final stage: the bundled server, gateway and isolation gate and package.json, nothing else', async (t) => {
  t.strictSame(all(final, 'RUN'), [], 'nothing runs in the final stage (no install)')
  const copies = all(final, 'COPY')
  t.strictSame(
    copies,
    [
      'package.json ./',
      '--from=build /app/dist/server.js ./dist/server.js',
      '--from=build /app/dist/gateway-server.js ./dist/gateway-server.js',
      '--from=build /app/dist/isolation-gate.js ./dist/isolation-gate.js',
    ],
    'package.json (its "type": "module") and the three bundles',
  )
  t.strictSame(all(final, 'WORKDIR'), ['/app'], 'in /app')
  // The command of every instance's init container (src/challenge/gate.ts) names node and the gate's bundle there.
  t.strictSame(GATE_COMMAND, ['/nodejs/bin/node', '/app/dist/isolation-gate.js'], "the gate's command")
  t.ok(
    [...all(final, 'ENTRYPOINT')].some((form) => (JSON.parse(form) as string[])[0] === GATE_COMMAND[0]),
    "node where the gate's command names it",
  )
  t.notOk(
    copies.some((c) => /node_modules/.test(c)),
    'no node_modules: the bundle carries its dependencies',
  )
})

t.test('final stage: production, non-root, ports 8080 and 8081, exec-form node dist/server.js', async (t) => {
  t.ok(
    all(final, 'ENV').some((e) => /NODE_ENV[= ]production/.test(e)),
    'NODE_ENV=production',
  )
  const user = all(final, 'USER').at(-1) ?? 'root'
  t.match(user, /^(10001|node|nonroot)(:\d+)?$/, 'non-root USER')
  t.strictSame(all(final, 'EXPOSE'), ['8080 8081'])
  const start = [...all(final, 'ENTRYPOINT'), ...all(final, 'CMD')].flatMap((form) => JSON.parse(form) as string[])
  t.strictSame(start, ['/nodejs/bin/node', 'dist/server.js'], 'exec form, node itself as PID 1 (no npm, no shell)')
})

t.test('what it copies from the build context exists and passes .dockerignore', async (t) => {
  const ignore = readFileSync(join(repoRoot, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
  t.equal(ignore[0], '*', '.dockerignore lets nothing through by default')
  const sources = stages
    .flatMap((s) => all(s, 'COPY'))
    .filter((c) => !c.startsWith('--from='))
    .flatMap((c) =>
      c
        .split(/\s+/)
        .filter((w) => !w.startsWith('--'))
        .slice(0, -1),
    )
  t.strictSame([...new Set(sources)].sort(), [
    'package-lock.json',
    'package.json',
    'scripts',
    'src',
    'tsconfig.build.json',
    'tsconfig.json',
  ])
  for (const source of sources) {
    t.ok(existsSync(join(repoRoot, source)), `${source} exists`)
    t.ok(ignore.includes(`!${source}`), `${source} is let through .dockerignore`)
  }
})
