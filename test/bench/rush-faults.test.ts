// The pure half of bench:rush's fault run (bench/rush/faults.ts): the moments of the faults, and the checks of the
// end state (where each Challenge ended, orphan children, two pods for one instance, the flags). Objects are made
// here as the API server lists them; the expected flags were computed outside the project, with
// `printf '%s' '<message>' | openssl dgst -sha256 -hmac bench-secret`. No benchmark runs here.
import t from 'tap'
import {
  childPrefix,
  duplicatePodFindings,
  expectedFlag,
  faultSchedule,
  flagFindings,
  nextDue,
  orphanFindings,
  outcomeFindings,
  phaseCounts,
} from '../../bench/rush/faults.js'
import { pairs } from '../../bench/rush/faults-report.js'
import type { KubeObject } from '../../test/support/simulator/index.js'

const SECRET = 'bench-secret'
/** hex(HMAC-SHA256("bench-secret", "ctf-rush/chal-03/User/player-0001"))[0:32], by openssl */
const FLAG_0001 = 'flag{f75991518762646c35110f4c96be0466}'
/** the same for player-0002 */
const FLAG_0002 = 'flag{606b9c02979bef79c4accc04d39e674f}'

function challenge(
  owner: string,
  definition: string,
  uid: string,
  status: Record<string, unknown> = { phase: 'Running', reason: 'Ready' },
): KubeObject {
  return {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    metadata: {
      name: `${definition}-u-${owner}`,
      namespace: 'ctf-rush',
      uid,
      labels: { 'challenge-hooks.dev/owner': owner, 'challenge-hooks.dev/definition': definition },
    },
    spec: { definitionRef: { name: definition }, owner: { kind: 'User', id: owner } },
    status,
  }
}

function child(kind: string, name: string, owner: KubeObject | undefined, extra: Partial<KubeObject['metadata']> = {}) {
  return {
    apiVersion: 'v1',
    kind,
    metadata: {
      name,
      namespace: 'ctf-rush',
      labels: {
        'challenge-hooks.dev/instance': owner?.metadata.name ?? 'gone',
        'challenge-hooks.dev/uid': String(owner?.metadata.uid ?? 'gone-uid'),
      },
      ...(owner === undefined
        ? {}
        : {
            ownerReferences: [
              {
                apiVersion: owner.apiVersion,
                kind: 'Challenge',
                name: owner.metadata.name,
                uid: owner.metadata.uid,
                controller: true,
              },
            ],
          }),
      ...extra,
    },
  } as KubeObject
}

function pod(owner: KubeObject, name: string, run = '0', secretName = `${owner.metadata.name}-flag`): KubeObject {
  return {
    ...child('Pod', name, owner, { annotations: { 'challenge-hooks.dev/run': run } }),
    spec: {
      volumes: [{ name: 'flag', secret: { secretName } }],
      containers: [
        {
          name: 'app',
          volumeMounts: [{ name: 'flag', mountPath: '/flag', subPath: 'flag', readOnly: true }],
          env: [{ name: 'FLAG', valueFrom: { secretKeyRef: { name: secretName, key: 'flag' } } }],
        },
      ],
    },
  }
}

function flagSecret(owner: KubeObject, flag: string): KubeObject {
  return {
    ...child('Secret', `${owner.metadata.name}-flag`, owner),
    data: { flag: Buffer.from(flag).toString('base64') },
  }
}

t.test('the fault schedule: shares of the instances to admit, one fault at a time', async (t) => {
  t.strictSame(faultSchedule(750), [
    { kind: 'kill-metacontroller', share: 0.2, atAdmitted: 150 },
    { kind: 'roll-hook-server', share: 0.4, atAdmitted: 300 },
    { kind: 'kill-kubelet', share: 0.6, atAdmitted: 450 },
    { kind: 'roll-hook-server', share: 0.8, atAdmitted: 600 },
  ])
  t.strictSame(
    faultSchedule(3).map((f) => f.atAdmitted),
    [1, 2, 2, 3],
    'rounded up',
  )
  t.strictSame(
    faultSchedule(0).map((f) => f.atAdmitted),
    [1, 1, 1, 1],
    'never at 0: a fault fires once something is admitted',
  )
  const schedule = faultSchedule(150)
  t.equal(nextDue(schedule, 0, 29), undefined, 'not yet: 30 is 20 % of 150')
  t.strictSame(nextDue(schedule, 0, 30), { kind: 'kill-metacontroller', share: 0.2, atAdmitted: 30 })
  t.strictSame(
    nextDue(schedule, 1, 150),
    { kind: 'roll-hook-server', share: 0.4, atAdmitted: 60 },
    'the next one only, even when several are due',
  )
  t.equal(nextDue(schedule, 4, 150), undefined, 'all fired')
})

