// `npm run test:mutation`, before StrykerJS and again in its sandbox (its buildCommand, on the mutated code): every
// domain test of test/challenge and then the decision properties of test/fuzz, bundled with what they import
// into one plain JavaScript file, test/mutation/out/domain.mjs. StrykerJS's tap runner starts a process per test
// file for every mutant; under tsx each costs 2 to 4 s to start, the bundle about 1 s, while the tests themselves
// take about half a second. tap and fast-check stay outside (the runner's hook and tap's own setup need the real
// packages). test/mutation/mutation.env makes that process stop at the first failure and run 50 worlds per
// property (200 to 600 in `npm test`).
import { readdirSync } from 'node:fs'
import { build } from 'esbuild'

const root = process.cwd()
const tests = readdirSync(`${root}/test/challenge`).filter((name) => name.endsWith('.test.ts')).sort()
const entry = [...tests.map((name) => `test/challenge/${name}`), 'test/fuzz/decisions.test.ts']
  .map((path) => `import './${path}'`)
  .join('\n')

await build({
  stdin: { contents: entry, resolveDir: root, sourcefile: 'domain.ts', loader: 'ts' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outfile: `${root}/test/mutation/out/domain.mjs`,
  external: ['tap', 'fast-check'],
  // The bundled CommonJS dependencies call require.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'warning',
})
