// Every answer the hooks give is accepted by a real API server: for each exposure, egress mode and security
// profile, multi-container pods, the longest and most awkward valid names, and each failure stage, the children
// are created as Metacontroller creates them (a controller reference to the Challenge with blockOwnerDeletion) in a
// namespace that enforces Pod Security, the pods Metacontroller creates are admitted, and the
// status is written through the status subresource and reads back exactly as the hook answered (nothing pruned).
import { largestDefinitionSpec, largestParameters } from '../helpers/largest.js'
import t, { type Test } from 'tap'
import { eventually } from '../support/eventually.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import { resourcePath } from '../support/kube/rest.js'
import { sortKeys } from '../support/simulator/json.js'
import { lastAnswer, STANDIN_RUNTIME_CLASS, startSuite, type Json, type Scenario } from '../support/kube/harness.js'

// The runtime class variant names gvisor (or, on an existing cluster, the stand-in's class): the operator allows it.
const suite = await startSuite(t, {
  hookEnv: {
    PUBLIC_HOST: 'ctf.example.org',
    CLUSTER_CIDRS: '10.0.0.0/24,fd00:10::/108',
    ALLOWED_RUNTIME_CLASSES: `gvisor,${STANDIN_RUNTIME_CLASS}`,
  },
})

interface Variant {
  what: string
  definition: string
  definitionSpec: Json
  base?: 'web-login' | 'pwn-echo'
  owner?: string
  challengeName?: string
  challengeSpec?: Json
  /** the phase/reason the instance settles in */
  settles: { phase: string; reason: string }
  /** checks on the settled status */
  endpoint?: (status: Json) => Json
}

const LONG_OWNER = `o${'x'.repeat(61)}z` // 63 characters: the longest label value
const LONG_DEFINITION = `d${'y'.repeat(61)}z` // a definition named so that its label still fits
const crashing = (image: string) => ({
  pod: { containers: [{ name: 'app', image, ports: [{ containerPort: 8080 }] }] },
  expose: { type: 'HTTP', port: 8080 },
})

