// `npm run report:mutation`: docs/mutation-report.md from StrykerJS's JSON report (reports/mutation/mutation.json,
// written by the last `npm run test:mutation`): the score, the figures of each file, and every mutant left alive with
// the argument why no input the hook can receive tells it from the code (test/mutation/equivalent.yaml, written by
// people). The page holds no date and no timing: a fresh full run regenerates it byte for byte, so a reviewer can
// compare it with the committed one.
//
//   node scripts/mutation-report.mjs            writes the page; fails when a survivor has no argument
//   node scripts/mutation-report.mjs --check    writes nothing; fails when the committed page differs, when a
//                                               survivor has no argument, or when an argument names no survivor
//   node scripts/mutation-report.mjs --rekey    also moves each argument found by what its mutant does (the code
//                                               above it changed) to its survivor's present position
//   node scripts/mutation-report.mjs FULL.json AGAIN.json ...
//                                               the report of FULL.json, each mutant of a later report (run again
//                                               alone) taking the status it got there
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { parse, parseDocument } from 'yaml'

const REPORT = 'reports/mutation/mutation.json'
const ARGUMENTS = 'test/mutation/equivalent.yaml'
const PAGE = 'docs/mutation-report.md'

const check = process.argv.includes('--check')
const rekey = process.argv.includes('--rekey')
const [base = REPORT, ...again] = process.argv.filter((arg) => arg.endsWith('.json'))
const { files } = JSON.parse(readFileSync(base, 'utf8'))
// Each later report is of mutants run again alone (`--mutate file.ts:line-line`): its status replaces the first
// report's for the same mutant (file, position, mutator, replacement).
const mutantKey = (file, { location: { start, end }, mutatorName, replacement }) =>
  `${file}:${start.line}:${start.column}:${end.line}:${end.column}:${mutatorName}:${replacement}`
for (const path of again) {
  const rerun = new Map()
  for (const [file, { mutants }] of Object.entries(JSON.parse(readFileSync(path, 'utf8')).files))
    for (const mutant of mutants) rerun.set(mutantKey(file, mutant), mutant.status)
  for (const [file, { mutants }] of Object.entries(files))
    for (const mutant of mutants) mutant.status = rerun.get(mutantKey(file, mutant)) ?? mutant.status
}
const strykerVersion = JSON.parse(readFileSync('node_modules/@stryker-mutator/core/package.json', 'utf8')).version
/** @type {{at: string, mutator: string, original?: string, replacement: string, why: string}[]} */
const argued = parse(readFileSync(ARGUMENTS, 'utf8')) ?? []

const DETECTED = new Set(['Killed', 'Timeout'])
const ALIVE = new Set(['Survived', 'NoCoverage'])
const oneLine = (text) => text.replace(/\s+/g, ' ').trim()
const code = (text) => `\`${oneLine(text).replaceAll('`', "'").slice(0, 120)}\``
const percent = (detected, valid) => (valid === 0 ? 'n/a' : `${((100 * detected) / valid).toFixed(2)} %`)

/** The source text a mutant replaces (the report's locations are 1-based, lines and columns: mutation-testing-report-schema). */
function original(source, { start, end }) {
  const lines = source.split('\n').slice(start.line - 1, end.line)
  if (lines.length === 1) return lines[0].slice(start.column - 1, end.column - 1)
  lines[lines.length - 1] = lines[lines.length - 1].slice(0, end.column - 1)
  lines[0] = lines[0].slice(start.column - 1)
  return lines.join('\n')
}

const rows = []
const survivors = []
const totals = { detected: 0, survived: 0, noCoverage: 0, invalid: 0, ignored: 0 }
for (const file of Object.keys(files).sort()) {
  const { source, mutants } = files[file]
  const figures = { mutants: 0, detected: 0, alive: 0 }
  for (const mutant of mutants) {
    if (mutant.status === 'Ignored') totals.ignored += 1
    else if (mutant.status === 'CompileError' || mutant.status === 'RuntimeError') totals.invalid += 1
    else {
      figures.mutants += 1
      if (DETECTED.has(mutant.status)) figures.detected += 1
      if (ALIVE.has(mutant.status)) {
        figures.alive += 1
        const { line, column } = mutant.location.start
        survivors.push({
          file,
          at: `${file}:${line}:${column}`,
          line,
          column,
          status: mutant.status,
          mutator: mutant.mutatorName,
          replacement: oneLine(mutant.replacement ?? ''),
          original: original(source, mutant.location),
        })
      }
    }
    if (DETECTED.has(mutant.status)) totals.detected += 1
    if (mutant.status === 'Survived') totals.survived += 1
    if (mutant.status === 'NoCoverage') totals.noCoverage += 1
  }
  rows.push(
    `| \`${file}\` | ${figures.mutants} | ${figures.detected} | ${figures.alive} | ${percent(figures.detected, figures.mutants)} |`,
  )
}
survivors.sort((a, b) =>
  a.file < b.file
    ? -1
    : a.file > b.file
      ? 1
      : a.line - b.line || a.column - b.column || (a.mutator < b.mutator ? -1 : 1),
)

// Every module stryker.config.json mutates (src/challenge/, src/contract/api.ts), to say which ones a partial run did
// not reach.
const allFiles = readdirSync('src/challenge')
  .filter((name) => name.endsWith('.ts'))
  .map((name) => `src/challenge/${name}`)
  .concat('src/contract/api.ts')
  .sort()
const missingFiles = allFiles.filter((file) => !(file in files))

// An argument names its survivor by position (at), mutator, original text and replacement (two mutants of one
// position and mutator differ in what they replace). Positions move whenever the file above them changes, so an
// argument whose position names no survivor still finds its own by the rest, when exactly one survivor and one
// argument have them. --rekey writes the survivors' present positions into those arguments.
const fileOf = (at) => at.replace(/:\d+:\d+$/, '')
const what = (each) =>
  `${fileOf(each.at)} ${each.mutator} ${oneLine(each.original ?? '')} → ${oneLine(each.replacement)}`
