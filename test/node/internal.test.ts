// Who reaches an Internal instance, by packets on a real node: only its owner's workstation (a pod of the challenges
// namespace labelled with the owner's kind and id, docs/api.md). Not another player's workstation, not a team that
// has the player's id, not an unlabelled pod beside it (a shared bot), not a pod of another namespace that carries
// the owner's labels, not another instance. Each tried at the instance's pod, its Service address and its cluster
// DNS name; the owner's workstation reaches all three, so a refusal is the policy's and not a path still missing.
import t from 'tap'
import { createNamespace } from '../support/kube/harness.js'
import { eventually } from '../support/eventually.js'
import {
  app,
  definition,
  ownerLabels,
  podOf,
  probeFrom,
  running,
  startNodeSuite,
  workstation,
} from '../support/node/harness.js'

const suite = await startNodeSuite(t)

t.test("an Internal instance admits its owner's workstation, and no one else", async (t) => {
  const s = await suite.scenario(t, 'internal')
  const other = await createNamespace(suite, t, 'internal-elsewhere')
  await s.create(
    definition('inside', {
      pod: app('probe', 8080),
      expose: { type: 'Internal', port: 8080 },
      network: { egress: 'DNS' },
    }),
  )
  await s.create(s.challenge('inside', 'alice'))
  await s.create(s.challenge('inside', 'bob'))
  await running(s, 'inside-u-alice')
  await running(s, 'inside-u-bob')
  const alice = await podOf(s, 'inside-u-alice')
  const bob = await podOf(s, 'inside-u-bob')
  const service = await suite.rest.get<{ spec: { clusterIP: string } }>(
    `/api/v1/namespaces/${s.ns}/services/inside-u-alice`,
  )
  const towardsAlice = {
    pod: `tcp:${alice.ip}:8080`,
    Service: `tcp:${service.spec.clusterIP}:8080`,
    'DNS name': `tcp:inside-u-alice.${s.ns}.svc.cluster.local:8080`,
  }
  const places = {
    "alice's workstation": await workstation(suite, s.ns, 'alice-box', ownerLabels('alice')),
    "bob's workstation": await workstation(suite, s.ns, 'bob-box', ownerLabels('bob')),
    'the team alice': await workstation(suite, s.ns, 'team-alice', ownerLabels('alice', 'Team')),
    'a shared bot (no owner)': await workstation(suite, s.ns, 'bot'),
  }
  const elsewhere = await workstation(suite, other, 'alice-elsewhere', ownerLabels('alice'))
  const reached = async (ns: string, pod: string) =>
    Object.fromEntries(
      Object.entries(await probeFrom(suite, ns, pod, towardsAlice)).map(([label, result]) => [label, result.reached]),
    )
  const everything = { pod: true, Service: true, 'DNS name': true }
  // The paths are in place before anything is refused: the owner's workstation reaches all three.
  const owner = await eventually(
    "alice's workstation to reach her instance every way",
    async () => {
      const seen = await reached(s.ns, 'alice-box')
      return Object.values(seen).every(Boolean) && seen
    },
    undefined,
    { timeoutMs: 30_000 },
  )
  t.strictSame(owner, everything, "alice's workstation: pod, Service and DNS name")
  const nothing = { pod: false, Service: false, 'DNS name': false }
  for (const [place, pod] of Object.entries(places).slice(1))
    t.strictSame(await reached(s.ns, pod.name), nothing, `${place}: nothing`)
  t.strictSame(await reached(other, elsewhere.name), nothing, "a pod of another namespace with alice's labels: nothing")
  t.strictSame(await reached(s.ns, bob.name), nothing, "bob's instance: nothing")
  // And the other way round: bob's instance admits bob's workstation, not alice's.
  const towardsBob = { pod: `tcp:${bob.ip}:8080` }
  t.strictSame(
    Object.fromEntries(
      Object.entries(await probeFrom(suite, s.ns, 'bob-box', towardsBob)).map(([l, r]) => [l, r.reached]),
    ),
    { pod: true },
    "bob's workstation reaches bob's instance",
  )
  t.strictSame(
    Object.fromEntries(
      Object.entries(await probeFrom(suite, s.ns, 'alice-box', towardsBob)).map(([l, r]) => [l, r.reached]),
    ),
    { pod: false },
    "alice's workstation does not reach bob's",
  )
})
