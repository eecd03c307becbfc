/**
 * Pre-pulled images through the definition's hooks (/pools/sync, /pools/customize): the DaemonSet and the status the
 * contract gives (docs/api.md, "Pre-pulled images"), written out here from it, for what the DaemonSet and its pods
 * report as the API server and the kubelet word it.
 */
import t from 'tap'
import { poolAnswer, poolCustomize, poolSync } from '../../src/challenge/pool-hooks.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { TEST_INSTANT } from '../helpers/instant.js'
import { config, definition, NOW, NS, OWNED, request, type Json } from '../helpers/pool-world.js'

const GATE = config.isolationGate.image
const WEB = 'registry.example.org/web:1'
const LABELS = { 'app.kubernetes.io/managed-by': 'challenge-hooks', 'challenge-hooks.dev/prepull': 'web' }
const DS_UID = 'uid-web.images'

/** A container of the pause image into which image `index` is mounted. */
function pause(index: number): Json {
  return {
    name: `image-${index}`,
    image: 'registry.k8s.io/pause:3.10.1',
    imagePullPolicy: 'IfNotPresent',
    resources: {
      requests: { cpu: '1m', memory: '8Mi', 'ephemeral-storage': '1Mi' },
      limits: { cpu: '10m', memory: '16Mi', 'ephemeral-storage': '1Mi' },
    },
    securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
    volumeMounts: [{ name: `image-${index}`, mountPath: '/image', readOnly: true }],
  }
}

const DAEMON_SET = {
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name: 'web.images', labels: LABELS },
  spec: {
    selector: { matchLabels: LABELS },
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%' } },
    revisionHistoryLimit: 2,
    template: {
      metadata: { labels: LABELS },
      spec: {
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        terminationGracePeriodSeconds: 1,
        securityContext: {
          runAsNonRoot: true,
          runAsUser: 65535,
          runAsGroup: 65535,
          seccompProfile: { type: 'RuntimeDefault' },
        },
        containers: [pause(0), pause(1)],
        volumes: [
          { name: 'image-0', image: { reference: GATE, pullPolicy: 'IfNotPresent' } },
          { name: 'image-1', image: { reference: WEB, pullPolicy: 'IfNotPresent' } },
        ],
      },
    },
  },
}

/** A definition that pre-pulls and has no pool. */
const SPEC = { prepull: 'Pull', pool: undefined, flag: undefined }

/** The DaemonSet as the API server holds it: the definition's own, at generation 1, its status of that generation. */
function daemonSet(desired: number, observedGeneration = 1): KubeObject {
  return {
    ...DAEMON_SET,
    metadata: { ...DAEMON_SET.metadata, namespace: NS, uid: DS_UID, generation: 1, ownerReferences: OWNED },
    status: { observedGeneration, desiredNumberScheduled: desired },
  } as unknown as KubeObject
}

type ContainerState = 'running' | 'creating' | { reason: string; message: string }

/** A pod of the DaemonSet on `node`, each image's container in the state given (gate first, then web). */
function pod(node: string, states: [ContainerState, ContainerState], extra: Json = {}): KubeObject {
  const state = (each: ContainerState) =>
    each === 'running'
      ? { running: { startedAt: TEST_INSTANT } }
      : each === 'creating'
        ? { waiting: { reason: 'ContainerCreating' } }
        : { waiting: each }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `web.images-${node}`,
      namespace: NS,
      uid: `uid-pod-${node}`,
      labels: LABELS,
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'web.images', uid: DS_UID, controller: true },
      ],
      ...extra,
    },
    spec: { ...DAEMON_SET.spec.template.spec, nodeName: node },
    status: {
      containerStatuses: states.map((each, index) => ({ name: `image-${index}`, state: state(each) })),
    },
  } as unknown as KubeObject
}

function sync(children: KubeObject[], related: KubeObject[] = [], spec: Json = SPEC, status?: unknown) {
  return poolSync(request(definition(spec, {}, status), children, related), config, NOW)
}

const OFF_POOL = { state: 'Off', size: 0, free: 0, claimed: 0, starting: 0, since: TEST_INSTANT }

function image(reference: string, counts: { desired: number; ready: number; failures?: Json[] }): Json {
  const failures = counts.failures ?? []
  return { image: reference, desired: counts.desired, ready: counts.ready, failed: failures.length, failures }
}

