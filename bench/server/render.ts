/**
 * `npm run bench`, its reporting half, and `npm run report:bench` alone: renders bench/RESULTS.md's figures and the
 * console's tables from a run's results (bench/out/results.json, or `--from <file>`), measuring nothing. The
 * hand-written findings below the marker in RESULTS.md are kept.
 *
 *   node bench/out/build/bench/server/render.js [--from bench/out/results.json] [--to bench/RESULTS.md]
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { consoleReport, resultsMarkdown, withFindings } from './report.js'
import { readResults } from './results.js'

const here = dirname(fileURLToPath(import.meta.url))
// bench/out/build/bench/server/ when compiled (npm run bench), bench/server/ when run from source (tsx).
const ROOT = resolve(here, basename(dirname(dirname(here))) === 'build' ? '../../../../..' : '../..')
const USAGE = 'usage: render.js [--from <results.json>] [--to <RESULTS.md>]'

function main(argv: string[]): number {
  let values: { from?: string; to?: string; help?: boolean }
  try {
    ;({ values } = parseArgs({
      args: argv,
      options: { from: { type: 'string' }, to: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }))
  } catch (error) {
    console.error(`bench render: ${(error as Error).message}\n${USAGE}`)
    return 2
  }
  if (values.help) {
    console.log(USAGE)
    return 0
  }
  const from = resolve(values.from ?? join(ROOT, 'bench/out/results.json'))
  const to = resolve(values.to ?? join(ROOT, 'bench/RESULTS.md'))
  if (!existsSync(from)) {
    console.error(`bench render: ${relative(process.cwd(), from)} does not exist: run \`npm run bench\` first`)
    return 1
  }
  const results = readResults(from)
  console.log(consoleReport(results))
  writeFileSync(to, withFindings(resultsMarkdown(results), existsSync(to) ? readFileSync(to, 'utf8') : ''))
  console.log(`\nbench: rendered ${relative(process.cwd(), to)} from ${relative(process.cwd(), from)}`)
  return 0
}

process.exitCode = main(process.argv.slice(2))
