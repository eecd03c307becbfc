// What an answer tells a player (src/gateway/view.ts): one row per situation, the whole view compared.
import t from 'tap'
import { instanceView, type ChallengeRecord, type InstanceView, type ViewInput } from '../../src/gateway/view.js'
import { T0 } from '../helpers/instant.js'

const NOW = new Date(T0)
const alice = { kind: 'User', id: 'alice' } as const

function record(
  status?: Record<string, unknown>,
  spec: Partial<ChallengeRecord['spec']> = {},
  name = 'web-1',
): ChallengeRecord {
  return {
    metadata: { name, namespace: 'challenges', resourceVersion: '7', creationTimestamp: '2026-11-22T11:00:00Z' },
    spec: { definitionRef: { name: 'web' }, owner: alice, ...spec },
    ...(status === undefined ? {} : { status }),
  }
}

const admitted = [{ type: 'Admitted', status: 'True' }]
const running = {
  phase: 'Running',
  reason: 'Ready',
  message: 'The instance is running.',
  endpoint: { type: 'TLS', host: 'abc.tls.example.org', port: 443, connection: 'ncat --ssl abc.tls.example.org 443' },
  expiresAt: '2026-11-22T12:30:00Z',
  renewalsSeen: 0,
  renewalsApplied: 0,
  run: 0,
  cost: 1,
  conditions: admitted,
}

const ok = { allowed: true } as const
const no = (why: string) => ({ allowed: false, why }) as const

function view(input: Partial<ViewInput> & { record: ChallengeRecord }): InstanceView {
  return instanceView({ definition: {}, siblings: [input.record], budget: 3, now: NOW, ...input })
}

t.test('running: the endpoint, the command, the expiry, every action allowed, the budget held', async (t) => {
  t.strictSame(view({ record: record(running) }), {
    name: 'web-1',
    namespace: 'challenges',
    definition: 'web',
    owner: alice,
    phase: 'Running',
    reason: 'Ready',
    message: 'The instance is running.',
    endpoint: { type: 'TLS', host: 'abc.tls.example.org', port: 443 },
    command: 'ncat --ssl abc.tls.example.org 443',
    expiresAt: '2026-11-22T12:30:00Z',
    version: '7',
    renewals: { applied: 0, max: 2 },
    actions: { renew: ok, restart: ok, stop: ok },
    budget: { held: 1, total: 3 },
  })
  const http = view({
    record: record({
      ...running,
      endpoint: { type: 'HTTP', host: 'h', port: 443, url: 'https://h/', connection: 'https://h/' },
    }),
  })
  t.strictSame([http.endpoint, http.command], [{ type: 'HTTP', host: 'h', port: 443, url: 'https://h/' }, 'https://h/'])
})

t.test('no status yet: None, restart and renew refused with the reason', async (t) => {
  const answer = view({ record: record(), siblings: [] })
  t.strictSame(answer, {
    name: 'web-1',
    namespace: 'challenges',
    definition: 'web',
    owner: alice,
    phase: 'None',
    version: '7',
    renewals: { applied: 0, max: 2 },
    actions: {
      renew: no('Only a running instance can be renewed; this one is not started yet.'),
      restart: no('The instance has not been seen by the controller yet.'),
      stop: ok,
    },
    budget: { held: 0, total: 3 },
  })
})

t.test('renew: each reason it is refused', async (t) => {
  const rows: [string, Partial<ViewInput> & { record: ChallengeRecord }, ReturnType<typeof no> | typeof ok][] = [
    [
      'pending',
      { record: record({ ...running, phase: 'Pending', reason: 'Starting' }) },
      no('Only a running instance can be renewed; this one is Pending.'),
    ],
    ['a renewal pending', { record: record(running, { renewals: 1 }) }, no('A renewal is already being applied.')],
    [
      'all used',
      { record: record({ ...running, renewalsSeen: 2, renewalsApplied: 2 }, { renewals: 2 }) },
      no('All 2 renewals are used.'),
    ],
    [
      "all of the definition's 5 used",
      { record: record({ ...running, renewalsApplied: 5 }), definition: { maxRenewals: 5 } },
      no('All 5 renewals are used.'),
    ],
    [
      'the challenge closes when the instance expires',
      { record: record(running), definition: { availableUntil: '2026-11-22T12:30:00+00:00' } },
      no('The challenge closes at 2026-11-22T12:30:00Z: a renewal cannot extend the instance.'),
    ],
    [
      'the event ends first',
      {
        record: record(running, { deadline: '2026-11-22T12:30:00Z' }),
        definition: { availableUntil: '2026-11-23T00:00:00Z' },
      },
      no('The event ends at 2026-11-22T12:30:00Z: a renewal cannot extend the instance.'),
    ],
    [
      'a later end leaves room',
      { record: record(running), definition: { availableUntil: '2026-11-22T13:00:00Z' } },
      ok,
    ],
    ['an unreadable end is no end', { record: record(running), definition: { availableUntil: 'soon' } }, ok],
    [
      'no expiry known',
      { record: record({ ...running, expiresAt: undefined }), definition: { availableUntil: '2026-11-22T12:00:00Z' } },
      ok,
    ],
    [
      'being removed',
      {
        record: {
          ...record(running),
          metadata: { ...record(running).metadata, deletionTimestamp: '2026-11-22T11:59:00Z' },
        },
      },
      no('The instance is being removed.'),
    ],
  ]
  for (const [what, input, expected] of rows) t.strictSame(view(input).actions.renew, expected, what)
})

