// The isolation gate refuses what it cannot prove (docs/api.md, "The isolation gate"), on the real node where packets
// decide. Where nothing blocks its target, it never passes: the instance ends in Error / IsolationNotEnforced with
// the gate's reason, and the author's container never starts. A node without a policy engine is made here by pointing
// the gate at what egress DNS lets through (the kube-dns Service, TCP 53): under egress None the same target is
// blocked and the same gate passes. (Its IPv6 refusal: isolation-gate-ipv6.test.ts.)
import t from 'tap'
import { app, definition, DNS_SERVICE_IP, reaches, running, startNodeSuite } from '../support/node/harness.js'

const suite = await startNodeSuite(t, {
  hookEnv: { ISOLATION_GATE_TARGET: `${DNS_SERVICE_IP}:53`, ISOLATION_GATE_TIMEOUT_SECONDS: '5' },
})

t.test('a target the egress policy lets through: Error / IsolationNotEnforced, the app never started', async (t) => {
  const s = await suite.scenario(t, 'gate-refuses')
  for (const egress of ['DNS', 'None']) {
    await s.create(
      definition(`gate-${egress.toLowerCase()}`, {
        pod: app('tcp-echo', 9000),
        expose: { type: 'NodePort', port: 9000 },
        network: { egress },
      }),
    )
  }
  await s.create(s.challenge('gate-dns', 'alice'))
  await s.create(s.challenge('gate-none', 'alice'))
  const status = await reaches(s, 'gate-dns-u-alice', 'Error', 90_000, [])
  t.hasStrict(status, { phase: 'Error', reason: 'IsolationNotEnforced' })
  t.match(
    status.message,
    /^The isolation gate did not let the instance start: Egress isolation is not in force: 10\.0\.0\.10:53 \(ISOLATION_GATE_TARGET\), which every egress mode forbids, accepted (\d+) of \1 connections over 5 s, and never 3 in a row were blocked\./,
    'every attempt reached kube-dns: the reason says so',
  )
  // The kubelet's events outlive the pod, which the teardown removes; each names its container by its field path.
  const { items: events } = await suite.rest.get<{
    items: { involvedObject: { name: string; fieldPath?: string }; reason: string }[]
  }>(`/api/v1/namespaces/${s.ns}/events`)
  const started = events
    .filter((event) => event.involvedObject.name === 'gate-dns-u-alice' && event.reason === 'Started')
    .map((event) => event.involvedObject.fieldPath)
  t.ok(started.includes('spec.initContainers{isolation-gate}'), 'the gate ran')
  t.notOk(started.includes('spec.containers{app}'), "the author's container never started")
  await running(s, 'gate-none-u-alice')
  t.pass('egress None blocks the same target: the same gate passes, the instance runs')
})
