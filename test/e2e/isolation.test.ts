// End to end, over real HTTP: one player's Challenge never reaches another's children, and one hostile object
// (a definition or a Challenge carrying prototype keys) stops only what it decides.
import t from 'tap'
import type { KubeObject } from '../../src/contract/protocol.js'
import { challengeRef, NS, startWorld, type Json, type World } from './harness.js'

const VICTIM = 'web-login-u-victim-with-a-rather-long-user-identifier-0001'
// The old shortening gave VICTIM the name `<first 45 chars>-<8 hex>`: a player whose owner id makes their
// Challenge's name equal to it shared every child name and the instance label (found by the security review).
const ATTACKER_OWNER = 'victim-with-a-rather-long-user-id-97b5865e'
const ATTACKER = `web-login-u-${ATTACKER_OWNER}`

/** The flag Secret names the Pod of a Challenge mounts. */
function mountedSecrets(world: World, name: string): string[] {
  const pod = world.cluster.list('v1', 'Pod', NS).find((object) => isControlledBy(world, object, name))
  const volumes = (pod?.spec as { volumes: { secret?: { secretName: string } }[] }).volumes
  return volumes.flatMap((volume) => (volume.secret ? [volume.secret.secretName] : []))
}

function isControlledBy(world: World, object: KubeObject, name: string): boolean {
  const uid = world.get(name)?.metadata.uid
  const references = ((object.metadata as Json).ownerReferences ?? []) as { uid: string; controller?: boolean }[]
  return references.some((ref) => ref.uid === uid && ref.controller === true)
}

/** The pods whose labels match the selector of the Challenge's Service. */
function selectedPods(world: World, name: string): string[] {
  const service = world.cluster
    .list('v1', 'Service', NS)
    .find((object) => isControlledBy(world, object, name)) as KubeObject
  const selector = (service.spec as Json).selector as Record<string, string>
  return world.cluster
    .list('v1', 'Pod', NS)
    .filter((pod) => Object.entries(selector).every(([key, value]) => pod.metadata.labels?.[key] === value))
    .map((pod) => pod.metadata.name)
}

function secretOf(world: World, name: string): string {
  return (world.children(name).find((child) => child.startsWith('Secret/')) as string).slice('Secret/'.length)
}

t.test(
  "a Challenge named like another one's shortened name gets children of its own; stopping one never hands its flag over",
  async (t) => {
    const world = await startWorld(t)
    world.create(world.definition('web-login'))
    world.create(world.definition('web-login', {}, 'web.login'))
    const pairs: [string, string, string][] = [
      // [definition, owner, name]
      ['web-login', 'victim-with-a-rather-long-user-identifier-0001', VICTIM],
      ['web-login', ATTACKER_OWNER, ATTACKER],
      // A dotted definition name is shortened too: its instance must not collide with the dashed one's.
      ['web.login', 'bob', 'web.login-u-bob'],
      ['web-login', 'bob', 'web-login-u-bob'],
    ]
    for (const [definition, owner, name] of pairs) world.create(world.challenge(definition, owner, {}, name))
    await world.run(t)
    await world.settle(t)
    await world.settle(t)
    const names = pairs.map(([, , name]) => name)
    for (const name of names) t.hasStrict(world.status(name), { phase: 'Running' }, `${name}: Running`)

    const all = names.flatMap((name) => world.children(name))
    t.equal(new Set(all).size, all.length, 'no child name is shared')
    const instanceLabels = names.map(
      (name) =>
        world.cluster.list('v1', 'Pod', NS).find((object) => isControlledBy(world, object, name))?.metadata.labels?.[
          'challenge-hooks.dev/instance'
        ],
    )
    t.equal(new Set(instanceLabels).size, names.length, 'no instance label is shared')
    for (const name of names) {
      t.strictSame(
        mountedSecrets(world, name),
        [secretOf(world, name)],
        `${name}: its pod mounts its own flag Secret only`,
      )
      t.equal(selectedPods(world, name).length, 1, `${name}: its Service selects exactly its own pod`)
    }

    // The review's scenario: the victim stops; the attacker's instance keeps running with its own flag.
    const victimSecret = secretOf(world, VICTIM)
    world.patchSpec(VICTIM, { desiredState: 'Stopped' })
    await world.run(t)
    await world.settle(t)
    await world.settle(t)
    t.hasStrict(world.status(VICTIM), { phase: 'Deleted', reason: 'Stopped' })
    t.strictSame(world.children(VICTIM), [], 'the victim holds nothing')
    t.notOk(
      world.cluster.list('v1', 'Secret', NS).some((secret) => secret.metadata.name === victimSecret),
      "the victim's flag Secret is gone",
    )
    t.hasStrict(world.status(ATTACKER), { phase: 'Running' })
    t.strictSame(
      mountedSecrets(world, ATTACKER),
      [secretOf(world, ATTACKER)],
      'the attacker still mounts only its own flag',
    )
    await world.assertQuiet(t)
  },
)