t.test('restart and stop: each reason they are refused', async (t) => {
  const rows: [
    string,
    Partial<ViewInput> & { record: ChallengeRecord },
    'restart' | 'stop',
    ReturnType<typeof no> | typeof ok,
  ][] = [
    [
      'a restart under way',
      { record: record(running, { restarts: 1 }) },
      'restart',
      no('A restart is already under way.'),
    ],
    [
      'the challenge closed',
      { record: record(running), definition: { availableUntil: '2026-11-22T12:00:00Z' } },
      'restart',
      no('The challenge closed at 2026-11-22T12:00:00Z.'),
    ],
    [
      'the event ended',
      { record: record(running, { deadline: '2026-11-22T11:00:00Z' }) },
      'restart',
      no('The event ended at 2026-11-22T11:00:00Z.'),
    ],
    [
      'not open yet',
      { record: record(running), definition: { availableFrom: '2026-11-22T18:00:00Z' } },
      'restart',
      no('The challenge opens at 2026-11-22T18:00:00Z.'),
    ],
    ['an ended run restarts', { record: record({ ...running, phase: 'Deleted', reason: 'Expired' }) }, 'restart', ok],
    [
      'stopped',
      { record: record(running, { desiredState: 'Stopped' }) },
      'stop',
      no('The instance is already stopped.'),
    ],
    ['deleted', { record: record({ ...running, phase: 'Deleted' }) }, 'stop', no('The instance has ended (Deleted).')],
    ['error', { record: record({ ...running, phase: 'Error' }) }, 'stop', no('The instance has ended (Error).')],
  ]
  for (const [what, input, action, expected] of rows) t.strictSame(view(input).actions[action], expected, what)
})

t.test('budget and queue: what the owner holds, and the place in its queue', async (t) => {
  const queued = (name: string, created: string) => ({
    ...record({ phase: 'Pending', reason: 'Queued', conditions: [{ type: 'Admitted', status: 'False' }] }, {}, name),
    metadata: { name, namespace: 'challenges', resourceVersion: '1', creationTimestamp: created },
  })
  const big = record({ ...running, cost: 2 }, {}, 'big')
  const uncosted = record({ ...running, cost: undefined }, {}, 'uncosted')
  const leaving = {
    ...record(running, {}, 'leaving'),
    metadata: { ...record(running).metadata, name: 'leaving', deletionTimestamp: 'x' },
  }
  const second = queued('b', '2026-11-22T11:00:00Z')
  const siblings = [
    big,
    uncosted,
    leaving,
    queued('c', '2026-11-22T11:00:00Z'),
    second,
    queued('a', '2026-11-22T10:00:00Z'),
  ]
  const answer = view({ record: second, siblings })
  t.strictSame(
    [answer.budget, answer.queuePosition, answer.phase, answer.reason],
    [{ held: 3, total: 3 }, 2, 'Pending', 'Queued'],
  )
  t.equal(view({ record: big, siblings }).queuePosition, undefined)
})

t.test(
  'a start step by step: the progress conditions while an admitted instance is Pending, and only then',
  async (t) => {
    const starting = {
      phase: 'Pending',
      reason: 'Starting',
      conditions: [
        { type: 'Admitted', status: 'True' },
        { type: 'Scheduled', status: 'True' },
        { type: 'ContainersStarted', status: 'False' },
        { type: 'WorkloadReady', status: 'False' },
      ],
    }
    t.strictSame(view({ record: record(starting) }).steps, [
      { step: 'Admitted', done: true },
      { step: 'Scheduled', done: true },
      { step: 'ContainersStarted', done: false },
      { step: 'WorkloadReady', done: false },
      { step: 'EndpointReady', done: false },
    ])
    const queued = { phase: 'Pending', reason: 'Queued', conditions: [{ type: 'Admitted', status: 'False' }] }
    t.equal(view({ record: record(queued) }).steps, undefined, 'queued: no step yet')
    t.equal(view({ record: record({ phase: 'Pending', reason: 'Starting' }) }).steps, undefined, 'no conditions yet')
    t.equal(view({ record: record(running) }).steps, undefined, 'running: the steps are over')
  },
)
