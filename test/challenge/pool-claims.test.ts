/**
 * The warm pool's plan, case by case: what is kept, claimed, given up and made, written from the rules of
 * docs/proposals/warm-pools.md.
 */
import t from 'tap'
import { planPool, type PoolChallenge, type PoolPod, type PoolSpec } from '../../src/challenge/pool-claims.js'

const spec: PoolSpec = { size: 2, maxPods: 5, rendering: 'r1', open: true, prefix: 'web-pool-r1-' }
const pod = (name: string, facts: Partial<PoolPod> = {}): PoolPod => ({
  name,
  rendering: 'r1',
  ready: true,
  deleting: false,
  claimedBy: undefined,
  ...facts,
})
const waiter = (uid: string, facts: Partial<PoolChallenge> = {}): PoolChallenge => ({
  uid,
  name: `chal-${uid}`,
  waiting: true,
  recordedPod: undefined,
  admittedAt: 1000,
  createdAt: 500,
  ...facts,
})

t.test('an empty pool is filled to its size with the smallest free names', async (t) => {
  t.strictSame(planPool(spec, [], []), {
    pods: [
      { name: 'web-pool-r1-0', rendering: 'r1', claimedBy: undefined },
      { name: 'web-pool-r1-1', rendering: 'r1', claimedBy: undefined },
    ],
    claims: [],
    counts: { free: 0, claimed: 0, starting: 2 },
  })
})

t.test('the free ready pod with the lowest name is claimed, whatever order the pods are observed in', async (t) => {
  const pods = [pod('web-pool-r1-3'), pod('web-pool-r1-1'), pod('web-pool-r1-2')]
  t.strictSame(planPool(spec, pods, [waiter('a')]), {
    pods: [
      { name: 'web-pool-r1-1', rendering: 'r1', claimedBy: 'a' },
      { name: 'web-pool-r1-2', rendering: 'r1', claimedBy: undefined },
      { name: 'web-pool-r1-3', rendering: 'r1', claimedBy: undefined },
    ],
    claims: [['web-pool-r1-1', 'a']],
    counts: { free: 2, claimed: 1, starting: 0 },
  })
})

t.test('a ready free pod is claimed for the Challenge that waited first, and the pool refills', async (t) => {
  const pods = [pod('web-pool-r1-0'), pod('web-pool-r1-1', { ready: false })]
  const challenges = [
    waiter('b', { admittedAt: 2000 }),
    waiter('a', { admittedAt: 1000 }),
    waiter('c', { admittedAt: 1000, createdAt: 900 }),
  ]
  t.strictSame(planPool(spec, pods, challenges), {
    pods: [
      { name: 'web-pool-r1-0', rendering: 'r1', claimedBy: 'a' },
      { name: 'web-pool-r1-1', rendering: 'r1', claimedBy: undefined },
      { name: 'web-pool-r1-2', rendering: 'r1', claimedBy: undefined },
    ],
    claims: [['web-pool-r1-0', 'a']],
    counts: { free: 0, claimed: 1, starting: 2 },
  })
})

t.test('admitted together: the one created first, then the smaller name, is served first', async (t) => {
  const pods = [pod('p0'), pod('p1')]
  const challenges = [waiter('late', { createdAt: 700 }), waiter('zed', { name: 'z' }), waiter('amy', { name: 'a' })]
  t.strictSame(planPool({ ...spec, size: 0 }, pods, challenges).claims, [
    ['p0', 'amy'],
    ['p1', 'zed'],
  ])
})

t.test('a claim observed on a pod is answered unchanged and never written again', async (t) => {
  const pods = [pod('p0', { claimedBy: 'a' }), pod('p1')]
  const plan = planPool({ ...spec, size: 1 }, pods, [waiter('a'), waiter('b')])
  t.strictSame(plan.pods, [
    { name: 'p0', rendering: 'r1', claimedBy: 'a' },
    { name: 'p1', rendering: 'r1', claimedBy: 'b' },
    { name: 'web-pool-r1-0', rendering: 'r1', claimedBy: undefined },
  ])
  t.strictSame(plan.claims, [['p1', 'b']], 'a, already served by p0, is not given a second pod')
})

