// The instance id, the hosts built on it and the flags, as the whole hook answers them, against the contract's
// formulas computed here (test/helpers/contract.ts: HMAC over the stated inputs with node:crypto), never read back
// from the status being checked: every part of the key counts (the namespace included: two namespaces may hold a
// Challenge of the same definition and owner), and the flag Secret holds the PerOwner or PerInstance flag.
import t from 'tap'
import type { KubeObject } from '../../src/contract/protocol.js'
import { testConfig } from '../helpers/app.js'
import {
  ALICE,
  base64,
  expectedHost,
  expectedInstanceId,
  expectedPerInstanceFlag,
  expectedPerOwnerFlag,
  type OwnerKey,
} from '../helpers/contract.js'
import { prepared, step } from '../helpers/drive.js'
import { challenge, readyWorld, tlsDefinition, webDefinition, type Json } from '../helpers/world.js'

const SECRET = testConfig().flagSecret

/** The first answer to a new Challenge of `key`, in its namespace. */
function firstAnswer(key: OwnerKey, definition: KubeObject, uid?: string, config: Json = {}) {
  const parent = challenge({
    owner: key.id,
    ownerKind: key.kind as 'User' | 'Team',
    definition: key.definition,
    ...(uid === undefined ? {} : { uid }),
  })
  parent.metadata.namespace = key.namespace
  const named = { ...definition, metadata: { ...definition.metadata, name: key.definition, namespace: key.namespace } }
  return step(parent, { related: [named], config })
}

const children = (answer: ReturnType<typeof firstAnswer>) =>
  answer.response.children as unknown as (Json & { kind: string; spec: Json; data?: Json })[]

t.test(
  'status.instanceId and the HTTP host: HMAC-SHA256 of instance:<namespace>/<definition>/<owner.kind>/<owner.id>',
  async (t) => {
    const keys: OwnerKey[] = [
      ALICE,
      { ...ALICE, namespace: 'ctf-finals' },
      { ...ALICE, definition: 'web-admin' },
      { ...ALICE, kind: 'Team' },
      { ...ALICE, id: 'bob' },
    ]
    const hosts = new Set<string>()
    for (const key of keys) {
      const answer = firstAnswer(key, webDefinition())
      const what = `${key.namespace}/${key.definition}/${key.kind}/${key.id}`
      t.equal(answer.status.instanceId, expectedInstanceId(SECRET, key), `${what}: the instance id`)
      const ingress = children(answer).find((child) => child.kind === 'Ingress') as unknown as {
        spec: { rules: { host: string }[] }
      }
      const host = expectedHost(SECRET, key, 'challenges.localhost')
      t.equal(ingress.spec.rules[0]?.host, host, `${what}: the Ingress routes the id's host`)
      hosts.add(host)
    }
    t.equal(hosts.size, keys.length, 'each part of the key makes another host: no two instances share one')
  },
)

t.test("the endpoint a player reads is the formula's host, for HTTP and TLS", async (t) => {
  const config = {
    baseDomain: 'ctf.example.org',
    ingressTlsSecret: 'wildcard',
    tlsBaseDomain: 'tcp.ctf.example.org',
    gateway: { namespace: 'gateway-system', name: 'challenges' },
  }
  const web = prepared(challenge(), { related: [webDefinition()], config })
  const running = step(web.parent, { related: [webDefinition()], children: readyWorld(web.response.children), config })
  const host = expectedHost(SECRET, ALICE, 'ctf.example.org')
  t.strictSame(running.status.endpoint, {
    type: 'HTTP',
    host,
    port: 443,
    url: `https://${host}/`,
    connection: `https://${host}/`,
  })

  const tlsKey = { ...ALICE, definition: 'pwn-tls' }
  const tls = firstAnswer(tlsKey, tlsDefinition(), undefined, config)
  const route = children(tls).find((child) => child.kind === 'TLSRoute') as unknown as { spec: { hostnames: string[] } }
  t.strictSame(
    route.spec.hostnames,
    [expectedHost(SECRET, tlsKey, 'tcp.ctf.example.org')],
    'the TLSRoute routes the SNI host of the id',
  )
})

t.test(
  'the flag Secret holds the PerOwner flag over the owner key, or the PerInstance flag over the uid',
  async (t) => {
    const flagOf = (answer: ReturnType<typeof firstAnswer>) =>
      (children(answer).find((child) => child.kind === 'Secret')?.data as Json).flag
    const uid = '3f1e2d4c-5b6a-4798-8a9b-0c1d2e3f4a5b'
    t.equal(
      flagOf(firstAnswer(ALICE, webDefinition(), uid)),
      base64(expectedPerOwnerFlag(SECRET, ALICE)),
      'PerOwner, flag{ and } by default',
    )
    const otherNamespace = { ...ALICE, namespace: 'ctf-finals' }
    t.equal(
      flagOf(firstAnswer(otherNamespace, webDefinition(), uid)),
      base64(expectedPerOwnerFlag(SECRET, otherNamespace)),
      'PerOwner in another namespace',
    )
    const wrapped = webDefinition({ flag: { mode: 'PerOwner', prefix: 'CTF{', suffix: '}!' } })
    t.equal(
      flagOf(firstAnswer(ALICE, wrapped, uid)),
      base64(expectedPerOwnerFlag(SECRET, ALICE, 'CTF{', '}!')),
      'PerOwner with the prefix and suffix',
    )
    const perInstance = webDefinition({ flag: { mode: 'PerInstance' } })
    t.equal(
      flagOf(firstAnswer(ALICE, perInstance, uid)),
      base64(expectedPerInstanceFlag(SECRET, uid)),
      'PerInstance, over the uid',
    )
  },
)
