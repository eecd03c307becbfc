/**
 * test/fixtures/*.json: hook requests exactly as Metacontroller sends them, captured from the simulator
 * (SyncResult.request, or the customize request) at each stage of an instance's life.
 *
 *   npx tap test/fixtures.test.ts                      checks the committed fixtures are what the simulator sends
 *   UPDATE_FIXTURES=1 npx tap test/fixtures.test.ts    rewrites them (after a change to the hook's output, the
 *                                                      CompositeController, the CRDs or the simulator)
 *
 * Then every committed fixture is POSTed to a fresh server with the real clock, as `curl` against `npm start`
 * would, and must give the answer documented in test/fixtures/README.md, twice byte for byte. Live stages are
 * recorded in 2099 and stages meant to be over in 2020, so the answers do not depend on the day of the replay.
 *
 * test/fixtures/README.md (the fixtures' table, and the curl examples with their true answers) is generated here
 * too: UPDATE_FIXTURES=1 rewrites it, and without it a stale file fails. README.md shows the first curl example
 * exactly as that file does.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { API_VERSION } from '../src/contract/api.js'
import { loadConfig } from '../src/config/config.js'
import { buildApp } from '../src/http/app.js'
import { parse } from 'yaml'
import { TEST_ENV } from './helpers/app.js'
import { updateMode } from './helpers/update-mode.js'
import { challengeRef, NS, repoRoot, secondsUntil, startWorld, type World } from './e2e/harness.js'
import type { KubeObject } from './support/simulator/index.js'

const FIXTURES_DIR = join(repoRoot, 'test/fixtures')
/** Live stages: far enough ahead that no deadline of theirs passes while anyone replays them. */
const FUTURE = new Date('2099-01-01T00:00:00Z')
/** Stages meant to be over: every deadline of theirs has long passed. */
const PAST = new Date('2020-01-01T00:00:00Z')
const WEB = 'web-login-u-alice'
const PWN = 'pwn-echo-u-alice'
const TLS = 'pwn-tls-u-alice'
/** The TLS fixtures: the gateway-api-tls component's settings and the Gateway of docs/examples/routing/. */
const TLS_ENV = {
  GATEWAY: 'gateway-system/challenges',
  GATEWAY_TLS_LISTENER: 'tls',
  TLS_BASE_DOMAIN: 'tcp.ctf.example.org',
}

type Hook = 'customize' | 'sync' | 'finalize'

interface Expected {
  hook: Hook
  /** what the request shows, for the table of test/fixtures/README.md */
  stage: string
  phase?: string
  reason?: string
  /** `Kind/name` of the children answered, in the answer's order */
  children?: string[]
  finalized?: boolean
  /** the RenewalAccepted condition's status/reason, when the fixture asks for a renewal */
  renewal?: string
  run?: number
  /** customize: the `resource` of each related rule */
  related?: string[]
  /** the hook server's environment it was recorded with, when not `npm start`'s defaults */
  env?: Record<string, string>
}

const web = (p: string) => [
  `Secret/${p}-flag`,
  `NetworkPolicy/${p}-isolate`,
  `Pod/${p}`,
  `Service/${p}`,
  `Ingress/${p}`,
]
/** The first sync: every child but the Pod, which waits until the flag Secret and the policies are its own. */
const webFirst = (p: string) => web(p).filter((child) => !child.startsWith('Pod/'))
const netcat = (p: string) => web(p).slice(0, 4)
const tls = (p: string) => [...netcat(p), `TLSRoute/${p}`]
/** What a teardown keeps while pods remain: the policies and the flag Secret, in the order they were observed. */
const guards = (p: string) => [`NetworkPolicy/${p}-isolate`, `Secret/${p}-flag`]
/** What a teardown keeps in its first step: the traffic path (Ingress, Service) goes first. */
const firstTeardownStep = (p: string) => [`Pod/${p}`, ...guards(p)]

