// The Dockerfile, read as text (no Docker engine here): multi-stage, a Node 22
// runtime with production dependencies only, non-root, exec-form start, and every
// file it copies from the build context present and let through .dockerignore.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { repoRoot } from './helpers.js'

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
const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword).map((i) => i.args)

t.test('multi-stage, final stage on Node 22', async (t) => {
  t.ok(stages.length >= 2, 'at least two FROM')
  t.match(final.from, /^node:22([-.@]|$)/)
  t.ok(stages.every((s) => /^node:22/.test(s.from) || stages.some((o) => o.name === s.from)), 'every stage on Node 22')
  const bases = stages.map((s) => s.from).filter((from) => !stages.some((o) => o.name === from))
  for (const base of bases) t.match(base, /^node:22-bookworm-slim@sha256:[0-9a-f]{64}$/, `${base}: pinned by digest`)
  t.equal(new Set(bases).size, 1, 'one base image for every stage')
})

t.test('build stage: npm ci and npm run build', async (t) => {
  const build = stages.find((s) => all(s, 'RUN').some((r) => /npm run build/.test(r))) as Stage
  t.ok(build, 'a stage runs npm run build')
  t.match(all(build, 'RUN').join('\n'), /npm ci(?! --omit)/, 'with all dependencies (TypeScript is a devDependency)')
})

t.test('final stage: production dependencies only', async (t) => {
  const runs = all(final, 'RUN')
  t.notOk(runs.some((r) => /npm (ci|install|i)\b(?!.*--omit=dev)/.test(r)), 'no install of devDependencies in the final stage')
  const ownInstall = runs.some((r) => /npm ci .*--omit=dev/.test(r))
  const copied = all(final, 'COPY').find((c) => /--from=(\S+)\s+\S*node_modules/.test(c))
  const source = stages.find((s) => s.name === /--from=(\S+)/.exec(copied ?? '')?.[1])
  t.ok(ownInstall || (source !== undefined && all(source, 'RUN').some((r) => /npm ci .*--omit=dev/.test(r))), 'npm ci --omit=dev, here or in the stage node_modules comes from')
  t.ok(all(final, 'COPY').some((c) => /--from=\S+\s+\S*dist\s/.test(c)), 'dist/ comes from the build stage')
  t.notOk(all(final, 'COPY').some((c) => /(^|\s)(src|test|\.)(\/)?\s/.test(c)), 'no sources or build context wholesale')
})

t.test('final stage: production, non-root, ports 8080 and 8081, exec-form node dist/server.js', async (t) => {
  t.ok(all(final, 'ENV').some((e) => /NODE_ENV[= ]production/.test(e)), 'NODE_ENV=production')
  const user = all(final, 'USER').at(-1) ?? 'root'
  t.match(user, /^(10001|node)(:\d+)?$/, 'non-root USER')
  t.strictSame(all(final, 'EXPOSE'), ['8080 8081'])
  const start = [...all(final, 'ENTRYPOINT'), ...all(final, 'CMD')]
  t.strictSame(start, ['["node", "dist/server.js"]'], 'exec form, node itself as PID 1 (no npm, no shell)')
  t.strictSame(JSON.parse(start[0] ?? 'null'), ['node', 'dist/server.js'])
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
    .flatMap((c) => c.split(/\s+/).filter((w) => !w.startsWith('--')).slice(0, -1))
  t.strictSame([...new Set(sources)].sort(), ['package-lock.json', 'package.json', 'scripts', 'src', 'tsconfig.build.json', 'tsconfig.json'])
  for (const source of sources) {
    t.ok(existsSync(join(repoRoot, source)), `${source} exists`)
    t.ok(ignore.includes(`!${source}`), `${source} is let through .dockerignore`)
  }
})
