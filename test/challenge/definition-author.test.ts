// An instance stays with the author of the definition it was first synced with (src/challenge/lifecycle.ts,
// definitionAuthorKept): a definition made again under its name by someone else never runs for it until an operator
// accepts the new author on the Challenge. docs/api.md, "The definition's author", is the contract written here.
import t from 'tap'
import { formatTime } from '../../src/challenge/time.js'
import type { KubeObject } from '../../src/contract/protocol.js'
import { testConfig } from '../helpers/app.js'
import { ALICE, expectedInstanceId } from '../helpers/contract.js'
import { at, kinds, prepared, step } from '../helpers/drive.js'
import { challenge, conditionOf, observedChildren, readyWorld, webDefinition, type Json } from '../helpers/world.js'

const ACCEPT = 'challenge-hooks.dev/accept-definition-author'
const ALICE_AUTHOR = 'alice@example.org'
const BOB_AUTHOR = 'bob@example.org'
const BOBS_IMAGE = 'ghcr.io/example/bob-web:6.6'
const T = (seconds: number) => formatTime(at(seconds).getTime())

/** web-login naming `author` (none when undefined); bob's runs his own image. */
function definitionBy(author: string | undefined, spec: Json = {}): KubeObject {
  const object = webDefinition(
    author === BOB_AUTHOR
      ? { pod: { containers: [{ name: 'web', image: BOBS_IMAGE, ports: [{ containerPort: 8080 }] }] }, ...spec }
      : spec,
  )
  if (author !== undefined) object.metadata.annotations = { 'challenge-hooks.dev/author': author }
  return object
}

/** The Challenge with a previous status and, when given, the operator's annotation. */
function instance(status: Json | undefined, accepted?: string) {
  const parent = challenge(status === undefined ? {} : { status })
  if (accepted !== undefined) parent.metadata.annotations = { [ACCEPT]: accepted }
  return parent
}

function changedMessage(now: string, before: string, accept: string): string {
  return `ChallengeDefinition "web-login" now names ${now}, not ${before} as when this instance was made: it stays stopped until an operator accepts the new author (the annotation challenge-hooks.dev/accept-definition-author=${accept} on this Challenge) or deletes the instance.`
}
const ALICE_TO_BOB = changedMessage('the author "bob@example.org"', '"alice@example.org"', '"bob@example.org"')

/** Every image any answered child names (a Pod rendered from a definition, or kept as last applied). */
function images(children: readonly Json[]): string[] {
  return children
    .filter((child) => child.kind === 'Pod')
    .flatMap((pod) => ((pod.spec as Json).containers as Json[]).map((container) => container.image as string))
}

t.test('a new instance records the author of its definition: the whole first status', async (t) => {
  const { status, response } = step(challenge(), { related: [definitionBy(ALICE_AUTHOR)] })
  const now = T(0)
  // A condition that has not flipped holds since the Challenge was made.
  const created = '2026-11-22T11:59:00Z'
  t.strictSame(status, {
    phase: 'Pending',
    reason: 'Starting',
    message: 'The instance is starting.',
    instanceId: expectedInstanceId(testConfig().flagSecret, ALICE),
    run: 0,
    renewalsSeen: 0,
    renewalsApplied: 0,
    conditions: [
      {
        type: 'Admitted',
        status: 'True',
        reason: 'Admitted',
        message: "The instance holds a slot of its owner's budget.",
        lastTransitionTime: now,
      },
      {
        type: 'Scheduled',
        status: 'False',
        reason: 'NotScheduled',
        message: 'The pod is not placed on a node yet.',
        lastTransitionTime: created,
      },
      {
        type: 'ContainersStarted',
        status: 'False',
        reason: 'NotStarted',
        message: 'No container of the pod runs yet.',
        lastTransitionTime: created,
      },
      {
        type: 'WorkloadReady',
        status: 'False',
        reason: 'Starting',
        message: 'The instance is starting.',
        lastTransitionTime: created,
      },
      {
        type: 'EndpointReady',
        status: 'False',
        reason: 'NoEndpoint',
        message: 'Traffic cannot reach the instance yet.',
        lastTransitionTime: created,
      },
      {
        type: 'Ready',
        status: 'False',
        reason: 'Starting',
        message: 'The instance is starting.',
        lastTransitionTime: created,
      },
      {
        type: 'Expired',
        status: 'False',
        reason: 'NotExpired',
        message: 'The instance has not reached its end.',
        lastTransitionTime: created,
      },
    ],
    cost: 1,
    definitionAuthor: ALICE_AUTHOR,
    admittedAt: now,
  })
  t.strictSame(
    kinds(response),
    [
      'Secret/web-login-u-alice-flag',
      'NetworkPolicy/web-login-u-alice-isolate',
      'Service/web-login-u-alice',
      'Ingress/web-login-u-alice',
    ],
    'it starts: its guards first',
  )
})

