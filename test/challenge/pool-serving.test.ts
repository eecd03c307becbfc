// How an admitted run is served by its definition's warm pool (src/challenge/pool-serving.ts), one rule per case.
import t from 'tap'
import { carriedRecord, readPoolRecord, servedBy, type ServingInput } from '../../src/challenge/pool-serving.js'
import { indexObjects } from '../../src/challenge/observed.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { groups } from '../helpers/world.js'

const NOW = Date.parse('2026-11-29T10:00:00Z')
const ME = 'c0ffee00-0000-4000-8000-000000000001'
const DEFINITION_UID = 'def-uid-1'

function flagSecret(
  slot: string,
  options: { claimedBy?: string; owner?: string; uid?: string; deleting?: boolean } = {},
) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `web-login.pool-${slot}-flag`,
      namespace: 'challenges',
      uid: options.uid ?? `secret-uid-${slot}`,
      labels: {
        'app.kubernetes.io/managed-by': 'challenge-hooks',
        'challenge-hooks.dev/definition': 'web-login',
        'challenge-hooks.dev/pool-slot': slot,
        'challenge-hooks.dev/claimed-by': options.claimedBy ?? ME,
      },
      ownerReferences: [
        { kind: 'ChallengeDefinition', name: 'web-login', uid: options.owner ?? DEFINITION_UID, controller: true },
      ],
      ...(options.deleting ? { deletionTimestamp: '2026-11-29T09:59:00Z' } : {}),
    },
  } as KubeObject
}

function input(overrides: Partial<ServingInput> = {}, secrets: KubeObject[] = []): ServingInput {
  return {
    challengeUid: ME,
    definitionName: 'web-login',
    definitionUid: DEFINITION_UID,
    poolState: 'Ready',
    pooled: true,
    parameters: false,
    run: 0,
    previous: undefined,
    coldPod: false,
    admittedAt: NOW,
    recordedClaim: undefined,
    recordedColdSince: undefined,
    related: indexObjects(groups(secrets), 'challenges'),
    now: NOW,
    timeoutMs: 5000,
    ...overrides,
  }
}

const waiting = (since: number) => ({ state: 'Waiting' as const, run: 0, since, pod: undefined, flagUid: undefined })
const claimed = (slot: string, since: number) => ({
  state: 'Claimed' as const,
  run: 0,
  since,
  pod: `web-login.pool-${slot}`,
  flagUid: `secret-uid-${slot}`,
})

/** A run that goes cold at this sync: a pod of its own from now on. */
const COLD_NOW = {
  state: 'Cold',
  run: 0,
  since: NOW,
  pod: undefined,
  flagUid: undefined,
  slot: undefined,
  waitUntil: undefined,
}

t.test('a first admitted run of a pooled definition waits while the pool is Ready, else starts cold', async (t) => {
  t.strictSame(servedBy(input()), { ...waiting(NOW), slot: undefined, waitUntil: NOW + 5000 })
  for (const poolState of ['Exhausted', 'Closed', 'Off', undefined, 7])
    t.strictSame(
      servedBy(input({ poolState })),
      { state: 'Cold', run: 0, since: NOW, pod: undefined, flagUid: undefined, slot: undefined, waitUntil: undefined },
      String(poolState),
    )
})

t.test('no pool: no record; parameters, a restart or a pod of its own: cold', async (t) => {
  t.strictSame(servedBy(input({ pooled: false })), undefined)
  const cold = { state: 'Cold', since: NOW, pod: undefined, flagUid: undefined, slot: undefined, waitUntil: undefined }
  t.strictSame(servedBy(input({ parameters: true })), { ...cold, run: 0 })
  t.strictSame(servedBy(input({ coldPod: true })), { ...cold, run: 0 })
  t.strictSame(servedBy(input({ run: 1 })), { ...cold, run: 1 })
})

t.test('the claim is read from the claimed pod’s flag Secret, the lowest slot first, and recorded', async (t) => {
  const secrets = [flagSecret('7'), flagSecret('12'), flagSecret('3', { claimedBy: 'someone-else' })]
  t.strictSame(servedBy(input({ previous: waiting(NOW - 1000), admittedAt: NOW - 1000 }, secrets)), {
    ...claimed('7', NOW),
    slot: '7',
    waitUntil: undefined,
  })
})

