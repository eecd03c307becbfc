// Lists the mutants the last `npm run test:mutation` left alive (Survived, NoCoverage), one per line:
// file:line:column, the mutator, and the replacement. Usage: node scripts/survivors.mjs [report.json] [file filter]
import { readFileSync } from 'node:fs'

const [report = 'reports/mutation/mutation.json', filter = ''] = process.argv.slice(2)
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
