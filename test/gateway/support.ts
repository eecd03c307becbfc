// What the gateway's tests share: platforms with keys and token keys, tokens minted as a platform would (jose's
// SignJWT), and a gateway app on the fake API server.
import { exportSPKI, generateKeyPair, SignJWT, type JWTPayload } from 'jose'
import type { FastifyInstance } from 'fastify'
import { loadGatewayConfig, type GatewayConfig } from '../../src/config/config-gateway.js'
import { buildGatewayApp, type GatewayPorts } from '../../src/gateway/app.js'
import { loadPlatforms, type Platform } from '../../src/gateway/identity.js'
import { kubeClient } from '../../src/gateway/kube.js'
import type { FakeApiServer } from './fake-apiserver.js'
import { T0 } from '../helpers/instant.js'
import { eventually } from '../support/eventually.js'

export const NOW = new Date(T0)
export const AUDIENCE = 'https://gateway.ctf.example.org'
export const CTFD_KEY = 'ctfd-key-0123456789abcdef0123456789abcdef'
export const CTFD_NEXT_KEY = 'ctfd-next-key-0123456789abcdef0123456789ab'
export const OTHER_KEY = 'other-key-0123456789abcdef0123456789abcdef'
export const HS_SECRET = 'a shared HS256 key of the platform, 32+ characters long'

export const edKeys = await generateKeyPair('EdDSA', { extractable: true })
export const esKeys = await generateKeyPair('ES256', { extractable: true })
export const ED_PUBLIC_PEM = await exportSPKI(edKeys.publicKey)

/** ctfd: keys and HS256 tokens in `challenges` (and `finals`); other: its own key and EdDSA tokens in `other`. */
export const PLATFORMS_YAML = `
platforms:
  - name: ctfd
    namespaces: [challenges, finals]
    keys: [${CTFD_KEY}, ${CTFD_NEXT_KEY}]
    tokens: { hs256: "${HS_SECRET}" }
  - name: other
    namespaces: [other]
    keys: [${OTHER_KEY}]
    tokens:
      algorithm: EdDSA
      publicKey: |
${ED_PUBLIC_PEM.trim()
  .split('\n')
  .map((line) => `        ${line}`)
  .join('\n')}
`

export const platforms: Platform[] = await loadPlatforms(PLATFORMS_YAML)

/** A token as platform `iss` mints it: HS256 for ctfd, EdDSA for other; 5 minutes by default. */
export async function mint(
  claims: JWTPayload & { admin?: boolean },
  options: {
    iss?: string
    alg?: string
    key?: Parameters<SignJWT['sign']>[0]
    exp?: number
    header?: Record<string, unknown>
  } = {},
): Promise<string> {
  const iss = options.iss ?? 'ctfd'
  const alg = options.alg ?? (iss === 'ctfd' ? 'HS256' : 'EdDSA')
  const key = options.key ?? (alg === 'HS256' ? new TextEncoder().encode(HS_SECRET) : edKeys.privateKey)
  const jwt = new SignJWT({ aud: AUDIENCE, iss, ...claims })
    .setProtectedHeader({ alg, ...options.header })
    .setIssuedAt(Math.floor(NOW.getTime() / 1000) - 10)
  if (claims.exp === undefined) jwt.setExpirationTime(options.exp ?? Math.floor(NOW.getTime() / 1000) + 300)
  return jwt.sign(key)
}

export function gatewayConfig(env: Record<string, string> = {}): GatewayConfig {
  return loadGatewayConfig({
    GATEWAY_AUDIENCE: AUDIENCE,
    GATEWAY_PLATFORMS_FILE: '/unused',
    GATEWAY_HEARTBEAT_SECONDS: '1',
    GATEWAY_RETRY_AFTER_SECONDS: '1',
    ...env,
  })
}

export async function gatewayApp(
  t: { teardown(fn: () => unknown): void },
  fake: FakeApiServer,
  env: Record<string, string> = {},
  ports: Partial<GatewayPorts> = {},
): Promise<FastifyInstance> {
  const app = await buildGatewayApp(gatewayConfig(env), {
    kube: kubeClient(fake.kubeconfig, 2000),
    platforms,
    now: () => NOW,
    logger: false,
    ...ports,
  })
  t.teardown(() => app.close())
  return app
}

/** The definition `name` in `namespace`, as an author would create it. */
export function definition(
  fake: FakeApiServer,
  name: string,
  spec: Record<string, unknown> = {},
  namespace = 'challenges',
) {
  return fake.put(namespace, 'challengedefinitions', {
    apiVersion: 'challenge-hooks.dev/v1alpha1',
    kind: 'ChallengeDefinition',
    metadata: { name },
    spec: { pod: { containers: [{ name: 'c', image: 'i' }] }, expose: { type: 'TLS', port: 1337 }, ...spec },
  })
}

/**
 * Waits until the gateway answers `object` (a Challenge as the fake API server stored it) at its version: the
 * gateway reads from a watch, which tells of a write a moment after the fake made it.
 */
export async function seen(app: FastifyInstance, object: Record<string, unknown>): Promise<void> {
  const { metadata, spec } = object as {
    metadata: { namespace: string; resourceVersion: string }
    spec: { definitionRef: { name: string }; owner: { kind: string; id: string } }
  }
  await eventually(`version ${metadata.resourceVersion} of ${spec.definitionRef.name}`, async () => {
    const answer = await app.inject({
      method: 'GET',
      url: `/v1/instances/${spec.definitionRef.name}?namespace=${metadata.namespace}`,
      headers: { authorization: `Bearer ${CTFD_KEY}`, 'challenge-owner': `${spec.owner.kind}:${spec.owner.id}` },
    })
    return answer.json<{ version?: string }>().version === metadata.resourceVersion || undefined
  })
}