const BACK_OFF = { reason: 'ImagePullBackOff', message: 'Back-off pulling image "registry.example.org/web:1"' }
const PULL_ERROR = {
  reason: 'ErrImagePull',
  message: 'failed to pull and unpack image "registry.example.org/web:1": not found',
}

t.test('customize: the DaemonSet’s pods unless prepull is Off, beside the pool’s tickets', async (t) => {
  const pods = {
    apiVersion: 'v1',
    resource: 'pods',
    namespace: NS,
    labelSelector: { matchLabels: { 'challenge-hooks.dev/prepull': 'web' } },
  }
  t.strictSame(poolCustomize({ parent: definition(SPEC) }), { relatedResources: [pods] })
  t.strictSame(poolCustomize({ parent: definition({ ...SPEC, prepull: 'Off' }) }), { relatedResources: [] })
  // Metacontroller keeps a customize answer per generation: a definition that leaves prepull to PREPULL_DEFAULT
  // relates the pods whatever the default is today, lest a changed default reach it only at its next change.
  t.strictSame(poolCustomize({ parent: definition({ pool: undefined }) }), { relatedResources: [pods] })
  t.strictSame(
    poolCustomize({ parent: definition({ prepull: 'Hold' }) }).relatedResources.map((rule) => rule.resource),
    ['services', 'pods'],
  )
})

t.test('first sync: the DaemonSet of every image, Pulling with no node counted yet', async (t) => {
  t.strictSame(sync([]), {
    status: {
      pool: OFF_POOL,
      images: {
        state: 'Pulling',
        since: TEST_INSTANT,
        nodes: 0,
        images: [image(GATE, { desired: 0, ready: 0 }), image(WEB, { desired: 0, ready: 0 })],
      },
    },
    children: [DAEMON_SET],
  })
})

t.test('the DaemonSet’s placement and pull Secrets are the player pool’s and the definition’s', async (t) => {
  const placed = {
    ...config,
    instancePods: {
      nodeSelector: { pool: 'players' },
      tolerations: [{ key: 'players', operator: 'Exists' as const, effect: 'NoSchedule' as const }],
      runtimeClassName: 'gvisor',
    },
  }
  const spec = {
    ...SPEC,
    pod: { containers: [{ name: 'app', image: WEB }], imagePullSecrets: [{ name: 'alice-pull' }] },
  }
  const answer = poolSync(request(definition(spec), []), placed, NOW)
  const template = (answer.children[0] as Json).spec.template.spec
  t.strictSame(template.nodeSelector, { pool: 'players' })
  t.strictSame(template.tolerations, [{ key: 'players', operator: 'Exists', effect: 'NoSchedule' }])
  t.strictSame(template.imagePullSecrets, [{ name: 'alice-pull' }])
  t.equal(template.runtimeClassName, undefined, 'no sandbox: the images are the node’s whatever runs them')
})

t.test('an image listed once though two containers run it', async (t) => {
  const spec = {
    ...SPEC,
    pod: {
      containers: [
        { name: 'app', image: WEB },
        { name: 'side', image: WEB },
        { name: 'gate-too', image: GATE },
      ],
    },
  }
  const answer = sync([], [], spec)
  t.strictSame(
    (answer.children[0] as Json).spec.template.spec.volumes.map((volume: Json) => volume.image.reference),
    [GATE, WEB],
  )
})

t.test('per image: ready nodes, failed nodes with the kubelet’s reason; Failed while any fails', async (t) => {
  const pods = [pod('node-a', ['running', 'running']), pod('node-b', ['running', PULL_ERROR])]
  const answer = sync([daemonSet(2)], pods)
  t.strictSame(answer.status, {
    pool: OFF_POOL,
    images: {
      state: 'Failed',
      since: TEST_INSTANT,
      nodes: 2,
      images: [
        image(GATE, { desired: 2, ready: 2 }),
        image(WEB, {
          desired: 2,
          ready: 1,
          failures: [{ node: 'node-b', reason: 'ImagePullBackOff', message: PULL_ERROR.message }],
        }),
      ],
    },
  })

  // The kubelet's next retry words it anew: the status stays as written, the same bytes.
  const previous = answer.status
  const retried = sync(
    [daemonSet(2)],
    [pod('node-a', ['running', 'running']), pod('node-b', ['running', BACK_OFF])],
    SPEC,
    previous,
  )
  t.equal(retried.status?.images, previous?.images)

  // Pulled at last: Ready, since now.
  const later = new Date(NOW.getTime() + 60_000)
  const ready = poolSync(
    request(
      definition(SPEC, {}, previous),
      [daemonSet(2)],
      [pod('node-a', ['running', 'running']), pod('node-b', ['running', 'running'])],
    ),
    config,
    later,
  )
  t.strictSame(ready.status?.images, {
    state: 'Ready',
    since: '2026-11-22T12:01:00Z',
    nodes: 2,
    images: [image(GATE, { desired: 2, ready: 2 }), image(WEB, { desired: 2, ready: 2 })],
  })
})

