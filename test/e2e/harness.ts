/**
 * End-to-end harness: the real hook server listening on a real socket, the simulator (a Metacontroller
 * stand-in) calling it over HTTP with a bearer token, the project's CompositeController and both CRDs from
 * manifests/, and the example definitions. The hook reads the cluster's clock.
 *
 *   const world = await startWorld(t, { env: { OWNER_BUDGET: '1' } })
 *   world.cluster.create(world.definition('web-login'))
 *   world.cluster.create(world.challenge('web-login', 'alice'))
 *   await world.run(t)                          // syncs until quiet; stored status === the hook's last answer
 *   world.cluster.settle(); await world.run(t)   // pods ready, Services allocated
 *   await world.assertQuiet(t)                   // a second round writes nothing
 */
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import { parseAllDocuments } from 'yaml'
import { loadConfig, type Config } from '../../src/config/config.js'
import { buildApp } from '../../src/http/app.js'
import { example, type ExampleName } from '../helpers/examples.js'
import { componentSettings, ROUTING_EXAMPLES, withComponents, type ManifestObject } from '../helpers/manifests.js'
import { TEST_ENV } from '../helpers/app.js'
import { challenge as buildChallenge } from '../helpers/world.js'
import {
  Cluster,
  httpTransport,
  Simulator,
  type ClusterOptions,
  type CompositeController,
  type HookTransport,
  type HookVersion,
  type KubeObject,
  type ObjectRef,
  type SyncResult,
} from '../support/simulator/index.js'

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
export const NS = 'challenges'
export const TOKEN = 'e2e-hook-token'
export const API = 'challenge-hooks.dev/v1alpha1'
export const FINALIZER = 'metacontroller.io/compositecontroller-challenge-hooks'

export type Json = Record<string, unknown>

/** Field managers, as the API server records them in managedFields: the CTF platform and a challenge author. */
export const PLATFORM = 'ctf-platform'
export const AUTHOR = 'kubectl-client-side-apply'

function yamlDocuments(file: string): Json[] {
  return parseAllDocuments(readFileSync(join(repoRoot, file), 'utf8'))
    .map((doc) => doc.toJS() as Json | null)
    .filter((value): value is Json => value !== null)
}

/** The CompositeController exactly as manifests/compositecontroller.yaml declares it. */
export const compositeController = yamlDocuments(
  'manifests/compositecontroller.yaml',
)[0] as unknown as CompositeController
export const challengeCrd = yamlDocuments('manifests/crds/challenges.yaml')[0] as unknown as KubeObject
export const definitionCrd = yamlDocuments('manifests/crds/challengedefinitions.yaml')[0] as unknown as KubeObject

export { example, type ExampleName }

/** A Challenge as a platform creates it (test/helpers/world.ts builds it), for the simulated cluster to store. */
export function challenge(definition: string, owner: string, spec: Json = {}, name?: string): KubeObject {
  return buildChallenge({
    as: 'created',
    namespace: NS,
    definition,
    owner,
    spec,
    ...(name === undefined ? {} : { name }),
  }) as KubeObject
}

export function challengeRef(name: string): ObjectRef {
  return { apiVersion: API, kind: 'Challenge', namespace: NS, name }
}

export interface WorldOptions {
  /**
   * Routing components of manifests/components/ (gateway-api-http, traefik-tls, ...): their child rules join the
   * CompositeController and their settings the hook server's environment, as `kubectl apply -k` would do.
   */
  components?: string[]
  /** environment of the hook server besides HOOK_TOKEN (and the components' settings, which it overrides) */
  env?: Record<string, string>
  cluster?: ClusterOptions
  hookVersion?: HookVersion
  etag?: boolean
}

/** The tap test (or subtest) the world reports to. */
export type TestLike = Test

