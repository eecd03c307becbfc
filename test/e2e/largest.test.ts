// The largest objects the CRDs and the hook accept (every string, list and total at its bound) still fit
// comfortably: the instance runs, its largest sync request is far under the hook's BODY_LIMIT, and the largest
// child (the Pod) well under what binds it: Metacontroller keeps its last-applied configuration in an
// annotation, and annotations hold at most 256 KiB (the simulator refuses more, as the API server does). One character more anywhere a total is counted is
// refused with the field named. The same objects run on the real API server in test/cluster/variants.test.ts.
import t from 'tap'
import { Bounds } from '../../src/contract/api.js'
import { resolveDefinition } from '../../src/challenge/definition.js'
import { largestDefinitionSpec, largestParameters } from '../helpers/largest.js'
import { startWorld, syncsOf } from './harness.js'

const ANNOTATIONS_LIMIT = 256 * 1024
const ETCD_OBJECT_LIMIT = 1.5 * 1024 * 1024
const BODY_LIMIT = 8 * 1024 * 1024
const NAME = 'largest-u-alice'

t.test('the largest valid definition and Challenge run; requests and children stay far under the limits', async (t) => {
  const world = await startWorld(t)
  const spec = largestDefinitionSpec()
  const definition = world.definition('pwn-echo', {}, 'largest')
  world.create({ ...definition, spec })
  world.create(world.challenge('largest', 'alice', { parameters: largestParameters() }))
  await world.run(t)
  await world.settle(t)
  t.hasStrict(world.status(NAME), { phase: 'Running', reason: 'Ready' })

  const definitionBytes = Buffer.byteLength(JSON.stringify(spec))
  t.ok(definitionBytes > 100_000, `the definition is as large as the bounds allow (${definitionBytes} bytes)`)
  const requests = syncsOf(world.sim, NAME).flatMap((result) =>
    result.request === undefined ? [] : [Buffer.byteLength(JSON.stringify(result.request))],
  )
  const largest = Math.max(...requests)
  t.ok(largest < BODY_LIMIT / 4, `largest sync request ${largest} bytes: under a quarter of BODY_LIMIT`)
  const deployment = world.cluster.list('v1', 'Pod', definition.metadata.namespace)[0]
  const lastApplied = Buffer.byteLength(
    deployment?.metadata.annotations?.['metacontroller.k8s.io/last-applied-configuration'] ?? '',
  )
  t.ok(lastApplied > 100_000, `the Pod's last-applied configuration is measured (${lastApplied} bytes)`)
  t.ok(
    lastApplied < ANNOTATIONS_LIMIT * 0.75,
    `it is ${lastApplied} bytes: under three quarters of the 256 KiB annotations limit`,
  )
  const deploymentBytes = Buffer.byteLength(JSON.stringify(deployment))
  t.ok(
    deploymentBytes < ETCD_OBJECT_LIMIT / 2,
    `the stored Pod is ${deploymentBytes} bytes: under half of etcd's 1.5 MiB per object`,
  )
  t.comment(
    `definition ${definitionBytes} B, largest sync request ${largest} B, Pod ${deploymentBytes} B (last-applied ${lastApplied} B)`,
  )
})

t.test('one character (or variable) over a total is refused with the field named', async (t) => {
  // Test code reads the containers field by field.
  type Container = Record<string, any>
  const over = (mutate: (container: Container) => void) => {
    const spec = largestDefinitionSpec() as { pod: { containers: Container[] } }
    mutate(spec.pod.containers[3] as Container)
    return resolveDefinition('largest', spec)
  }
  t.equal(resolveDefinition('largest', largestDefinitionSpec()).found, true, 'at the bounds: accepted')
  t.hasStrict(
    over((c) => (c.args[0] += 'x')),
    {
      found: false,
      reason: 'DefinitionInvalid',
      message: `ChallengeDefinition "largest" is invalid: spec.pod.containers: command and args of all containers together must be at most ${Bounds.podText} characters, got ${Bounds.podText + 1}.`,
    },
  )
  t.hasStrict(
    over((c) => (c.env[0].value += 'x')),
    {
      found: false,
      message: `ChallengeDefinition "largest" is invalid: spec.pod.containers: the env values of all containers together must be at most ${Bounds.podText} characters, got ${Bounds.podText + 1}.`,
    },
  )
  t.hasStrict(
    over((c) => c.env.push({ name: 'ONE_MORE' })),
    {
      found: false,
      message: `ChallengeDefinition "largest" is invalid: spec.pod.containers: at most ${Bounds.podEnvItems} env variables in all containers together, got ${Bounds.podEnvItems + 1}.`,
    },
  )
  t.match(
    over((c) => c.args.push('x')),
    { found: false, message: /spec\.pod\.containers\/3\/args|spec\.pod\.containers\[3\]\.args/ },
    'one item too many',
  )
  t.match(
    over((c) => (c.readinessProbe.httpGet.path += 'x')),
    { found: false, message: /readinessProbe.*path/ },
    'the probe path',
  )
})

t.test('parameters over their total: Error / ConfigError naming the field, the definition untouched', async (t) => {
  const world = await startWorld(t)
  world.create(world.definition('web-login'))
  const parameters = largestParameters()
  const [first] = Object.keys(parameters)
  parameters[first as string] += 'x'
  world.create(world.challenge('web-login', 'alice', { parameters }))
  await world.run(t)
  t.hasStrict(world.status('web-login-u-alice'), {
    phase: 'Error',
    reason: 'ConfigError',
    message: `spec.parameters: the names and values together must be at most ${Bounds.parametersText} characters, got ${Bounds.parametersText + 1}.`,
  })
  t.strictSame(world.children('web-login-u-alice'), [], 'no workload')
})