t.test('the recorded author, the definition author and the operator word: one row each', async (t) => {
  // [what, recorded, the definition's author, the Challenge's annotation, phase/reason, recorded after, message]
  const rows: [
    string,
    string | undefined,
    string | undefined,
    string | undefined,
    string,
    string | undefined,
    string | undefined,
  ][] = [
    [
      'nothing recorded (made before the record): adopts the author',
      undefined,
      ALICE_AUTHOR,
      undefined,
      'Pending/Starting',
      ALICE_AUTHOR,
      undefined,
    ],
    [
      'nothing recorded, a definition naming no author: records none',
      undefined,
      undefined,
      undefined,
      'Pending/Starting',
      '',
      undefined,
    ],
    ['the same author', ALICE_AUTHOR, ALICE_AUTHOR, undefined, 'Pending/Starting', ALICE_AUTHOR, undefined],
    ['still no author', '', undefined, undefined, 'Pending/Starting', '', undefined],
    [
      'another author',
      ALICE_AUTHOR,
      BOB_AUTHOR,
      undefined,
      'Error/DefinitionAuthorChanged',
      ALICE_AUTHOR,
      ALICE_TO_BOB,
    ],
    [
      'another author, and the operator accepted him',
      ALICE_AUTHOR,
      BOB_AUTHOR,
      BOB_AUTHOR,
      'Pending/Starting',
      BOB_AUTHOR,
      undefined,
    ],
    [
      'another author, and the operator accepted a third',
      ALICE_AUTHOR,
      BOB_AUTHOR,
      'carol@example.org',
      'Error/DefinitionAuthorChanged',
      ALICE_AUTHOR,
      ALICE_TO_BOB,
    ],
    [
      'another author, the operator accepted the old one',
      ALICE_AUTHOR,
      BOB_AUTHOR,
      ALICE_AUTHOR,
      'Error/DefinitionAuthorChanged',
      ALICE_AUTHOR,
      ALICE_TO_BOB,
    ],
    [
      'an accepted author that differs only in case',
      ALICE_AUTHOR,
      BOB_AUTHOR,
      'Bob@example.org',
      'Error/DefinitionAuthorChanged',
      ALICE_AUTHOR,
      ALICE_TO_BOB,
    ],
    [
      'the definition names no author any more',
      ALICE_AUTHOR,
      undefined,
      undefined,
      'Error/DefinitionAuthorChanged',
      ALICE_AUTHOR,
      changedMessage('no author', '"alice@example.org"', '""'),
    ],
    [
      'no author any more, accepted (an empty annotation)',
      ALICE_AUTHOR,
      undefined,
      '',
      'Pending/Starting',
      '',
      undefined,
    ],
    [
      'an author where there was none',
      '',
      BOB_AUTHOR,
      undefined,
      'Error/DefinitionAuthorChanged',
      '',
      changedMessage('the author "bob@example.org"', 'none', '"bob@example.org"'),
    ],
    [
      'an author the message quotes safely',
      ALICE_AUTHOR,
      'mallory "<b>"',
      undefined,
      'Error/DefinitionAuthorChanged',
      ALICE_AUTHOR,
      changedMessage(
        'the author "mallory \\"\\u003cb\\u003e\\""',
        '"alice@example.org"',
        '"mallory \\"\\u003cb\\u003e\\""',
      ),
    ],
  ]
  for (const [what, recorded, author, accepted, outcome, after, message] of rows) {
    const previous = recorded === undefined ? undefined : { definitionAuthor: recorded }
    const { status, response } = step(instance(previous, accepted), { related: [definitionBy(author)] })
    t.strictSame(`${String(status.phase)}/${String(status.reason)}`, outcome, `${what}: ${outcome}`)
    t.strictSame(status.definitionAuthor, after, `${what}: records ${JSON.stringify(after)}`)
    if (message === undefined) continue
    t.strictSame(status.message, message, `${what}: the message`)
    t.strictSame(response.children, [], `${what}: no children at all`)
    t.notOk('admittedAt' in status, `${what}: no budget slot held`)
  }
})

