// The I/O half of the rush's fault run (bench/README.md, "Faults during the rush"): firing the faults at their
// moments while the rush goes on, and reading the end state for the checks of bench/rush/faults.ts.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import type { Rest } from '../../test/support/kube/rest.js'
import { API } from '../../test/support/kube/names.js'
import type { KubeObject } from '../../test/support/simulator/index.js'
import { sleep } from '../../test/support/processes.js'
import {
  CHILD_KINDS,
  duplicatePodFindings,
  expectedFlag,
  flagFindings,
  nextDue,
  orphanFindings,
  outcomeFindings,
  phaseCounts,
  type FaultKind,
  type Finding,
  type PlannedFault,
} from './faults.js'

const NS = 'ctf-rush'
/**
 * The flags of the rush's definitions (`web-login`): in FLAG, the default prefix and suffix; PerOwner, or
 * PerInstance in a run with warm pools (bench/rush/pools.ts).
 */
export const rushFlag = (pooled: boolean) => ({ mode: pooled ? 'PerInstance' : 'PerOwner', env: 'FLAG' }) as const

export interface FaultRecord extends PlannedFault {
  /** seconds from the first create */
  firedAtSeconds: number
  doneAtSeconds: number
  /** what the bench had seen when it fired */
  seen: { created: number; admitted: number; running: number }
  /** load average (1 min) when it fired: the machine is shared */
  load: number
  steps: Array<{ step: string; atSeconds: number }>
}

export interface FaultActions {
  t0: number
  log: (text: string) => void
  /** true once the run no longer waits for faults (the rush has settled) */
  stopped: () => boolean
  progress: () => { created: number; admitted: number; running: number }
  /** filled as the faults fire */
  records: FaultRecord[]
  killMetacontroller: () => Promise<Array<{ step: string; atSeconds: number }>>
  rollHookServer: () => Promise<Array<{ step: string; atSeconds: number }>>
  killKubelet: () => Promise<Array<{ step: string; atSeconds: number }>>
}

/** Fires each fault of `schedule` once its moment comes, one after the other, until all fired or the run stops. */
export async function injectFaults(schedule: PlannedFault[], actions: FaultActions): Promise<void> {
  const act: Record<FaultKind, () => Promise<Array<{ step: string; atSeconds: number }>>> = {
    'kill-metacontroller': actions.killMetacontroller,
    'roll-hook-server': actions.rollHookServer,
    'kill-kubelet': actions.killKubelet,
  }
  const seconds = () => Math.round((Date.now() - actions.t0) / 100) / 10
  while (actions.records.length < schedule.length && !actions.stopped()) {
    const due = nextDue(schedule, actions.records.length, actions.progress().admitted)
    if (due === undefined) {
      await sleep(100)
      continue
    }
    const seen = actions.progress()
    const firedAtSeconds = seconds()
    actions.log(`fault: ${due.kind} (${Math.round(due.share * 100)} % admitted: ${seen.admitted} seen)`)
    const steps = await act[due.kind]()
    actions.records.push({
      ...due,
      firedAtSeconds,
      doneAtSeconds: seconds(),
      seen,
      load: Math.round((loadavg()[0] as number) * 10) / 10,
      steps,
    })
    actions.log(`fault: ${due.kind} done after ${(seconds() - firedAtSeconds).toFixed(1)} s`)
  }
}

const PATHS: Record<(typeof CHILD_KINDS)[number], string> = {
  Secret: `/api/v1/namespaces/${NS}/secrets`,
  NetworkPolicy: `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`,
  Pod: `/api/v1/namespaces/${NS}/pods`,
  Service: `/api/v1/namespaces/${NS}/services`,
  Ingress: `/apis/networking.k8s.io/v1/namespaces/${NS}/ingresses`,
}

async function listOf(rest: Rest, path: string, kind: string): Promise<KubeObject[]> {
  const { items } = await rest.get<{ items: KubeObject[] }>(path)
  return items.map((item) => ({ ...item, kind }))
}

export interface EndState {
  phases: Record<string, number>
  /** objects listed, by kind (the children: those with the instance label) */
  listed: Record<string, number>
  outcome: Finding[]
  orphans: Finding[]
  duplicatePods: Finding[]
  flags: Finding[]
}

/**
 * Lists the Challenges and every child of the namespace from the API server, and the warm pools' claimed pods and
 * flag Secrets, and checks them.
 */
export async function checkEndState(
  rest: Rest,
  budget: number,
  flagSecret: string,
  flag: ReturnType<typeof rushFlag>,
): Promise<EndState> {
  const challenges = await listOf(rest, `/apis/${API}/namespaces/${NS}/challenges`, 'Challenge')
  const children: KubeObject[] = []
  for (const kind of CHILD_KINDS)
    children.push(
      ...(await listOf(rest, PATHS[kind], kind)).filter(
        (o) => o.metadata.labels?.['challenge-hooks.dev/instance'] !== undefined,
      ),
    )
  const pods = children.filter((o) => o.kind === 'Pod')
  // A claimed pool pod and its Secret are the definition's children, not the instance's: no instance label.
  const claimed = '?labelSelector=challenge-hooks.dev%2Fclaimed-by'
  const pooledSecrets = await listOf(rest, `${PATHS.Secret}${claimed}`, 'Secret')
  const pooledPods = await listOf(rest, `${PATHS.Pod}${claimed}`, 'Pod')
  const listed: Record<string, number> = { Challenge: challenges.length }
  for (const kind of CHILD_KINDS) listed[kind] = children.filter((o) => o.kind === kind).length
  return {
    phases: phaseCounts(challenges),
    listed,
    outcome: outcomeFindings(challenges, budget),
    orphans: orphanFindings(challenges, children),
    duplicatePods: duplicatePodFindings(challenges, pods),
    flags: flagFindings(
      challenges,
      [...children.filter((o) => o.kind === 'Secret'), ...pooledSecrets],
      [...pods, ...pooledPods],
      (challenge) => expectedFlag(flagSecret, challenge, flag),
      flag.env,
    ),
  }
}

/**
 * The error lines of Metacontroller's logs (JSON, level error; klog, a line starting `E`) and the hook servers'
 * (pino, level ≥ 50), by
 * file, with the first few; the logs themselves are copied to `<out>/<name>.logs/` (the control plane's folder goes
 * at the end of the run).
 */
export function logErrors(
  dir: string,
  out: string,
  name: string,
): Record<string, { lines: number; errors: number; first: string[] }> {
  const copy = join(out, `${name}.logs`)
  mkdirSync(copy, { recursive: true })
  const found: Record<string, { lines: number; errors: number; first: string[] }> = {}
  for (const file of readdirSync(dir).filter((f) => /^(metacontroller|hook-server).*\.log$/.test(f))) {
    const text = readFileSync(join(dir, file), 'utf8')
    writeFileSync(join(copy, file), text)
    const lines = text.split('\n').filter(Boolean)
    const errors = lines.filter((line) => /^E\d{4} |"level":"error"|"level":[56]\d/.test(line))
    found[file] = { lines: lines.length, errors: errors.length, first: errors.slice(0, 5).map((l) => l.slice(0, 400)) }
  }
  return found
}
