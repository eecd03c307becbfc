/**
 * Builds the benchmark requests by running the project's real hooks (dist/, in process through `app.inject`)
 * under the Metacontroller simulator (test/support/simulator), so every object carries what an API server and
 * Metacontroller put there: uid, resourceVersion, finalizers, ownerReferences, managedFields, status written by
 * the controllers, and kubectl's last-applied annotation on what was applied with kubectl.
 *
 * - small:  the first /sync of a new instance (no status, no children); one ChallengeDefinition in the namespace.
 * - medium: a Running HTTP instance (Secret, 2 NetworkPolicies, its Pod, Service, Ingress) in a
 *           namespace holding a 50-challenge catalogue (the customize hook asks for every definition).
 * - large:  the same, after its owner went through the 49 other challenges: 50 related Challenges, each with
 *           status, conditions and managedFields.
 * - xlarge: the same in a 250-challenge catalogue the owner went through (250 definitions, 250 Challenges).
 *
 * Every finished Challenge lived its life (created, Running, played, stopped, torn down) under its own
 * simulator, in its own time slot of the owner's night; its writes are then replayed, in time order and by the
 * same managers, into the namespace the target is synced in. (One simulator over the whole namespace would
 * re-sync every Challenge of the owner on every status change of any of them, as Metacontroller does:
 * thousands of multi-hundred-KB syncs.) The lives run in worker threads. The simulated clock ends two minutes
 * before the wall clock, so the requests replay as a live instance.
 */
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { parseAllDocuments } from 'yaml'
import {
  Cluster,
  injectTransport,
  Simulator,
  type CompositeController,
  type Injectable,
  type KubeObject,
  type SyncResult,
} from '../../test/support/simulator/index.js'

export const NAMESPACE = 'challenges'
export const OWNER = 'alice'
const API = 'challenge-hooks.dev/v1alpha1'
const CATALOGUE = 50
const XLARGE_CATALOGUE = 250
/** Each finished Challenge's life gets its own slot of the owner's history (a life takes under 3 minutes). */
const LIFE_SLOT_MS = 200_000
const HISTORY_MS = XLARGE_CATALOGUE * LIFE_SLOT_MS
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'

export interface Generated {
  name: SizeName
  what: string
  body: Buffer
  /** phase / reason the in-process app answered while generating */
  phase: string
}

interface App extends Injectable {
  close(): Promise<unknown>
}

type Json = Record<string, any>

/**
 * The environment the benchmarked servers get (production mode, token set). No shedding on event-loop delay:
 * with 20 connections of ~1 MB bodies the loop runs late and the server would answer 429 at once, which is the
 * server defending itself (test/load/ measures that), not the throughput measured here; it also kept the
 * generator's own syncs, which share the simulator's busy loop, from ever being answered.
 */
export function serverEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    MAX_EVENT_LOOP_DELAY_MS: '0',
    NODE_ENV: 'production',
    FLAG_SECRET: 'bench-0123456789abcdef0123456789abcdef0123456789abcdef',
    HOOK_TOKEN: 'bench-token-0123456789abcdef0123456789abcdef',
    BASE_DOMAIN: 'ctf.example.org',
    INGRESS_CLASS_NAME: 'nginx',
    PUBLIC_HOST: '203.0.113.10',
    LOG_LEVEL: 'warn',
    SHUTDOWN_DRAIN_MS: '0',
    OPS_PORT: '0',
    ...extra,
  }
}

function examples(root: string): { web: Json; pwn: Json } {
  const first = (file: string) =>
    parseAllDocuments(readFileSync(join(root, 'manifests/examples', file), 'utf8'))[0]!.toJSON() as Json
  return { web: first('web-login.yaml'), pwn: first('pwn-echo.yaml') }
}

/** What `kubectl apply -f` stores: the manifest, defaults filled in, and its last-applied annotation. */
function applied(manifest: Json): KubeObject {
  const object = structuredClone(manifest)
  object.metadata.annotations = { ...object.metadata.annotations, [LAST_APPLIED]: `${JSON.stringify(manifest)}\n` }
  return object as KubeObject
}

function definition(templates: { web: Json; pwn: Json }, index: number): KubeObject {
  const web = index % 2 === 1
  const name = `${web ? 'web' : 'pwn'}-${String(index).padStart(2, '0')}`
  const template = structuredClone(web ? templates.web : templates.pwn)
  const spec = template.spec
  spec.displayName = `${web ? 'Web' : 'Pwn'} challenge ${index}`
  spec.lifetimeSeconds = 7200
  spec.startupTimeoutSeconds ??= 300
  spec.availableFrom = '2020-01-01T00:00:00Z'
  spec.security = { profile: 'Restricted' }
  spec.flag = { prefix: 'flag{', suffix: '}', env: 'FLAG', ...spec.flag }
  return applied({
    apiVersion: API,
    kind: 'ChallengeDefinition',
    metadata: {
      name,
      namespace: NAMESPACE,
      labels: { 'ctf.example.org/category': web ? 'web' : 'pwn', 'ctf.example.org/event': 'finals-2026' },
    },
    spec,
  })
}

