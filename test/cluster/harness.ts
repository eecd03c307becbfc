/**
 * The cluster suite's world: a real API server (the suite's own control plane, or an existing cluster given by
 * TEST_KUBECONFIG), this project's manifests installed in it, the hook server in this process on a clock the
 * tests can move, a controller (the Metacontroller stand-in authenticated as Metacontroller's service account, or
 * the Metacontroller binary named by METACONTROLLER_BIN), the kubelet stand-in, and a namespace per scenario.
 *
 *   const suite = await startSuite(t)
 *   const s = await suite.scenario(t, 'web')                // namespace chtest-web, Pod Security restricted
 *   await s.create(s.definition('web-login'))
 *   await s.create(s.challenge('web-login', 'alice'))
 *   await s.until('web-login-u-alice', (st) => st.phase === 'Running', 'Running')
 */
import { randomBytes } from 'node:crypto'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import type { Test } from 'tap'
import { loadConfig } from '../../src/config.js'
import { buildApp } from '../../src/http/app.js'
import { example, type Json } from '../e2e/harness.js'
import { controlPlaneBinaries, repoRoot, startControlPlane } from '../support/kube/controlplane.js'
import { eventually } from '../support/kube/eventually.js'
import { Kubelet, STANDIN_NODE_LABEL, type KubeletOptions } from '../support/kube/kubelet.js'
import { kubectlFor, kubectlOk, type Kubectl } from '../support/kube/kubectl.js'
import { LiveCluster, OffsetClock } from '../support/kube/live-cluster.js'
import { resourcePath, Rest } from '../support/kube/rest.js'
import { Informer } from '../support/kube/informer.js'
import { httpTransport, resourceByName, Simulator, type CompositeController, type KubeObject, type WatchEvent } from '../support/simulator/index.js'
import type { ResourceType } from '../support/simulator/objects.js'

export type { Json }
export const API = 'challenge-hooks.dev/v1alpha1'
export const CHALLENGES = `/apis/${API}`
/** Metacontroller's identity, upstream-style: service account metacontroller in namespace metacontroller. */
export const METACONTROLLER_SA = 'system:serviceaccount:metacontroller:metacontroller'
export const NAMESPACE_PREFIX = 'chtest-'
/** Field managers, as the API server records them: the CTF platform and a challenge author. */
export const PLATFORM = 'ctf-platform'
export const AUTHOR = 'kubectl'
const SHARED_METACONTROLLER_CRDS = join(repoRoot, '../shared/metacontroller-crds-v1.yaml')

export interface ClusterEnv {
  kubeconfig: string
  kubectl: Kubectl
  /** the admin */
  rest: Rest
  /** the suite's own throwaway control plane (false: an existing cluster, where the suite only touches its own) */
  owned: boolean
}

/** The cluster the suite runs against: TEST_KUBECONFIG (set by `npm run test:cluster`), or one of its own. */
export async function connect(t: Test): Promise<ClusterEnv> {
  const given = process.env.TEST_KUBECONFIG
  if (given !== undefined && given !== '') {
    const kubectl = process.env.TEST_KUBECTL ?? 'kubectl'
    return { kubeconfig: given, kubectl: kubectlFor(kubectl, given), rest: Rest.fromFile(given), owned: process.env.TEST_CLUSTER_OWNED === '1' }
  }
  // Run as a single file (npx tap test/cluster/x.test.ts): a control plane for this file alone.
  const binDir = controlPlaneBinaries({ build: false })
  const plane = await startControlPlane({ binDir })
  t.teardown(plane.stop)
  return { kubeconfig: plane.kubeconfig, kubectl: kubectlFor(join(binDir, 'kubectl'), plane.kubeconfig), rest: Rest.fromFile(plane.kubeconfig), owned: true }
}

/**
 * What an operator does: Metacontroller's CRDs and its namespace and service account (as its own install makes
 * them), then `kubectl apply --server-side -k manifests/`. Idempotent; returns kubectl's output of the apply.
 */