t.test('where each Challenge ended: min(count, budget) Running per owner, the rest Queued', async (t) => {
  const queued = { phase: 'Pending', reason: 'Queued' }
  const owner1 = ['chal-00', 'chal-01', 'chal-02'].map((d, i) => challenge('player-0001', d, `u1-${i}`))
  const fourth = challenge('player-0001', 'chal-03', 'u1-3', queued)
  t.strictSame(outcomeFindings([...owner1, fourth], 3), [])
  t.strictSame(phaseCounts([...owner1, fourth]), { 'Pending/Queued': 1, 'Running/Ready': 3 })

  const owner2 = [
    challenge('player-0002', 'chal-00', 'u2-0'),
    challenge('player-0002', 'chal-01', 'u2-1', queued),
    challenge('player-0002', 'chal-02', 'u2-2', { phase: 'Error', reason: 'StartupTimeout' }),
    challenge('player-0002', 'chal-03', 'u2-3', queued),
  ]
  t.strictSame(outcomeFindings([...owner1, fourth, ...owner2], 3), [
    { object: 'Challenge chal-02-u-player-0002', problem: 'ended Error/StartupTimeout' },
    { object: 'owner player-0002', problem: '1 Running of 4, expected 3 (budget 3)' },
  ])
  t.strictSame(
    outcomeFindings([challenge('player-0003', 'chal-00', 'u3', {})], 3),
    [
      { object: 'Challenge chal-00-u-player-0003', problem: 'ended none/none' },
      { object: 'owner player-0003', problem: '0 Running of 1, expected 1 (budget 3)' },
    ],
    'no status yet',
  )
  t.strictSame(
    outcomeFindings([...owner1, challenge('player-0001', 'chal-03', 'u1-3')], 3),
    [{ object: 'owner player-0001', problem: '4 Running of 4, expected 3 (budget 3)' }],
    'over the budget',
  )
})

t.test('orphan children', async (t) => {
  const running = challenge('player-0001', 'chal-03', 'uid-1', { phase: 'Running', reason: 'Ready', run: 1 })
  const queued = challenge('player-0002', 'chal-03', 'uid-2', { phase: 'Pending', reason: 'Queued' })
  const name = running.metadata.name
  const clean = [
    flagSecret(running, FLAG_0001),
    child('NetworkPolicy', `${name}-isolate`, running),
    child('NetworkPolicy', `${name}-expose`, running),
    pod(running, name, '1'),
    child('Service', name, running),
    child('Ingress', name, running),
  ]
  t.strictSame(orphanFindings([running, queued], clean), [], 'every child of a Running Challenge, labelled as its own')

  const gone = challenge('player-0009', 'chal-03', 'uid-9')
  const relabelled = child('Service', `${name}`, running)
  relabelled.metadata.labels = { ...relabelled.metadata.labels, 'challenge-hooks.dev/uid': 'uid-old' }
  t.strictSame(
    orphanFindings(
      [running, queued],
      [
        child('Secret', 'chal-03-u-player-0009-flag', gone),
        child('Ingress', 'stray', undefined),
        child('NetworkPolicy', 'chal-03-u-player-0002-isolate', queued),
        pod(running, `${name}-old`, '0'),
        relabelled,
        child('Pod', `${name}`, running, {
          deletionTimestamp: '2026-11-29T10:00:00Z',
          annotations: { 'challenge-hooks.dev/run': '1' },
        }),
      ],
    ),
    [
      {
        object: 'Secret chal-03-u-player-0009-flag',
        problem: 'its Challenge chal-03-u-player-0009 (uid uid-9) no longer exists',
      },
      { object: 'Ingress stray', problem: 'no controlling Challenge' },
      {
        object: 'NetworkPolicy chal-03-u-player-0002-isolate',
        problem: 'its Challenge is Pending/Queued, which holds no children',
      },
      { object: 'Pod chal-03-u-player-0001-old', problem: 'a pod of run 0, its Challenge is at run 1' },
      { object: 'Service chal-03-u-player-0001', problem: "labelled uid uid-old, its Challenge's is uid-1" },
      { object: 'Pod chal-03-u-player-0001', problem: 'still being deleted' },
    ],
  )
  t.strictSame(orphanFindings([running], [child('Secret', 'other-flag', running)]), [
    { object: 'Secret other-flag', problem: 'named for another instance than chal-03-u-player-0001' },
  ])
})

