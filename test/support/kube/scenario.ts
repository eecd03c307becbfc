// A scenario: one namespace of the suite's own, and what a test does in it (create as the platform or an author,
// patch as the platform's buttons, wait for a status, move the clock, list the children, check quiescence).
import type { Test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { repoRoot } from './controlplane.js'
import { eventually } from '../eventually.js'
import { registerAuthors } from './install.js'
import { kubectlOk } from './kubectl.js'
import { resourcePath } from './rest.js'
import { resourceByName, type KubeObject } from '../simulator/index.js'
import type { ResourceType } from '../simulator/objects.js'
import { example } from '../../helpers/examples.js'
import type { Json } from '../../helpers/world.js'
import { challenge as buildChallenge } from '../../helpers/world.js'
import type { ClusterEnv, Suite } from './harness.js'
import { AUTHOR, CHALLENGES, NAMESPACE_PREFIX, PLATFORM } from './names.js'

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
  until(
    name: string,
    ready: (status: Json, challenge: KubeObject) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<Json>
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
 * level, default deny, quota, limits) with the suite's register of authors, removed when `t` ends: while the
 * controller still runs, since Challenges carry Metacontroller's finalizer.
 */
export async function createNamespace(
  env: ClusterEnv,
  t: Test,
  name: string,
  level: 'restricted' | 'baseline' = 'restricted',
): Promise<string> {
  const ns = `${NAMESPACE_PREFIX}${name}`
  await kubectlOk(env.kubectl, ['apply', '--server-side', '-f', '-'], { input: namespaceYaml(ns, level) })
  // The suite's authors with the test images' prefix: the suite creates its definitions as the admin, an operator;
  // a test that writes as an author registers what it needs.
  await registerAuthors(env, ns)
  t.teardown(async () => {
    await env.kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found'])
    await eventually(
      `namespace ${ns} to be gone`,
      async () => (await env.rest.find(`/api/v1/namespaces/${ns}`)) === undefined,
      async () => {
        const left = await env.kubectl(['get', 'chal,pods,deploy', '-n', ns, '-o', 'name'])
        return left.stdout.trim().split('\n').join(', ')
      },
      { timeoutMs: 60_000 },
    )
  })
  return ns
}

export async function startScenario(
  t: Test,
  suite: Suite,
  name: string,
  options: ScenarioOptions = {},
): Promise<Scenario> {
  // Scenarios of a file run one after another, each on the real clock until it advances it.
  suite.clock.reset()
  const ns = await createNamespace(suite, t, name, options.podSecurity)
  const base = `${CHALLENGES}/namespaces/${ns}`
  let nudges = 0
  const childObjects = async () =>
    (await Promise.all(suite.childResources.map((resource) => scenario.list(resourcePath(resource, ns))))).flat()
  const scenario: Scenario = {
    ns,
    suite,
    definition: (definitionName, spec = {}, rename) => {
      const security = (spec.security ?? {}) as Json
      const pinned =
        suite.runtimeClass === undefined || security.runtimeClassName !== undefined
          ? spec
          : { ...spec, security: { ...security, runtimeClassName: suite.runtimeClass } }
      return inNamespace(example(definitionName, pinned, rename), ns)
    },
    challenge: (definition, owner, spec = {}, challengeName) =>
      buildChallenge({
        as: 'created',
        namespace: ns,
        definition,
        owner,
        spec,
        ...(challengeName === undefined ? {} : { name: challengeName }),
      }) as KubeObject,
    async create(object) {
      const plural =
        object.kind === 'Challenge'
          ? 'challenges'
          : object.kind === 'ChallengeDefinition'
            ? 'challengedefinitions'
            : undefined
      if (plural === undefined)
        throw new Error(`scenario.create: ${object.kind} is not created by the platform or an author`)
      const manager = object.kind === 'Challenge' ? PLATFORM : AUTHOR
      return (await suite.rest.call('POST', `${base}/${plural}`, {
        body: inNamespace(object, ns),
        query: { fieldManager: manager },
      })) as KubeObject
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
          return last !== undefined && ready((last.status ?? {}) as Json, last)
            ? ((last.status ?? {}) as Json)
            : undefined
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
        return new Map(
          objects
            .filter((o) => (o.metadata.ownerReferences ?? []).length > 0)
            .map((o) => [`${o.kind}/${o.metadata.name}`, o.metadata.resourceVersion]),
        )
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
            const meta = (
              (request.body.parent ?? {}) as { metadata?: { name?: string; annotations?: Record<string, string> } }
            ).metadata
            return (
              request.hook !== 'customize' &&
              meta?.name === name &&
              meta.annotations?.['challenge-hooks.test/nudge'] === nudge &&
              request.statusCode !== undefined
            )
          }),
        ),
      )
      // Whatever those syncs write lands right after their answers.
      await new Promise((resolve) => setTimeout(resolve, 1500))
      const after = await versions()
      const moved = [...new Set([...before.keys(), ...after.keys()])]
        .filter((key) => before.get(key) !== after.get(key))
        .sort()
      const writes = (suite.sim?.history ?? [])
        .slice(fromSync)
        .filter((r) => r.parent.namespace === ns)
        .reduce((sum, r) => sum + r.writes, 0)
      return { moved, writes }
    },
    async children(challengeName) {
      const uid = (await scenario.get(challengeName))?.metadata.uid
      const objects = await childObjects()
      return objects
        .filter(
          (object) =>
            uid !== undefined &&
            (object.metadata.ownerReferences ?? []).some((ref) => ref.uid === uid && ref.controller === true),
        )
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
  return JSON.stringify({
    phase: status.phase,
    reason: status.reason,
    message: status.message,
    endpoint: status.endpoint,
  })
}

/** What a person debugging a timeout wants to see: the workload, the pods, recent events, the controller's errors. */
async function describeWorld(suite: Suite, ns: string): Promise<string> {
  const objects = await suite.kubectl(['get', 'deploy,rs,pods,svc', '-n', ns, '-o', 'wide', '--no-headers'])
  const events = await suite.kubectl([
    'get',
    'events',
    '-n',
    ns,
    '--sort-by=.lastTimestamp',
    '-o',
    'custom-columns=OBJ:.involvedObject.name,REASON:.reason,MSG:.message',
    '--no-headers',
  ])
  const syncErrors = (suite.sim?.history ?? [])
    .filter((result) => result.outcome === 'error')
    .slice(-3)
    .flatMap((result) => result.errors)
  return [
    `objects: ${objects.stdout.trim().split('\n').join(' | ') || 'none'}`,
    `events: ${events.stdout.trim().split('\n').slice(-5).join(' | ') || 'none'}`,
    `sync errors: ${syncErrors.join(' | ') || 'none'}`,
    `kubelet errors: ${suite.kubelet === undefined ? 'n/a (real node)' : suite.kubelet.errors.slice(-3).join(' | ') || 'none'}`,
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