export async function install(env: ClusterEnv, components: string[] = []): Promise<{ stdout: string; stderr: string }> {
  const crds = existsSync(SHARED_METACONTROLLER_CRDS) ? readFileSync(SHARED_METACONTROLLER_CRDS, 'utf8') : MINIMAL_METACONTROLLER_CRDS
  await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], { input: crds })
  await kubectlOk(env.kubectl, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/compositecontrollers.metacontroller.k8s.io'])
  await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], { input: METACONTROLLER_IDENTITY })
  // With components, an overlay as an operator writes one: manifests/ plus manifests/components/<name>.
  const overlay = components.length === 0 ? undefined : mkdtempSync(join(tmpdir(), 'challenge-hooks-overlay-'))
  if (overlay !== undefined) {
    const kustomization = { resources: [relative(overlay, join(repoRoot, 'manifests'))], components: components.map((name) => relative(overlay, join(repoRoot, 'manifests/components', name))) }
    writeFileSync(join(overlay, 'kustomization.yaml'), JSON.stringify(kustomization))
  }
  const applied = await kubectlOk(env.kubectl, ['apply', '--server-side', '--force-conflicts', '-k', overlay ?? 'manifests/'], { cwd: repoRoot }).finally(() => {
    if (overlay !== undefined) rmSync(overlay, { recursive: true, force: true })
  })
  await kubectlOk(env.kubectl, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/challenges.challenge-hooks.dev', 'crd/challengedefinitions.challenge-hooks.dev'])
  return { stdout: applied.stdout, stderr: applied.stderr }
}

/** A Rest client that authenticates as Metacontroller's service account (a token from the TokenRequest API). */
export async function metacontrollerRest(env: ClusterEnv): Promise<{ rest: Rest; token: string }> {
  const request = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 7200 } }
  const answer = (await env.rest.call('POST', '/api/v1/namespaces/metacontroller/serviceaccounts/metacontroller/token', { body: request })) as {
    status: { token: string }
  }
  const kubeconfig = new (env.rest.kubeconfig.constructor as typeof import('@kubernetes/client-node').KubeConfig)()
  const cluster = env.rest.kubeconfig.getCurrentCluster() as NonNullable<ReturnType<typeof env.rest.kubeconfig.getCurrentCluster>>
  kubeconfig.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'metacontroller', token: answer.status.token }],
    contexts: [{ name: 'metacontroller', cluster: cluster.name, user: 'metacontroller' }],
    currentContext: 'metacontroller',
  })
  return { rest: new Rest(kubeconfig), token: answer.status.token }
}

export interface HookRequest {
  hook: string
  headers: Record<string, string | string[] | undefined>
  body: Json
  statusCode?: number
  /** the answer's body, for a 200 */
  answer?: Json
}

/** The last status the sync or finalize hook answered (200) for a Challenge. */
export function lastAnswer(suite: Suite, ns: string, name: string): Json | undefined {
  const answered = suite.requests.findLast((request) => {
    const meta = ((request.body.parent ?? {}) as { metadata?: Json }).metadata ?? {}
    return request.hook !== 'customize' && request.answer !== undefined && meta.namespace === ns && meta.name === name
  })
  return answered?.answer?.status as Json | undefined
}

export interface SuiteOptions {
  /** environment of the hook server (HOOK_TOKEN comes from the installed Secret) */
  hookEnv?: Record<string, string>
  /** kustomize components of manifests/components/ installed with the base (their CRDs must be there) */
  components?: string[]
  kubelet?: KubeletOptions
}

export interface Suite extends ClusterEnv {
  clock: OffsetClock
  hookUrl: string
  token: string
  /** which controller runs the CompositeController */
  controller: 'stand-in' | 'metacontroller'
  /** the stand-in, when it is the controller: its history holds every sync, with errors and warnings */
  sim: Simulator | undefined
  kubelet: Kubelet
  /** what happened, from watches: every status transition and every deletion */
  recorder: Recorder
  /** every hook request the hook server received, in order (whichever controller sent it) */
  requests: HookRequest[]
  /**
   * On an existing cluster: the RuntimeClass every test definition gets, whose nodeSelector matches only the
   * stand-in node, so that the cluster's scheduler and kubelets leave the test pods to the stand-in kubelet.
   */
  runtimeClass: string | undefined
  /** The child types of the installed CompositeController (with its components' routes). */
  childResources: ResourceType[]
  /** Warnings the API server gave the stand-in's writes (Metacontroller logs them); empty for the binary. */
  apiWarnings: Rest['warnings']
  scenario(t: Test, name: string, options?: ScenarioOptions): Promise<Scenario>
}