const RESTRICTED: Variant[] = [
  {
    what: 'HTTP, egress DNS',
    definition: 'v-http',
    base: 'web-login',
    definitionSpec: {},
    settles: { phase: 'Running', reason: 'Ready' },
  },
  {
    what: 'NodePort, egress None',
    definition: 'v-nodeport',
    base: 'pwn-echo',
    definitionSpec: {},
    settles: { phase: 'Running', reason: 'Ready' },
    endpoint: (status) => {
      const endpoint = status.endpoint as Json
      return {
        type: 'NodePort',
        host: 'ctf.example.org',
        port: endpoint.port,
        connection: `nc ctf.example.org ${String(endpoint.port)}`,
      }
    },
  },
  {
    what: 'LoadBalancer, egress Internet',
    definition: 'v-lb',
    base: 'pwn-echo',
    definitionSpec: { expose: { type: 'LoadBalancer', port: 1337 }, network: { egress: 'Internet' } },
    settles: { phase: 'Running', reason: 'Ready' },
  },
  {
    what: 'Internal, PerInstance flag, parameters',
    definition: 'v-internal',
    base: 'pwn-echo',
    definitionSpec: { expose: { type: 'Internal', port: 1337 }, network: { egress: 'DNS' } },
    challengeSpec: { parameters: { LEVEL: '3', MODE: 'hard' } },
    settles: { phase: 'Running', reason: 'Ready' },
  },
  {
    what: 'two containers, the second exposed, a runtime class',
    definition: 'v-multi',
    base: 'web-login',
    definitionSpec: {
      pod: {
        containers: [
          { name: 'db', image: 'registry.test/db:1', ports: [{ containerPort: 5432 }] },
          {
            name: 'web',
            image: 'registry.test/web:1',
            ports: [{ containerPort: 8080 }],
            securityContext: { runAsUser: 1000, runAsGroup: 1000 },
          },
        ],
      },
      expose: { type: 'HTTP', container: 'web', port: 8080 },
      security: { runtimeClassName: suite.runtimeClass ?? 'gvisor' },
    },
    settles: { phase: 'Running', reason: 'Ready' },
  },
  {
    what: 'the longest names: a 63-character definition and owner',
    definition: LONG_DEFINITION,
    base: 'web-login',
    owner: LONG_OWNER,
    definitionSpec: {},
    settles: { phase: 'Running', reason: 'Ready' },
  },
  {
    what: 'an awkward Challenge name: dots, a leading digit, 253 characters',
    definition: 'v-awkward',
    base: 'pwn-echo',
    owner: 'carol',
    challengeName: `1st.try-${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}`.slice(0, 253),
    definitionSpec: {},
    settles: { phase: 'Running', reason: 'Ready' },
  },
  {
    what: 'an image that cannot be pulled',
    definition: 'v-pull',
    definitionSpec: crashing('registry.test/image-pull-backoff:1'),
    settles: { phase: 'Pending', reason: 'ImagePullBackOff' },
  },
  {
    what: 'a container that keeps crashing',
    definition: 'v-crash',
    definitionSpec: crashing('registry.test/crash-loop:1'),
    settles: { phase: 'Error', reason: 'CrashLoopBackOff' },
  },
  {
    what: 'no room in the cluster',
    definition: 'v-unschedulable',
    definitionSpec: crashing('registry.test/unschedulable:1'),
    settles: { phase: 'Pending', reason: 'Unschedulable' },
  },
  {
    what: 'an invalid image name',
    definition: 'v-invalid',
    definitionSpec: crashing('registry.test/invalid-image-name:1'),
    settles: { phase: 'Error', reason: 'InvalidImage' },
  },
  {
    what: 'a container that cannot be created',
    definition: 'v-config',
    definitionSpec: crashing('registry.test/config-error:1'),
    settles: { phase: 'Error', reason: 'ConfigError' },
  },
  {
    // Valid to the hook (request under limit, and within what cost 2 may hold), refused by the namespace's
    // LimitRange (max memory 2Gi): the hook reads the LimitRange and never asks for the pod, and says why.
    what: 'a pod the LimitRange refuses',
    definition: 'v-limitrange',
    definitionSpec: {
      cost: 2,
      pod: {
        containers: [
          {
            name: 'app',
            image: 'registry.test/app:1',
            ports: [{ containerPort: 8080 }],
            resources: { limits: { memory: '3Gi' } },
          },
        ],
      },
      expose: { type: 'HTTP', port: 8080 },
    },
    settles: { phase: 'Error', reason: 'PodRefused' },
  },
  {
    // Every string, list and total at its bound (test/support/largest.ts): the CRDs' CEL rules accept it, etcd
    // stores it, Metacontroller's last-applied annotation of the Pod fits its 256 KiB.
    what: 'the largest valid definition and parameters',
    definition: 'v-largest',
    definitionSpec: largestDefinitionSpec(),
    challengeSpec: { parameters: largestParameters() },
    settles: { phase: 'Running', reason: 'Ready' },
  },
]

const BASELINE: Variant[] = [
  {
    what: 'Baseline profile: root',
    definition: 'v-baseline',
    base: 'pwn-echo',
    definitionSpec: {
      pod: {
        containers: [
          {
            name: 'echo',
            image: 'registry.test/root-echo:1',
            ports: [{ containerPort: 1337 }],
            securityContext: { runAsUser: 0 },
          },
        ],
      },
      security: { profile: 'Baseline' },
    },
    settles: { phase: 'Running', reason: 'Ready' },
  },
]

