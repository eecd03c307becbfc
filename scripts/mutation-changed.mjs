// `npm run test:mutation:changed`: mutation testing of the files of src/challenge/ (and src/contract/api.ts) a change
// touches, before it is merged: the files that differ from the base branch (MUTATION_BASE, default main), committed
// or not. Each is mutated afresh (`--force`: StrykerJS's incremental mode cannot see that a test changed, its test
// file is a bundle whose name never changes); the incremental file keeps every other file's last results, so the
// report still covers the whole directory. Arguments after `--` go to StrykerJS (`-- --concurrency 1`).
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

const base = process.env.MUTATION_BASE ?? 'main'
const git = (...args) => execFileSync('git', args, { encoding: 'utf8' }).split('\n').filter(Boolean)
// Against the merge base: what this branch changed, not what the base branch did since.
const changed = new Set([
  ...git('diff', '--name-only', `${base}...HEAD`),
  ...git('diff', '--name-only', 'HEAD'),
  ...git('ls-files', '--others', '--exclude-standard'),
])
const mutate = [...changed]
  .filter((file) => /^src\/(challenge\/[^/]+|contract\/api)\.ts$/.test(file) && existsSync(file))
  .sort()
const tests = [...changed].filter((file) => file.startsWith('test/'))

if (mutate.length === 0) {
  console.log(
    `no file of src/challenge/ differs from ${base}: nothing to mutate${tests.length > 0 ? ` (${tests.length} test files changed: a full run, npm run test:mutation -- --force, shows what they kill)` : ''}`,
  )
  process.exit(0)
}
console.log(`mutating the ${mutate.length} files of src/challenge/ that differ from ${base}: ${mutate.join(' ')}`)
const run = (command, args) => spawnSync(command, args, { stdio: 'inherit' }).status ?? 1
let status = run(process.execPath, ['scripts/mutation-bundle.mjs'])
if (status === 0)
  status = run('npx', ['stryker', 'run', '--force', '--mutate', mutate.join(','), ...process.argv.slice(2)])
process.exit(status)
