// The rush benchmark's settings: environment variables, or `--name=value` arguments of the same names in lower
// case without the RUSH_ prefix (`npm run bench:rush -- --challenges=200 --label=defaults`).
import { parseArgs } from 'node:util'

/** The flags (each also RUSH_<NAME>, dashes as underscores). */
const FLAGS = [
  'challenges',
  'owners',
  'definitions',
  'window-seconds',
  'budget',
  'budget-scope',
  'running-ms',
  'ready-ms',
  'rest-seconds',
  'timeout-seconds',
  'settle-max-seconds',
  'label',
  'seed',
  'hook-replicas',
  'pool',
] as const
/** Flags without a value (RUSH_<NAME>=1 or true in the environment). */
const SWITCHES = ['faults'] as const

/** OWNER_BUDGET of the rush when none is given: each owner's fourth Challenge queues. */
export const DEFAULT_BUDGET = 3

/** Settings the run cannot start with: a flag it does not know, a value out of range. bench:rush exits 2. */
export class UsageError extends Error {}

export interface RushSettings {
  /** Challenges created in the rush (the issue's 2,000) */
  challenges: number
  /** distinct owners (the issue's 500: four Challenges each) */
  owners: number
  /** ChallengeDefinitions in the namespace (the issue's 20) */
  definitions: number
  /** seconds over which the Challenges are created (the issue's one minute) */
  windowSeconds: number
  /** OWNER_BUDGET of the hook server (the issue's 3: each owner's fourth Challenge queues) */
  budget: number
  /**
   * OWNER_BUDGET_SCOPE: Cluster also moves the CompositeController's hooks to version v2 (budget-across-namespaces);
   * None admits every Challenge
   */
  budgetScope: 'Namespace' | 'Cluster' | 'None'
  /** the kubelet stand-in: a pod's container runs after runningMs, then is Ready after readyMs (ranges, ms) */
  runningMs: [number, number]
  readyMs: [number, number]
  /** how long to watch the system at rest once settled, for syncs per minute (one resync period: 300 s) */
  restSeconds: number
  /** give up when the admitted instances are not all Running after this long */
  timeoutSeconds: number
  /** once they are, how long to wait at most for the hook calls to fall to the instances' own resync rate */
  settleMaxSeconds: number
  /** a name for this run in the results (e.g. defaults, recommended) */
  label: string
  /** the Metacontroller binary, and the flags added to the bench's own */
  metacontroller: string
  metacontrollerArgs: string[]
  /** the kube-apiserver flags added to the suite's own (e.g. --max-requests-inflight) */
  apiserverArgs: string[]
  seed: number
  /** hook server replicas behind one address (bench/rush/front.ts); 1 is the hook server's own port, no front */
  hookReplicas: number
  /** kill Metacontroller, roll the hook server twice and kill the kubelet during the rush (bench/rush/faults.ts) */
  faults: boolean
  /**
   * each definition's warm pool (pool.size, with flag.mode PerInstance; bench/rush/pools.ts), warm before the rush
   * starts; 0: no pool, the definitions as before
   */
  pool: number
}

function oneOf<T extends string>(value: string | undefined, values: readonly T[], name: string): T {
  if (value === undefined) return values[0] as T
  if (!values.includes(value as T))
    throw new UsageError(`bench:rush: ${name} must be one of ${values.join(', ')}, got ${value}`)
  return value as T
}

export function readSettings(env: NodeJS.ProcessEnv, argv: string[]): RushSettings {
  const given: Record<string, string> = {}
  for (const [key, value] of Object.entries(env))
    if (key.startsWith('RUSH_') && value !== undefined) given[key.slice(5).toLowerCase()] = value
  let flags: Record<string, string | boolean | undefined>
  try {
    flags = parseArgs({
      args: argv,
      options: {
        ...Object.fromEntries(FLAGS.map((flag) => [flag, { type: 'string' as const }])),
        ...Object.fromEntries(SWITCHES.map((flag) => [flag, { type: 'boolean' as const }])),
      },
      strict: true,
    }).values
  } catch (error) {
    throw new UsageError(
      `bench:rush: ${(error as Error).message}\nusage: npm run bench:rush -- ${FLAGS.map((flag) => `[--${flag}=…]`).join(' ')} ${SWITCHES.map((flag) => `[--${flag}]`).join(' ')}`,
    )
  }
  for (const [flag, value] of Object.entries(flags))
    if (value !== undefined) given[flag.replace(/-/g, '_')] = String(value)
  const number = (name: string, fallback: number) => {
    const value = given[name] === undefined ? fallback : Number(given[name])
    if (!Number.isFinite(value) || value < 0)
      throw new UsageError(`bench:rush: ${name} must be a number >= 0, got ${given[name]}`)
    return value
  }
  const range = (name: string, fallback: [number, number]): [number, number] => {
    if (given[name] === undefined) return fallback
    const parts = given[name].split('-').map(Number)
    const low = parts[0] as number
    const high = parts[1] ?? low
    if (!Number.isFinite(low) || !Number.isFinite(high) || low > high)
      throw new UsageError(`bench:rush: ${name} must be a range like 1000-3000, got ${given[name]}`)
    return [low, high]
  }
  const challenges = number('challenges', 2000)
  const faults = oneOf(given.faults, ['false', 'true', '0', '1'] as const, 'faults')
  const injecting = faults === 'true' || faults === '1'
  // The faults roll the hook server as a Deployment of two does: two replicas behind one address.
  const hookReplicas = number('hook_replicas', injecting ? 2 : 1)
  if (!Number.isInteger(hookReplicas) || hookReplicas < 1 || (injecting && hookReplicas < 2))
    throw new UsageError(
      `bench:rush: hook_replicas must be a whole number >= ${injecting ? '2 with faults (a rolling restart keeps one up)' : 1}, got ${given.hook_replicas}`,
    )
  // A definition's pool.size is 0..100 (docs/api.md, ChallengeDefinition).
  const pool = number('pool', 0)
  if (!Number.isInteger(pool) || pool > 100)
    throw new UsageError(
      `bench:rush: pool must be a whole number from 0 to 100 (a definition's pool.size), got ${given.pool}`,
    )
  const metacontroller = env.METACONTROLLER_BIN ?? ''
  if (metacontroller === '')
    throw new UsageError(
      'bench:rush: set METACONTROLLER_BIN to a Metacontroller binary (bench/README.md, "The opening rush")',
    )
  return {
    challenges,
    // Four Challenges per owner, as 2,000 over 500.
    owners: number('owners', Math.max(1, Math.round(challenges / 4))),
    definitions: number('definitions', 20),
    windowSeconds: number('window_seconds', 60),
    budget: number('budget', DEFAULT_BUDGET),
    budgetScope: oneOf(given.budget_scope, ['Namespace', 'Cluster', 'None'] as const, 'budget_scope'),
    // An image already on the node: the container starts in 1-3 s; the readiness probe (periodSeconds 5) passes
    // at its first or second period.
    runningMs: range('running_ms', [1000, 3000]),
    readyMs: range('ready_ms', [3000, 8000]),
    restSeconds: number('rest_seconds', 300),
    timeoutSeconds: number('timeout_seconds', 1800),
    settleMaxSeconds: number('settle_max_seconds', 3600),
    label: given.label ?? 'defaults',
    metacontroller,
    metacontrollerArgs: (env.METACONTROLLER_ARGS ?? '').split(' ').filter(Boolean),
    apiserverArgs: (env.RUSH_APISERVER_ARGS ?? '').split(' ').filter(Boolean),
    seed: number('seed', 12),
    hookReplicas,
    faults: injecting,
    pool,
  }
}