t.test('the lowest slot by number, whatever order the Secrets come in', async (t) => {
  // Two claims from a lagging view: every sync must pick the same pod, slot 10 before 12 (as numbers).
  const secrets = [flagSecret('12'), flagSecret('10'), flagSecret('x1'), flagSecret('9', { claimedBy: 'someone-else' })]
  t.strictSame(servedBy(input({ previous: waiting(NOW - 1000), admittedAt: NOW - 1000 }, secrets)), {
    ...claimed('10', NOW),
    slot: '10',
    waitUntil: undefined,
  })
  t.strictSame(
    servedBy(input({ previous: waiting(NOW - 1000), admittedAt: NOW - 1000 }, [flagSecret('x1')])),
    { ...waiting(NOW - 1000), slot: undefined, waitUntil: NOW + 4000 },
    'a slot that is not a number serves nothing',
  )
})

t.test('a Secret that is not the definition’s own, on its way out, or without a slot serves nothing', async (t) => {
  const noSlot = flagSecret('1')
  delete (noSlot.metadata.labels as Record<string, string>)['challenge-hooks.dev/pool-slot']
  const badSlot = flagSecret('1x')
  const noUid = flagSecret('2')
  delete (noUid.metadata as Record<string, unknown>).uid
  const strangers = [
    flagSecret('3', { owner: 'another-definition' }),
    flagSecret('4', { deleting: true }),
    noSlot,
    badSlot,
    noUid,
  ]
  t.strictSame(servedBy(input({ previous: waiting(NOW - 1000), admittedAt: NOW - 1000 }, strangers)), {
    ...waiting(NOW - 1000),
    slot: undefined,
    waitUntil: NOW + 4000,
  })
  t.strictSame(
    servedBy(
      input({ definitionUid: undefined, previous: waiting(NOW - 1000), admittedAt: NOW - 1000 }, [flagSecret('1')]),
    ),
    {
      ...waiting(NOW - 1000),
      slot: undefined,
      waitUntil: NOW + 4000,
    },
  )
})

t.test('with its definition not observed, no Secret serves, not even one whose owner names no uid', async (t) => {
  const ownerWithoutUid = flagSecret('1')
  delete ((ownerWithoutUid.metadata as Record<string, unknown>).ownerReferences as Record<string, unknown>[])[0]?.uid
  t.strictSame(
    servedBy(
      input({ definitionUid: undefined, previous: waiting(NOW - 1000), admittedAt: NOW - 1000 }, [ownerWithoutUid]),
    ),
    {
      ...waiting(NOW - 1000),
      slot: undefined,
      waitUntil: NOW + 4000,
    },
  )
})

t.test('a wait ends cold at its timeout, never before', async (t) => {
  t.strictSame(servedBy(input({ previous: waiting(NOW - 4999), admittedAt: NOW - 4999 })), {
    ...waiting(NOW - 4999),
    slot: undefined,
    waitUntil: NOW + 1,
  })
  t.strictSame(servedBy(input({ previous: waiting(NOW - 5000), admittedAt: NOW - 5000 })), COLD_NOW)
})

t.test('a wait ends cold at once when the pool runs out, unless its claim is already seen', async (t) => {
  t.strictSame(
    servedBy(input({ poolState: 'Exhausted', previous: waiting(NOW - 1000), admittedAt: NOW - 1000 })),
    COLD_NOW,
  )
  t.strictSame(
    servedBy(
      input({ poolState: 'Exhausted', previous: waiting(NOW - 1000), admittedAt: NOW - 1000 }, [flagSecret('2')]),
    )?.state,
    'Claimed',
  )
})

