// Lists the mutants the last `npm run test:mutation` left alive (Survived, NoCoverage), one per line:
// file:line:column, the mutator, and the replacement. Usage: node scripts/survivors.mjs [report.json] [file filter]
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

const USAGE = 'usage: node scripts/survivors.mjs [report.json] [file filter]'
let positionals
try {
  ;({ positionals } = parseArgs({ options: {}, allowPositionals: true, strict: true }))
} catch (error) {
  console.error(`survivors: ${error.message}\n${USAGE}`)
  process.exit(2)
}
if (positionals.length > 2) {
  console.error(`survivors: at most two arguments\n${USAGE}`)
  process.exit(2)
}
const [report = 'reports/mutation/mutation.json', filter = ''] = positionals
const { files } = JSON.parse(readFileSync(report, 'utf8'))
let count = 0
for (const [file, { mutants }] of Object.entries(files)) {
  if (!file.includes(filter)) continue
  for (const mutant of mutants) {
    if (mutant.status !== 'Survived' && mutant.status !== 'NoCoverage') continue
    const { line, column } = mutant.location.start
    const replacement = (mutant.replacement ?? '').replace(/\s+/g, ' ').slice(0, 100)
    console.log(`${file}:${line}:${column} ${mutant.status} ${mutant.mutatorName}: ${replacement}`)
    count++
  }
}
console.log(`${count} mutants alive`)