/**
 * Watches of the Challenges, their children and pods, recording `phase/reason` each time it changes (per
 * `namespace/name`), and `Kind/name` when an object is gone for good (per namespace), in the order seen.
 */
export class Recorder {
  readonly #transitions = new Map<string, string[]>()
  readonly #deletions = new Map<string, string[]>()
  readonly #informers: Informer[]

  constructor(rest: Rest, children: ResourceType[]) {
    const kinds = [
      { apiVersion: API, resource: 'challenges', kind: 'Challenge', statusSubresource: true },
      ...children,
      { apiVersion: 'v1', resource: 'pods', kind: 'Pod', statusSubresource: true },
    ]
    this.#informers = kinds.map((resource) => new Informer(rest, resource))
    for (const informer of this.#informers) informer.on((event) => this.#record(event))
  }

  async start(): Promise<void> {
    await Promise.all(this.#informers.map((informer) => informer.start()))
  }

  stop(): void {
    for (const informer of this.#informers) informer.stop()
  }

  /** `phase/reason` of a Challenge, each time it changed */
  transitions(ns: string, name: string): string[] {
    return [...(this.#transitions.get(`${ns}/${name}`) ?? [])]
  }

  /** `Kind/name` of every object gone from the namespace, in order */
  deletions(ns: string): string[] {
    return [...(this.#deletions.get(ns) ?? [])]
  }

  #record({ type, object }: WatchEvent): void {
    const ns = String(object.metadata.namespace)
    if (type === 'DELETED') {
      const log = this.#deletions.get(ns) ?? []
      log.push(`${object.kind}/${object.metadata.name}`)
      this.#deletions.set(ns, log)
      return
    }
    if (object.kind !== 'Challenge') return
    const status = (object.status ?? {}) as Json
    if (status.phase === undefined) return
    const key = `${ns}/${object.metadata.name}`
    const seen = this.#transitions.get(key) ?? []
    const now = `${String(status.phase)}/${String(status.reason)}`
    if (seen.at(-1) !== now) seen.push(now)
    this.#transitions.set(key, seen)
  }
}

/** Everything a test file needs, stopped when `t` ends (after every scenario namespace is gone). */
export async function startSuite(t: Test, options: SuiteOptions = {}): Promise<Suite> {
  const env = await connect(t)
  await install(env, options.components)
  const clock = new OffsetClock()
  const secret = await env.rest.get<{ data: Record<string, string> }>('/api/v1/namespaces/challenge-hooks/secrets/challenge-hooks-secrets')
  const token = Buffer.from(secret.data.HOOK_TOKEN as string, 'base64').toString('utf8')
  const app = await buildApp(loadConfig({ HOOK_TOKEN: token, ...options.hookEnv }), { logger: false, now: () => clock.now() })
  const requests: HookRequest[] = []
  app.addHook('preHandler', async (request) => {
    if (request.method === 'POST') requests.push({ hook: request.url.slice(1), headers: request.headers, body: request.body as Json })
  })
  app.addHook('onSend', async (request, reply, payload) => {
    const captured = requests.findLast((entry) => entry.body === request.body)
    if (captured !== undefined) {
      captured.statusCode = reply.statusCode
      if (reply.statusCode === 200 && typeof payload === 'string') captured.answer = JSON.parse(payload) as Json
    }
    return payload
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const hookUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const kubelet = new Kubelet(env.rest, options.kubelet)
  await kubelet.start()
  const runtimeClass = env.owned ? undefined : STANDIN_RUNTIME_CLASS
  if (runtimeClass !== undefined) await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], { input: runtimeClassYaml(runtimeClass) })
  const installed = await env.rest.get<CompositeController>('/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers/challenge-hooks')
  const childResources = (installed.spec.childResources ?? []).map(({ apiVersion, resource }) => resourceByName(apiVersion, resource)).filter((r) => r !== undefined)
  const recorder = new Recorder(env.rest, childResources)
  await recorder.start()
  // The controller reaches the hooks on loopback: webhook.url wins over the Service reference.
  await applyControllerWithUrl(env, hookUrl)
  const identity = await metacontrollerRest(env)
  const controller = process.env.METACONTROLLER_BIN ? await startMetacontroller(env, identity.token) : await startStandIn(identity.rest, hookUrl, token, clock)
  t.teardown(async () => {
    await controller.stop()
    kubelet.stop()
    recorder.stop()
    await app.close()
  })
  const suite: Suite = {
    ...env,
    clock,
    hookUrl,
    token,
    controller: controller.name,
    sim: controller.sim,
    kubelet,
    recorder,
    requests,
    runtimeClass,
    childResources,
    apiWarnings: controller.warnings,
    scenario: (tt, name, scenarioOptions) => startScenario(tt, suite, name, scenarioOptions),
  }
  return suite
}

interface RunningController {
  name: 'stand-in' | 'metacontroller'
  sim: Simulator | undefined
  warnings: Rest['warnings']
  stop(): Promise<void>
}

async function startStandIn(rest: Rest, hookUrl: string, token: string, clock: OffsetClock): Promise<RunningController> {
  // The hooks get the CompositeController as the API server stores it (metadata, the url hooks, the child rules of
  // the installed components), as from Metacontroller.
  const stored = await rest.get<CompositeController>('/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers/challenge-hooks')
  const { spec } = stored
  // What Metacontroller's informers watch: the parent, every child type, and the related types of the customize rules.
  const names = [spec.parentResource, ...(spec.childResources ?? []), { apiVersion: 'v1', resource: 'pods' }, { apiVersion: API, resource: 'challengedefinitions' }]
  const resources = names.map(({ apiVersion, resource }) => resourceByName(apiVersion, resource)).filter((r) => r !== undefined)
  const live = await LiveCluster.start(rest, [...new Map(resources.map((r) => [`${r.apiVersion}/${r.resource}`, r])).values()], clock)
  const sim = new Simulator(stored, live, httpTransport(hookUrl, { token }))
  const abort = new AbortController()
  const serving = sim.serve(abort.signal)
  return {
    name: 'stand-in',
    sim,
    warnings: rest.warnings,
    async stop() {
      abort.abort()
      await serving
      sim.close()
      live.close()
    },
  }
}

/** The Metacontroller binary, out of cluster, as Metacontroller's service account. */
async function startMetacontroller(env: ClusterEnv, token: string): Promise<RunningController> {
  const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-mc-'))
  const cluster = env.rest.kubeconfig.getCurrentCluster() as NonNullable<ReturnType<typeof env.rest.kubeconfig.getCurrentCluster>>
  const kubeconfig = join(dir, 'kubeconfig')
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: cluster.server, ...(cluster.caFile ? { 'certificate-authority': cluster.caFile } : {}), ...(cluster.caData ? { 'certificate-authority-data': cluster.caData } : {}) } }],
      users: [{ name: 'metacontroller', user: { token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'metacontroller' } }],
      'current-context': 'c',
    }),
  )
  const log = openSync(join(dir, 'metacontroller.log'), 'a')
  const child: ChildProcess = spawn(
    process.env.METACONTROLLER_BIN as string,
    [`--kubeconfig=${kubeconfig}`, '--discovery-interval=1s', '--metrics-address=0', '--health-probe-bind-address=0'],
    { stdio: ['ignore', log, log] },
  )
  return {
    name: 'metacontroller',
    sim: undefined,
    warnings: [],
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await exited
      }
      if (process.env.METACONTROLLER_LOG !== undefined) writeFileSync(process.env.METACONTROLLER_LOG, readFileSync(join(dir, 'metacontroller.log')), { flag: 'a' })
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The installed CompositeController, its hooks pointed at this process's hook server. */
async function applyControllerWithUrl(env: ClusterEnv, hookUrl: string): Promise<void> {
  const stored = await env.rest.get<CompositeController>('/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers/challenge-hooks')
  // What an operator applies: the installed spec (with its components' child rules), no server-side metadata.
  const controller: CompositeController = { apiVersion: stored.apiVersion, kind: stored.kind, metadata: { name: stored.metadata.name }, spec: stored.spec }
  for (const [name, hook] of Object.entries(controller.spec.hooks ?? {})) {
    const webhook = hook.webhook as Json
    delete webhook.service
    delete webhook.path
    webhook.url = `${hookUrl}/${name}`
  }
  await kubectlOk(env.kubectl, ['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify(controller) })
}

// ---- scenarios: one namespace each ----

export interface ScenarioOptions {
  /** Pod Security level the namespace enforces (default restricted) */
  podSecurity?: 'restricted' | 'baseline'
}

export interface Scenario {
  ns: string
  suite: Suite
  definition(name: 'web-login' | 'pwn-echo', spec?: Json, rename?: string): KubeObject
  challenge(definition: string, owner: string, spec?: Json, name?: string): KubeObject
  /** Creates an object in the namespace: Challenges as the platform, anything else as a challenge author. */
  create(object: KubeObject): Promise<KubeObject>
  get(name: string): Promise<KubeObject | undefined>
  status(name: string): Promise<Json>
  /** A JSON merge patch of the spec, as the platform's buttons send it. */
  patchSpec(name: string, spec: Json): Promise<void>
  /** Waits until the Challenge's status satisfies `ready`; the timeout message shows the last status. */
  until(name: string, ready: (status: Json, challenge: KubeObject) => boolean, what: string, timeoutMs?: number): Promise<Json>
  /** Moves the hook server's clock, then touches every Challenge of the namespace so the controller syncs it. */
  advance(seconds: number): Promise<void>
  /** `Kind/name` of every object the Challenge controls, sorted. */
  children(name: string): Promise<string[]>
  /**
   * Quiescence: every Challenge of the namespace synced once more (a nudge) changes nothing. Returns the children
   * (`Kind/name`) whose resourceVersion moved, and the writes the stand-in made in those syncs.
   */
  resync(): Promise<{ moved: string[]; writes: number }>
  list(path: string): Promise<KubeObject[]>
}


/**
 * A namespace of the suite's own (`chtest-<name>`), made like manifests/challenges-namespace.yaml (Pod Security
 * level, default deny, quota, limits), removed when `t` ends: while the controller still runs, since Challenges
 * carry Metacontroller's finalizer.
 */
export async function createNamespace(env: ClusterEnv, t: Test, name: string, level: 'restricted' | 'baseline' = 'restricted'): Promise<string> {
  const ns = `${NAMESPACE_PREFIX}${name}`
  await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], { input: namespaceYaml(ns, level) })
  t.teardown(async () => {
    await env.kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found'])
    await eventually(`namespace ${ns} to be gone`, async () => (await env.rest.find(`/api/v1/namespaces/${ns}`)) === undefined, async () => {
      const left = await env.kubectl(['get', 'chal,pods,deploy', '-n', ns, '-o', 'name'])
      return left.stdout.trim().split('\n').join(', ')
    }, { timeoutMs: 60_000 })
  })
  return ns
}

async function startScenario(t: Test, suite: Suite, name: string, options: ScenarioOptions = {}): Promise<Scenario> {
  // Scenarios of a file run one after another, each on the real clock until it advances it.
  suite.clock.reset()
  const ns = await createNamespace(suite, t, name, options.podSecurity)
  const base = `${CHALLENGES}/namespaces/${ns}`
  let nudges = 0
  const childObjects = async () => (await Promise.all(suite.childResources.map((resource) => scenario.list(resourcePath(resource, ns))))).flat()
  const scenario: Scenario = {
    ns,
    suite,
    definition: (definitionName, spec = {}, rename) => {
      const security = (spec.security ?? {}) as Json
      const pinned = suite.runtimeClass === undefined || security.runtimeClassName !== undefined ? spec : { ...spec, security: { ...security, runtimeClassName: suite.runtimeClass } }
      return inNamespace(example(definitionName, pinned, rename), ns)
    },
    challenge: (definition, owner, spec = {}, challengeName = `${definition}-u-${owner}`) => ({
      apiVersion: API,
      kind: 'Challenge',
      metadata: { name: challengeName, namespace: ns, labels: { 'challenge-hooks.dev/owner': owner, 'challenge-hooks.dev/definition': definition } },
      spec: { definitionRef: { name: definition }, owner: { kind: 'User', id: owner }, ...spec },
    }),
    async create(object) {
      const plural = object.kind === 'Challenge' ? 'challenges' : object.kind === 'ChallengeDefinition' ? 'challengedefinitions' : undefined
      if (plural === undefined) throw new Error(`scenario.create: ${object.kind} is not created by the platform or an author`)
      const manager = object.kind === 'Challenge' ? PLATFORM : AUTHOR
      return (await suite.rest.call('POST', `${base}/${plural}`, { body: inNamespace(object, ns), query: { fieldManager: manager } })) as KubeObject
    },
    get: (challengeName) => suite.rest.find<KubeObject>(`${base}/challenges/${challengeName}`),
    async status(challengeName) {
      return ((await scenario.get(challengeName))?.status ?? {}) as Json
    },
    async patchSpec(challengeName, spec) {
      await suite.rest.call('PATCH', `${base}/challenges/${challengeName}`, {
        body: { spec },
        contentType: 'application/merge-patch+json',
        query: { fieldManager: PLATFORM },
      })
    },
    async until(challengeName, ready, what, timeoutMs = 30_000) {
      let last: KubeObject | undefined
      return eventually(
        `${ns}/${challengeName}: ${what}`,
        async () => {
          last = await scenario.get(challengeName)
          return last !== undefined && ready((last.status ?? {}) as Json, last) ? ((last.status ?? {}) as Json) : undefined
        },
        async () => `${describeStatus(last)}; ${await describeWorld(suite, ns)}`,
        { timeoutMs },
      )
    },
    async advance(seconds) {
      suite.clock.advance(seconds)
      nudges += 1
      for (const challenge of await scenario.list(`${base}/challenges`)) {
        await suite.rest.call('PATCH', `${base}/challenges/${challenge.metadata.name}`, {
          body: { metadata: { annotations: { 'challenge-hooks.test/nudge': String(nudges) } } },
          contentType: 'application/merge-patch+json',
          query: { fieldManager: 'test-clock' },
        })
      }
    },
    async resync() {
      const versions = async () => {
        const objects = await childObjects()
        return new Map(objects.filter((o) => (o.metadata.ownerReferences ?? []).length > 0).map((o) => [`${o.kind}/${o.metadata.name}`, o.metadata.resourceVersion]))
      }
      const before = await versions()
      const names = (await scenario.list(`${base}/challenges`)).map((challenge) => challenge.metadata.name)
      const fromRequest = suite.requests.length
      const fromSync = suite.sim?.history.length ?? 0
      await scenario.advance(0)
      const nudge = String(nudges)
      // Synced again: a sync or finalize request for each Challenge that carries the nudge, answered.
      await eventually(`every Challenge of ${ns} synced after the nudge`, () =>
        names.every((name) =>
          suite.requests.slice(fromRequest).some((request) => {
            const meta = ((request.body.parent ?? {}) as { metadata?: { name?: string; annotations?: Record<string, string> } }).metadata
            return request.hook !== 'customize' && meta?.name === name && meta.annotations?.['challenge-hooks.test/nudge'] === nudge && request.statusCode !== undefined
          }),
        ),
      )
      // Whatever those syncs write lands right after their answers.
      await new Promise((resolve) => setTimeout(resolve, 1500))
      const after = await versions()
      const moved = [...new Set([...before.keys(), ...after.keys()])].filter((key) => before.get(key) !== after.get(key)).sort()
      const writes = (suite.sim?.history ?? []).slice(fromSync).filter((r) => r.parent.namespace === ns).reduce((sum, r) => sum + r.writes, 0)
      return { moved, writes }
    },
    async children(challengeName) {
      const uid = (await scenario.get(challengeName))?.metadata.uid
      const objects = await childObjects()
      return objects
        .filter((object) => uid !== undefined && (object.metadata.ownerReferences ?? []).some((ref) => ref.uid === uid && ref.controller === true))
        .map((object) => `${object.kind}/${object.metadata.name}`)
        .sort()
    },
    async list(path) {
      const kind = kindOfListPath(path)
      return (await suite.rest.get<{ items: KubeObject[] }>(path)).items.map((item) => ({ ...item, ...kind }))
    },
  }
  return scenario
}

function inNamespace(object: KubeObject, ns: string): KubeObject {
  return { ...object, metadata: { ...object.metadata, namespace: ns } }
}

function describeStatus(challenge: KubeObject | undefined): string {
  if (challenge === undefined) return 'no such Challenge'
  const status = (challenge.status ?? {}) as Json
  return JSON.stringify({ phase: status.phase, reason: status.reason, message: status.message, endpoint: status.endpoint })
}

/** What a person debugging a timeout wants to see: the workload, the pods, recent events, the controller's errors. */
async function describeWorld(suite: Suite, ns: string): Promise<string> {
  const objects = await suite.kubectl(['get', 'deploy,rs,pods,svc', '-n', ns, '-o', 'wide', '--no-headers'])
  const events = await suite.kubectl(['get', 'events', '-n', ns, '--sort-by=.lastTimestamp', '-o', 'custom-columns=OBJ:.involvedObject.name,REASON:.reason,MSG:.message', '--no-headers'])
  const syncErrors = (suite.sim?.history ?? []).filter((result) => result.outcome === 'error').slice(-3).flatMap((result) => result.errors)
  return [
    `objects: ${objects.stdout.trim().split('\n').join(' | ') || 'none'}`,
    `events: ${events.stdout.trim().split('\n').slice(-5).join(' | ') || 'none'}`,
    `sync errors: ${syncErrors.join(' | ') || 'none'}`,
    `kubelet errors: ${suite.kubelet.errors.slice(-3).join(' | ') || 'none'}`,
  ].join('; ')
}

/** apiVersion and kind of a list path's items (lists do not repeat them per item). */
function kindOfListPath(path: string): { apiVersion: string; kind: string } {
  const { apiVersion, kind } = resourceOfPath(path)
  return { apiVersion, kind }
}

function resourceOfPath(path: string): ResourceType {
  const match = /^\/(?:api\/(v1)|apis\/([^/]+\/[^/]+))\/(?:namespaces\/[^/]+\/)?([a-z]+)$/.exec(path)
  const apiVersion = match?.[1] ?? match?.[2] ?? ''
  const resource = resourceByName(apiVersion, match?.[3] ?? '')
  if (resource === undefined) throw new Error(`no resource known for ${path}`)
  return resource
}

/** The scenario namespace, made like manifests/challenges-namespace.yaml (Pod Security, default deny, quota). */
function namespaceYaml(ns: string, level: 'restricted' | 'baseline'): string {
  const source = readFileSync(join(repoRoot, 'manifests/challenges-namespace.yaml'), 'utf8')
  return source
    .replace(/^(\s*)(name|namespace): challenges$/gm, `$1$2: ${ns}`)
    .replace('pod-security.kubernetes.io/enforce: restricted', `pod-security.kubernetes.io/enforce: ${level}`)
    .replace('pod-security.kubernetes.io/warn: restricted', `pod-security.kubernetes.io/warn: ${level}`)
}

export const STANDIN_RUNTIME_CLASS = 'challenge-hooks-standin'

function runtimeClassYaml(name: string): string {
  return `apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: ${name}
handler: ${name}
scheduling:
  nodeSelector:
    ${STANDIN_NODE_LABEL}: "true"
`
}

/** Metacontroller's namespace and service account, as its upstream install creates them. */
const METACONTROLLER_IDENTITY = `apiVersion: v1
kind: Namespace
metadata:
  name: metacontroller
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: metacontroller
  namespace: metacontroller
`

/** Used only when ../shared/metacontroller-crds-v1.yaml is absent: the kinds, with their specs unchecked. */
const MINIMAL_METACONTROLLER_CRDS = ['compositecontrollers', 'decoratorcontrollers', 'controllerrevisions']
  .map((plural) => {
    const kind = { compositecontrollers: 'CompositeController', decoratorcontrollers: 'DecoratorController', controllerrevisions: 'ControllerRevision' }[plural] as string
    const scope = plural === 'controllerrevisions' ? 'Namespaced' : 'Cluster'
    return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${plural}.metacontroller.k8s.io
spec:
  group: metacontroller.k8s.io
  scope: ${scope}
  names: {plural: ${plural}, singular: ${kind.toLowerCase()}, kind: ${kind}}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}`
  })
  .join('\n---\n')

export function randomSuffix(): string {
  return randomBytes(3).toString('hex')
}