/** Every fixture, what its request shows, and the answer documented in test/fixtures/README.md. */
const FIXTURES: Record<string, Expected> = {
  customize: {
    hook: 'customize',
    stage: 'the customize request of a new Challenge (web-login, alice)',
    related: ['challengedefinitions', 'challenges', 'secrets', 'namespaces', 'limitranges', 'secrets'],
  },
  'sync-new': {
    hook: 'sync',
    stage: 'first sync of a new Challenge: no status, no children yet',
    phase: 'Pending',
    reason: 'Starting',
    children: webFirst(WEB),
  },
  'sync-starting': {
    hook: 'sync',
    stage: 'children created, the pod is still creating its container',
    phase: 'Pending',
    reason: 'Starting',
    children: web(WEB),
  },
  'sync-running': {
    hook: 'sync',
    stage: 'HTTP instance, pod ready, Ingress in place',
    phase: 'Running',
    reason: 'Ready',
    children: web(WEB),
  },
  'sync-running-nodeport': {
    hook: 'sync',
    stage: 'netcat instance, node port allocated',
    phase: 'Running',
    reason: 'Ready',
    children: netcat(PWN),
  },
  'sync-running-tls': {
    hook: 'sync',
    stage: 'TLS instance (Gateway API): pod ready, its Gateway reports the TLSRoute Accepted and ResolvedRefs',
    phase: 'Running',
    reason: 'Ready',
    children: tls(TLS),
    env: TLS_ENV,
  },
  'sync-tls-not-accepted': {
    hook: 'sync',
    stage:
      'TLS instance (Gateway API): pod ready, the Gateway refuses the TLSRoute (Accepted=False, NotAllowedByListeners)',
    phase: 'Pending',
    reason: 'WaitingForEndpoint',
    children: tls(TLS),
    env: TLS_ENV,
  },
  'sync-image-pull': {
    hook: 'sync',
    stage: 'the image cannot be pulled (ImagePullBackOff), inside the startup window',
    phase: 'Pending',
    reason: 'ImagePullBackOff',
    children: netcat(PWN),
  },
  'sync-crashloop': {
    hook: 'sync',
    stage: 'the container crashed a third time (CrashLoopBackOff)',
    phase: 'Error',
    reason: 'CrashLoopBackOff',
    children: firstTeardownStep(PWN),
  },
  'sync-expired': {
    hook: 'sync',
    stage: 'Running, its expiresAt has passed (recorded in 2020)',
    phase: 'Deleted',
    reason: 'Expired',
    children: firstTeardownStep(WEB),
  },
  'sync-definition-missing': {
    hook: 'sync',
    stage: 'the ChallengeDefinition does not exist',
    phase: 'Error',
    reason: 'DefinitionNotFound',
    children: [],
  },
  'sync-definition-author-changed': {
    hook: 'sync',
    stage: "Running on alice's web-login; the definition was made again naming bob (status.definitionAuthor is alice)",
    phase: 'Error',
    reason: 'DefinitionAuthorChanged',
    children: firstTeardownStep(WEB),
  },
  'sync-renew': {
    hook: 'sync',
    stage: 'Running, the player asks for a renewal (spec.renewals 1, renewalsSeen 0)',
    phase: 'Running',
    reason: 'Ready',
    children: web(WEB),
    renewal: 'True/Renewed',
  },
  'sync-restart': {
    hook: 'sync',
    stage: 'Running, the player asks for a restart (spec.restarts 1, run 0)',
    phase: 'Pending',
    reason: 'Starting',
    children: web(WEB),
    run: 1,
  },
  'sync-stop-solved': {
    hook: 'sync',
    stage: 'Running, the platform stops it: desiredState Stopped, stopReason Solved',
    phase: 'Deleted',
    reason: 'Solved',
    children: firstTeardownStep(WEB),
  },
  'sync-past-deadline': {
    hook: 'sync',
    stage: 'Running, its spec.deadline has passed (recorded in 2020)',
    phase: 'Deleted',
    reason: 'PastDeadline',
    children: firstTeardownStep(WEB),
  },
  'sync-not-yet-available': {
    hook: 'sync',
    stage: 'the definition opens at availableFrom 2100-01-01',
    phase: 'Pending',
    reason: 'NotYetAvailable',
    children: [],
  },
  'sync-queued': {
    hook: 'sync',
    stage: 'alice already holds 3 units (kernel-lab, cost 3); OWNER_BUDGET is 3',
    phase: 'Pending',
    reason: 'Queued',
    children: [],
  },
  'finalize-pods-left': {
    hook: 'finalize',
    stage: 'being deleted: traffic path gone, the pod terminating',
    phase: 'Terminating',
    reason: 'Deleting',
    children: guards(WEB),
    finalized: false,
  },
  'finalize-done': {
    hook: 'finalize',
    stage: 'being deleted, no child left',
    phase: 'Terminating',
    reason: 'Deleting',
    children: [],
    finalized: true,
  },
}