t.test('a claimed pod is given up once its Challenge is gone, records another pod or stopped waiting', async (t) => {
  const pods = [
    pod('p0', { claimedBy: 'gone' }),
    pod('p1', { claimedBy: 'two' }),
    pod('p2', { claimedBy: 'two' }),
    pod('p3', { claimedBy: 'stopped' }),
    pod('p4', { claimedBy: 'fresh' }),
    pod('p5', { claimedBy: 'kept' }),
  ]
  const challenges = [
    waiter('two', { waiting: false, recordedPod: 'p1' }),
    waiter('stopped', { waiting: false }),
    waiter('fresh'),
    waiter('kept', { waiting: false, recordedPod: 'p5' }),
  ]
  t.strictSame(planPool({ ...spec, size: 0 }, pods, challenges), {
    pods: [
      { name: 'p1', rendering: 'r1', claimedBy: 'two' },
      { name: 'p4', rendering: 'r1', claimedBy: 'fresh' },
      { name: 'p5', rendering: 'r1', claimedBy: 'kept' },
    ],
    claims: [],
    counts: { free: 0, claimed: 3, starting: 0 },
  })
})

t.test('a pool made smaller gives up its free pods beyond the size, the not ready ones first', async (t) => {
  const pods = [pod('p0'), pod('p1', { ready: false }), pod('p2'), pod('p3', { ready: false })]
  t.strictSame(planPool({ ...spec, size: 2 }, pods, []), {
    pods: [
      { name: 'p0', rendering: 'r1', claimedBy: undefined },
      { name: 'p2', rendering: 'r1', claimedBy: undefined },
    ],
    claims: [],
    counts: { free: 2, claimed: 0, starting: 0 },
  })
})

t.test('a free pod of another rendering is drained; a claimed one stays with its player', async (t) => {
  const pods = [pod('old-0', { rendering: 'r0' }), pod('old-1', { rendering: 'r0', claimedBy: 'a' })]
  const plan = planPool({ ...spec, size: 1 }, pods, [
    waiter('a', { waiting: false, recordedPod: 'old-1' }),
    waiter('b'),
  ])
  t.strictSame(plan.pods, [
    { name: 'old-1', rendering: 'r0', claimedBy: 'a' },
    { name: 'web-pool-r1-0', rendering: 'r1', claimedBy: undefined },
  ])
  t.strictSame(plan.claims, [], 'b waits for a pod of today')
})

t.test('a closed pool keeps its claimed pods and no free one, and makes none', async (t) => {
  const pods = [pod('p0'), pod('p1', { claimedBy: 'a' })]
  t.strictSame(planPool({ ...spec, open: false }, pods, [waiter('a'), waiter('b')]), {
    pods: [{ name: 'p1', rendering: 'r1', claimedBy: 'a' }],
    claims: [],
    counts: { free: 0, claimed: 1, starting: 0 },
  })
})

t.test('a pod being deleted is not answered, and its name is not reused until it is gone', async (t) => {
  const pods = [pod('web-pool-r1-0', { deleting: true }), pod('web-pool-r1-1', { deleting: true, claimedBy: 'a' })]
  t.strictSame(planPool({ ...spec, size: 1 }, pods, [waiter('a')]), {
    pods: [{ name: 'web-pool-r1-2', rendering: 'r1', claimedBy: undefined }],
    claims: [],
    counts: { free: 0, claimed: 0, starting: 1 },
  })
})

t.test('the ceiling holds claimed and free pods together', async (t) => {
  const pods = [pod('p0', { claimedBy: 'a' }), pod('p1', { claimedBy: 'b' }), pod('p2')]
  const challenges = [waiter('a'), waiter('b'), waiter('c'), waiter('d')]
  t.strictSame(planPool({ ...spec, size: 2, maxPods: 3 }, pods, challenges), {
    pods: [
      { name: 'p0', rendering: 'r1', claimedBy: 'a' },
      { name: 'p1', rendering: 'r1', claimedBy: 'b' },
      { name: 'p2', rendering: 'r1', claimedBy: 'c' },
    ],
    claims: [['p2', 'c']],
    counts: { free: 0, claimed: 3, starting: 0 },
  })
  const full = [...pods, pod('p3', { ready: false }), pod('p4'), pod('p5', { claimedBy: 'd' })]
  t.strictSame(
    planPool({ ...spec, size: 2, maxPods: 4 }, full, challenges).pods,
    [
      { name: 'p0', rendering: 'r1', claimedBy: 'a' },
      { name: 'p1', rendering: 'r1', claimedBy: 'b' },
      { name: 'p2', rendering: 'r1', claimedBy: 'c' },
      { name: 'p5', rendering: 'r1', claimedBy: 'd' },
    ],
    'a ceiling lowered below what the pool holds gives up its free pods, never a claimed one',
  )
})