t.test('still on its way: creating containers are neither ready nor failed', async (t) => {
  const answer = sync([daemonSet(2)], [pod('node-a', ['running', 'creating'])])
  t.strictSame(answer.status?.images, {
    state: 'Pulling',
    since: TEST_INSTANT,
    nodes: 2,
    images: [image(GATE, { desired: 2, ready: 1 }), image(WEB, { desired: 2, ready: 0 })],
  })
})

t.test('what does not count: a stale DaemonSet status, a pod it does not control, a pod being deleted', async (t) => {
  const stale = sync([daemonSet(2, 0)], [pod('node-a', ['running', 'running']), pod('node-b', ['running', 'running'])])
  t.strictSame(
    stale.status?.images,
    {
      state: 'Pulling',
      since: TEST_INSTANT,
      nodes: 0,
      images: [image(GATE, { desired: 0, ready: 2 }), image(WEB, { desired: 0, ready: 2 })],
    },
    'the node count of an older generation is not trusted',
  )
  const forged = pod('node-b', ['running', 'running'], { ownerReferences: [] })
  const leaving = pod('node-c', ['running', 'running'], { deletionTimestamp: TEST_INSTANT })
  const answer = sync([daemonSet(2)], [pod('node-a', ['running', 'running']), forged, leaving])
  t.strictSame(answer.status?.images, {
    state: 'Pulling',
    since: TEST_INSTANT,
    nodes: 2,
    images: [image(GATE, { desired: 2, ready: 1 }), image(WEB, { desired: 2, ready: 1 })],
  })
  const foreignDaemonSet = { ...daemonSet(1), metadata: { ...daemonSet(1).metadata, ownerReferences: [] } }
  t.strictSame(
    sync([foreignDaemonSet as KubeObject], [pod('node-a', ['running', 'running'])]).status?.images,
    {
      state: 'Pulling',
      since: TEST_INSTANT,
      nodes: 0,
      images: [image(GATE, { desired: 0, ready: 0 }), image(WEB, { desired: 0, ready: 0 })],
    },
    'a DaemonSet of that name that is not the definition’s own says nothing',
  )
})

t.test('an image another rendering’s pod does not pull is not counted on it', async (t) => {
  const old = pod('node-a', ['running', 'running'])
  const spec = old.spec as Json
  const other = {
    ...old,
    spec: {
      ...spec,
      volumes: [spec.volumes[0], { name: 'image-1', image: { reference: 'registry.example.org/web:0' } }],
    },
  }
  t.strictSame(sync([daemonSet(1)], [other as KubeObject]).status?.images, {
    state: 'Pulling',
    since: TEST_INSTANT,
    nodes: 1,
    images: [image(GATE, { desired: 1, ready: 1 }), image(WEB, { desired: 1, ready: 0 })],
  })
})

t.test('no node may run the pods: Pulling, and the message says why', async (t) => {
  t.strictSame(sync([daemonSet(0)]).status?.images, {
    state: 'Pulling',
    message: "No node may run the definition's pods (INSTANCE_NODE_SELECTOR, INSTANCE_TOLERATIONS).",
    since: TEST_INSTANT,
    nodes: 0,
    images: [image(GATE, { desired: 0, ready: 0 }), image(WEB, { desired: 0, ready: 0 })],
  })
})

t.test('failures: ten listed by node, every one counted, a long message cut', async (t) => {
  const long = { reason: 'ImagePullBackOff', message: 'x'.repeat(2000) }
  const pods = Array.from({ length: 12 }, (_, index) =>
    pod(`node-${String(index).padStart(2, '0')}`, ['running', long]),
  )
  const images = sync([daemonSet(12)], [...pods.slice(6), ...pods.slice(0, 6).reverse()]).status?.images as Json
  const web = images.images[1]
  t.equal(web.failed, 12)
  t.strictSame(
    web.failures.map((failure: Json) => failure.node),
    ['node-00', 'node-01', 'node-02', 'node-03', 'node-04', 'node-05', 'node-06', 'node-07', 'node-08', 'node-09'],
  )
  t.equal(web.failures[0].message, `${'x'.repeat(1023)}…`)
})