// ---- generation: one small world per group of stages ----------------------------------------------------------

type Requests = Map<string, unknown>

async function requestOf(world: World, name: string): Promise<unknown> {
  const result = await world.sim.reconcile(NS, name)
  if (result.outcome !== 'synced' || result.request === undefined)
    throw new Error(`${name}: ${result.outcome} ${result.errors.join('; ')}`)
  return result.request
}

async function liveWeb(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: FUTURE } })
  const { cluster, sim } = world
  world.create(world.definition('web-login'))
  world.create(world.challenge('web-login', 'alice'))
  const first = await sim.reconcile(NS, WEB)
  out.set('customize', first.customize?.request)
  out.set('sync-new', first.request)
  await world.run(t)
  cluster.advance(5)
  cluster.setPodFailure({ namespace: NS, workload: WEB }, 'starting')
  await world.settle(t)
  out.set('sync-starting', await requestOf(world, WEB))
  cluster.advance(15)
  cluster.setPodFailure({ namespace: NS, workload: WEB }, 'none')
  await world.settle(t)
  t.match(world.status(WEB), { phase: 'Running' })
  out.set('sync-running', await requestOf(world, WEB))
  await world.advance(t, 600)
  world.patchSpec(WEB, { renewals: 1 })
  out.set('sync-renew', await requestOf(world, WEB))
  await world.run(t)
  await world.advance(t, 300)
  world.patchSpec(WEB, { restarts: 1 })
  out.set('sync-restart', await requestOf(world, WEB))
}

async function liveNetcat(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: FUTURE } })
  world.create(world.definition('pwn-echo'))
  world.create(world.challenge('pwn-echo', 'alice'))
  await world.run(t)
  world.cluster.advance(10)
  await world.settle(t)
  t.match(world.status(PWN), { phase: 'Running' })
  out.set('sync-running-nodeport', await requestOf(world, PWN))
}

/** The Gateway of docs/examples/routing/, whose TLS listener takes routes from the challenges' namespace unless `sameNamespaceOnly`. */
function gateway(sameNamespaceOnly: boolean): KubeObject {
  const object = parse(readFileSync(join(repoRoot, 'docs/examples/routing/gateway.yaml'), 'utf8')) as KubeObject & {
    spec: { listeners: Record<string, unknown>[] }
  }
  if (sameNamespaceOnly) for (const listener of object.spec.listeners) delete listener.allowedRoutes
  return object
}

async function liveTls(t: Test, out: Requests): Promise<void> {
  for (const [refused, name] of [
    [false, 'sync-running-tls'],
    [true, 'sync-tls-not-accepted'],
  ] as const) {
    const world = await startWorld(t, { cluster: { start: FUTURE }, components: ['gateway-api-tls'], env: TLS_ENV })
    world.create(gateway(refused))
    world.create(world.definition('pwn-tls'))
    world.create(world.challenge('pwn-tls', 'alice'))
    await world.run(t)
    world.cluster.advance(10)
    await world.settle(t)
    t.match(world.status(TLS), refused ? { phase: 'Pending', reason: 'WaitingForEndpoint' } : { phase: 'Running' })
    out.set(name, await requestOf(world, TLS))
  }
}

async function imagePull(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: FUTURE } })
  world.create(world.definition('pwn-echo'))
  world.create(world.challenge('pwn-echo', 'alice'))
  world.cluster.setPodFailure({ namespace: NS, workload: PWN }, 'imagePull')
  await world.run(t)
  world.cluster.advance(10)
  await world.settle(t)
  world.cluster.advance(10)
  await world.settle(t)
  t.match(world.status(PWN), { phase: 'Pending', reason: 'ImagePullBackOff' })
  out.set('sync-image-pull', await requestOf(world, PWN))
}

async function crashLoop(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: FUTURE } })
  world.create(world.definition('pwn-echo'))
  world.create(world.challenge('pwn-echo', 'alice'))
  world.cluster.setPodFailure({ namespace: NS, workload: PWN }, 'crashLoop')
  await world.run(t)
  for (let restart = 1; restart < 3; restart++) {
    world.cluster.advance(10)
    await world.settle(t)
  }
  t.match(world.status(PWN), { phase: 'Pending', reason: 'Starting' })
  world.cluster.advance(20)
  world.cluster.settle()
  out.set('sync-crashloop', await requestOf(world, PWN))
}