t.test('a claimed run keeps its pod while its Secret is there, and goes cold once it is gone', async (t) => {
  const previous = claimed('7', NOW - 60_000)
  t.strictSame(servedBy(input({ previous }, [flagSecret('7'), flagSecret('2')])), {
    ...previous,
    slot: '7',
    waitUntil: undefined,
  })
  t.strictSame(servedBy(input({ previous }, [flagSecret('2')])), COLD_NOW)
  // Another Secret made under the same name (its pod replaced) is not the one the flag was made from.
  t.strictSame(servedBy(input({ previous }, [flagSecret('7', { uid: 'secret-uid-new' })]))?.state, 'Cold')
  // Even when the pool is gone meanwhile, the run keeps the pod it has.
  t.strictSame(servedBy(input({ previous, pooled: false }, [flagSecret('7')]))?.state, 'Claimed')
})

t.test(
  'a claimed run keeps only the pod it recorded: its flag Secret relabelled to another slot serves nothing',
  async (t) => {
    const previous = claimed('7', NOW - 60_000)
    const relabelled = flagSecret('7')
    ;(relabelled.metadata.labels as Record<string, string>)['challenge-hooks.dev/pool-slot'] = '8'
    t.strictSame(servedBy(input({ previous }, [relabelled])), COLD_NOW)
  },
)

t.test('a released run stays released: it neither waits nor takes a pod again', async (t) => {
  const released = { ...claimed('7', NOW - 60_000), state: 'Released' as const }
  for (const secrets of [[], [flagSecret('7')], [flagSecret('2')]])
    t.strictSame(
      servedBy(input({ previous: released }, secrets)),
      { ...released, slot: undefined, waitUntil: undefined },
      secrets.map((secret) => secret.metadata.name).join(' '),
    )
  t.strictSame(servedBy(input({ previous: released, pooled: false })), {
    ...released,
    slot: undefined,
    waitUntil: undefined,
  })
})

t.test(
  'a cold run stays cold, a claim landing late notwithstanding; a record of another run counts for nothing',
  async (t) => {
    const cold = { state: 'Cold' as const, run: 0, since: NOW - 10_000, pod: undefined, flagUid: undefined }
    t.strictSame(servedBy(input({ previous: cold }, [flagSecret('1')])), {
      ...cold,
      slot: undefined,
      waitUntil: undefined,
    })
    t.strictSame(
      servedBy(input({ previous: { ...claimed('1', NOW - 5000), run: 0 }, run: 1 }, [flagSecret('1')]))?.state,
      'Cold',
    )
  },
)

t.test(
  'carriedRecord: a finished claimed run releases its pod; a run sent back to the queue stops waiting',
  async (t) => {
    const record = claimed('3', NOW)
    t.strictSame(carriedRecord(record, 0, true), { ...record, state: 'Released' })
    t.strictSame(carriedRecord(record, 0, false), record)
    t.strictSame(carriedRecord(waiting(NOW), 0, false), undefined)
    t.strictSame(carriedRecord(record, 1, true), undefined)
    t.strictSame(carriedRecord(undefined, 0, true), undefined)
    const cold = { state: 'Cold' as const, run: 0, since: NOW, pod: undefined, flagUid: undefined }
    t.strictSame(carriedRecord(cold, 0, true), cold)
  },
)

t.test('readPoolRecord reads only what the hook writes', async (t) => {
  t.strictSame(readPoolRecord({ state: 'Claimed', run: 2, since: '2026-11-29T10:00:00Z', pod: 'p', flagUid: 'u' }), {
    state: 'Claimed',
    run: 2,
    since: NOW,
    pod: 'p',
    flagUid: 'u',
  })
  t.strictSame(readPoolRecord({ state: 'Waiting', run: 0, since: 'soon' }), {
    state: 'Waiting',
    run: 0,
    since: undefined,
    pod: undefined,
    flagUid: undefined,
  })
  for (const value of [
    undefined,
    'Waiting',
    { state: 'Borrowed', run: 0 },
    { state: 'Cold' },
    { state: 'Cold', run: -1 },
    { state: 'Cold', run: 1.5 },
  ])
    t.strictSame(readPoolRecord(value), undefined, JSON.stringify(value) ?? 'undefined')
})

