// The owner budget (src/challenge/budget.ts) decided directly, one row per rule: which siblings hold or wait for
// budget, in what order, and what an unknown or odd cost does. Each row is a world where the rule changes the answer.
import t from 'tap'
import { budgetCheck, type OwnerWorld } from '../../src/challenge/budget.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { NAMESPACE } from './objects.js'

const ownerKey = { namespace: NAMESPACE, definition: 'web-login', ownerKind: 'team', ownerId: 'alice' }
const EARLY = '2026-11-01T10:00:00Z'
const LATE = '2026-11-01T11:00:00Z'
const ADMITTED = '2026-11-01T10:30:00Z'

/** A Challenge of the owner; `spec` and `status` are merged into a plain one created EARLY. */
function challenge(
  name: string,
  spec: Record<string, unknown> = {},
  status: Record<string, unknown> | null = {},
  metadata: Record<string, unknown> = {},
): KubeObject {
  return {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'Challenge',
    metadata: { name, namespace: NAMESPACE, creationTimestamp: EARLY, ...metadata },
    spec: { owner: { kind: 'team', id: 'alice' }, ...spec },
    status,
  }
}

/** This instance, created LATE, cost 1, budget 1, never admitted before: admitted unless a sibling holds or precedes. */
function admitted(
  siblings: KubeObject[],
  options: { cost?: number; budget?: number; admittedAt?: number; self?: KubeObject } = {},
): boolean {
  const self = options.self ?? challenge('self', {}, {}, { creationTimestamp: LATE })
  const world: OwnerWorld = { challenge: self, ownerKey, siblings }
  return budgetCheck(world, options.cost ?? 1, options.budget ?? 1, options.admittedAt).admitted
}

const running = { phase: 'Running', reason: 'Ready', run: 0, cost: 1, admittedAt: ADMITTED, startedAt: ADMITTED }
const waiting = { phase: 'Pending', reason: 'Starting', run: 0, cost: 1 }

t.test('budgetCheck: which siblings count', async (t) => {
  const rows: [string, KubeObject[], boolean][] = [
    ['alone', [], true],
    ['a running sibling holds the slot', [challenge('other', {}, running)], false],
    ['an earlier sibling waiting for its start goes first', [challenge('other', {}, waiting)], false],
    ['a sibling of another owner id', [challenge('other', { owner: { kind: 'team', id: 'bob' } }, running)], true],
    ['a sibling of another owner kind', [challenge('other', { owner: { kind: 'user', id: 'alice' } }, running)], true],
    ['a sibling with a null owner', [challenge('other', { owner: null }, running)], true],
    ['a sibling being deleted', [challenge('other', {}, running, { deletionTimestamp: LATE })], true],
    ['a sibling stopped', [challenge('other', { desiredState: 'Stopped' }, running)], true],
    ['a sibling in Error', [challenge('other', {}, { ...running, phase: 'Error' })], true],
    ['a sibling Deleted', [challenge('other', {}, { ...running, phase: 'Deleted' })], true],
    ['a sibling Terminating', [challenge('other', {}, { ...running, phase: 'Terminating' })], true],
    ['a sibling not yet available', [challenge('other', {}, { ...waiting, reason: 'NotYetAvailable' })], true],
    [
      'a sibling in Error, relaunched (restarts above its run)',
      [challenge('other', { restarts: 3 }, { ...running, phase: 'Error', run: 2 })],
      false,
    ],
    [
      'a sibling in Error whose restart already ran',
      [challenge('other', { restarts: 2 }, { ...running, phase: 'Error', run: 2 })],
      true,
    ],
    [
      'a sibling in Error relaunched before any run was written',
      [challenge('other', { restarts: 1 }, { ...running, phase: 'Error', run: undefined })],
      false,
    ],
    [
      'a sibling in Error with restarts that are not a number',
      [challenge('other', { restarts: '3' }, { ...running, phase: 'Error', run: 2 })],
      true,
    ],
    [
      'a sibling not yet available, relaunched',
      [challenge('other', { restarts: 1 }, { ...waiting, reason: 'NotYetAvailable' })],
      false,
    ],
    ['a sibling with a null status and no cost yet: wait for its first sync', [challenge('other', {}, null)], false],
    ['the request’s own Challenge among the siblings', [challenge('self', {}, running)], true],
    [
      'the request’s own Challenge, sent without its namespace',
      [challenge('self', {}, running, { namespace: undefined })],
      true,
    ],
    // A sibling of the same name in another namespace is another Challenge.
    [
      'a namesake in another namespace, running',
      [challenge('self', {}, running, { namespace: 'other-namespace' })],
      false,
    ],
  ]
  for (const [what, siblings, answer] of rows) t.equal(admitted(siblings), answer, what)
})