async function stopSolved(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: FUTURE } })
  world.create(world.definition('web-login'))
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  world.cluster.advance(20)
  await world.settle(t)
  await world.advance(t, 900)
  world.patchSpec(WEB, { desiredState: 'Stopped', stopReason: 'Solved' })
  out.set('sync-stop-solved', await requestOf(world, WEB))
}

async function deletion(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: FUTURE } })
  const { cluster, sim } = world
  world.create(world.definition('web-login'))
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  cluster.advance(20)
  await world.settle(t)
  await world.advance(t, 600)
  cluster.delete(challengeRef(WEB))
  await world.run(t)
  cluster.advance(5)
  t.strictSame(world.children(WEB), [`NetworkPolicy/${WEB}-isolate`, `Pod/${WEB}`, `Secret/${WEB}-flag`])
  t.ok(
    cluster.get({ apiVersion: 'v1', kind: 'Pod', namespace: NS, name: WEB })?.metadata.deletionTimestamp,
    'the pod is terminating',
  )
  out.set('finalize-pods-left', await requestOf(world, WEB))
  const from = sim.history.length
  cluster.advance(5)
  await world.settle(t)
  t.equal(world.get(WEB), undefined)
  const done = sim.history.slice(from).find((result) => result.finalizerRemoved)
  out.set('finalize-done', done?.request)
}

async function expired(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: PAST } })
  world.create(world.definition('web-login'))
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  world.cluster.advance(20)
  await world.settle(t)
  const expiresAt = world.status(WEB).expiresAt
  await world.advance(t, secondsUntil(world.cluster, expiresAt) - 1)
  t.match(world.status(WEB), { phase: 'Running' })
  world.cluster.advance(1)
  out.set('sync-expired', await requestOf(world, WEB))
}

async function pastDeadline(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: PAST } })
  world.create(world.definition('web-login'))
  world.create(world.challenge('web-login', 'alice', { deadline: '2020-01-01T00:10:00Z' }))
  await world.run(t)
  world.cluster.advance(20)
  await world.settle(t)
  await world.advance(t, secondsUntil(world.cluster, '2020-01-01T00:10:00Z') - 1)
  t.match(world.status(WEB), { phase: 'Running', expiresAt: '2020-01-01T00:10:00Z' })
  world.cluster.advance(1)
  out.set('sync-past-deadline', await requestOf(world, WEB))
}

async function notYetAvailable(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: FUTURE } })
  world.create(world.definition('web-login', { availableFrom: '2100-01-01T00:00:00Z' }))
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  t.match(world.status(WEB), { phase: 'Pending', reason: 'NotYetAvailable' })
  out.set('sync-not-yet-available', await requestOf(world, WEB))
}

async function queued(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: FUTURE } })
  const { cluster } = world
  // A heavy challenge (a VM per player, say) that takes alice's whole default budget of 3 units.
  world.create(world.definition('pwn-echo', { displayName: 'Kernel Lab', cost: 3 }, 'kernel-lab'))
  world.create(world.definition('web-login'))
  world.create(world.challenge('kernel-lab', 'alice'))
  await world.run(t)
  cluster.advance(20)
  await world.settle(t)
  t.match(world.status('kernel-lab-u-alice'), { phase: 'Running' })
  cluster.advance(40)
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  t.match(world.status(WEB), { phase: 'Pending', reason: 'Queued' })
  out.set('sync-queued', await requestOf(world, WEB))
}

async function definitionMissing(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: FUTURE } })
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  t.match(world.status(WEB), { phase: 'Error', reason: 'DefinitionNotFound' })
  out.set('sync-definition-missing', await requestOf(world, WEB))
}

async function definitionAuthorChanged(t: Test, out: Requests): Promise<void> {
  const world = await startWorld(t, { cluster: { start: FUTURE } })
  const { cluster } = world
  const by = (author: string, image: string) => {
    const definition = world.definition('web-login', {
      pod: { containers: [{ name: 'app', image, ports: [{ name: 'http', containerPort: 8080 }] }] },
    })
    definition.metadata.annotations = { 'challenge-hooks.dev/author': author }
    return definition
  }
  world.create(by('alice@example.org', 'registry.example.org/alice/web-login:1'))
  world.create(world.challenge('web-login', 'alice'))
  await world.run(t)
  cluster.advance(20)
  await world.settle(t)
  t.match(world.status(WEB), { phase: 'Running', definitionAuthor: 'alice@example.org' })
  cluster.delete({ apiVersion: API_VERSION, kind: 'ChallengeDefinition', namespace: NS, name: 'web-login' })
  world.create(by('bob@example.org', 'registry.example.org/bob/web-login:1'))
  out.set('sync-definition-author-changed', await requestOf(world, WEB))
}

