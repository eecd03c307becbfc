// The pinned Gateway API and Traefik releases whose CRDs the route children are checked against, where their CRD
// files are in the Go module cache, and every route child the hook renders: shared by test/manifests/routes.test.ts
// (offline, against the schemas) and test/cluster/routes.test.ts (a real API server, CEL rules included).
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { renderChildren, type RenderInput } from '../../src/challenge/children.js'
import { resolveDefinition } from '../../src/challenge/definition.js'
import { childNames, podLabels } from '../../src/challenge/names.js'
import { loadConfig } from '../../src/config/config.js'
import type { DesiredChild } from '../../src/contract/protocol.js'
import { toolMissing } from './tools.js'

/** Pinned in controlplane/route-crds.txt, which controlplane/build.sh downloads. */
const PINNED = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../../controlplane/route-crds.txt'), 'utf8')
  .split('\n')
  .filter((line) => line !== '' && !line.startsWith('#'))
const pinned = (module: string) => PINNED.find((line) => line.startsWith(`${module}@`)) as string
export const GATEWAY_API_MODULE = pinned('sigs.k8s.io/gateway-api')
export const TRAEFIK_MODULE = pinned('github.com/traefik/traefik/v3')

function moduleCache(): string {
  if (process.env.GOMODCACHE) return process.env.GOMODCACHE
  const go = spawnSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8', timeout: 30_000 })
  return go.status === 0 && go.stdout.trim() !== '' ? go.stdout.trim() : join(homedir(), 'go', 'pkg', 'mod')
}

const cache = moduleCache()
export const gatewayCrd = (plural: string) =>
  join(cache, GATEWAY_API_MODULE, 'config/crd/standard', `gateway.networking.k8s.io_${plural}.yaml`)
export const CRD_FILES: Record<string, string> = {
  HTTPRoute: gatewayCrd('httproutes'),
  TLSRoute: gatewayCrd('tlsroutes'),
  Gateway: gatewayCrd('gateways'),
  IngressRoute: join(
    cache,
    TRAEFIK_MODULE,
    'docs/content/reference/dynamic-configuration/kubernetes-crd-definition-v1.yml',
  ),
}
CRD_FILES.IngressRouteTCP = CRD_FILES.IngressRoute as string
CRD_FILES.TLSStore = CRD_FILES.IngressRoute as string
/** Why the pinned CRDs cannot be used here (a tap skip reason), or false when they are all in the cache. */
export function missingCrds(): string | false {
  const missing = [...new Set(Object.values(CRD_FILES))].filter((file) => !existsSync(file))
  return missing.length > 0
    ? toolMissing(
        `the pinned CRDs are not in the Go module cache (${missing.join(', ')}): go mod download ${GATEWAY_API_MODULE} ${TRAEFIK_MODULE}`,
      )
    : false
}

/** Every route child, for every routing choice and with and without listener names. */
export function routeChildren(): DesiredChild[] {
  const resolved = (type: string) => {
    const result = resolveDefinition('pwn', {
      pod: { containers: [{ name: 'c', image: 'i' }] },
      expose: { type, port: 1337 },
    })
    if (!result.found) throw new Error(result.message)
    return result.definition
  }
  const envs: Record<string, string>[] = [
    {
      HTTP_ROUTING: 'GatewayAPI',
      TLS_ROUTING: 'GatewayAPI',
      GATEWAY_HTTP_LISTENER: 'https',
      GATEWAY_TLS_LISTENER: 'tls',
    },
    { HTTP_ROUTING: 'GatewayAPI', TLS_ROUTING: 'GatewayAPI' },
    { HTTP_ROUTING: 'Traefik', TLS_ROUTING: 'Traefik' },
    { HTTP_ROUTING: 'Traefik', TLS_ROUTING: 'Traefik', INGRESS_TLS_SECRET: 'wildcard' },
  ]
  return envs.flatMap((env) =>
    ['HTTP', 'TLS'].map((type) => {
      const input: RenderInput = {
        namespace: 'challenges',
        // The longest name a child can have, and the longest host a domain allows.
        names: childNames(`${'a'.repeat(250)}-u-alice`, 'uid-1'),
        podLabels: podLabels(childNames(`${'a'.repeat(250)}-u-alice`, 'uid-1')),
        definition: resolved(type),
        parameters: {},
        flagData: 'eA==',
        instanceId: '0123456789abcdef',
        owner: { kind: 'User', id: 'alice' },
        run: 0,
        admittedAt: '2026-11-22T12:00:00Z',
        config: loadConfig({
          GATEWAY: 'gateway-system/challenges',
          BASE_DOMAIN: `${'d'.repeat(63)}.${'e'.repeat(63)}.${'f'.repeat(63)}.${'g'.repeat(44)}`,
          ...env,
        }),
        withPod: true,
      }
      return renderChildren(input).at(-1) as DesiredChild
    }),
  )
}
