// `npm run test:mutation`, before StrykerJS and again in its sandbox (its buildCommand, on the mutated code): the
// tests that kill mutants, bundled with what they import into two plain JavaScript files that StrykerJS's tap runner
// runs in this order, stopping at the first that fails:
//
//   test/mutation/out/domain.mjs  every test of test/challenge, then the properties of test/fuzz that check decisions
//                                 against the contract (DOMAIN_PROPERTIES): about a second and a half
//   test/mutation/out/e2e.mjs     every scenario of test/e2e: the real hook server over HTTP, driven by the
//                                 Metacontroller simulator; it runs only for a mutant the domain tests left alive
//
// The tap runner starts a process per test file for every mutant; under tsx each costs 2 to 4 s to start, a bundle
// about 1 s. tap and fast-check stay outside (the runner's hook and tap's own setup need the real packages).
// test/mutation/mutation.env makes each process stop at the first failure and run 50 worlds per property.
import { readdirSync, readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { build } from 'esbuild'

const root = process.cwd()
const testsOf = (dir) =>
  readdirSync(`${root}/${dir}`)
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => `${dir}/${name}`)

/** The fuzz properties that compare decisions with the contract's rules (not the fuzzing of malformed input). */
const DOMAIN_PROPERTIES = [
  'test/fuzz/decisions.test.ts',
  'test/fuzz/timers.test.ts',
  'test/fuzz/budget.test.ts',
  'test/fuzz/selectors.test.ts',
  'test/fuzz/pool-claims.test.ts',
]

/**
 * A module that finds files next to itself (`import.meta.url`: the e2e harness reads manifests/ from the
 * repository) must keep its own URL inside a bundle, not take the bundle's.
 */
const ownUrl = {
  name: 'own-import-meta-url',
  setup(esbuild) {
    esbuild.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8')
      if (!text.includes('import.meta.url')) return undefined
      return {
        contents: text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
        loader: 'ts',
      }
    })
  },
}

async function bundle(name, entries) {
  await build({
    stdin: {
      contents: entries.map((path) => `import './${path}'`).join('\n'),
      resolveDir: root,
      sourcefile: `${name}.ts`,
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: `${root}/test/mutation/out/${name}.mjs`,
    external: ['tap', 'fast-check'],
    plugins: [ownUrl],
    // The bundled CommonJS dependencies call require.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    logLevel: 'warning',
  })
}

await bundle('domain', [...testsOf('test/challenge'), ...DOMAIN_PROPERTIES])
await bundle('e2e', testsOf('test/e2e'))