async function generate(t: Test): Promise<Requests> {
  const out: Requests = new Map()
  for (const stage of [
    liveWeb,
    liveNetcat,
    liveTls,
    imagePull,
    crashLoop,
    stopSolved,
    deletion,
    expired,
    pastDeadline,
    notYetAvailable,
    queued,
    definitionMissing,
    definitionAuthorChanged,
  ]) {
    await t.test(`record: ${stage.name}`, (tt) => stage(tt, out))
  }
  return out
}

function serialize(request: unknown): string {
  return `${JSON.stringify(request, null, 2)}\n`
}

const fileOf = (name: string) => join(FIXTURES_DIR, `${name}.json`)

/**
 * UPDATE_FIXTURES=1 rewrites the recordings instead of comparing them, which would turn this check into a pass:
 * under CI (CI set, or REQUIRE_TOOLS=1 as .ci/run sets it) it is refused, the test fails, and compares anyway.
 */
const MODE = updateMode()

t.test('the committed fixtures are what the simulator sends today', async (t) => {
  const generated = await generate(t)
  t.strictSame([...generated.keys()].sort(), Object.keys(FIXTURES).sort(), 'every documented fixture was recorded')
  if (MODE.refused !== undefined) t.fail(MODE.refused)
  if (MODE.update) {
    for (const [name, request] of generated) writeFileSync(fileOf(name), serialize(request))
    t.pass(`wrote ${generated.size} fixtures to test/fixtures/`)
  } else {
    for (const [name, request] of generated) {
      const committed = readFileSync(fileOf(name), 'utf8')
      // One comparison of the bytes; tap's diff only when they differ.
      if (committed === serialize(request)) t.pass(`${name}.json is current`)
      else
        t.strictSame(
          JSON.parse(committed),
          request,
          `${name}.json is stale: regenerate with UPDATE_FIXTURES=1 npx tap test/fixtures.test.ts`,
        )
    }
  }
  const files = readdirSync(FIXTURES_DIR)
    .filter((file) => file.endsWith('.json'))
    .sort()
  t.strictSame(
    files,
    Object.keys(FIXTURES)
      .map((name) => `${name}.json`)
      .sort(),
    'no fixture without a recording',
  )
})

// ---- replay with the real clock, as curl against `npm start` ---------------------------------------------------

interface Answer {
  status?: {
    phase?: string
    reason?: string
    run?: number
    conditions?: Array<{ type: string; status: string; reason: string }>
  } & Record<string, unknown>
  children?: Array<{ kind: string; metadata: { name: string } }>
  finalized?: boolean
  relatedResources?: Array<{ resource: string }>
}

/** POSTs twice; retries until both calls fall in one wall-clock second (answers carry whole-second times). */
async function postTwice(url: string, body: string): Promise<{ first: string; second: string; code: number }> {
  for (;;) {
    const before = Math.floor(Date.now() / 1000)
    const post = () => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const one = await post()
    const first = await one.text()
    const second = await (await post()).text()
    if (Math.floor(Date.now() / 1000) === before) return { first, second, code: one.status }
  }
}

t.test('every committed fixture gives its documented answer with the real clock, twice byte for byte', async (t) => {
  // `npm start` with its defaults (no token, development FLAG_SECRET, the real clock), or with the fixture's env;
  // no shedding on the event-loop delay of this busy test process.
  const servers = new Map<string, string>()
  const serverFor = async (env: Record<string, string> = {}): Promise<string> => {
    const key = JSON.stringify(env)
    if (!servers.has(key)) {
      const app = await buildApp(loadConfig({ ...TEST_ENV, ...env }), { logger: false })
      t.teardown(() => app.close())
      await app.listen({ port: 0, host: '127.0.0.1' })
      servers.set(key, `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`)
    }
    return servers.get(key) as string
  }
  for (const [name, expected] of Object.entries(FIXTURES)) {
    const body = readFileSync(fileOf(name), 'utf8')
    const base = await serverFor(expected.env)
    const { first, second, code } = await postTwice(`${base}/${expected.hook}`, body)
    t.equal(code, 200, `${name}: 200`)
    t.equal(second, first, `${name}: the same request gives the same bytes`)
    const answer = JSON.parse(first) as Answer
    t.strictSame(described(answer, expected), expected, `${name}: ${expected.hook} answers as documented`)
  }
})