t.test('two pods for one instance', async (t) => {
  const one = challenge('player-0001', 'chal-03', 'uid-1')
  const two = challenge('player-0002', 'chal-03', 'uid-2')
  t.strictSame(duplicatePodFindings([one, two], [pod(one, 'a'), pod(two, 'b')]), [])
  t.strictSame(
    duplicatePodFindings(
      [one, two],
      [
        pod(one, 'z'),
        pod(two, 'b'),
        pod(one, 'a'),
        pod(challenge('player-0003', 'chal-01', 'uid-3'), 'c'),
        pod(challenge('player-0003', 'chal-01', 'uid-3'), 'd'),
      ],
    ),
    [
      { object: 'Challenge chal-03-u-player-0001', problem: '2 pods: a, z' },
      { object: 'Challenge (gone, uid uid-3)', problem: '2 pods: c, d' },
    ],
  )
})

t.test('the flag docs/api.md gives, computed by the bench', async (t) => {
  const one = challenge('player-0001', 'chal-03', '0f1e2d3c-aaaa-bbbb-cccc-000000000001')
  t.equal(expectedFlag(SECRET, one, { mode: 'PerOwner' }), FLAG_0001)
  t.equal(
    expectedFlag(SECRET, one, { mode: 'PerInstance', prefix: 'CTF[', suffix: ']' }),
    'CTF[fba46b6597a31911bc913488f0598823]',
    'PerInstance: over the uid',
  )
})

t.test('no flag served to the wrong instance', async (t) => {
  const one = challenge('player-0001', 'chal-03', 'uid-1')
  const two = challenge('player-0002', 'chal-03', 'uid-2')
  const queued = challenge('player-0003', 'chal-03', 'uid-3', { phase: 'Pending', reason: 'Queued' })
  const expected = (c: KubeObject) => expectedFlag(SECRET, c, { mode: 'PerOwner' })
  const findings = (secrets: KubeObject[], pods: KubeObject[]) =>
    flagFindings([one, two, queued], secrets, pods, expected, 'FLAG')
  t.strictSame(
    findings([flagSecret(one, FLAG_0001), flagSecret(two, FLAG_0002)], [pod(one, 'p1'), pod(two, 'p2')]),
    [],
    'each its own; a queued one has none',
  )
  t.strictSame(
    findings(
      [flagSecret(one, FLAG_0002), flagSecret(two, 'flag{0}')],
      [pod(one, 'p1'), pod(two, 'p2', '0', 'chal-03-u-player-0001-flag')],
    ),
    [
      {
        object: 'Challenge chal-03-u-player-0001',
        problem: 'chal-03-u-player-0001-flag holds the flag of chal-03-u-player-0002',
      },
      {
        object: 'Challenge chal-03-u-player-0002',
        problem: 'chal-03-u-player-0002-flag holds a flag no Challenge should have',
      },
      { object: 'Pod p2', problem: 'container app does not mount chal-03-u-player-0002-flag at /flag' },
    ],
  )
  const noEnv = pod(two, 'p2')
  ;(noEnv.spec as { containers: Array<{ env: unknown[] }> }).containers[0]!.env = []
  t.strictSame(findings([flagSecret(one, FLAG_0001)], [noEnv]), [
    { object: 'Challenge chal-03-u-player-0002', problem: 'no flag Secret chal-03-u-player-0002-flag with a key flag' },
    { object: 'Pod p2', problem: 'container app has no FLAG from chal-03-u-player-0002-flag' },
  ])
})

