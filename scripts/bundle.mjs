// `npm run build`, after tsc: dist/server.js and its dependencies bundled into that one file, in place, so that
// `node dist/server.js` starts without resolving and loading some 300 modules one by one (issue 12: the start to
// the first answer). esbuild (the bundler Vite and tsx are built on) reads tsc's source maps, so the bundle's map
// still points at src/ (`node --enable-source-maps`). The rest of dist/ stays as tsc wrote it: the CLI, and the
// modules the tests and the benchmark import.
import { build } from 'esbuild'

await build({
  entryPoints: ['dist/server.js'],
  outfile: 'dist/server.js',
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
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  logLevel: 'warning',
})