t.test(
  'budgetCheck: when not admitted, the units held ahead of it (or none known while a cost is unknown)',
  async (t) => {
    const self = challenge('self', {}, {}, { creationTimestamp: LATE })
    const check = (siblings: KubeObject[], cost: number, budget: number) =>
      budgetCheck({ challenge: self, ownerKey, siblings }, cost, budget, undefined)
    t.strictSame(check([challenge('a', {}, { ...running, cost: 2 })], 2, 3), { admitted: false, held: 2 })
    t.strictSame(
      check([challenge('a', {}, { ...running, cost: 2 }), challenge('b', {}, { ...waiting, cost: 1 })], 1, 3),
      { admitted: false, held: 3 },
    )
    t.strictSame(check([challenge('a', {}, { ...running, cost: 2 })], 1, 3), { admitted: true })
    t.strictSame(check([challenge('a', {}, null)], 1, 3), { admitted: false, held: undefined })
  },
)

t.test('budgetCheck: costs, known and unknown', async (t) => {
  const rows: [string, KubeObject[], { cost?: number; budget?: number }, boolean][] = [
    ['a started sibling of cost 0 holds nothing', [challenge('other', {}, { ...running, cost: 0 })], {}, true],
    [
      'a started sibling whose cost is not written yet: wait',
      [challenge('other', {}, { ...running, cost: undefined })],
      {},
      false,
    ],
    ['a cost that is not an integer is unknown', [challenge('other', {}, { ...running, cost: 0.5 })], {}, false],
    ['a negative cost is unknown', [challenge('other', {}, { ...running, cost: -1 })], {}, false],
    ['a cost written as text is unknown', [challenge('other', {}, { ...running, cost: '0' })], {}, false],
    ['room for both', [challenge('other', {}, running)], { budget: 2 }, true],
    [
      'a free instance fits even beside a sibling of unknown cost',
      [challenge('other', {}, { ...running, cost: undefined })],
      { cost: 0 },
      true,
    ],
    [
      'a free instance fits even when the budget is overrun',
      [challenge('other', {}, { ...running, cost: 5 })],
      { cost: 0 },
      true,
    ],
    ['too big for the budget alone', [], { cost: 3, budget: 2 }, false],
  ]
  for (const [what, siblings, options, answer] of rows) t.equal(admitted(siblings, options), answer, what)
})

t.test('budgetCheck: the order is admittedAt, then creation, then name; the waiting fill first-fit', async (t) => {
  const admittedAt = Date.parse(ADMITTED)
  const laterAdmitted = { ...waiting, admittedAt: LATE }
  t.equal(
    admitted([challenge('other', {}, laterAdmitted)], { admittedAt }),
    true,
    'admitted earlier than a waiting sibling: first',
  )
  t.equal(
    admitted([challenge('other', {}, waiting, { creationTimestamp: '2026-11-02T00:00:00Z' })]),
    true,
    'created before a waiting sibling: first',
  )
  const twin = (name: string) => challenge(name, {}, waiting, { creationTimestamp: LATE })
  t.equal(admitted([twin('a-first')]), false, 'created together: a name earlier in the alphabet goes first')
  t.equal(admitted([twin('z-last')]), true, 'created together: a name later in the alphabet goes after')
  const big = challenge('big', {}, { ...waiting, cost: 3 })
  t.equal(admitted([big], { budget: 2 }), true, 'an earlier sibling too big for the budget does not block a small one')
  const small = challenge('small', {}, { ...waiting, cost: 1 })
  t.equal(admitted([small, big], { budget: 2 }), true, 'first fit: the earlier small one and this one')
  t.equal(
    admitted([small, challenge('small-2', {}, { ...waiting, cost: 1 })], { budget: 2 }),
    false,
    'two earlier small ones fill it',
  )
  t.equal(
    admitted([challenge('other', {}, { ...waiting, cost: undefined })]),
    false,
    'an earlier sibling of unknown cost: wait',
  )
  const laterUnknown = challenge(
    'other',
    {},
    { ...waiting, cost: undefined },
    { creationTimestamp: '2026-11-02T00:00:00Z' },
  )
  t.equal(admitted([laterUnknown]), true, 'a later waiting sibling of unknown cost does not matter')
  const uncreated = challenge('self', {}, {}, { creationTimestamp: undefined })
  t.equal(admitted([challenge('other', {}, waiting)], { self: uncreated }), false, 'no creation time sorts last')
})

t.test(
  'budgetCheck: a started sibling of unknown cost counts even when it comes after this instance in the order',
  async (t) => {
    // This instance was admitted first (10:00), the sibling later (10:30) and has started: it holds a slot of a cost
    // nobody knows (an earlier release synced it last), so this instance waits for its cost instead of guessing.
    const started = challenge(
      'other',
      {},
      { phase: 'Running', reason: 'Ready', run: 0, admittedAt: ADMITTED, startedAt: ADMITTED },
    )
    const world: OwnerWorld = {
      challenge: challenge('self', {}, {}, { creationTimestamp: LATE }),
      ownerKey,
      siblings: [started],
    }
    t.strictSame(budgetCheck(world, 1, 2, Date.parse(EARLY)), { admitted: false, held: undefined })
  },
)