function challenge(definitionName: string, owner: string, deadline: string): KubeObject {
  return {
    apiVersion: API,
    kind: 'Challenge',
    metadata: {
      name: `${definitionName}-u-${owner}`,
      namespace: NAMESPACE,
      labels: { 'challenge-hooks.dev/owner': owner, 'challenge-hooks.dev/definition': definitionName },
      annotations: { 'ctf.example.org/requested-by': `user:${owner}`, 'ctf.example.org/team': 'team-0042' },
    },
    spec: {
      definitionRef: { name: definitionName },
      owner: { kind: 'User', id: owner },
      desiredState: 'Running',
      renewals: 0,
      restarts: 0,
      deadline,
    },
  }
}

/** The project's CompositeController as Metacontroller's informer holds it (applied with kubectl). */
const manifests = new Map<string, Json>()

function controller(root: string, created: string): CompositeController {
  const file = join(root, 'manifests/compositecontroller.yaml')
  if (!manifests.has(file)) manifests.set(file, parseAllDocuments(readFileSync(file, 'utf8'))[0]!.toJSON() as Json)
  const manifest = manifests.get(file) as Json
  const object = applied(manifest) as Json
  Object.assign(object.metadata, {
    uid: '0c8a3d4e-77b2-4f0e-9b1a-5d2c6e8f9a01',
    generation: 1,
    resourceVersion: '1042',
    creationTimestamp: created,
    managedFields: [
      {
        manager: 'kubectl-client-side-apply',
        operation: 'Update',
        apiVersion: 'metacontroller.k8s.io/v1alpha1',
        time: created,
        fieldsType: 'FieldsV1',
        fieldsV1: fieldSet({ metadata: { annotations: object.metadata.annotations }, spec: object.spec }),
      },
    ],
  })
  return object as CompositeController
}

/** FieldsV1 as the API server writes it (the simulator does the same for the objects it stores). */
function fieldSet(value: unknown): Json {
  const set: Json = {}
  if (Array.isArray(value)) {
    for (const item of value) {
      const key =
        typeof item === 'object' && item !== null ? ['name', 'apiVersion', 'type'].find((k) => k in item) : undefined
      if (key !== undefined) set[`k:${JSON.stringify({ [key]: item[key] })}`] = { '.': {}, ...fieldSet(item) }
    }
  } else if (typeof value === 'object' && value !== null) {
    for (const [field, child] of Object.entries(value)) {
      set[`f:${field}`] = typeof child === 'object' && child !== null ? { '.': {}, ...fieldSet(child) } : {}
    }
  }
  return set
}

function expect(result: SyncResult, phase: string): string {
  const status = result.answer?.status as Json | undefined
  if (result.outcome !== 'synced' || !result.request || status?.phase !== phase) {
    throw new Error(
      `generating ${result.parent.name}: expected ${phase}, got ${result.outcome} ${JSON.stringify(status)} ${result.errors.join('; ')}`,
    )
  }
  return `${status.phase}/${status.reason}`
}

async function settle(cluster: Cluster, sim: Simulator, rounds = 1): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    cluster.settle()
    await sim.runUntilQuiet({ maxSteps: 500 })
  }
}

function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

function getChallenge(cluster: Cluster, name: string): KubeObject & { spec: Json } {
  return cluster.get({ apiVersion: API, kind: 'Challenge', namespace: NAMESPACE, name }) as KubeObject & { spec: Json }
}

export interface Context {
  root: string
  env: Record<string, string>
  templates: { web: Json; pwn: Json }
  nowMs: number
  deadline: string
  /** one app for every simulated world; it sees the clock of the world being driven */
  app: App
  clock: { cluster: Cluster | undefined }
}

export async function createContext(root: string, nowMs: number): Promise<Context> {
  const dist = (file: string) => pathToFileURL(join(root, 'dist', file)).href
  const { buildApp } = (await import(dist('http/app.js'))) as {
    buildApp: (config: unknown, options: { logger: false; now: () => Date }) => Promise<App>
  }
  const { loadConfig } = (await import(dist('config/config.js'))) as {
    loadConfig: (env: Record<string, string>) => unknown
  }
  const env = serverEnv()
  const clock: Context['clock'] = { cluster: undefined }
  // The hooks see the simulated clock, as a server would see the wall clock at that moment.
  const app = await buildApp(loadConfig(env), { logger: false, now: () => (clock.cluster as Cluster).now() })
  return { root, env, templates: examples(root), nowMs, deadline: rfc3339(nowMs + 2 * 86400_000), app, clock }
}

