// Every domain test of test/challenge and the decision properties of test/fuzz in one process, for
// `npm run test:mutation` (stryker.config.json). The tests themselves take about a second, while each process
// costs two or more to start tap and tsx, and StrykerJS's tap runner starts a process per test file for every
// mutant. The properties run 50 worlds each here (FUZZ_RUNS; 200 to 600 in `npm test`). Named without `.test` so
// that `tap` does not run these tests twice.
import { readdirSync } from 'node:fs'

process.env.FUZZ_RUNS ??= '50'
// A mutant is killed by its first failure: stop there.
process.env.TAP_BAIL ??= '1'
const directory = new URL('../challenge/', import.meta.url)
for (const file of readdirSync(directory).filter((name) => name.endsWith('.test.ts')).sort()) await import(new URL(file, directory).href)
await import('../fuzz/decisions.test.js')