async function run(t: Test, s: Scenario, variants: Variant[]): Promise<void> {
  const names = new Map<Variant, string>()
  for (const [index, variant] of variants.entries()) {
    const owner = variant.owner ?? `player${index}`
    await s.create(s.definition(variant.base ?? 'web-login', variant.definitionSpec, variant.definition))
    const challenge = s.challenge(variant.definition, owner, variant.challengeSpec ?? {}, variant.challengeName)
    names.set(variant, challenge.metadata.name)
    await s.create(challenge)
  }
  for (const variant of variants) {
    const name = names.get(variant) as string
    await t.test(variant.what, async (t) => {
      const { phase, reason } = variant.settles
      const status = await s.until(
        name,
        (st) => st.phase === phase && st.reason === reason,
        `${phase}/${reason}`,
        45_000,
      )
      if (variant.endpoint) t.strictSame(status.endpoint, variant.endpoint(status), 'the endpoint')
      if (phase === 'Running') t.ok(status.endpoint, 'an endpoint while Running')
      // Error ends the run: settled once the teardown is over.
      if (phase === 'Error') t.strictSame(await eventuallyEmpty(s, name), [], 'torn down')
      await assertAccepted(t, s, name, phase, variant)
    })
  }
  // Settled: one more sync of every instance changes nothing (no child the API server stores differently from
  // the hook's answer, which Metacontroller's three-way merge would rewrite on every sync).
  if (suite.sim !== undefined) {
    const warned = suite.apiWarnings.filter((w) => w.path.includes(`/namespaces/${s.ns}/`))
    t.strictSame(
      warned.map((w) => `${w.method} ${w.path}: ${w.warning}`),
      [],
      'no warning from the API server on any write of the controller',
    )
  }
  const { moved, writes } = await s.resync()
  t.strictSame(moved, [], 'quiet: another sync of every instance rewrites no child')
  if (suite.sim !== undefined) t.equal(writes, 0, 'quiet: the stand-in wrote nothing in those syncs')
}

async function eventuallyEmpty(s: Scenario, name: string): Promise<string[]> {
  return eventually(
    `${name} torn down`,
    async () => ((await s.children(name)).length === 0 ? [] : undefined),
    async () => (await s.children(name)).join(', '),
  ).catch(() => s.children(name))
}

/** The kinds of the children a running variant has: its exposure's route, the -internet policy with egress Internet. */
function expectedKinds(variant: Variant): string[] {
  const base = variant.base ?? 'web-login'
  const spec = variant.definitionSpec as { expose?: { type?: string }; network?: { egress?: string } }
  const type = spec.expose?.type ?? (base === 'pwn-echo' ? 'NodePort' : 'HTTP')
  const egress = spec.network?.egress ?? (base === 'pwn-echo' ? 'None' : 'DNS')
  // docs/api.md, Children: one policy isolates and exposes the instance; a second opens the Internet.
  return [
    'NetworkPolicy',
    ...(egress === 'Internet' ? ['NetworkPolicy'] : []),
    'Pod',
    'Secret',
    'Service',
    ...(type === 'HTTP' ? ['Ingress'] : []),
  ].sort()
}

/** The children and pods the API server stored, and the status it stored, are what the hook asked for. */
async function assertAccepted(t: Test, s: Scenario, name: string, phase: string, variant: Variant): Promise<void> {
  // Eventually: the controller may hold a newer answer it has not written yet. A pruned field never matches.
  let stored: Json = {}
  const settled = await eventually(
    'the stored status to be the last answer',
    async () => {
      const current = await s.get(name)
      const { observedGeneration: _generation, ...status } = (current?.status ?? {}) as Json
      stored = status
      return JSON.stringify(sortKeys(status)) === JSON.stringify(sortKeys(lastAnswer(suite, s.ns, name)))
        ? current
        : undefined
    },
    () => '',
    { timeoutMs: 10_000 },
  ).catch(() => undefined)
  t.strictSame(stored, lastAnswer(suite, s.ns, name), "the stored status is the hook's last answer: nothing pruned")
  const challenge = settled ?? (await s.get(name))
  const syncErrors = (suite.sim?.history ?? [])
    .filter((r) => r.parent.namespace === s.ns && r.parent.name === name && r.outcome === 'error')
    .flatMap((r) => r.errors)
  t.strictSame(syncErrors, [], 'no child refused by the API server')

  const events = await suite.kubectl([
    'get',
    'events',
    '-n',
    s.ns,
    '--field-selector',
    `involvedObject.name=${name},reason=SyncError`,
    '-o',
    'name',
  ])
  t.equal(events.stdout.trim(), '', 'no SyncError event')
  const children = await s.children(name)
  // Every object of a child kind (the route kinds included) that is the instance's, by its uid label or an owner
  // reference to the Challenge: each is controlled by the Challenge, and none is left out of the check.
  const uid = String(challenge?.metadata.uid)
  const objects = (
    await Promise.all(suite.childResources.map((resource) => s.list(resourcePath(resource, s.ns))))
  ).flat()
  const ours = objects.filter(
    (object) =>
      object.metadata.labels?.['challenge-hooks.dev/uid'] === uid ||
      (object.metadata.ownerReferences ?? []).some((ref) => ref.uid === uid),
  )
  for (const child of ours) {
    const owner = {
      apiVersion: 'challenge-hooks.dev/v1alpha1',
      kind: 'Challenge',
      name,
      uid,
      controller: true,
      blockOwnerDeletion: true,
    }
    t.strictSame(
      child.metadata.ownerReferences,
      [owner],
      `${child.kind}/${child.metadata.name}: controlled by the Challenge, and by nothing else`,
    )
  }
  const kinds = ours.map((object) => String(object.kind)).sort()
  // A run-ending Error holds no child, so there is nothing left to own: the other variants prove the ownership.
  t.strictSame(
    kinds,
    phase === 'Error' ? [] : expectedKinds(variant),
    `the children of ${phase === 'Error' ? 'an ended run' : variant.what}, each checked above`,
  )
  t.strictSame(
    ours.map((object) => `${object.kind}/${object.metadata.name}`).sort(),
    children,
    'the same as those controlled by the Challenge',
  )
  if (phase === 'Running') {
    const pods = (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).filter((pod) =>
      pod.metadata.ownerReferences?.some((ref) => ref.uid === challenge?.metadata.uid),
    )
    t.equal(pods.length, 1, 'Metacontroller made the pod, and Pod Security admitted it')
  }
}