t.test('unreadable pod statuses read as absent, never as a failure or a 5xx', async (t) => {
  const broken = [
    { ...pod('node-a', ['running', 'running']), status: 'nonsense' },
    { ...pod('node-b', ['running', 'running']), spec: { volumes: 'nonsense' } },
    {
      ...pod('node-c', ['running', 'running']),
      status: { containerStatuses: [{ name: 'image-1', state: { waiting: { reason: 7 } } }] },
    },
  ] as unknown as KubeObject[]
  t.strictSame(sync([daemonSet(3)], broken).status?.images, {
    state: 'Pulling',
    since: TEST_INSTANT,
    nodes: 3,
    images: [image(GATE, { desired: 3, ready: 0 }), image(WEB, { desired: 3, ready: 0 })],
  })
})

t.test('no DaemonSet and no status.images: Off, closed, being deleted, invalid', async (t) => {
  t.strictSame(sync([daemonSet(1)], [], { ...SPEC, prepull: 'Off' }), { status: { pool: OFF_POOL }, children: [] })
  const closed = sync([daemonSet(1)], [], { ...SPEC, availableUntil: '2026-11-22T11:00:00Z' })
  t.strictSame(closed, { status: { pool: OFF_POOL }, children: [] })
  const deleting = poolSync({ ...request(definition(SPEC), [daemonSet(1)]), finalizing: true }, config, NOW)
  t.strictSame(deleting, { status: { pool: OFF_POOL }, children: [] })
  const invalid = sync([daemonSet(1)], [], { ...SPEC, cost: 1000 })
  t.strictSame(invalid.children, [])
  t.equal((invalid.status as Json).images, undefined)
})

t.test('an open definition with an end is synced again at availableUntil, pool or none', async (t) => {
  const answer = sync([], [], { ...SPEC, availableUntil: '2026-11-22T12:03:00Z' })
  t.equal(answer.resyncAfterSeconds, 180)
})

t.test('with a pool: the pool’s children and the DaemonSet, both statuses; the report for the metrics', async (t) => {
  const answer = poolAnswer(
    request(definition({ prepull: 'Hold', availableFrom: '2026-11-22T13:00:00Z' }), []),
    config,
    NOW,
  )
  t.strictSame(
    answer.response.children.map((child) => `${child.kind} ${child.metadata.name}`),
    ['NetworkPolicy web.pool-isolate', 'Secret web.pool-0-flag', 'Secret web.pool-1-flag', 'DaemonSet web.images'],
  )
  t.strictSame(Object.keys(answer.response.status ?? {}), ['pool', 'images'])
  t.strictSame(answer.images, {
    report: {
      state: 'Pulling',
      nodes: 0,
      images: [image(GATE, { desired: 0, ready: 0 }), image(WEB, { desired: 0, ready: 0 })],
    },
    opensAt: Date.parse('2026-11-22T13:00:00Z'),
  })
  t.equal(poolAnswer(request(definition(), []), config, NOW).images, undefined, 'none without prepull')
})

t.test('what the API server may leave out: a generation, a node count, a node name, a message', async (t) => {
  const bare = daemonSet(1)
  const unnumbered = {
    ...bare,
    metadata: { ...bare.metadata, generation: undefined },
    status: { observedGeneration: 0 },
  } as unknown as KubeObject
  const nameless = (name: string) => {
    const each = pod(name, ['running', { reason: 'ErrImageNeverPull' } as never])
    return { ...each, spec: { ...(each.spec as Json), nodeName: undefined } } as unknown as KubeObject
  }
  t.strictSame(sync([unnumbered], [nameless('x'), nameless('y')]).status?.images, {
    state: 'Failed',
    message: "No node may run the definition's pods (INSTANCE_NODE_SELECTOR, INSTANCE_TOLERATIONS).",
    since: TEST_INSTANT,
    nodes: 0,
    images: [
      image(GATE, { desired: 0, ready: 2 }),
      image(WEB, {
        desired: 0,
        ready: 0,
        failures: [
          { node: '', reason: 'ErrImageNeverPull', message: '' },
          { node: '', reason: 'ErrImageNeverPull', message: '' },
        ],
      }),
    ],
  })
})

