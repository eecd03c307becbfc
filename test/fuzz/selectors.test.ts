/**
 * The isolation selectors across an upgrade, as a property. docs/api.md: every selector (the Service's, the
 * NetworkPolicies' subjects, and the isolate policy's "among themselves" peers) requires both the instance label
 * and the uid label; the upgrade notes (CHANGELOG.md) keep one exception: while a Deployment an earlier release made
 * is observed with the older, instance-label-only selector (immutable in the API), its pods carry no uid label, and
 * the selectors select by the instance label alone until it is gone. Over generated exposures, egress modes, names
 * (kept and shortened), Deployments (none, instance only, with Metacontroller's controller-uid beside it, with the
 * uid, of another instance, without a selector) and pods in the namespace (the legacy pod, this run's pod, a pod of
 * an earlier Challenge of the same name, other instances' pods), every selector of the answer must select exactly
 * the pods the rule names, computed here with the API's matchLabels semantics.
 */
import fc from 'fast-check'
import t from 'tap'
import type { KubeObject } from '../../src/contract/protocol.js'
import { expectedNameHash } from '../helpers/contract.js'
import { prepared, step } from '../helpers/drive.js'
import { challenge, netcatDefinition, observedChildren, webDefinition, type Json } from '../helpers/world.js'
import { runs, SEED } from './world-gen.js'

const INSTANCE = 'challenge-hooks.dev/instance'
const UID_LABEL = 'challenge-hooks.dev/uid'
const UID = '0b4d7f8e-1c2a-4e5b-9f60-7a8b9c0d1e2f'
const EARLIER_UID = '9e8d7c6b-5a49-4837-8261-504f3e2d1c0b'

const SHORT = 'web-login-u-alice'
const LONG = `web-login-u-${'a-rather-long-player-identifier'.repeat(2)}`.slice(0, 70)

type DeploymentShape =
  'none' | 'instance-only' | 'instance-and-controller-uid' | 'instance-and-uid' | 'another-instance' | 'no-selector'
type PodShape = 'legacy' | 'own' | 'earlier-namesake' | 'other-instance' | 'uid-only' | 'unlabelled'

const worlds = fc.record({
  long: fc.boolean(),
  expose: fc.constantFrom('HTTP', 'TLS', 'NodePort', 'LoadBalancer', 'Internal'),
  egress: fc.constantFrom('None', 'DNS', 'Internet'),
  deployment: fc.constantFrom<DeploymentShape>(
    'none',
    'none',
    'instance-only',
    'instance-only',
    'instance-and-controller-uid',
    'instance-and-uid',
    'another-instance',
    'no-selector',
  ),
  pods: fc.uniqueArray(
    fc.constantFrom<PodShape>('legacy', 'own', 'earlier-namesake', 'other-instance', 'uid-only', 'unlabelled'),
    { minLength: 1, maxLength: 6 },
  ),
  extraLabel: fc.boolean(),
})

/** The child base name by docs/api.md: the name when it is a DNS-1035 label of at most 54 characters, else prefix--hash(uid). */
function base(name: string): string {
  return /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(name) && name.length <= 54 && !/--[0-9a-f]{12}$/.test(name)
    ? name
    : `…--${expectedNameHash(UID)}`
}

function podLabels(shape: PodShape, p: string, extra: boolean): Record<string, string> {
  const more: Record<string, string> = extra ? { app: 'web', 'pod-template-hash': '5d9c7b' } : {}
  switch (shape) {
    case 'legacy':
      return { [INSTANCE]: p, ...more }
    case 'own':
      return { [INSTANCE]: p, [UID_LABEL]: UID, ...more }
    case 'earlier-namesake':
      return { [INSTANCE]: p, [UID_LABEL]: EARLIER_UID, ...more }
    case 'other-instance':
      return { [INSTANCE]: 'someone-else', [UID_LABEL]: UID, ...more }
    case 'uid-only':
      return { [UID_LABEL]: UID, ...more }
    case 'unlabelled':
      return { ...more }
  }
}

function deploymentSelector(shape: DeploymentShape, p: string): Record<string, string> | undefined {
  switch (shape) {
    case 'instance-only':
      return { [INSTANCE]: p }
    case 'instance-and-controller-uid':
      return { [INSTANCE]: p, 'controller-uid': UID }
    case 'instance-and-uid':
      return { [INSTANCE]: p, [UID_LABEL]: UID }
    case 'another-instance':
      return { [INSTANCE]: 'someone-else' }
    default:
      return undefined
  }
}

/** matchLabels as the API server applies it: every pair present; an empty selector selects every pod. */
function selects(selector: unknown, labels: Record<string, string>): boolean {
  const { matchLabels = {}, ...rest } = (selector ?? {}) as { matchLabels?: Record<string, string> }
  if (Object.keys(rest).length > 0) throw new Error(`a selector this test does not read: ${JSON.stringify(selector)}`)
  return Object.entries(matchLabels).every(([key, value]) => labels[key] === value)
}