/** The answer, in the terms of `expected` (only the fields it documents). */
function described(answer: Answer, expected: Expected): Expected {
  const result: Expected = { hook: expected.hook, stage: expected.stage }
  if (expected.env !== undefined) result.env = expected.env
  if (expected.related) result.related = (answer.relatedResources ?? []).map((rule) => rule.resource)
  if (expected.phase !== undefined) result.phase = answer.status?.phase
  if (expected.reason !== undefined) result.reason = answer.status?.reason
  if (expected.children)
    result.children = (answer.children ?? []).map((child) => `${child.kind}/${child.metadata.name}`)
  if (expected.finalized !== undefined) result.finalized = answer.finalized
  if (expected.run !== undefined) result.run = answer.status?.run
  if (expected.renewal !== undefined) {
    const condition = answer.status?.conditions?.find((each) => each.type === 'RenewalAccepted')
    result.renewal = condition === undefined ? undefined : `${condition.status}/${condition.reason}`
  }
  return result
}

// ---- test/fixtures/README.md: the table and the curl examples, generated and checked -----------------------------

const FIXTURES_README = join(FIXTURES_DIR, 'README.md')

/** The first example (README.md shows it too): one Running instance, its status and children, trimmed by jq. */
const CURL_RUNNING = `curl -s localhost:8080/sync -H 'content-type: application/json' \\
  -d @test/fixtures/sync-running.json | jq '{status: .status | {phase, reason, endpoint, expiresAt}, children: [.children[] | .kind + "/" + .metadata.name]}'`
const CURL_FINALIZE =
  "curl -s localhost:8080/finalize -H 'content-type: application/json' -d @test/fixtures/finalize-pods-left.json | jq '{finalized, phase: .status.phase, children: [.children[].metadata.name]}'"
const CURL_TLS =
  "curl -s localhost:8080/sync -H 'content-type: application/json' -d @test/fixtures/sync-running-tls.json | jq '.status.endpoint'"
const envLine = (env: Record<string, string> | undefined) =>
  Object.entries(env ?? {})
    .map(([key, value]) => `${key}=${value}`)
    .join(' ')

function childSummary(children: string[]): string {
  if (children.length === 0) return 'none'
  const counts = new Map<string, number>()
  for (const child of children) {
    const kind = child.split('/')[0] as string
    counts.set(kind, (counts.get(kind) ?? 0) + 1)
  }
  return [...counts].map(([kind, count]) => (count > 1 ? `${kind} ×${count}` : kind)).join(', ')
}

/** The table rows, rendered from FIXTURES. */
function tableRows(): string[] {
  return Object.entries(FIXTURES).map(([name, expected]) => {
    const env = Object.entries(expected.env ?? {}).map(([key, value]) => `${key}=${value}`)
    const route = `\`/${expected.hook}\`${env.length > 0 ? ` on a server with \`${env.join(' ')}\`` : ''}`
    let answer: string
    if (expected.hook === 'customize') answer = `related: ${(expected.related ?? []).join(', ')}`
    else {
      const extra = [
        expected.run !== undefined ? `run ${expected.run}` : '',
        expected.renewal !== undefined ? `RenewalAccepted ${expected.renewal}` : '',
        expected.finalized !== undefined ? `finalized: ${expected.finalized}` : '',
      ].filter((text) => text !== '')
      answer = `${expected.phase} / ${expected.reason}${extra.length > 0 ? ` (${extra.join(', ')})` : ''}`
    }
    const children = expected.children === undefined ? '—' : childSummary(expected.children)
    return `| \`${name}.json\` | ${route} | ${expected.stage} | ${answer} | ${children} |`
  })
}

/** What `npm start` answers to sync-running.json, through the example's jq filter. */
async function runningProjection(t: Test): Promise<unknown> {
  const app = await buildApp(loadConfig(TEST_ENV), { logger: false })
  t.teardown(() => app.close())
  const response = await app.inject({
    method: 'POST',
    url: '/sync',
    payload: readFileSync(fileOf('sync-running'), 'utf8'),
    headers: { 'content-type': 'application/json' },
  })
  const answer = response.json<Answer & { status: Record<string, unknown> }>()
  // jq '{status: .status | {phase, reason, endpoint, expiresAt}, children: [.children[] | .kind + "/" + .metadata.name]}'
  return {
    status: {
      phase: answer.status.phase,
      reason: answer.status.reason,
      endpoint: answer.status.endpoint,
      expiresAt: answer.status.expiresAt,
    },
    children: (answer.children ?? []).map((child) => `${child.kind}/${child.metadata.name}`),
  }
}

