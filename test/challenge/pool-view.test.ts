/**
 * The pool's view of its sync request: its own pods with their claims and readiness, its claimants (the tickets
 * their Services carry, or the Challenges of an earlier release's view) with what they ask, every malformed value
 * read as absent.
 */
import t from 'tap'
import type { KubeObject } from '../../src/contract/protocol.js'
import { indexObjects } from '../../src/challenge/observed.js'
import { poolChallenges, poolPods, poolTickets } from '../../src/challenge/pool-view.js'
import { controllerRef } from '../helpers/world.js'

const DEFINITION_UID = '6f1c1c2e-0000-4000-8000-000000000001'
const owned = [
  {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    name: 'web',
    uid: DEFINITION_UID,
    controller: true,
  },
]
const pod = (
  name: string,
  extra: Record<string, unknown> = {},
  metadata: Record<string, unknown> = {},
): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'challenges', ownerReferences: owned, ...metadata } as KubeObject['metadata'],
  ...extra,
})
const ready = {
  status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-11-22T12:00:00Z' }] },
}

t.test('the pool reads its own pods, their rendering, claim, readiness and deletion', async (t) => {
  const children = indexObjects(
    {
      'Pod.v1': {
        a: pod('a', ready, {
          labels: { 'challenge-hooks.dev/pool-rendering': 'r1', 'challenge-hooks.dev/claimed-by': 'c-1' },
        }),
        b: pod(
          'b',
          { status: { conditions: [{ type: 'Ready', status: 'False' }] } },
          { labels: { 'challenge-hooks.dev/pool-rendering': 'r1' } },
        ),
        c: pod('c', ready, {
          deletionTimestamp: '2026-11-22T12:00:00Z',
          labels: { 'challenge-hooks.dev/claimed-by': 7 },
        }),
        d: pod('d', ready, { ownerReferences: [{ ...owned[0], uid: 'someone-else' }] }),
        e: pod('e', ready, { ownerReferences: [{ ...owned[0], controller: false }] }),
      },
    },
    'challenges',
  )
  t.strictSame(poolPods(children, DEFINITION_UID), [
    { name: 'a', rendering: 'r1', ready: true, deleting: false, claimedBy: 'c-1' },
    { name: 'b', rendering: 'r1', ready: false, deleting: false, claimedBy: undefined },
    { name: 'c', rendering: '', ready: true, deleting: true, claimedBy: undefined },
  ])
})

const challenge = (name: string, metadata: Record<string, unknown>, status?: unknown): KubeObject => ({
  apiVersion: 'challenge-hooks.dev/v1alpha1',
  kind: 'Challenge',
  metadata: { name, namespace: 'challenges', creationTimestamp: '2026-11-22T11:00:00Z', ...metadata },
  ...(status === undefined ? {} : { status }),
})

t.test('the Challenges tell whether they wait, which pod they record, and when they waited from', async (t) => {
  const related = [
    challenge('waits', { uid: 'u1' }, { admittedAt: '2026-11-22T11:30:00Z', pool: { state: 'Waiting' } }),
    challenge('holds', { uid: 'u2' }, { admittedAt: '2026-11-22T11:31:00Z', pool: { state: 'Claimed', pod: 'p3' } }),
    challenge('fresh', { uid: 'u3', creationTimestamp: 'yesterday' }, { pool: 'Waiting' }),
    challenge('bare', { uid: 'u4' }),
    challenge('leaving', { uid: 'u5', deletionTimestamp: '2026-11-22T12:00:00Z' }, { pool: { state: 'Waiting' } }),
    challenge('no-uid', {}, { pool: { state: 'Waiting' } }),
    challenge('done', { uid: 'u6' }, { pool: { state: 'Released', pod: 'p4' } }),
  ]
  const last = Number.MAX_SAFE_INTEGER
  const created = Date.parse('2026-11-22T11:00:00Z')
  t.strictSame(poolChallenges(related), [
    {
      uid: 'u1',
      name: 'waits',
      waiting: true,
      recordedPod: undefined,
      admittedAt: Date.parse('2026-11-22T11:30:00Z'),
      createdAt: created,
    },
    {
      uid: 'u2',
      name: 'holds',
      waiting: false,
      recordedPod: 'p3',
      admittedAt: Date.parse('2026-11-22T11:31:00Z'),
      createdAt: created,
    },
    { uid: 'u3', name: 'fresh', waiting: false, recordedPod: undefined, admittedAt: last, createdAt: last },
    { uid: 'u4', name: 'bare', waiting: false, recordedPod: undefined, admittedAt: last, createdAt: created },
    // A released run names the pod it had, and holds it no longer.
    { uid: 'u6', name: 'done', waiting: false, recordedPod: undefined, admittedAt: last, createdAt: created },
  ])
})