t.test(
  'the Error of another author: its whole conditions, and nothing written again while nothing changes',
  async (t) => {
    const previous = { definitionAuthor: ALICE_AUTHOR }
    const first = step(instance(previous), { related: [definitionBy(BOB_AUTHOR)] })
    // Its first status: every condition holds since the Challenge was made.
    const created = '2026-11-22T11:59:00Z'
    const condition = (type: string, reason: string, message: string) => ({
      type,
      status: 'False',
      reason,
      message,
      lastTransitionTime: created,
    })
    t.strictSame(first.status, {
      phase: 'Error',
      reason: 'DefinitionAuthorChanged',
      message: ALICE_TO_BOB,
      instanceId: expectedInstanceId(testConfig().flagSecret, ALICE),
      run: 0,
      renewalsSeen: 0,
      renewalsApplied: 0,
      conditions: [
        condition('Admitted', 'DefinitionAuthorChanged', ALICE_TO_BOB),
        condition('Scheduled', 'NoWorkload', 'The instance has no workload.'),
        condition('ContainersStarted', 'NoWorkload', 'The instance has no workload.'),
        condition('WorkloadReady', 'NoWorkload', 'The instance has no workload.'),
        condition('EndpointReady', 'NoEndpoint', 'Traffic cannot reach the instance yet.'),
        condition('Ready', 'DefinitionAuthorChanged', ALICE_TO_BOB),
        condition('Expired', 'NotExpired', 'The instance has not reached its end.'),
      ],
      definitionAuthor: ALICE_AUTHOR,
    })
    t.equal(first.response.resyncAfterSeconds, undefined, 'nothing to wake it: only a change of the world does')
    const again = step(first.parent, { related: [definitionBy(BOB_AUTHOR)], now: at(600) })
    t.strictSame(again.status, first.status, 'the same status ten minutes later, byte for byte')

    const running = step(instance(previous), { related: [definitionBy(ALICE_AUTHOR)] })
    t.strictSame(
      step(running.parent, { related: [definitionBy(ALICE_AUTHOR)], now: at(5) }).status,
      running.status,
      'and with its own author: the recorded author writes nothing either',
    )
  },
)

t.test('ahead of the definition itself: the author is checked first, the labels before it', async (t) => {
  const previous = { definitionAuthor: ALICE_AUTHOR }
  const invalid = definitionBy(BOB_AUTHOR, {
    pod: { containers: [{ name: 'web', image: BOBS_IMAGE }], hostNetwork: true },
  })
  t.strictSame(
    step(instance(previous), { related: [invalid] }).status.reason,
    'DefinitionAuthorChanged',
    "bob's definition is not even read: its problems are not this instance's",
  )
  const mislabelled = challenge({
    status: previous,
    labels: { 'challenge-hooks.dev/owner': 'mallory', 'challenge-hooks.dev/definition': 'web-login' },
  })
  t.strictSame(step(mislabelled, { related: [definitionBy(BOB_AUTHOR)] }).status.reason, 'OwnerLabelMismatch')
  const missing = step(instance(previous), { related: [] })
  t.strictSame(
    [missing.status.reason, missing.status.definitionAuthor],
    ['DefinitionNotFound', ALICE_AUTHOR],
    'a missing definition is DefinitionNotFound, and the record stays',
  )
})

