// The isolation gate and IPv6 (docs/api.md, "The isolation gate"), with the product's default POLICY_ENFORCES_IPV6
// (false): a pod that has an IPv6 address other than loopback is refused before anything of the author's runs, since
// kube-router polices IPv4 only. The kernel gives every interface of a new network namespace a link-local address
// unless the CNI configuration turns IPv6 off there (podsHaveIpv6: the node's own configuration says which); where it
// is off, the same instance runs.
import t from 'tap'
import { podsHaveIpv6 } from '../support/node/configs.js'
import { app, definition, reaches, running, startNodeSuite } from '../support/node/harness.js'

const suite = await startNodeSuite(t, { hookEnv: { POLICY_ENFORCES_IPV6: 'false' } })

t.test("IPv6 in the pod, which the node's policy engine does not police: refused, saying so", async (t) => {
  const s = await suite.scenario(t, 'gate-ipv6')
  await s.create(
    definition('gate-v6', {
      pod: app('tcp-echo', 9000),
      expose: { type: 'NodePort', port: 9000 },
      network: { egress: 'None' },
    }),
  )
  await s.create(s.challenge('gate-v6', 'alice'))
  if (!podsHaveIpv6()) {
    await running(s, 'gate-v6-u-alice')
    t.pass('the node turns IPv6 off in pods: the instance runs')
    return
  }
  const status = await reaches(s, 'gate-v6-u-alice', 'Error', 90_000, [])
  t.hasStrict(status, { phase: 'Error', reason: 'IsolationNotEnforced' })
  t.match(
    status.message,
    /^The isolation gate did not let the instance start: The pod has IPv6 addresses \(fe80::[0-9a-f:]+%eth0\), which NetworkPolicy engines that enforce IPv4 only let through: turn IPv6 off in the pods' network namespaces, or set POLICY_ENFORCES_IPV6=true if the cluster's NetworkPolicy engine enforces the policies over IPv6 \(docs\/install\.md\)\.$/,
    'its link-local address named',
  )
})
