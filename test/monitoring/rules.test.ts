// The monitoring component as Prometheus takes it: `promtool check rules` accepts its rule groups and
// `promtool test rules` runs alerts.test.yaml against them (stuck Pending, errors rising, 5xx, shedding,
// Metacontroller's failing calls and backlog, the instances counted once across replicas).
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { stringify } from 'yaml'
import { promtool, ruleGroups } from './monitoring.js'

const tool = promtool()

t.test('promtool checks and tests the alert rules', { skip: tool.skip ?? false }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-rules-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'rules.yaml'), stringify({ groups: ruleGroups() }))
  copyFileSync(join(import.meta.dirname, 'alerts.test.yaml'), join(dir, 'alerts.test.yaml'))
  const run = (...args: string[]) =>
    spawnSync(tool.path as string, args, { cwd: dir, encoding: 'utf8', timeout: 60_000 })

  const check = run('check', 'rules', 'rules.yaml')
  t.equal(check.status, 0, `promtool check rules: ${check.stdout}${check.stderr}`)
  t.match(check.stdout, /SUCCESS: 10 rules found/, 'three recording rules and seven alerts')

  const tested = run('test', 'rules', 'alerts.test.yaml')
  t.equal(tested.status, 0, `promtool test rules:\n${tested.stdout}${tested.stderr}`)
  t.match(tested.stdout, /SUCCESS/)
})

t.test('every alert says how bad it is and what to look at', async (t) => {
  const alerts = ruleGroups().flatMap((group) => group.rules.filter((rule) => rule.alert !== undefined))
  t.strictSame(
    alerts.map((rule) => rule.alert),
    [
      'ChallengeInstanceStuckPending',
      'ChallengeImagesNotReady',
      'ChallengeErrorsRising',
      'ChallengeHooksServerErrors',
      'ChallengeHooksShedding',
      'MetacontrollerSyncErrors',
      'MetacontrollerBacklog',
    ],
  )
  for (const rule of alerts) {
    t.ok(['warning', 'critical'].includes(rule.labels?.severity ?? ''), `${rule.alert}: a severity`)
    t.ok(
      (rule.annotations?.summary ?? '').length > 0 && (rule.annotations?.description ?? '').length > 0,
      `${rule.alert}: a summary and a description`,
    )
  }
})
