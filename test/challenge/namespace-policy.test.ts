// What the instance's namespace would refuse (Pod Security's enforce label, LimitRanges) is said before the pod is
// asked for: Error/PodRefused at once, with the reason, no pod, no budget held; a namespace that admits the pod
// changes nothing.
import t from 'tap'
import { at, kinds, prepared, step } from '../helpers/drive.js'
import { challenge, NAMESPACE, netcatDefinition, pod, readyWorld, webDefinition, type Json } from '../helpers/world.js'
import type { KubeObject } from '../../src/contract/protocol.js'

const NAME = 'web-login-u-alice'
const BASELINE = { security: { profile: 'Baseline' } }

function namespace(labels: Record<string, string> = {}, name = NAMESPACE): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } }
}

function limitRange(limits: Json[], name = 'limits'): KubeObject {
  return { apiVersion: 'v1', kind: 'LimitRange', metadata: { name, namespace: NAMESPACE }, spec: { limits } }
}

const enforce = (level: string) => namespace({ 'pod-security.kubernetes.io/enforce': level })

/** The status and children of the first two syncs of a new instance of `definition` beside `related`. */
function start(definition: KubeObject, related: KubeObject[]) {
  return prepared(challenge(), { related: [definition, ...related] })
}

t.test(
  'Pod Security: a Baseline definition in a namespace that enforces restricted is refused at once, naming both',
  async (t) => {
    const { response, status } = start(webDefinition(BASELINE), [enforce('restricted')])
    t.strictSame(
      { phase: status.phase, reason: status.reason, message: status.message },
      {
        phase: 'Error',
        reason: 'PodRefused',
        message:
          'The namespace challenges enforces Pod Security "restricted", which the definition\'s Baseline profile does not meet: use security.profile Restricted, or label the namespace pod-security.kubernetes.io/enforce=baseline.',
      },
    )
    t.strictSame(kinds(response), [], 'no pod is asked for, and nothing else is kept')
    t.equal(status.finishedAt, '2026-11-22T12:00:00Z', 'the run ends')
    t.notOk('admittedAt' in status, 'no budget slot was taken')
  },
)

t.test('Pod Security: every level and profile', async (t) => {
  // [enforce label (undefined: none), profile, refused]
  const cases: [string | undefined, string, boolean][] = [
    [undefined, 'Baseline', false],
    ['privileged', 'Baseline', false],
    ['baseline', 'Baseline', false],
    ['restricted', 'Baseline', true],
    // Pod Security reads a value it does not know as its strictest level.
    ['Restricted', 'Baseline', true],
    ['strict', 'Baseline', true],
    ['restricted', 'Restricted', false],
    ['strict', 'Restricted', false],
  ]
  for (const [level, profile, refused] of cases) {
    const ns = level === undefined ? namespace() : enforce(level)
    const { status } = start(webDefinition({ security: { profile } }), [ns])
    t.equal(
      status.reason === 'PodRefused',
      refused,
      `enforce=${String(level)}, ${profile}: ${String(status.phase)}/${String(status.reason)}`,
    )
  }
  const elsewhere = start(
    webDefinition(BASELINE),
    [enforce('restricted'), namespace({}, 'other')].map((object, index) =>
      index === 0
        ? { ...object, metadata: { ...object.metadata, name: 'other' } }
        : { ...object, metadata: { ...object.metadata, name: 'unrelated' } },
    ),
  )
  t.equal(elsewhere.status.reason, 'Starting', "another namespace's label is not this one's")
})

