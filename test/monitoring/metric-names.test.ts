// Every metric the monitoring component's rules and dashboard use exists, with the labels they match on: the hook
// server's, read from its real /metrics after the answers of a start, a wait, a pre-pulling definition's pool sync
// and a refused call; Metacontroller's, from what a real Metacontroller v4.17.2 served (test/data/); and the
// component's own recording rules. The expressions are parsed with Prometheus' own PromQL grammar
// (@prometheus-io/lezer-promql).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parser } from '@prometheus-io/lezer-promql'
import t, { type Test } from 'tap'
import { buildTestApp } from '../helpers/app.js'
import { T0 } from '../helpers/instant.js'
import { liveToRunning } from '../helpers/lives.js'
import { challenge, syncRequest, webDefinition } from '../helpers/world.js'
import { repoRoot } from '../helpers/manifests.js'
import { dashboard, dashboardExprs, ruleGroups } from './monitoring.js'

interface Selector {
  metric: string
  labels: string[]
}

/** The vector selectors of an expression (metric name and matched label names); throws on a syntax error. */
function selectors(expr: string, where: string): Selector[] {
  const tree = parser.parse(expr)
  const found: Selector[] = []
  const cursor = tree.cursor()
  do {
    if (cursor.type.isError) throw new Error(`${where}: PromQL syntax error at ${cursor.from}: ${expr}`)
    if (cursor.name !== 'VectorSelector') continue
    const node = cursor.node
    const identifier = node.getChild('Identifier')
    const labels =
      node
        .getChild('LabelMatchers')
        ?.getChildren('UnquotedLabelMatcher')
        .map((m) => expr.slice(m.firstChild?.from, m.firstChild?.to)) ?? []
    if (identifier !== null) found.push({ metric: expr.slice(identifier.from, identifier.to), labels })
  } while (cursor.next())
  return found
}

/** metric name → the label names its samples carry, from a Prometheus text exposition. */
function exposed(text: string): Map<string, Set<string>> {
  const metrics = new Map<string, Set<string>>()
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? /.exec(line)
    if (match === null) continue
    const labels = metrics.get(match[1] as string) ?? new Set<string>()
    for (const [, name] of (match[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) labels.add(name as string)
    metrics.set(match[1] as string, labels)
  }
  return metrics
}

/** The hook server's /metrics once it has answered a start, a wait, and refused a call. */
async function hookMetrics(t: Test): Promise<Map<string, Set<string>>> {
  const clock = { now: new Date(T0) }
  const app = await buildTestApp(t, { hookToken: 'token' }, () => clock.now)
  const headers = { authorization: 'Bearer token' }
  await liveToRunning(app, clock, headers)
  const bob = challenge({ name: 'web-login-u-bob', owner: 'bob', uid: '0b0b0b0b-0000-4000-8000-000000000001' })
  await app.inject({ method: 'POST', url: '/sync', payload: syncRequest(bob, { related: [webDefinition()] }), headers })
  // A definition that pre-pulls its images, at its first pool sync.
  const prepulled = {
    ...webDefinition({ prepull: 'Pull' }),
    metadata: { name: 'web-login', namespace: 'challenges', uid: 'd0d0d0d0-0000-4000-8000-000000000002' },
  }
  t.equal(
    (
      await app.inject({
        method: 'POST',
        url: '/pools/sync',
        payload: { parent: prepulled, children: {}, related: {} },
        headers,
      })
    ).statusCode,
    200,
  )
  t.equal(
    (await app.inject({ method: 'POST', url: '/sync', payload: {}, headers: { authorization: 'Bearer wrong' } }))
      .statusCode,
    401,
  )
  return exposed((await app.ops.inject({ method: 'GET', url: '/metrics' })).body)
}

const metacontroller = exposed(readFileSync(join(repoRoot, 'test/data/metacontroller-v4.17.2.metrics'), 'utf8'))
const recorded = new Set(
  ruleGroups().flatMap((group) => group.rules.flatMap((rule) => (rule.record === undefined ? [] : [rule.record]))),
)

t.test('every metric and matched label of the rules and the dashboard exists', async (t) => {
  const hook = await hookMetrics(t)
  const uses = [
    ...ruleGroups().flatMap((group) =>
      group.rules.map((rule) => ({ where: `rule ${rule.record ?? rule.alert}`, expr: rule.expr })),
    ),
    ...dashboardExprs().map((target) => ({ where: `panel "${target.panel}"`, expr: target.expr })),
  ]
  let checked = 0
  for (const { where, expr } of uses) {
    for (const { metric, labels } of selectors(expr, where)) {
      checked += 1
      if (recorded.has(metric)) continue
      const known = hook.get(metric) ?? metacontroller.get(metric)
      if (known === undefined) {
        t.fail(`${where}: ${metric} is neither the hook server's, Metacontroller's nor a recording rule`)
        continue
      }
      for (const label of labels) t.ok(known.has(label), `${where}: ${metric} has the label ${label}`)
    }
  }
  t.ok(checked >= 20, `${checked} selectors checked`)
  t.ok(
    hook.has('challenge_hooks_start_phase_seconds_bucket') &&
      hook.get('challenge_hooks_start_phase_seconds_bucket')?.has('phase'),
    'the start histograms were observed',
  )

  // Grafana's variable query names a metric and a label too.
  for (const variable of dashboard().templating.list) {
    const match = typeof variable.query === 'string' ? /^label_values\((\w+), (\w+)\)$/.exec(variable.query) : null
    if (match === null) continue
    t.ok(hook.get(match[1] as string)?.has(match[2] as string), `variable ${variable.name}: ${variable.query}`)
  }
})

t.test('a recording rule is used only by name, and every panel reads the chosen data source', async (t) => {
  for (const panel of dashboard().panels) {
    t.equal(panel.datasource.uid, '${datasource}', `${panel.title}: the dashboard's data source variable`)
    for (const target of panel.targets) t.equal(target.datasource.uid, '${datasource}')
  }
  t.strictSame([...recorded].sort(), [
    'challenge_hooks:instance_latest',
    'challenge_hooks:instances',
    'challenge_hooks:start_seconds:p95',
  ])
})