const controlledBy = (name: string, uid: string, extra: Record<string, unknown> = {}) => [
  { ...controllerRef(uid, name), ...extra },
]
const ticketService = (
  name: string,
  annotations: Record<string, unknown>,
  metadata: Record<string, unknown> = {},
): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: {
    name,
    namespace: 'challenges',
    creationTimestamp: '2026-11-22T11:40:00Z',
    labels: { 'challenge-hooks.dev/pool-ticket': 'web' },
    annotations,
    ownerReferences: controlledBy(name, `uid-${name}`),
    ...metadata,
  } as KubeObject['metadata'],
})

t.test('the tickets on the Services tell who waits, which pod each records, and when it was admitted', async (t) => {
  const waiting = {
    'challenge-hooks.dev/pool-state': 'Waiting',
    'challenge-hooks.dev/admitted-at': '2026-11-22T11:30:00Z',
  }
  const services = [
    ticketService('waits', waiting),
    ticketService('holds', {
      'challenge-hooks.dev/pool-state': 'Claimed',
      'challenge-hooks.dev/pool-pod': 'web.pool-3',
      'challenge-hooks.dev/admitted-at': '2026-11-22T11:31:00Z',
    }),
    // Claimed naming no pod, a state of no meaning, an unreadable time: nothing asked, nothing held, served last.
    ticketService('no-pod', { 'challenge-hooks.dev/pool-state': 'Claimed' }, { creationTimestamp: 'soon' }),
    ticketService('odd', {
      'challenge-hooks.dev/pool-state': 'Released',
      'challenge-hooks.dev/pool-pod': 'web.pool-4',
    }),
    ticketService('bare', {}, { annotations: undefined }),
    // Not a claimant: being deleted, another definition's ticket, no controller, a controller that is no Challenge
    // of ours, a Challenge reference without uid or name.
    ticketService('leaving', waiting, { deletionTimestamp: '2026-11-22T12:00:00Z' }),
    ticketService('other', waiting, { labels: { 'challenge-hooks.dev/pool-ticket': 'api' } }),
    ticketService('unlabelled', waiting, { labels: undefined }),
    ticketService('orphan', waiting, { ownerReferences: undefined }),
    ticketService('not-controller', waiting, { ownerReferences: controlledBy('x', 'uid-x', { controller: false }) }),
    ticketService('definition', waiting, {
      ownerReferences: controlledBy('x', 'uid-x', { kind: 'ChallengeDefinition' }),
    }),
    ticketService('deployment', waiting, {
      ownerReferences: controlledBy('x', 'uid-x', { apiVersion: 'apps/v1', kind: 'Deployment' }),
    }),
    ticketService('other-group', waiting, {
      ownerReferences: controlledBy('x', 'uid-x', { apiVersion: 'example.com/v1' }),
    }),
    ticketService('no-uid', waiting, { ownerReferences: controlledBy('x', 'uid-x', { uid: 12 }) }),
    ticketService('no-name', waiting, { ownerReferences: controlledBy('x', 'uid-x', { name: undefined }) }),
  ]
  const last = Number.MAX_SAFE_INTEGER
  const created = Date.parse('2026-11-22T11:40:00Z')
  t.strictSame(poolTickets(services, 'web'), [
    {
      uid: 'uid-waits',
      name: 'waits',
      waiting: true,
      recordedPod: undefined,
      admittedAt: Date.parse('2026-11-22T11:30:00Z'),
      createdAt: created,
    },
    {
      uid: 'uid-holds',
      name: 'holds',
      waiting: false,
      recordedPod: 'web.pool-3',
      admittedAt: Date.parse('2026-11-22T11:31:00Z'),
      createdAt: created,
    },
    { uid: 'uid-no-pod', name: 'no-pod', waiting: false, recordedPod: undefined, admittedAt: last, createdAt: last },
    { uid: 'uid-odd', name: 'odd', waiting: false, recordedPod: undefined, admittedAt: last, createdAt: created },
    { uid: 'uid-bare', name: 'bare', waiting: false, recordedPod: undefined, admittedAt: last, createdAt: created },
  ])
})
