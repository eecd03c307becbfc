// `npm run build`, after tsc: dist/server.js and its dependencies bundled into that one file, in place, so that
// `node dist/server.js` starts without resolving and loading some 300 modules one by one, and without compiling its
// request schemas (the start to the first answer). esbuild (the bundler Vite and tsx are built on) reads
// tsc's source maps, so the bundle's map still points at src/ (`node --enable-source-maps`). The rest of dist/
// stays as tsc wrote it: the CLI, and the modules the tests and the benchmark import.
import { Ajv } from 'ajv'
import standalone from 'ajv/dist/standalone/index.js'
import { build } from 'esbuild'

const { PRECOMPILABLE } = await import(new URL('../dist/http/validation.js', import.meta.url).href)
const { DESCRIBED_OPTIONS, VALIDATION_OPTIONS } = await import(
  new URL('../dist/contract/validator.js', import.meta.url).href
)
const { DefinitionSpecSchema } = await import(new URL('../dist/contract/api.js', import.meta.url).href)

/** `schemas` (by name) compiled now with `options`, as ajv's standalone code: a module exporting a validator per name. */
function standaloneCode(schemas, options) {
  const ajv = new Ajv({ ...options, code: { source: true, esm: true } })
  const names = Object.keys(schemas)
  for (const name of names) ajv.addSchema(schemas[name], name)
  return (standalone.default ?? standalone)(ajv, Object.fromEntries(names.map((name) => [name, name])))
}

/**
 * The modules the build replaces, and what with: the request schemas compiled with the server's own options (a
 * validator per name of PRECOMPILABLE) in place of dist/http/precompiled.js, the definition's with the options of
 * described errors in place of dist/challenge/precompiled.js.
 */
const REPLACED = [
  [
    /[\\/]dist[\\/]http[\\/]precompiled\.js$/,
    () =>
      `${standaloneCode(PRECOMPILABLE, VALIDATION_OPTIONS)}\nexport const PRECOMPILED = { ${Object.keys(PRECOMPILABLE).join(', ')} };\n`,
  ],
  [
    /[\\/]dist[\\/]challenge[\\/]precompiled\.js$/,
    () =>
      `${standaloneCode({ definition: DefinitionSpecSchema }, DESCRIBED_OPTIONS)}\nexport const PRECOMPILED_DEFINITION = definition;\n`,
  ],
]

const precompiled = {
  name: 'precompiled-validators',
  setup(bundler) {
    for (const [filter, contents] of REPLACED) {
      bundler.onLoad({ filter }, () => ({
        contents: contents(),
        // Where its require("ajv/dist/runtime/…") calls are resolved from (and bundled).
        resolveDir: process.cwd(),
        loader: 'js',
      }))
    }
  },
}

const shared = {
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  // A smaller file parses faster; names are kept (no minifyIdentifiers), so stack traces and logs still read.
  minifyWhitespace: true,
  minifySyntax: true,
  // The CommonJS dependencies (fastify, pino, …) call require() for Node's own modules; an ES module has none.
  banner: {
    js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
  },
  logLevel: 'warning',
}

await build({ ...shared, entryPoints: ['dist/server.js'], outfile: 'dist/server.js', plugins: [precompiled] })
// The gateway (src/gateway-server.ts): the same image, another command; its schemas compile at start.
await build({ ...shared, entryPoints: ['dist/gateway-server.js'], outfile: 'dist/gateway-server.js' })
// The isolation gate (src/isolation-gate.ts): the init container of every instance's pod, run from the same image,
// so one file beside the server's, with nothing to resolve at its start.
await build({ ...shared, entryPoints: ['dist/isolation-gate.js'], outfile: 'dist/isolation-gate.js' })