/** What a server with the TLS fixtures' settings answers to sync-running-tls.json: the endpoint. */
async function tlsEndpoint(t: Test): Promise<unknown> {
  const app = await buildApp(loadConfig(FIXTURES['sync-running-tls']?.env), { logger: false })
  t.teardown(() => app.close())
  const response = await app.inject({
    method: 'POST',
    url: '/sync',
    payload: readFileSync(fileOf('sync-running-tls'), 'utf8'),
    headers: { 'content-type': 'application/json' },
  })
  return response.json<{ status: { endpoint: unknown } }>().status.endpoint
}

/** The first curl example as Markdown: the command, then its answer. README.md shows exactly this. */
function runningExample(projection: unknown): string {
  return `\`\`\`sh\n${CURL_RUNNING}\n\`\`\`\n\n\`\`\`json\n${JSON.stringify(projection, null, 2)}\n\`\`\`\n`
}

/** The whole of test/fixtures/README.md. */
function fixturesReadme(projection: unknown, endpoint: unknown): string {
  const tlsEnv = envLine(FIXTURES['sync-running-tls']?.env)
  return `# Fixtures

<!-- Written by \`UPDATE_FIXTURES=1 npx tap test/fixtures.test.ts\` (test/fixtures.test.ts); edit the test, not this file. -->

Every \`*.json\` here is one whole hook request exactly as Metacontroller sends it: the CompositeController, the
parent with its metadata (\`managedFields\`, finalizers, \`deletionTimestamp\` when it is being deleted) and status,
one group per child rule (\`{}\` when empty, as the Deployments' always is: that rule stays only so that an upgrade
deletes an earlier release's Deployment), and the related objects of the customize rules: the instance's own
ChallengeDefinition (and no other definition of the namespace), the owner's Challenges, the Static flag Secrets of
its definition, the Challenge's Namespace and the namespace's LimitRanges (empty groups here: the recorded cluster
holds neither). The instance's pod is a child, not a related object. They are not written by hand: they are
recorded from the simulator (\`test/support/simulator/\`, a Metacontroller stand-in) driving the real hook server
with the CompositeController and the CRDs of \`manifests/\`, the example definitions \`web-login\` (HTTP),
\`pwn-echo\` (NodePort) and \`pwn-tls\` (TLS) of \`manifests/examples/\`, and the player \`alice\`, in namespace
\`challenges\`.

## Try one

Start the hook server with \`npm start\` (its defaults: a development \`FLAG_SECRET\`, no \`HOOK_TOKEN\`; with a token,
add \`-H "authorization: Bearer $HOOK_TOKEN"\` to each call) and POST a fixture to the hook its row names. \`jq\` only
trims the output.

${runningExample(projection)}
A teardown that waits for the last pod before it removes the isolation:

\`\`\`sh
${CURL_FINALIZE}
\`\`\`

The two TLS fixtures were recorded with the \`gateway-api-tls\` component and the Gateway of
\`docs/examples/routing/gateway.yaml\`; POST them to a server started with the settings their rows name:

\`\`\`sh
${tlsEnv} npm start
${CURL_TLS}
# ${JSON.stringify(endpoint).replaceAll('":', '": ').replaceAll(',"', ', "')}
\`\`\`

## The same answer on any day

- **Live stages are recorded in 2099**: the simulated clock started at 2099-01-01T00:00:00Z (the \`availableFrom\` of
  \`sync-not-yet-available\` is 2100-01-01), so against the real clock every deadline in them (expiry, startup
  timeout, queue expiry, release) still lies ahead.
- **Stages meant to be over are recorded in 2020** (\`sync-expired\`, \`sync-past-deadline\`): their deadlines have long
  passed.
- Times the hook sets at a transition are the replay's own "now" (whole seconds), so they differ from one replay to
  the next: \`admittedAt\` in \`sync-new\` and \`sync-restart\`, \`finishedAt\` in \`sync-crashloop\`, \`sync-expired\`,
  \`sync-stop-solved\` and \`sync-past-deadline\`, \`lastRenewedAt\` and \`expiresAt\` (now + lifetime) in \`sync-renew\`.
  Two POSTs within the same second give the same bytes; every other fixture answers the same bytes always.

## The fixtures

| fixture | POST to | what the request shows | answer: phase / reason | children answered |
|---|---|---|---|---|
${tableRows().join('\n')}

The children are listed in the answer's order. The first sync answers every child but the Pod, which comes once
the flag Secret and the NetworkPolicies are observed as the Challenge's own (\`sync-new\`). A teardown keeps, in its
first step, everything but the traffic path (the route, the Service), each kept child as Metacontroller last applied
it, and keeps the NetworkPolicies and the flag Secret until no pod of the instance is left
(\`finalize-pods-left\`). \`sync-queued\`'s owner already runs \`kernel-lab\` (\`pwn-echo\` with \`cost: 3\`), which
fills the default \`OWNER_BUDGET\` of 3.

## Keeping them true

\`test/fixtures.test.ts\` (part of \`npm test\`) records every fixture again in memory and fails when a committed file
differs, so a change to the hook's answers, the CompositeController, the CRDs or the simulator cannot leave them
stale. It then POSTs every committed fixture to a fresh server with the real clock, as \`curl\` would, and checks the
answer in the table above (twice, byte for byte), and the answers of the examples above. Regenerate the fixtures
and this page with:

\`\`\`sh
UPDATE_FIXTURES=1 npx tap test/fixtures.test.ts
\`\`\`

Regeneration is byte-stable: the simulated clock is fixed, uids count up from \`5eed0001-0000-4000-8000-…\` in each
recorded world, and node ports and addresses are hashes.
`
}