t.test(
  'LimitRange: Container and Pod bounds on cpu, memory and ephemeral-storage, as the API server would judge them',
  async (t) => {
    // Cost 2: its limits (3Gi + 256Mi of memory) are more than one unit of COST_UNIT holds.
    const big = webDefinition({
      cost: 2,
      pod: {
        containers: [
          {
            name: 'web',
            image: 'ghcr.io/example/web:1',
            ports: [{ containerPort: 8080 }],
            resources: { requests: { memory: '1Gi' }, limits: { memory: '3Gi' } },
          },
          { name: 'cache', image: 'ghcr.io/example/cache:1' },
        ],
      },
    })
    // Defaults (resources.ts): requests cpu 50m, memory 64Mi, ephemeral-storage 64Mi; limits 500m, 256Mi, 256Mi.
    const cases: [string, Json[], string | undefined][] = [
      [
        'max memory per container',
        [{ type: 'Container', max: { memory: '2Gi' } }],
        "container web's memory limit is above the maximum 2Gi",
      ],
      ['max equal to the limit, written another way', [{ type: 'Container', max: { memory: '3072Mi' } }], undefined],
      [
        'min cpu per container',
        [{ type: 'Container', min: { cpu: '100m' } }],
        "container web's cpu request is below the minimum 100m",
      ],
      [
        'a limit more than the ratio times the request',
        [{ type: 'Container', maxLimitRequestRatio: { cpu: '4' } }],
        "container web's cpu limit is more than 4 times its request",
      ],
      ['a ratio that holds', [{ type: 'Container', maxLimitRequestRatio: { memory: 4 } }], undefined],
      [
        'max memory of the pod (3Gi + 256Mi)',
        [{ type: 'Pod', max: { memory: '3Gi' } }],
        "the pod's memory limit is above the maximum 3Gi",
      ],
      [
        'max ephemeral storage of the pod (2 × 256Mi)',
        [{ type: 'Pod', max: { 'ephemeral-storage': '500Mi' } }],
        "the pod's ephemeral-storage limit is above the maximum 500Mi",
      ],
      ['bounds the pod meets', [{ type: 'Pod', max: { memory: '4Gi', cpu: 2 }, min: { cpu: '100m' } }], undefined],
      ['claims are not pods', [{ type: 'PersistentVolumeClaim', max: { storage: '1Gi' } }], undefined],
      [
        'bounds it cannot read are left to the API server',
        [{ type: 'Container', max: { memory: 'lots', cpu: { toString: 1 } } }],
        undefined,
      ],
      ['a resource the pod does not use', [{ type: 'Container', max: { 'nvidia.com/gpu': '1' } }], undefined],
    ]
    for (const [what, limits, refusal] of cases) {
      const { status } = start(big, [limitRange(limits)])
      const expected =
        refusal === undefined
          ? { phase: 'Pending', reason: 'Starting' }
          : {
              phase: 'Error',
              reason: 'PodRefused',
              message: `The namespace's LimitRange "limits" refuses the pod: ${refusal}.`,
            }
      t.strictSame(
        refusal === undefined
          ? { phase: status.phase, reason: status.reason }
          : { phase: status.phase, reason: status.reason, message: status.message },
        expected,
        what,
      )
    }
    const second = start(big, [
      limitRange([{ type: 'Container', max: { cpu: '1' } }], 'a'),
      limitRange([{ type: 'Container', max: { memory: '1Gi' } }], 'b'),
    ])
    t.match(
      second.status.message,
      /LimitRange "b" refuses the pod: container web's memory limit/,
      'every LimitRange counts',
    )
    const long = start(big, [limitRange([{ type: 'Container', max: { memory: '1Gi' } }], 'l'.repeat(200))])
    t.equal(
      long.status.message,
      `The namespace's LimitRange "${'l'.repeat(127)}…" refuses the pod: container web's memory limit is above the maximum 1Gi.`,
      'a long name is cut',
    )
    const malformed = start(big, [
      { ...limitRange([]), spec: { limits: 'none' } },
      limitRange([{ type: 'Container', max: 7 }]),
    ])
    t.equal(malformed.status.reason, 'Starting', 'a LimitRange of another shape refuses nothing')
  },
)

t.test(
  'checked only until the pod of the run exists: a label added later does not end a running instance',
  async (t) => {
    const definition = netcatDefinition(BASELINE, 'web-login')
    const ready = prepared(challenge(), { related: [definition] })
    const children = readyWorld(ready.response.children)
    const running = step(ready.parent, { children, related: [definition], now: at(30) })
    t.equal(running.status.phase, 'Running')
    const relabelled = step(running.parent, { children, related: [definition, enforce('restricted')], now: at(60) })
    t.strictSame(
      { phase: relabelled.status.phase, reason: relabelled.status.reason },
      { phase: 'Running', reason: 'Ready' },
    )

    // A pod of this run already made (admission let it in) is not judged again, started or not.
    const pending = step(ready.parent, {
      children: [...children.filter((c) => c.kind !== 'Pod'), pod(NAME, 0, { phase: 'Pending' })],
      related: [definition, enforce('restricted')],
    })
    t.equal(pending.status.phase, 'Pending')

    // A restart is a new run, and its pod is judged afresh.
    const restarted = step(
      { ...relabelled.parent, spec: { ...relabelled.parent.spec, restarts: 1 } },
      { children, related: [definition, enforce('restricted')], now: at(90) },
    )
    t.strictSame(
      { phase: restarted.status.phase, reason: restarted.status.reason, run: restarted.status.run },
      { phase: 'Error', reason: 'PodRefused', run: 1 },
    )
  },
)