t.test('a record read without its time (written by hand): the time of this sync', async (t) => {
  t.strictSame(servedBy(input({ previous: { ...claimed('7', NOW), since: undefined } }, [flagSecret('7')])), {
    ...claimed('7', NOW),
    slot: '7',
    waitUntil: undefined,
  })
  t.strictSame(servedBy(input({ previous: { ...waiting(NOW), since: undefined } })), {
    ...waiting(NOW),
    slot: undefined,
    waitUntil: NOW + 5000,
  })
})

t.test('a wait runs from the admission, whatever the status recorded: every view of the run agrees', async (t) => {
  // A view that lags the last status write: the status still says it waits since a later instant (a sync that read
  // an older status stamped its own clock), the run's Service says when it was admitted.
  t.strictSame(servedBy(input({ previous: waiting(NOW - 1000), admittedAt: NOW - 3000 })), {
    ...waiting(NOW - 3000),
    slot: undefined,
    waitUntil: NOW + 2000,
  })
  t.strictSame(servedBy(input({ admittedAt: NOW - 3000 })), {
    ...waiting(NOW - 3000),
    slot: undefined,
    waitUntil: NOW + 2000,
  })
  // Admitted a wait ago and no claim recorded: the wait is over, whichever sync looks.
  t.strictSame(servedBy(input({ admittedAt: NOW - 5000 })), COLD_NOW)
  t.strictSame(servedBy(input({ admittedAt: NOW - 4999 }))?.state, 'Waiting')
})

t.test('a claim is since the time its Service records for that pod, over the status’s and the clock', async (t) => {
  const recordedClaim = { pod: 'web-login.pool-7', since: NOW - 2000 }
  t.strictSame(
    servedBy(input({ previous: waiting(NOW - 3000), admittedAt: NOW - 3000, recordedClaim }, [flagSecret('7')])),
    {
      ...claimed('7', NOW - 2000),
      slot: '7',
      waitUntil: undefined,
    },
  )
  t.strictSame(servedBy(input({ previous: claimed('7', NOW - 1000), recordedClaim }, [flagSecret('7')])), {
    ...claimed('7', NOW - 2000),
    slot: '7',
    waitUntil: undefined,
  })
  // A time recorded for another pod says nothing of this claim.
  const other = { pod: 'web-login.pool-8', since: NOW - 2000 }
  t.strictSame(servedBy(input({ admittedAt: NOW - 3000, recordedClaim: other }, [flagSecret('7')])), {
    ...claimed('7', NOW),
    slot: '7',
    waitUntil: undefined,
  })
  t.strictSame(servedBy(input({ previous: claimed('7', NOW - 1000), recordedClaim: other }, [flagSecret('7')])), {
    ...claimed('7', NOW - 1000),
    slot: '7',
    waitUntil: undefined,
  })
})

t.test('a run its Service says went cold is cold since then, whatever a lagging status says', async (t) => {
  const coldSince = (since: number) => ({ ...COLD_NOW, since })
  const recordedColdSince = NOW - 2000
  t.strictSame(
    servedBy(input({ previous: waiting(NOW - 7000), admittedAt: NOW - 7000, recordedColdSince }, [flagSecret('4')])),
    coldSince(NOW - 2000),
    'a claim seen after it went cold is not taken',
  )
  t.strictSame(
    servedBy(input({ previous: claimed('4', NOW - 3000), recordedColdSince }, [flagSecret('4')])),
    coldSince(NOW - 2000),
  )
  const cold = { state: 'Cold' as const, run: 0, since: NOW - 1000, pod: undefined, flagUid: undefined }
  t.strictSame(servedBy(input({ previous: cold, recordedColdSince })), coldSince(NOW - 2000))
  t.strictSame(servedBy(input({ recordedColdSince, pooled: false })), coldSince(NOW - 2000))
  // A run that ended gave its pod up: it stays Released.
  const released = { ...claimed('7', NOW - 60_000), state: 'Released' as const }
  t.strictSame(servedBy(input({ previous: released, recordedColdSince })), {
    ...released,
    slot: undefined,
    waitUntil: undefined,
  })
})