t.test(
  "every selector selects exactly the instance's pods, the legacy ones while their Deployment is observed",
  async (t) => {
    const seen = { legacy: 0, current: 0, selectors: 0 }
    fc.assert(
      fc.property(worlds, (world) => {
        const name = world.long ? LONG : SHORT
        const parent = challenge({ name, uid: UID })
        const definition =
          world.expose === 'HTTP'
            ? webDefinition({ network: { egress: world.egress } })
            : netcatDefinition(
                { expose: { type: world.expose, port: 1337 }, network: { egress: world.egress } },
                'web-login',
              )
        // TLS needs a route to the operator's gateway (TLS_ROUTING=GatewayAPI), or the instance is a ConfigError.
        const config =
          world.expose === 'TLS'
            ? { tlsBaseDomain: 'tcp.ctf.example.org', gateway: { namespace: 'gateway-system', name: 'challenges' } }
            : {}
        const first = prepared(parent, { related: [definition], config })
        const p = String(
          (first.response.children.find((child) => child.kind === 'Service') as Json & { metadata: { name: string } })
            .metadata.name,
        )
        // The base is the contract's: kept, or a prefix and the hash of the uid.
        const expectedBase = base(name)
        if (expectedBase.startsWith('…') ? !p.endsWith(expectedBase.slice(1)) || p.length > 54 : p !== expectedBase)
          throw new Error(`child base ${p} for ${name}`)
        const children = observedChildren(first.response.children)
        const selector = deploymentSelector(world.deployment, p)
        if (world.deployment !== 'none') {
          const [deployment] = observedChildren([
            {
              apiVersion: 'apps/v1',
              kind: 'Deployment',
              metadata: { name: p, labels: { [INSTANCE]: p } },
              spec: { replicas: 1, ...(selector ? { selector: { matchLabels: selector } } : {}) },
            },
          ])
          children.push(deployment as KubeObject)
        }
        const answer = step(first.parent, { related: [definition], children, config })
        // The rule: the older form only while a Deployment selecting by the instance label without the uid is observed.
        const legacy = selector !== undefined && selector[INSTANCE] === p && !(UID_LABEL in selector)
        seen[legacy ? 'legacy' : 'current'] += 1
        const pods = world.pods.map((shape) => ({ shape, labels: podLabels(shape, p, world.extraLabel) }))
        const wanted = pods
          .filter(({ labels }) => labels[INSTANCE] === p && (legacy || labels[UID_LABEL] === UID))
          .map(({ shape }) => shape)
        const desired = answer.response.children as unknown as (Json & {
          kind: string
          metadata: { name: string }
          spec: Json
        })[]
        const selectorsOf: [string, unknown][] = []
        for (const child of desired) {
          if (child.kind === 'Service')
            selectorsOf.push([`Service ${child.metadata.name}`, { matchLabels: child.spec.selector }])
          if (child.kind !== 'NetworkPolicy') continue
          selectorsOf.push([`${child.metadata.name} (its pods)`, child.spec.podSelector])
          if (child.metadata.name === `${p}-isolate`) {
            // "except among themselves": the peers of the isolate policy's first ingress and egress rules.
            const ingress = child.spec.ingress as { from: Json[] }[]
            const egress = child.spec.egress as { to: Json[] }[]
            selectorsOf.push(
              [`${child.metadata.name} ingress from`, ingress[0]?.from[0]?.podSelector],
              [`${child.metadata.name} egress to`, egress[0]?.to[0]?.podSelector],
            )
          }
        }
        const policies = desired.filter((child) => child.kind === 'NetworkPolicy').length
        if (policies !== (world.egress === 'Internet' ? 2 : 1))
          throw new Error(`${policies} NetworkPolicies for egress ${world.egress}`)
        for (const [what, chosen] of selectorsOf) {
          const got = pods.filter(({ labels }) => selects(chosen, labels)).map(({ shape }) => shape)
          seen.selectors += 1
          if (JSON.stringify(got) !== JSON.stringify(wanted))
            throw new Error(
              `${what} (Deployment ${world.deployment}) selects ${JSON.stringify(got)}, not ${JSON.stringify(wanted)}`,
            )
        }
        // The Pod the hook answers is always selected, in either form.
        const pod = desired.find((child) => child.kind === 'Pod') as
          (Json & { metadata: { labels: Record<string, string> } }) | undefined
        if (pod === undefined || !selectorsOf.every(([, chosen]) => selects(chosen, pod.metadata.labels)))
          throw new Error('the answered Pod is not selected by every selector')
      }),
      { seed: SEED, numRuns: runs(300) },
    )
    t.ok(seen.legacy > runs(300) / 10, `${seen.legacy} worlds with the earlier release's Deployment`)
    t.ok(seen.current > runs(300) / 10, `${seen.current} worlds without it`)
    t.ok(seen.selectors >= (seen.legacy + seen.current) * 4, `${seen.selectors} selectors checked`)
  },
)