function simulator(context: Context, cluster: Cluster): Simulator {
  context.clock.cluster = cluster
  const created = rfc3339(cluster.now().getTime() - 86400_000)
  return new Simulator(
    controller(context.root, created),
    cluster,
    injectTransport(context.app, { token: context.env.HOOK_TOKEN as string }),
  )
}

function historyStart(nowMs: number): number {
  return nowMs - HISTORY_MS - 3600_000
}

/** Definitions are applied an hour before the history starts. */
function catalogueApplied(nowMs: number): number {
  return historyStart(nowMs) - 3600_000
}

export interface Life {
  /** the Challenge as the platform created it, and when */
  created: KubeObject
  createdMs: number
  /** the Challenge at the end of its life: stopped, torn down, its status written by Metacontroller */
  final: KubeObject & { spec: Json }
  finishedMs: number
}

/**
 * The life of the owner's Challenge for catalogue entry `index`, in its own world (its definition and itself):
 * created, Running, played for a while, then stopped (solved, or given up) and torn down.
 */
export async function live(context: Context, index: number): Promise<Life> {
  const startMs = historyStart(context.nowMs) + (index - 2) * LIFE_SLOT_MS
  const def = definition(context.templates, index)
  const created = challenge(def.metadata.name, OWNER, context.deadline)
  const name = created.metadata.name
  const cluster = new Cluster({ start: new Date(startMs) })
  const sim = simulator(context, cluster)
  cluster.create(def, 'kubectl-client-side-apply')
  cluster.create(created, 'ctf-platform')
  await sim.runUntilQuiet()
  cluster.advance(8)
  // The pod is asked for once its guards are observed (a round), runs at the next; Running ENDPOINT_SETTLE_MS later.
  await settle(cluster, sim, 2)
  await sim.advance(3)
  const running = getChallenge(cluster, name)
  if ((running.status as Json | undefined)?.phase !== 'Running')
    throw new Error(`generating ${name}: not Running: ${JSON.stringify(running.status)}`)
  // Played for a while; most are solved, some the player stops.
  cluster.advance(60 + ((index * 37) % 90))
  running.spec = { ...running.spec, desiredState: 'Stopped', ...(index % 5 !== 0 ? { stopReason: 'Solved' } : {}) }
  cluster.update(running, 'ctf-platform')
  await sim.runUntilQuiet()
  // Teardown is ordered (workload first, flag Secret last): two rounds of the controllers, and the syncs they cause.
  cluster.advance(2)
  await settle(cluster, sim, 2)
  const final = getChallenge(cluster, name)
  if ((final.status as Json | undefined)?.phase !== 'Deleted')
    throw new Error(`generating ${name}: not Deleted: ${JSON.stringify(final.status)}`)
  sim.close()
  const finishedMs = cluster.now().getTime()
  if (finishedMs - startMs >= LIFE_SLOT_MS) throw new Error(`generating ${name}: its life outgrew its slot`)
  return { created, createdMs: startMs, final, finishedMs }
}

/** Replays a life's writes into a world, in time order, by the same managers (the world's clock is before it). */
function replay(cluster: Cluster, life: Life): void {
  const name = life.final.metadata.name
  cluster.advance((life.createdMs - cluster.now().getTime()) / 1000)
  cluster.create(life.created, 'ctf-platform')
  const stored = getChallenge(cluster, name)
  cluster.update(
    { ...stored, metadata: { ...stored.metadata, finalizers: life.final.metadata.finalizers ?? [] } },
    'metacontroller',
  )
  cluster.advance((life.finishedMs - cluster.now().getTime()) / 1000)
  cluster.update({ ...getChallenge(cluster, name), spec: life.final.spec }, 'ctf-platform')
  cluster.updateStatus({ ...getChallenge(cluster, name), status: life.final.status }, 'metacontroller')
}

/**
 * A namespace with a catalogue of `size` definitions, in which the owner already went through `lives`; two
 * minutes before the wall clock the owner starts `web-01`, and it becomes Running. Only the target is synced
 * (reconcile): an informer's first list would sync every Challenge of the namespace.
 */