t.test('test/fixtures/README.md is the page the fixtures and their answers generate', async (t) => {
  const page = fixturesReadme(await runningProjection(t), await tlsEndpoint(t))
  if (MODE.refused !== undefined) t.fail(MODE.refused)
  if (MODE.update) {
    writeFileSync(FIXTURES_README, page)
    t.pass('wrote test/fixtures/README.md')
  } else
    t.equal(
      readFileSync(FIXTURES_README, 'utf8'),
      page,
      'test/fixtures/README.md is stale: regenerate with UPDATE_FIXTURES=1 npx tap test/fixtures.test.ts',
    )
})

t.test('test/fixtures/README.md documents every fixture and its answer', async (t) => {
  const page = readFileSync(FIXTURES_README, 'utf8')
  t.ok(page.includes('\n## The fixtures\n'), 'a "## The fixtures" section')
  const rows = page.split('\n').filter((line) => line.startsWith('| `'))
  const expected = tableRows()
  t.strictSame(rows, expected, 'the table lists each fixture, its hook and its answer (rows rendered by tableRows())')
  if (rows.join('\n') !== expected.join('\n'))
    t.comment(`The rows test/fixtures/README.md should hold:\n${expected.join('\n')}`)
})

t.test('the curl example (test/fixtures/README.md, and README.md) shows the true answer', async (t) => {
  const page = readFileSync(FIXTURES_README, 'utf8')
  const command = page.indexOf('-d @test/fixtures/sync-running.json')
  t.ok(command > 0, 'the example posts sync-running.json')
  const start = page.indexOf('```json\n', command) + '```json\n'.length
  const shown = JSON.parse(page.slice(start, page.indexOf('```', start))) as unknown
  t.strictSame(shown, await runningProjection(t))
  // The front door shows the same example, command and answer, as one block of text (no part of it read back).
  t.ok(
    readFileSync(join(repoRoot, 'README.md'), 'utf8').includes(runningExample(shown)),
    'README.md shows this example as test/fixtures/README.md does',
  )
})

t.test('the TLS curl example of test/fixtures/README.md shows the true endpoint', async (t) => {
  const page = readFileSync(FIXTURES_README, 'utf8')
  const command = page.indexOf("-d @test/fixtures/sync-running-tls.json | jq '.status.endpoint'")
  t.ok(command > 0, 'the example posts sync-running-tls.json')
  const start = page.indexOf('# ', command) + 2
  const shown = JSON.parse(page.slice(start, page.indexOf('\n', start))) as unknown
  t.match(
    page.slice(page.lastIndexOf('\n', command - 100), command),
    `${envLine(FIXTURES['sync-running-tls']?.env)} npm start`,
  )
  t.strictSame(shown, await tlsEndpoint(t))
})