export interface World {
  cluster: Cluster
  sim: Simulator
  config: Config
  url: string
  /** every hook call the simulator made, in order (hook name and HTTP status) */
  calls: Array<{ hook: string; statusCode: number; ifNoneMatch: boolean }>
  definition(name: ExampleName, spec?: Json, rename?: string): KubeObject
  challenge(definition: string, owner: string, spec?: Json, name?: string): KubeObject
  get(name: string): KubeObject | undefined
  status(name: string): Json
  /** `Kind/name` of every object the Challenge controls, sorted. */
  children(name: string): string[]
  /** `Kind/name` of the Challenge's pods (by the instance label), sorted. */
  pods(name: string): string[]
  /** Creates an object: Challenges as the platform, anything else as a challenge author with kubectl. */
  create(object: KubeObject): KubeObject
  /** Patches the spec (a merge of the top-level spec fields), as the platform's buttons do. */
  patchSpec(name: string, spec: Json): void
  /** Syncs until quiet and checks the stored status of every Challenge equals the hook's last answer. */
  run(t: TestLike): Promise<number>
  /** Moves the clock, running due syncs on the way, then checks the stored statuses. */
  advance(t: TestLike, seconds: number): Promise<number>
  /** settle() of the cluster's controllers, then run(). */
  settle(t: TestLike): Promise<number>
  /** Quiescence: another round of syncs and a reconcile of every Challenge write nothing. */
  assertQuiet(t: TestLike): Promise<void>
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item as Json).sort(([a], [b]) => (a < b ? -1 : 1)))
      : item,
  )
}

/** The last synced answer per Challenge, compared with what the API server stored (after CRD pruning). */
function assertStoredStatus(t: TestLike, world: World): void {
  const last = new Map<string, SyncResult>()
  for (const result of world.sim.history) {
    if (result.outcome === 'synced' && result.answer) last.set(result.parent.name, result)
  }
  for (const [name, result] of last) {
    const stored = world.get(name)
    if (stored === undefined) continue
    const { observedGeneration: _generation, ...status } = (stored.status ?? {}) as Json
    const answer = result.answer?.status ?? {}
    const message = `${name}: the stored status is the hook's answer (nothing pruned by the CRD)`
    // Key order differs (the API server's pruning rebuilds objects): compare canonical JSON, diff only on failure.
    if (canonical(status) === canonical(answer)) t.pass(message)
    else t.strictSame(status, answer, message)
  }
}

export async function startWorld(t: TestLike, options: WorldOptions = {}): Promise<World> {
  const cluster = new Cluster(options.cluster)
  cluster.registerCRD(challengeCrd)
  cluster.registerCRD(definitionCrd)
  const components = options.components ?? []
  const [manifest] = withComponents([compositeController as unknown as ManifestObject], components) as unknown as [
    CompositeController,
  ]
  // Stored first, as `kubectl apply` stores it: Metacontroller hands the hooks the stored object (uid, resourceVersion, ...).
  const controller = cluster.create(manifest as unknown as KubeObject, 'kubectl') as unknown as CompositeController
  // The simulated cluster programs no data path, and its clock moves only when a test moves it: no settle time
  // (ENDPOINT_SETTLE_MS) unless a test asks for one.
  const config = loadConfig({
    HOOK_TOKEN: TOKEN,
    ...TEST_ENV,
    ENDPOINT_SETTLE_MS: '0',
    ...componentSettings(components),
    ...options.env,
  })
  const app = await buildApp(config, { logger: false, now: () => cluster.now() })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const http = httpTransport(url, { token: TOKEN })
  const calls: World['calls'] = []
  const transport: HookTransport = {
    async call(hook, body, headers = {}) {
      const response = await http.call(hook, body, headers)
      calls.push({ hook, statusCode: response.statusCode, ifNoneMatch: 'If-None-Match' in headers })
      return response
    },
  }
  const simOptions = {
    ...(options.hookVersion ? { hookVersion: options.hookVersion } : {}),
    ...(options.etag === undefined ? {} : { etag: options.etag }),
  }
  const sim = new Simulator(controller, cluster, transport, simOptions)
  t.teardown(async () => {
    sim.close()
    await app.close()
  })

  const owned = (name: string) => {
    const uid = cluster.get(challengeRef(name))?.metadata.uid
    return cluster
      .all()
      .filter(
        (object) =>
          uid !== undefined && (object.metadata.ownerReferences ?? []).some((ref) => ref.uid === uid && ref.controller),
      )
  }
  const world: World = {
    cluster,
    sim,
    config,
    url,
    calls,
    definition: example,
    challenge,
    get: (name) => cluster.get(challengeRef(name)),
    status: (name) => (cluster.get(challengeRef(name))?.status ?? {}) as Json,
    children: (name) =>
      owned(name)
        .map((object) => `${object.kind}/${object.metadata.name}`)
        .sort(),
    pods: (name) =>
      cluster
        .list('v1', 'Pod', NS)
        .filter((pod) => pod.metadata.labels?.['challenge-hooks.dev/instance'] === name)
        .map((pod) => `Pod/${pod.metadata.name}`)
        .sort(),
    create: (object) => cluster.create(object, object.kind === 'Challenge' ? PLATFORM : AUTHOR),
    patchSpec(name, spec) {
      const current = cluster.get(challengeRef(name)) as KubeObject
      cluster.update({ ...current, spec: { ...(current.spec as Json), ...spec } }, PLATFORM)
    },
    async run(tt) {
      const writes = await sim.runUntilQuiet()
      assertStoredStatus(tt, world)
      return writes
    },
    async advance(tt, seconds) {
      const writes = await sim.advance(seconds)
      assertStoredStatus(tt, world)
      return writes
    },
    async settle(tt) {
      cluster.settle()
      return world.run(tt)
    },
    async assertQuiet(tt) {
      tt.equal(await sim.runUntilQuiet(), 0, 'quiet: nothing left to sync')
      for (const parent of cluster.list(API, 'Challenge', NS)) {
        const result = await sim.reconcile(NS, parent.metadata.name)
        tt.equal(result.outcome, 'synced', `${parent.metadata.name}: synced`)
        tt.equal(result.writes, 0, `quiet: a reconcile of ${parent.metadata.name} writes nothing`)
      }
      assertStoredStatus(tt, world)
    },
  }
  return world
}