const key = (each) => `${each.at} ${what(each)}`
const unwritten = argued.filter((each) => typeof each.original !== 'string')
const byPosition = new Map(argued.map((each) => [key(each), each]))
const groupBy = (list, by) =>
  list.reduce((groups, each) => groups.set(by(each), [...(groups.get(by(each)) ?? []), each]), new Map())
const survivorsByWhat = groupBy(survivors, what)
const argumentsByWhat = groupBy(argued, what)
const survivorKeys = new Set(survivors.map(key))
/** @type {Map<string, {at: string, why: string}>} survivor key -> its argument */
const arguments_ = new Map()
const moved = []
for (const survivor of survivors) {
  let argument = byPosition.get(key(survivor))
  const alike = argumentsByWhat.get(what(survivor)) ?? []
  // Moved: the one argument and the one survivor of their kind, the argument's position naming no other survivor.
  if (argument === undefined && alike.length === 1 && survivorsByWhat.get(what(survivor)).length === 1) {
    if (!survivorKeys.has(key(alike[0]))) {
      argument = alike[0]
      moved.push([argument, survivor])
    }
  }
  if (argument !== undefined) arguments_.set(key(survivor), argument)
}
const used = new Set(arguments_.values())
const missing = survivors.filter((each) => !arguments_.has(key(each)))
const stale = argued.filter((each) => !used.has(each))
const valid = totals.detected + totals.survived + totals.noCoverage

const page = `# Mutation report

<!-- Written by \`npm run report:mutation\` (scripts/mutation-report.mjs) from the JSON report of the last full
\`npm run test:mutation\`, and the arguments of ${ARGUMENTS}. Edit those, not this page. -->

StrykerJS ${strykerVersion} made mutants in ${missingFiles.length === 0 ? 'every file' : `${rows.length} of the ${allFiles.length} files`} of \`src/challenge/\` and \`src/contract/api.ts\`${missingFiles.length === 0 ? ` (${rows.length} files)` : ''} and ran, against each mutant, the
domain tests and then the end-to-end scenarios ([how](development.md#mutation-testing-npm-run-testmutation)). A
mutant is killed when a test fails (or the tests run past their time) with it in place.
${missingFiles.length === 0 ? '' : `\n**No mutant in** (StrykerJS finds nothing to mutate in a file of types or of a constant it leaves alone, such as \`undefined\`; after a partial run, also the files it did not reach): ${missingFiles.map((file) => `\`${file}\``).join(', ')}.\n`}
| mutants | |
|---|---|
| killed | ${totals.detected} |
| survived | ${totals.survived} |
| reached by no test | ${totals.noCoverage} |
| **score** (killed of all three) | **${percent(totals.detected, valid)}** |
| not counted: static, or the mutated code does not compile or load | ${totals.ignored + totals.invalid} |

## By file

| file | mutants | killed | alive | score |
|---|---|---|---|---|
${rows.join('\n')}

## Every mutant left alive, and why it is equivalent

Each is a change no input the hook can receive tells from the code; the argument says why, for a reviewer to check.

${survivors.length === 0 ? 'None.\n' : ''}${survivors
  .map(
    (each) =>
      `- \`${each.at}\` ${each.mutator}${each.status === 'NoCoverage' ? ' (reached by no test)' : ''}: ${code(each.original)} → ${code(each.replacement)}. ${arguments_.has(key(each)) ? oneLine(arguments_.get(key(each)).why) : '**No argument yet.**'}`,
  )
  .join('\n')}
`

console.log(
  `score ${percent(totals.detected, valid)}: ${totals.detected} killed, ${totals.survived} survived, ${totals.noCoverage} reached by no test`,
)
for (const each of missing)
  console.log(
    `no argument in ${ARGUMENTS}:\n- at: ${each.at}\n  mutator: ${each.mutator}\n  original: ${JSON.stringify(oneLine(each.original))}\n  replacement: ${JSON.stringify(each.replacement)}`,
  )
for (const [argument, survivor] of moved)
  console.log(
    `an argument in ${ARGUMENTS} found its survivor at ${survivor.at}, not ${argument.at}${rekey ? '' : ' (--rekey updates it)'}`,
  )
for (const each of stale) console.log(`an argument in ${ARGUMENTS} names no survivor: ${key(each)}`)
for (const each of unwritten)
  console.log(`an argument in ${ARGUMENTS} has no original text: ${each.at} ${each.mutator}`)
let failed = missing.length > 0 || unwritten.length > 0 || (check && stale.length > 0)
if (check) {
  let committed = ''
  try {
    committed = readFileSync(PAGE, 'utf8')
  } catch {
    // No committed page yet: it differs from any report, which the comparison below says.
  }
  if (committed !== page) {
    console.log(`${PAGE} is not what this report gives: regenerate it with npm run report:mutation`)
    failed = true
  } else console.log(`${PAGE} is what this report gives`)
} else {
  writeFileSync(PAGE, page)
  console.log(`wrote ${PAGE}`)
}
if (rekey && moved.length > 0) {
  // Through the YAML document, so the file's comments and the arguments' folded text stay as written.
  const document = parseDocument(readFileSync(ARGUMENTS, 'utf8'))
  for (const [argument, survivor] of moved) document.get(argued.indexOf(argument)).set('at', survivor.at)
  writeFileSync(ARGUMENTS, document.toString({ lineWidth: 120 }))
  console.log(`moved ${moved.length} arguments in ${ARGUMENTS} to their survivors' positions`)
}
process.exitCode = failed ? 1 : 0