async function runningTarget(
  context: Context,
  size: number,
  lives: Life[],
): Promise<{ result: SyncResult; phase: string }> {
  const cluster = new Cluster({ start: new Date(catalogueApplied(context.nowMs)) })
  for (let i = 1; i <= size; i++) cluster.create(definition(context.templates, i), 'kubectl-client-side-apply')
  for (const life of lives) replay(cluster, life)
  cluster.advance((context.nowMs - 120_000 - cluster.now().getTime()) / 1000)
  const sim = simulator(context, cluster)
  const target = challenge('web-01', OWNER, context.deadline)
  cluster.create(target, 'ctf-platform')
  for (let attempt = 0; attempt < 8; attempt++) {
    const result = await sim.reconcile(NAMESPACE, target.metadata.name)
    if ((result.answer?.status as Json | undefined)?.phase === 'Running') {
      // One more sync of the settled world: what every periodic resync of a running instance looks like.
      cluster.advance(20)
      const steady = await sim.reconcile(NAMESPACE, target.metadata.name)
      sim.close()
      if (cluster.now().getTime() > Date.now())
        throw new Error('generating: the simulated clock ran past the wall clock')
      return { result: steady, phase: expect(steady, 'Running') }
    }
    cluster.advance(4)
    cluster.settle()
  }
  throw new Error('generating: the target never became Running')
}

/** The lives of catalogue entries 2..XLARGE_CATALOGUE, computed by worker threads (bench/server/lives-worker.ts). */
async function allLives(root: string, nowMs: number): Promise<Life[]> {
  const indexes = Array.from({ length: XLARGE_CATALOGUE - 1 }, (_, i) => i + 2)
  const workers = Math.max(1, Math.min(availableParallelism(), 4))
  const shares = Array.from({ length: workers }, (_, w) => indexes.filter((_, i) => i % workers === w))
  const results = await Promise.all(
    shares.map(
      (share) =>
        new Promise<Life[]>((resolve, reject) => {
          const worker = new Worker(new URL('./lives-worker.js', import.meta.url), {
            workerData: { root, nowMs, indexes: share },
          })
          worker.once('message', (lives: Life[]) => resolve(lives))
          worker.once('error', reject)
          worker.once('exit', (code) =>
            code === 0 ? undefined : reject(new Error(`lives worker exited with ${code}`)),
          )
        }),
    ),
  )
  return results.flat().sort((a, b) => a.createdMs - b.createdMs)
}

export const SIZES = ['small', 'medium', 'large', 'xlarge'] as const
export type SizeName = (typeof SIZES)[number]

export async function generate(root: string): Promise<Generated[]> {
  const nowMs = Math.floor(Date.now() / 1000) * 1000
  const pendingLives = allLives(root, nowMs)
  const context = await createContext(root, nowMs)
  const out: Generated[] = []
  const request = (result: SyncResult) => Buffer.from(JSON.stringify(result.request))

  // small: the first sync of a new instance; one definition in the namespace.
  {
    const cluster = new Cluster({ start: new Date(nowMs - 3600_000) })
    cluster.create(definition(context.templates, 1), 'kubectl-client-side-apply')
    cluster.advance(3540)
    const sim = simulator(context, cluster)
    const target = challenge('web-01', 'bob', context.deadline)
    cluster.create(target, 'ctf-platform')
    const first = await sim.reconcile(NAMESPACE, target.metadata.name)
    sim.close()
    out.push({
      name: 'small',
      what: 'first /sync of a new instance (no status, no children); 1 ChallengeDefinition in the namespace',
      body: request(first),
      phase: expect(first, 'Pending'),
    })
  }

  const medium = await runningTarget(context, CATALOGUE, [])
  out.push({
    name: 'medium',
    what: `a Running HTTP instance (Secret, 2 NetworkPolicies, its Pod, Service, Ingress); ${CATALOGUE} ChallengeDefinitions in the namespace, only its own in the request`,
    body: request(medium.result),
    phase: medium.phase,
  })

  const lives = await pendingLives
  const large = await runningTarget(context, CATALOGUE, lives.slice(0, CATALOGUE - 1))
  out.push({
    name: 'large',
    what: `medium, after its owner went through the ${CATALOGUE - 1} other challenges: ${CATALOGUE} related Challenges with status and managedFields`,
    body: request(large.result),
    phase: large.phase,
  })

  const xlarge = await runningTarget(context, XLARGE_CATALOGUE, lives)
  out.push({
    name: 'xlarge',
    what: `large, in a ${XLARGE_CATALOGUE}-challenge catalogue the owner went through: ${XLARGE_CATALOGUE} related Challenges (the definitions stay out of the request)`,
    body: request(xlarge.result),
    phase: xlarge.phase,
  })

  await context.app.close()
  return out
}