t.test('a state that goes on keeps its since while its counts change', async (t) => {
  const first = sync([daemonSet(2)], [pod('node-a', ['running', 'creating'])])
  const later = poolSync(
    request(definition(SPEC, {}, first.status), [daemonSet(2)], [pod('node-a', ['running', 'running'])]),
    config,
    new Date(NOW.getTime() + 60_000),
  )
  t.strictSame(later.status?.images, {
    state: 'Pulling',
    since: TEST_INSTANT,
    nodes: 2,
    images: [image(GATE, { desired: 2, ready: 1 }), image(WEB, { desired: 2, ready: 1 })],
  })
})

t.test('a container waiting while its pod initializes is on its way, not failing', async (t) => {
  const initializing = pod('node-a', ['running', { reason: 'PodInitializing' } as never])
  t.strictSame(sync([daemonSet(1)], [initializing]).status?.images, {
    state: 'Pulling',
    since: TEST_INSTANT,
    nodes: 1,
    images: [image(GATE, { desired: 1, ready: 1 }), image(WEB, { desired: 1, ready: 0 })],
  })
})

t.test('no DaemonSet observed: no pod counted, not even one whose owner reference has no uid', async (t) => {
  const unnamed = pod('node-a', ['running', 'running'], {
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'web.images', controller: true }],
  })
  t.strictSame(sync([], [unnamed]).status?.images, {
    state: 'Pulling',
    since: TEST_INSTANT,
    nodes: 0,
    images: [image(GATE, { desired: 0, ready: 0 }), image(WEB, { desired: 0, ready: 0 })],
  })
})

t.test('a pod that does not pull an image is not counted for it, whatever a nameless container says', async (t) => {
  const old = pod('node-a', ['running', 'running'])
  const spec = old.spec as Json
  const other = {
    ...old,
    spec: { ...spec, volumes: [spec.volumes[0]] },
    status: {
      containerStatuses: [
        { name: 'image-0', state: { running: { startedAt: TEST_INSTANT } } },
        { state: { running: { startedAt: TEST_INSTANT } } },
      ],
    },
  }
  t.strictSame(sync([daemonSet(1)], [other as unknown as KubeObject]).status?.images, {
    state: 'Pulling',
    since: TEST_INSTANT,
    nodes: 1,
    images: [image(GATE, { desired: 1, ready: 1 }), image(WEB, { desired: 1, ready: 0 })],
  })
})

t.test('two failures on one node are listed in the order of their pods', async (t) => {
  const first = pod('node-a', ['running', { reason: 'ErrImageNeverPull', message: 'never' }], {
    name: 'web.images-1',
  })
  const second = pod('node-a', ['running', BACK_OFF], { name: 'web.images-2' })
  t.strictSame(sync([daemonSet(1)], [first, second]).status?.images, {
    state: 'Failed',
    since: TEST_INSTANT,
    nodes: 1,
    images: [
      image(GATE, { desired: 1, ready: 2 }),
      image(WEB, {
        desired: 1,
        ready: 0,
        failures: [
          { node: 'node-a', reason: 'ErrImageNeverPull', message: 'never' },
          { node: 'node-a', reason: 'ImagePullBackOff', message: BACK_OFF.message },
        ],
      }),
    ],
  })
})

t.test('a failure’s message of exactly the CRD’s bound is written whole', async (t) => {
  const message = 'y'.repeat(1024)
  const answer = sync([daemonSet(1)], [pod('node-a', ['running', { reason: 'ImagePullBackOff', message }])])
  t.strictSame((answer.status?.images as Json).images[1].failures, [
    { node: 'node-a', reason: 'ImagePullBackOff', message },
  ])
})

t.test('a failure’s message cut where an emoji would be split loses the emoji whole', async (t) => {
  const message = `${'y'.repeat(1022)}🐳 pull access denied`
  const answer = sync([daemonSet(1)], [pod('node-a', ['running', { reason: 'ImagePullBackOff', message }])])
  t.strictSame((answer.status?.images as Json).images[1].failures, [
    { node: 'node-a', reason: 'ImagePullBackOff', message: `${'y'.repeat(1022)}…` },
  ])
})

