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
import { join } from 'node:path'
import type { Test } from 'tap'
import { loadConfig } from '../../src/config.js'
import { buildApp } from '../../src/http/app.js'
import { compositeController, example, type Json } from '../e2e/harness.js'
import { controlPlaneBinaries, repoRoot, startControlPlane } from '../support/kube/controlplane.js'
import { eventually } from '../support/kube/eventually.js'
import { Kubelet, type KubeletOptions } from '../support/kube/kubelet.js'
import { kubectlFor, kubectlOk, type Kubectl } from '../support/kube/kubectl.js'
import { LiveCluster, OffsetClock } from '../support/kube/live-cluster.js'
import { Rest } from '../support/kube/rest.js'
import { httpTransport, resourceByName, Simulator, type CompositeController, type KubeObject } from '../support/simulator/index.js'

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
export async function install(env: ClusterEnv): Promise<{ stdout: string; stderr: string }> {
  const crds = existsSync(SHARED_METACONTROLLER_CRDS) ? readFileSync(SHARED_METACONTROLLER_CRDS, 'utf8') : MINIMAL_METACONTROLLER_CRDS
  await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], { input: crds })
  await kubectlOk(env.kubectl, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/compositecontrollers.metacontroller.k8s.io'])
  await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], { input: METACONTROLLER_IDENTITY })
  const applied = await kubectlOk(env.kubectl, ['apply', '--server-side', '-k', 'manifests/'], { cwd: repoRoot })
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

export interface SuiteOptions {
  /** environment of the hook server (HOOK_TOKEN comes from the installed Secret) */
  hookEnv?: Record<string, string>
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
  scenario(t: Test, name: string, options?: ScenarioOptions): Promise<Scenario>
}

/** Everything a test file needs, stopped when `t` ends (after every scenario namespace is gone). */
export async function startSuite(t: Test, options: SuiteOptions = {}): Promise<Suite> {
  const env = await connect(t)
  await install(env)
  const clock = new OffsetClock()
  const secret = await env.rest.get<{ data: Record<string, string> }>('/api/v1/namespaces/challenge-hooks/secrets/challenge-hooks-secrets')
  const token = Buffer.from(secret.data.HOOK_TOKEN as string, 'base64').toString('utf8')
  const app = await buildApp(loadConfig({ HOOK_TOKEN: token, ...options.hookEnv }), { logger: false, now: () => clock.now() })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const hookUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const kubelet = new Kubelet(env.rest, options.kubelet)
  await kubelet.start()
  // The controller reaches the hooks on loopback: webhook.url wins over the Service reference.
  await applyControllerWithUrl(env, hookUrl)
  const identity = await metacontrollerRest(env)
  const controller = process.env.METACONTROLLER_BIN ? await startMetacontroller(env, identity.token) : await startStandIn(identity.rest, hookUrl, token, clock)
  t.teardown(async () => {
    await controller.stop()
    kubelet.stop()
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
    scenario: (tt, name, scenarioOptions) => startScenario(tt, suite, name, scenarioOptions),
  }
  return suite
}

interface RunningController {
  name: 'stand-in' | 'metacontroller'
  sim: Simulator | undefined
  stop(): Promise<void>
}

async function startStandIn(rest: Rest, hookUrl: string, token: string, clock: OffsetClock): Promise<RunningController> {
  const { spec } = compositeController
  // What Metacontroller's informers watch: the parent, every child type, and the related types of the customize rules.
  const names = [spec.parentResource, ...(spec.childResources ?? []), { apiVersion: 'v1', resource: 'pods' }, { apiVersion: API, resource: 'challengedefinitions' }]
  const resources = names.map(({ apiVersion, resource }) => resourceByName(apiVersion, resource)).filter((r) => r !== undefined)
  const live = await LiveCluster.start(rest, [...new Map(resources.map((r) => [r.resource, r])).values()], clock)
  const sim = new Simulator(compositeController, live, httpTransport(hookUrl, { token }))
  const abort = new AbortController()
  const serving = sim.serve(abort.signal)
  return {
    name: 'stand-in',
    sim,
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
  const controller = structuredClone(compositeController) as CompositeController
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
  list(path: string): Promise<KubeObject[]>
}

const CHILD_PATHS = ['/api/v1/secrets', '/api/v1/services', '/apis/apps/v1/deployments', '/apis/networking.k8s.io/v1/networkpolicies', '/apis/networking.k8s.io/v1/ingresses']

async function startScenario(t: Test, suite: Suite, name: string, options: ScenarioOptions = {}): Promise<Scenario> {
  const ns = `${NAMESPACE_PREFIX}${name}`
  const level = options.podSecurity ?? 'restricted'
  await kubectlOk(suite.kubectl, ['apply', '--server-side', '-f', '-'], { input: namespaceYaml(ns, level) })
  // Removed when the test ends, while the controller still runs: Challenges carry Metacontroller's finalizer.
  t.teardown(async () => {
    await suite.kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found'])
    await eventually(`namespace ${ns} to be gone`, async () => (await suite.rest.find(`/api/v1/namespaces/${ns}`)) === undefined, async () => {
      const left = await suite.kubectl(['get', 'chal,pods,deploy', '-n', ns, '-o', 'name'])
      return left.stdout.trim().split('\n').join(', ')
    }, { timeoutMs: 60_000 })
  })
  const base = `${CHALLENGES}/namespaces/${ns}`
  let nudges = 0
  const scenario: Scenario = {
    ns,
    suite,
    definition: (definitionName, spec = {}, rename) => inNamespace(example(definitionName, spec, rename), ns),
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
    async children(challengeName) {
      const uid = (await scenario.get(challengeName))?.metadata.uid
      const objects = (await Promise.all(CHILD_PATHS.map((path) => scenario.list(path.replace(/\/(\w+)$/, `/namespaces/${ns}/$1`))))).flat()
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
  const match = /^\/(?:api\/(v1)|apis\/([^/]+\/[^/]+))\/(?:namespaces\/[^/]+\/)?([a-z]+)$/.exec(path)
  const apiVersion = match?.[1] ?? match?.[2] ?? ''
  const resource = resourceByName(apiVersion, match?.[3] ?? '')
  return { apiVersion, kind: resource?.kind ?? '' }
}

/** The scenario namespace, made like manifests/challenges-namespace.yaml (Pod Security, default deny, quota). */
function namespaceYaml(ns: string, level: 'restricted' | 'baseline'): string {
  const source = readFileSync(join(repoRoot, 'manifests/challenges-namespace.yaml'), 'utf8')
  return source
    .replace(/^(\s*)(name|namespace): challenges$/gm, `$1$2: ${ns}`)
    .replace('pod-security.kubernetes.io/enforce: restricted', `pod-security.kubernetes.io/enforce: ${level}`)
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
