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
import { createHash } from 'node:crypto'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { loadConfig } from '../../../src/config/config.js'
import { buildApp } from '../../../src/http/app.js'
import type { Json } from '../../helpers/world.js'
import { controlPlaneBinaries, startControlPlane } from './controlplane.js'
import { Kubelet, STANDIN_NODE_LABEL, type KubeletOptions } from './kubelet.js'
import { kubectlFor, kubectlOk } from './kubectl.js'
import { OffsetClock } from './live-cluster.js'
import { install, type ClusterEnv } from './install.js'
import { Rest } from './rest.js'
import { resourceByName, type CompositeController, type Simulator } from '../simulator/index.js'
import type { ResourceType } from '../simulator/objects.js'
import { applyControllerWithUrl, metacontrollerRest, startMetacontroller, startStandIn } from './controllers.js'
import { COMPOSITE_CONTROLLER } from './names.js'
import { Recorder } from './recorder.js'
import { startScenario, type Scenario, type ScenarioOptions } from './scenario.js'

export { createNamespace, type Scenario, type ScenarioOptions } from './scenario.js'
export { metacontrollerRest } from './controllers.js'
export { Recorder } from './recorder.js'
export * from './names.js'
export { install, registerAuthors, type ClusterEnv } from './install.js'
export type { Json }

/** The cluster the suite runs against: TEST_KUBECONFIG (set by `npm run test:cluster`), or one of its own. */
export async function connect(t: Test): Promise<ClusterEnv> {
  const given = process.env.TEST_KUBECONFIG
  if (given !== undefined && given !== '') {
    const kubectl = process.env.TEST_KUBECTL ?? 'kubectl'
    return {
      kubeconfig: given,
      kubectl: kubectlFor(kubectl, given),
      rest: Rest.fromFile(given),
      owned: process.env.TEST_CLUSTER_OWNED === '1',
    }
  }
  // Run as a single file (npx tap test/cluster/x.test.ts): a control plane for this file alone.
  const binDir = controlPlaneBinaries({ build: false })
  const plane = await startControlPlane({ binDir })
  t.teardown(plane.stop)
  return {
    kubeconfig: plane.kubeconfig,
    kubectl: kubectlFor(join(binDir, 'kubectl'), plane.kubeconfig),
    rest: Rest.fromFile(plane.kubeconfig),
    owned: true,
  }
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
  /** The cluster has a real node (npm run test:node): no kubelet stand-in, the node's kubelet runs the pods. */
  realNode?: boolean
}

export interface Suite extends ClusterEnv {
  clock: OffsetClock
  hookUrl: string
  token: string
  /** the hook server's FLAG_SECRET: the tests recompute instance ids, hosts and flags with it (test/helpers/contract.ts) */
  flagSecret: string
  /** which controller runs the CompositeController */
  controller: 'stand-in' | 'metacontroller'
  /** the stand-in, when it is the controller: its history holds every sync, with errors and warnings */
  sim: Simulator | undefined
  /** the kubelet stand-in; undefined on a real node */
  kubelet: Kubelet | undefined
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

/** Everything a test file needs, stopped when `t` ends (after every scenario namespace is gone). */
export async function startSuite(t: Test, options: SuiteOptions = {}): Promise<Suite> {
  const env = await connect(t)
  // One controller per cluster at a time: two would both sync every Challenge, each with its own hook server.
  t.teardown(await exclusive(env.kubeconfig))
  await install(env, options.components)
  const clock = new OffsetClock()
  const secret = await env.rest.get<{ data: Record<string, string> }>(
    '/api/v1/namespaces/challenge-hooks/secrets/challenge-hooks-secrets',
  )
  const token = Buffer.from(secret.data.HOOK_TOKEN as string, 'base64').toString('utf8')
  const runtimeClass = env.owned ? undefined : STANDIN_RUNTIME_CLASS
  // The operator allows the RuntimeClass every definition is pinned to on an existing cluster, and gvisor, which
  // the variants name (on the suite's own control plane no pod runs, so any class will do).
  const allowed = ['gvisor', ...(runtimeClass === undefined ? [] : [runtimeClass])].join(',')
  const config = loadConfig({ HOOK_TOKEN: token, ALLOWED_RUNTIME_CLASSES: allowed, ...options.hookEnv })
  const app = await buildApp(config, { logger: false, now: () => clock.now() })
  const requests: HookRequest[] = []
  app.addHook('preHandler', async (request) => {
    if (request.method === 'POST')
      requests.push({ hook: request.url.slice(1), headers: request.headers, body: request.body as Json })
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
  const kubelet = options.realNode === true ? undefined : new Kubelet(env.rest, options.kubelet)
  await kubelet?.start()
  if (runtimeClass !== undefined)
    await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], { input: runtimeClassYaml(runtimeClass) })
  const installed = await env.rest.get<CompositeController>(COMPOSITE_CONTROLLER)
  const childResources = (installed.spec.childResources ?? [])
    .map(({ apiVersion, resource }) => resourceByName(apiVersion, resource))
    .filter((r) => r !== undefined)
  const recorder = new Recorder(env.rest, childResources)
  await recorder.start()
  // The controller reaches the hooks on loopback: webhook.url wins over the Service reference.
  await applyControllerWithUrl(env, hookUrl)
  const identity = await metacontrollerRest(env)
  const controller = process.env.METACONTROLLER_BIN
    ? await startMetacontroller(env, identity.token)
    : await startStandIn(identity.rest, hookUrl, token, clock)
  t.teardown(async () => {
    await controller.stop()
    kubelet?.stop()
    recorder.stop()
    await app.close()
  })
  const suite: Suite = {
    ...env,
    clock,
    hookUrl,
    token,
    flagSecret: config.flagSecret,
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

/**
 * Holds the cluster for this process until the returned release is called: a lock file per kubeconfig in the temp
 * dir, holding the owner's pid. Another test file (tap --jobs 2) waits its turn; a dead owner's lock is taken over.
 */
async function exclusive(kubeconfig: string): Promise<() => void> {
  const lock = join(
    tmpdir(),
    `challenge-hooks-suite-${createHash('sha256').update(kubeconfig).digest('hex').slice(0, 16)}.lock`,
  )
  const deadline = Date.now() + 30 * 60_000
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' })
      return () => rmSync(lock, { force: true })
    } catch {
      const owner = Number(readFileSync(lock, 'utf8'))
      if (!isAlive(owner)) rmSync(lock, { force: true })
      else if (Date.now() > deadline)
        throw new Error(`the cluster of ${kubeconfig} is still held by process ${owner} (${lock})`)
      else await new Promise((resolve) => setTimeout(resolve, 250))
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
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