/** A web definition of two containers, web (the defaults) and cache (`cache` resources), to set against `limits`. */
function twoContainers(cache: Json = {}): KubeObject {
  return webDefinition({
    pod: {
      containers: [
        { name: 'web', image: 'ghcr.io/example/web:1', ports: [{ containerPort: 8080 }] },
        { name: 'cache', image: 'ghcr.io/example/cache:1', ...cache },
      ],
    },
  })
}

/** The phase, reason and message of a new instance of `definition` in a namespace of one LimitRange of `limits`. */
function judged(definition: KubeObject, limits: Json[]) {
  const { status } = start(definition, [limitRange(limits)])
  return { phase: status.phase, reason: status.reason, message: status.message }
}

const refused = (refusal: string) => ({
  phase: 'Error',
  reason: 'PodRefused',
  message: `The namespace's LimitRange "limits" refuses the pod: ${refusal}.`,
})

t.test('LimitRange: a bound written as a JSON number counts as the quantity it is', async (t) => {
  // Defaults (resources.ts): each container's cpu limit is 500m.
  t.strictSame(
    judged(twoContainers(), [{ type: 'Container', max: { cpu: 0.25 } }]),
    refused("container web's cpu limit is above the maximum 0.25"),
  )
})

t.test('LimitRange: a later container that breaks a Container bound is named, though the first meets it', async (t) => {
  const cache = { resources: { limits: { memory: '1Gi' } } }
  t.strictSame(
    judged(twoContainers(cache), [{ type: 'Container', max: { memory: '512Mi' } }]),
    refused("container cache's memory limit is above the maximum 512Mi"),
  )
})

t.test('LimitRange: bounds of an item that is neither Container nor Pod do not apply to the pod', async (t) => {
  const bounds = { max: { memory: '1Mi', cpu: '1m' } }
  const items: [string, Json][] = [
    ['a claim', { type: 'PersistentVolumeClaim', ...bounds }],
    ['an item without a type', bounds],
  ]
  for (const [what, item] of items) {
    const { phase, reason } = judged(twoContainers(), [item])
    t.strictSame({ phase, reason }, { phase: 'Pending', reason: 'Starting' }, what)
  }
})

t.test('LimitRange: a limit above its maximum by no more than the rounding of a float is within it', async (t) => {
  // 1 × (1 + 1e-12) is the double 1.000000000001: the largest value the rounding allows beside a bound of 1.
  const edge = { resources: { limits: { cpu: '1.000000000001' } } }
  const { phase, reason } = judged(twoContainers(edge), [{ type: 'Container', max: { cpu: '1' } }])
  t.strictSame({ phase, reason }, { phase: 'Pending', reason: 'Starting' })
  t.strictSame(
    judged(twoContainers({ resources: { limits: { cpu: '1.000000000002' } } }), [
      { type: 'Container', max: { cpu: '1' } },
    ]),
    refused("container cache's cpu limit is above the maximum 1"),
  )
})

t.test('LimitRange: a maxLimitRequestRatio refuses a request of 0, as the API server does', async (t) => {
  // LimitRangeItem.maxLimitRequestRatio: "the named resource must have a request and limit that are both non-zero".
  // web (50m, 500m) meets a ratio of 20; cache asks for no cpu below a limit of 500m.
  const idle = { resources: { requests: { cpu: '0' } } }
  t.strictSame(
    judged(twoContainers(idle), [{ type: 'Container', maxLimitRequestRatio: { cpu: '20' } }]),
    refused("container cache's cpu limit is more than 20 times its request"),
  )
  const { phase, reason } = judged(twoContainers(), [{ type: 'Container', maxLimitRequestRatio: { cpu: '20' } }])
  t.strictSame({ phase, reason }, { phase: 'Pending', reason: 'Starting' }, 'both containers meet the ratio')
})