t.test('a changed image with the same counts is written anew, its state’s since kept', async (t) => {
  const previous = sync([]).status
  const spec = { ...SPEC, pod: { containers: [{ name: 'app', image: 'registry.example.org/web:2' }] } }
  t.strictSame(sync([], [], spec, previous).status?.images, {
    state: 'Pulling',
    since: TEST_INSTANT,
    nodes: 0,
    images: [image(GATE, { desired: 0, ready: 0 }), image('registry.example.org/web:2', { desired: 0, ready: 0 })],
  })
})

t.test('one more failed node past the ten listed is written anew', async (t) => {
  const names = Array.from({ length: 13 }, (_, index) => `node-${String(index).padStart(2, '0')}`)
  const failing = (node: string) => pod(node, ['running', BACK_OFF])
  const first = sync([daemonSet(13)], [...names.slice(0, 12).map(failing), pod('node-12', ['running', 'creating'])])
  const later = poolSync(
    request(definition(SPEC, {}, first.status), [daemonSet(13)], names.map(failing)),
    config,
    new Date(NOW.getTime() + 60_000),
  )
  t.strictSame(later.status?.images, {
    state: 'Failed',
    since: TEST_INSTANT,
    nodes: 13,
    images: [
      image(GATE, { desired: 13, ready: 13 }),
      {
        image: WEB,
        desired: 13,
        ready: 0,
        failed: 13,
        failures: names.slice(0, 10).map((node) => ({ node, reason: 'ImagePullBackOff', message: BACK_OFF.message })),
      },
    ],
  })
})

t.test('a failure on another node, or for another reason, is written anew', async (t) => {
  const previous = sync([daemonSet(2)], [pod('node-a', ['running', 'running']), pod('node-b', ['running', BACK_OFF])])
  const moved = sync(
    [daemonSet(2)],
    [pod('node-a', ['running', BACK_OFF]), pod('node-b', ['running', 'running'])],
    SPEC,
    previous.status,
  )
  t.strictSame(moved.status?.images, {
    state: 'Failed',
    since: TEST_INSTANT,
    nodes: 2,
    images: [
      image(GATE, { desired: 2, ready: 2 }),
      image(WEB, { desired: 2, ready: 1, failures: [{ node: 'node-a', ...BACK_OFF }] }),
    ],
  })
  const never = { reason: 'ErrImageNeverPull', message: 'Container image is not present with pull policy of Never' }
  const other = sync(
    [daemonSet(2)],
    [pod('node-a', ['running', 'running']), pod('node-b', ['running', never])],
    SPEC,
    previous.status,
  )
  t.strictSame(other.status?.images, {
    state: 'Failed',
    since: TEST_INSTANT,
    nodes: 2,
    images: [
      image(GATE, { desired: 2, ready: 2 }),
      image(WEB, { desired: 2, ready: 1, failures: [{ node: 'node-b', ...never }] }),
    ],
  })
})

t.test('the message goes when the DaemonSet’s count is no longer trusted, the counts the same', async (t) => {
  const previous = sync([daemonSet(0)]).status
  t.strictSame(sync([daemonSet(0, 0)], [], SPEC, previous).status?.images, {
    state: 'Pulling',
    since: TEST_INSTANT,
    nodes: 0,
    images: [image(GATE, { desired: 0, ready: 0 }), image(WEB, { desired: 0, ready: 0 })],
  })
})

t.test('a status.images that says other than the report, however written, is written anew', async (t) => {
  const pods = [pod('node-a', ['running', 'running']), pod('node-b', ['running', 'running'])]
  const ready = (since: string) => ({
    state: 'Ready',
    since,
    nodes: 2,
    images: [image(GATE, { desired: 2, ready: 2 }), image(WEB, { desired: 2, ready: 2 })],
  })
  const EARLIER = '2026-11-22T11:00:00Z'
  const edited = (images: Json) => sync([daemonSet(2)], pods, SPEC, { pool: OFF_POOL, images }).status?.images
  t.strictSame(edited({ ...ready(EARLIER), state: 'Pulling' }), ready(TEST_INSTANT), 'another state')
  t.strictSame(edited({ ...ready(EARLIER), nodes: 3 }), ready(EARLIER), 'another count of nodes')
  const desired = ready(EARLIER)
  desired.images[1] = image(WEB, { desired: 3, ready: 2 })
  t.strictSame(edited(desired), ready(EARLIER), 'another count of desired nodes for an image')
})