t.test('Pod Security restricted: exposures, egress, names, failures', async (t) => {
  const s = await suite.scenario(t, 'variants')
  await kubectlOk(suite.kubectl, ['apply', '--server-side', '-f', '-'], {
    input: 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n',
  })
  t.teardown(() => suite.kubectl(['delete', 'runtimeclass', 'gvisor', '--ignore-not-found']).then(() => undefined))
  await run(t, s, RESTRICTED)
  const policy = (await s.list(`/apis/networking.k8s.io/v1/namespaces/${s.ns}/networkpolicies`)).find((np) =>
    np.metadata.name.endsWith('-internet'),
  )
  t.ok(policy, 'the -internet policy (with its IPv4 and IPv6 exceptions) was accepted')
})

t.test('Pod Security baseline: a root container under the Baseline profile', async (t) => {
  const s = await suite.scenario(t, 'baseline', { podSecurity: 'baseline' })
  await run(t, s, BASELINE)
})

t.test('a Baseline definition in a restricted namespace: no pod is asked for, and the status says why', async (t) => {
  const s = await suite.scenario(t, 'mismatch')
  await s.create(s.definition('pwn-echo', BASELINE[0]?.definitionSpec, 'root-echo'))
  await s.create(s.challenge('root-echo', 'dave'))
  // Pod Security's refusal is the definition's for good: Error/PodRefused, never Running. The hook reads
  // the namespace's enforce label (a related object), so it says so before any pod is asked for.
  const status = await s.until('root-echo-u-dave', (st) => st.phase === 'Error', 'Error')
  t.match(
    status,
    {
      phase: 'Error',
      reason: 'PodRefused',
      message: new RegExp(
        `^The namespace ${s.ns} enforces Pod Security "restricted", which the definition's Baseline profile does not meet`,
      ),
    },
    'never Running: the status names the level and the profile',
  )
  const pods = (await s.list(`/api/v1/namespaces/${s.ns}/pods`)).filter(
    (pod) => pod.metadata.labels?.['challenge-hooks.dev/instance'] === 'root-echo-u-dave',
  )
  t.strictSame(pods, [], 'no pod was made')
  const events = await suite.kubectl([
    'get',
    'events',
    '-n',
    s.ns,
    '--field-selector',
    'involvedObject.name=root-echo-u-dave,reason=SyncError',
    '-o',
    'name',
  ])
  t.equal(events.stdout.trim(), '', 'and none was refused: Metacontroller has no SyncError to report')
})