t.test(
  'a Challenge served by a warm pool: the pooled Secret of its flagUid, the pooled pod claimed by it',
  async (t) => {
    const claimed = (owner: string, uid: string, pod: string, flagUid: string) =>
      challenge(owner, 'chal-03', uid, {
        phase: 'Running',
        reason: 'Ready',
        pool: { state: 'Claimed', run: 0, pod, flagUid },
      })
    const one = claimed('player-0001', 'uid-1', 'chal-03.pool-4', 'secret-uid-7')
    const two = claimed('player-0002', 'uid-2', 'chal-03.pool-5', 'secret-uid-8')
    // The definition's children: no instance label, controlled by the definition, labelled claimed-by once claimed.
    const pooled = (kind: string, name: string, claimedBy: string, uid?: string) =>
      ({
        apiVersion: 'v1',
        kind,
        metadata: {
          name,
          namespace: 'ctf-rush',
          ...(uid === undefined ? {} : { uid }),
          labels: { 'challenge-hooks.dev/definition': 'chal-03', 'challenge-hooks.dev/claimed-by': claimedBy },
        },
      }) as KubeObject
    const secret = (name: string, claimedBy: string, uid: string, flag: string) => ({
      ...pooled('Secret', name, claimedBy, uid),
      data: { flag: Buffer.from(flag).toString('base64') },
    })
    const poolPod = (name: string, claimedBy: string) => ({
      ...pooled('Pod', name, claimedBy),
      spec: pod(one, name, '0', `${name}-flag`).spec,
    })
    /** hex(HMAC-SHA256("bench-secret", "secret-uid-7"))[0:32] and the same for secret-uid-8, by openssl */
    const [FLAG_7, FLAG_8] = ['flag{0093240a3d4743c8d065087050624722}', 'flag{fbd86457b3e28563ec626cb4f01dce44}']
    const expected = (c: KubeObject) => expectedFlag(SECRET, c, { mode: 'PerInstance' })
    t.equal(expected(one), FLAG_7, 'PerInstance over the flagUid, not the Challenge uid')
    // Both Challenges' pooled Secrets (uids, and who each claimed-by names) and pods (who each claimed-by names).
    const findings = (secretUids: [string, string], secretsFor: [string, string], podsFor: [string, string]) =>
      flagFindings(
        [one, two],
        [
          secret('chal-03.pool-4-flag', secretsFor[0], secretUids[0], FLAG_7),
          secret('chal-03.pool-5-flag', secretsFor[1], secretUids[1], FLAG_8),
        ],
        [poolPod('chal-03.pool-4', podsFor[0]), poolPod('chal-03.pool-5', podsFor[1])],
        expected,
        'FLAG',
      )
    t.strictSame(
      findings(['secret-uid-7', 'secret-uid-8'], ['uid-1', 'uid-2'], ['uid-1', 'uid-2']),
      [],
      'each its pooled pod and Secret',
    )
    t.strictSame(
      findings(['secret-uid-9', 'secret-uid-8'], ['uid-1', 'uid-1'], ['uid-1', 'uid-1']),
      [
        {
          object: 'Challenge chal-03-u-player-0001',
          problem: 'chal-03.pool-4-flag is not the Secret of its flagUid secret-uid-7',
        },
        {
          object: 'Challenge chal-03-u-player-0002',
          problem: 'chal-03.pool-5-flag is not labelled challenge-hooks.dev/claimed-by with its uid',
        },
        {
          object: 'Challenge chal-03-u-player-0002',
          problem: 'no pod chal-03.pool-5 labelled challenge-hooks.dev/claimed-by with its uid',
        },
      ],
      'a Secret of another uid; a Secret and a pod claimed by another Challenge',
    )
    t.strictSame(
      flagFindings([one], [secret('chal-03.pool-4-flag', 'uid-1', 'secret-uid-7', FLAG_8)], [], expected, 'FLAG'),
      [
        {
          object: 'Challenge chal-03-u-player-0001',
          problem: 'chal-03.pool-4-flag holds a flag no Challenge should have',
        },
        {
          object: 'Challenge chal-03-u-player-0001',
          problem: 'no pod chal-03.pool-4 labelled challenge-hooks.dev/claimed-by with its uid',
        },
      ],
      'the flag of no claim, and no pod at all',
    )
  },
)

t.test("child names: the Challenge's own name, or refused", async (t) => {
  t.equal(childPrefix('chal-03-u-player-0001'), 'chal-03-u-player-0001')
  for (const name of ['web-login.u.alice', 'x'.repeat(55), 'a--0123456789ab', '9lives'])
    t.throws(() => childPrefix(name), {
      message: `the bench names its Challenges as short DNS labels; ${name} is not one`,
    })
})

t.test('each fault run paired with the run without faults of its size just before it', async (t) => {
  const run = (label: string, challenges: number, when: string, seconds: number, faults: boolean) => ({
    label,
    challenges,
    when,
    secondsUntilAllRunning: seconds,
    settings: { faults },
  })
  const earlier = run('a', 1000, '2026-11-29T10:00:00Z', 400, false)
  const paired = run('b', 1000, '2026-11-29T11:00:00Z', 300, false)
  const other = run('c', 200, '2026-11-29T11:10:00Z', 60, false)
  const faults = run('d', 1000, '2026-11-29T11:20:00Z', 450, true)
  const nearerAfter = run('e', 1000, '2026-11-29T11:25:00Z', 100, false)
  const alone = run('f', 2000, '2026-11-29T11:30:00Z', 900, true)
  const firstOfSize = run('g', 200, '2026-11-29T11:05:00Z', 120, true)
  t.strictSame(pairs([nearerAfter, earlier, paired, other, faults, alone, firstOfSize]), [
    { faults, without: paired, ratio: 1.5 },
    { faults: alone, without: undefined, ratio: undefined },
    { faults: firstOfSize, without: other, ratio: 2 },
  ])
})