// The e2e tests read conditions with the domain tests' helper (a module that reads no file when imported).
export { conditionOf } from '../helpers/world.js'

/**
 * A timeline of what disappeared from the cluster, in order: `Kind/name` when an object is gone for good
 * (pods, which linger, show up when the kubelet finishes). Used to assert the teardown order.
 */
export function deletionLog(cluster: Cluster): { log: string[]; stop: () => void } {
  const log: string[] = []
  const stop = cluster.watch((event) => {
    if (event.type === 'DELETED') log.push(`${event.object.kind}/${event.object.metadata.name}`)
  })
  return { log, stop }
}

/** The shared Gateway of docs/examples/routing/ (docs/routing.md, "Gateway API"), as an operator would apply it. */
export function exampleGateway(): KubeObject {
  for (const document of parseAllDocuments(readFileSync(ROUTING_EXAMPLES.Gateway, 'utf8'))) {
    const value = document.toJS() as KubeObject | null
    if (value?.kind === 'Gateway') return value
  }
  throw new Error('docs/examples/routing/gateway.yaml holds no Gateway')
}

/** The settings that go with that Gateway (its file's header, and docs/routing.md). */
export const GATEWAY_ENV = {
  GATEWAY: 'gateway-system/challenges',
  BASE_DOMAIN: 'ctf.example.org',
  TLS_BASE_DOMAIN: 'tcp.ctf.example.org',
  INGRESS_NAMESPACE: 'gateway-system',
}

/** Seconds from the cluster's clock to an RFC 3339 time. */
export function secondsUntil(cluster: Cluster, time: unknown): number {
  return (Date.parse(String(time)) - cluster.now().getTime()) / 1000
}

/** The syncs of one Challenge since `from` (an index into the simulator's history). */
export function syncsOf(sim: Simulator, name: string, from = 0): SyncResult[] {
  return sim.history.slice(from).filter((result) => result.parent.name === name && result.outcome === 'synced')
}

/** `Kind/name` of the children a sync deleted. */
export function deletedBy(result: SyncResult): string[] {
  return result.deleted.map((ref) => `${ref.kind}/${ref.name}`).sort()
}

/** The children of a web (HTTP) instance `<p>`, sorted as World.children returns them. */
export function webChildren(p: string): string[] {
  return [`Ingress/${p}`, `NetworkPolicy/${p}-isolate`, `Pod/${p}`, `Secret/${p}-flag`, `Service/${p}`]
}

/** The children of a NodePort / LoadBalancer instance `<p>` (no Ingress). */
export function netcatChildren(p: string): string[] {
  return webChildren(p).filter((child) => !child.startsWith('Ingress/'))
}
