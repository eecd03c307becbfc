/** The monitoring component's files, read as Prometheus and Grafana would, and promtool (controlplane/promtool). */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { componentsDir, repoRoot } from '../helpers/manifests.js'
import { toolMissing } from '../support/tools.js'

export const MONITORING = join(componentsDir, 'monitoring')

export interface Rule {
  record?: string
  alert?: string
  expr: string
  for?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
}
export interface RuleGroup {
  name: string
  rules: Rule[]
}

/** The rule groups of the PrometheusRule, as the Prometheus Operator hands them to Prometheus. */
export function ruleGroups(): RuleGroup[] {
  const rule = parse(readFileSync(join(MONITORING, 'prometheusrule.yaml'), 'utf8')) as { spec: { groups: RuleGroup[] } }
  return rule.spec.groups
}

export interface DashboardTarget {
  panel: string
  expr: string
}

export interface Dashboard {
  panels: { title: string; datasource: { uid: string }; targets: { expr: string; datasource: { uid: string } }[] }[]
  templating: { list: { name: string; query: string | object }[] }
}

export function dashboard(): Dashboard {
  return JSON.parse(readFileSync(join(MONITORING, 'dashboard.json'), 'utf8')) as Dashboard
}

/** Every PromQL expression of the dashboard's panels, Grafana's variables replaced by what they stand for. */
export function dashboardExprs(): DashboardTarget[] {
  return dashboard().panels.flatMap((panel) =>
    panel.targets.map((target) => ({ panel: panel.title, expr: target.expr.replaceAll('$namespace', '.*') })),
  )
}

/** promtool's path (controlplane/promtool/build.sh --check), or a reason to skip. */
export function promtool(): { path?: string; skip?: string } {
  const check = spawnSync(join(repoRoot, 'controlplane/promtool/build.sh'), ['--check'], { encoding: 'utf8' })
  if (check.status !== 0)
    return { skip: toolMissing('promtool is not built (controlplane/promtool/build.sh builds it)') }
  return { path: check.stdout.trim() }
}
