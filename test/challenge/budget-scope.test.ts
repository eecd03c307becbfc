// Where the owner budget is counted (OWNER_BUDGET_SCOPE), through the pure sync with the request Metacontroller
// sends: hook version v2 keys related objects `namespace/name` and may carry the owner's Challenges of every namespace.
import t from 'tap'
import { sync } from '../../src/challenge/hooks.js'
import { hookVersion } from '../../src/challenge/world.js'
import type { SyncRequest } from '../../src/contract/protocol.js'
import { testConfig } from '../helpers/app.js'
import { at } from '../helpers/drive.js'
import { challenge, syncRequest, webDefinition } from '../helpers/world.js'

const runningElsewhere = challenge({
  name: 'pwn-echo-u-alice',
  uid: '0e0e0e0e-0000-4000-8000-000000000009',
  definition: 'pwn-echo',
  createdAt: '2026-11-22T10:00:00Z',
  status: {
    phase: 'Running',
    reason: 'Ready',
    run: 0,
    cost: 1,
    admittedAt: '2026-11-22T10:00:00Z',
    startedAt: '2026-11-22T10:00:10Z',
  },
})
runningElsewhere.metadata.namespace = 'challenges-baseline'

function request(version: 'v1' | 'v2'): SyncRequest {
  const base = syncRequest(challenge(), { related: [webDefinition(), runningElsewhere], version })
  const hooks = { customize: { version }, sync: { version }, finalize: { version } }
  return { ...base, controller: { ...base.controller, spec: { hooks } } }
}

t.test('Namespace scope: a sibling of another namespace is not counted, whatever the hook version', async (t) => {
  for (const version of ['v1', 'v2'] as const) {
    const answer = sync(request(version), testConfig({ ownerBudget: 1 }), at(0))
    t.strictSame([answer.status.phase, answer.status.reason], ['Pending', 'Starting'], version)
  }
})

t.test('Cluster scope with hook version v2: the sibling of another namespace holds the only unit', async (t) => {
  const answer = sync(request('v2'), testConfig({ ownerBudget: 1, ownerBudgetScope: 'Cluster' }), at(0))
  t.strictSame(
    [answer.status.phase, answer.status.reason, answer.status.message],
    [
      'Pending',
      'Queued',
      'Waiting for another of your instances to end: 1 of your 1 unit is in use, and this challenge needs 1.',
    ],
  )
  t.strictSame(answer.children, [])
})

t.test('Cluster scope with hook version v1 is a configuration error, said on the instance', async (t) => {
  const answer = sync(request('v1'), testConfig({ ownerBudget: 1, ownerBudgetScope: 'Cluster' }), at(0))
  t.strictSame([answer.status.phase, answer.status.reason], ['Error', 'ConfigError'])
  t.match(answer.status.message, /^OWNER_BUDGET_SCOPE is Cluster, .* hooks must be at version v2/)
  t.notOk('admittedAt' in answer.status, 'no slot is held meanwhile')
})

t.test('hookVersion reads the CompositeController the request carries; v1 when unset or unreadable', async (t) => {
  t.equal(hookVersion({ spec: { hooks: { customize: { version: 'v2' } } } }, 'customize'), 'v2')
  t.equal(hookVersion({ spec: { hooks: { customize: { version: 'v2' } } } }, 'sync'), 'v1')
  t.equal(hookVersion(undefined, 'customize'), 'v1')
  t.equal(hookVersion({ spec: { hooks: { customize: { version: 7 } } } }, 'customize'), 'v1')
})

t.test('None: no budget, so a sibling holding every unit and a cost above the budget keep nothing back', async (t) => {
  const runningHere = challenge({
    name: 'pwn-echo-u-alice',
    uid: '0e0e0e0e-0000-4000-8000-000000000009',
    definition: 'pwn-echo',
    createdAt: '2026-11-22T10:00:00Z',
    status: runningElsewhere.status as Record<string, unknown>,
  })
  for (const ownerBudget of [1, 0]) {
    const base = syncRequest(challenge(), { related: [webDefinition(), runningHere] })
    const answer = sync(base, testConfig({ ownerBudget, ownerBudgetScope: 'None' }), at(0))
    t.strictSame([answer.status.phase, answer.status.reason], ['Pending', 'Starting'], `budget ${ownerBudget}`)
    t.strictSame(
      answer.children.map((child) => `${child.kind} ${child.metadata.name}`),
      // docs/api.md "Children": an admitted instance's first answer; its pod follows once its flag Secret is observed.
      [
        'Secret web-login-u-alice-flag',
        'NetworkPolicy web-login-u-alice-isolate',
        'Service web-login-u-alice',
        'Ingress web-login-u-alice',
      ],
      'its children are made at once',
    )
    t.strictSame(answer.status.admittedAt, '2026-11-22T12:00:00Z')
  }
  // The same sibling with a budget in the namespace: queued, as the scope Namespace says.
  const counted = sync(
    syncRequest(challenge(), { related: [webDefinition(), runningHere] }),
    testConfig({ ownerBudget: 1 }),
    at(0),
  )
  t.strictSame([counted.status.phase, counted.status.reason], ['Pending', 'Queued'])
})