t.test(
  'a definition carrying a __proto__ key is refused alone: the rest of the namespace runs, syncs and finalizes',
  async (t) => {
    const world = await startWorld(t)
    world.create(world.definition('web-login'))
    const poisoned = world.definition('web-login', {}, 'poisoned')
    const spec = poisoned.spec as { pod: Json }
    // As JSON.parse makes it, and as the API server stores it (the pod keeps unknown fields): an own data property.
    spec.pod = { ...spec.pod, ...(JSON.parse('{"__proto__": {"hostNetwork": true}}') as Json) }
    t.ok(Object.hasOwn(spec.pod, '__proto__'), 'the key is plain data')
    world.create(poisoned)
    world.create(world.challenge('web-login', 'alice'))
    world.create(world.challenge('poisoned', 'mallory'))
    await world.run(t)
    await world.settle(t)
    await world.settle(t)
    t.hasStrict(world.status('web-login-u-alice'), { phase: 'Running' }, "another definition's instance starts")
    t.hasStrict(world.status('poisoned-u-mallory'), {
      phase: 'Error',
      reason: 'DefinitionInvalid',
      message:
        'ChallengeDefinition "poisoned" is invalid: spec.pod.__proto__: the key is refused (it names an object prototype).',
    })
    t.strictSame(world.children('poisoned-u-mallory'), [], 'the refused instance holds nothing')
    t.notOk(
      world.calls.some((call) => call.statusCode >= 400),
      'no hook call was refused',
    )

    world.cluster.delete(challengeRef('web-login-u-alice'))
    await world.settle(t)
    await world.settle(t)
    await world.settle(t)
    t.equal(world.get('web-login-u-alice'), undefined, 'a deletion beside the poisoned definition finalizes')
    t.equal(({} as Json).hostNetwork, undefined, 'no prototype was polluted')
    await world.assertQuiet(t)
  },
)

t.test(
  'a parameter named __proto__, constructor or prototype is refused for its Challenge only (ConfigError)',
  async (t) => {
    const world = await startWorld(t, { env: { OWNER_BUDGET: '5' } })
    world.create(world.definition('web-login'))
    world.create(world.definition('pwn-echo'))
    world.create(world.challenge('pwn-echo', 'alice'))
    const names = ['__proto__', 'constructor', 'prototype']
    for (const [index, parameter] of names.entries()) {
      world.create(
        world.challenge(
          'web-login',
          'alice',
          { parameters: JSON.parse(`{"${parameter}": "x"}`) as Json },
          `web-login-u-alice-${index}`,
        ),
      )
    }
    await world.run(t)
    await world.settle(t)
    await world.settle(t)
    for (const [index, parameter] of names.entries()) {
      t.hasStrict(
        world.status(`web-login-u-alice-${index}`),
        {
          phase: 'Error',
          reason: 'ConfigError',
          message: `spec.parameters: the name ${parameter} is refused (it names an object prototype).`,
        },
        parameter,
      )
    }
    t.hasStrict(world.status('pwn-echo-u-alice'), { phase: 'Running' }, "the owner's other instance runs")
    t.notOk(
      world.calls.some((call) => call.statusCode >= 400),
      'no hook call was refused',
    )
    await world.assertQuiet(t)
  },
)