t.test(
  "alice's running instance, her definition replaced by bob's: torn down, never bob's pod, back once accepted",
  async (t) => {
    const alices = [definitionBy(ALICE_AUTHOR)]
    const bobs = [definitionBy(BOB_AUTHOR)]
    const first = prepared(challenge(), { related: alices })
    const ready = readyWorld(first.response.children)
    const running = step(first.parent, { related: alices, children: ready, now: at(10) })
    t.hasStrict(running.status, { phase: 'Running', definitionAuthor: ALICE_AUTHOR, startedAt: T(10) })

    // The operator deleted alice's definition and made it again as bob's: the next sync sees bob's.
    const stopped = step(running.parent, { related: bobs, children: ready, now: at(20) })
    t.hasStrict(stopped.status, {
      phase: 'Error',
      reason: 'DefinitionAuthorChanged',
      message: ALICE_TO_BOB,
      startedAt: T(10),
      definitionAuthor: ALICE_AUTHOR,
    })
    t.notOk('admittedAt' in stopped.status, 'its budget slot is given up')
    t.notOk('endpoint' in stopped.status, 'no endpoint')
    t.strictSame(
      kinds(stopped.response).sort(),
      ['NetworkPolicy/web-login-u-alice-isolate', 'Pod/web-login-u-alice', 'Secret/web-login-u-alice-flag'],
      'the teardown begins with the traffic path',
    )
    t.strictSame(images(stopped.response.children), ['ghcr.io/example/web-login:1.0'], "alice's pod as last applied")

    // The teardown goes on: no answer ever holds bob's image.
    let world = observedChildren(stopped.response.children)
    let parent = stopped.parent
    const seen: string[] = []
    for (let second = 21; second < 30 && world.length > 0; second++) {
      const next = step(parent, {
        related: bobs,
        children: world.filter((child) => child.kind !== 'Pod'),
        now: at(second),
      })
      seen.push(...images(next.response.children))
      t.strictSame(next.status.reason, 'DefinitionAuthorChanged', `still stopped at ${second} s`)
      world = observedChildren(next.response.children)
      parent = next.parent
    }
    t.strictSame(world, [], 'everything is gone')
    t.strictSame(seen, [], 'no Pod was asked for')

    // The operator's word: the instance starts again, on bob's definition, and records him.
    parent.metadata.annotations = { [ACCEPT]: BOB_AUTHOR }
    const accepted = prepared(parent, { related: bobs, now: at(40) })
    t.hasStrict(accepted.status, { phase: 'Pending', reason: 'Starting', definitionAuthor: BOB_AUTHOR })
    t.strictSame(images(accepted.response.children), [BOBS_IMAGE], "bob's pod, now that an operator said so")
    t.equal(conditionOf(accepted.status, 'Admitted')?.status, 'True')
  },
)

t.test('a finished run keeps the record; a restart on another author is stopped', async (t) => {
  const expired = {
    phase: 'Deleted',
    reason: 'Expired',
    message: 'The instance reached the end of its lifetime.',
    run: 0,
    finishedAt: T(-60),
    definitionAuthor: ALICE_AUTHOR,
  }
  const ended = step(instance(expired), { related: [definitionBy(BOB_AUTHOR)] })
  t.strictSame(
    [ended.status.phase, ended.status.reason, ended.status.definitionAuthor],
    ['Deleted', 'Expired', ALICE_AUTHOR],
    'an ended run does not read the definition: the record is carried as it is',
  )
  const restart = challenge({ spec: { restarts: 1 }, status: expired })
  const relaunched = step(restart, { related: [definitionBy(BOB_AUTHOR)] })
  t.strictSame(
    [relaunched.status.phase, relaunched.status.reason, relaunched.status.run, relaunched.status.definitionAuthor],
    ['Error', 'DefinitionAuthorChanged', 1, ALICE_AUTHOR],
    "a restart is the platform's, not an operator's word",
  )
  const stopped = step(challenge({ spec: { desiredState: 'Stopped' }, status: { definitionAuthor: ALICE_AUTHOR } }), {
    related: [definitionBy(BOB_AUTHOR)],
  })
  t.strictSame([stopped.status.reason, stopped.status.definitionAuthor], ['Stopped', ALICE_AUTHOR])
})
