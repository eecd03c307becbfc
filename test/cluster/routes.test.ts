// The routes on a real API server: Gateway API's standard CRDs (v1.6.3) and Traefik's (v3.7.13) from the Go module
// cache installed, the install with every routing component applied without a warning, every route child the
// hook renders accepted by the API server's own validation (CEL rules included, and they bite), the Gateway and
// TLSStore of docs/examples/routing/ accepted, and a route status written as a gateway controller would: what the hook reads from the
// stored, defaulted route decides Running or WaitingForEndpoint.
// Only on the suite's own control plane (an existing cluster keeps the CRDs it has); skipped without the CRDs.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { relative, join } from 'node:path'
import { tmpdir } from 'node:os'
import t from 'tap'
import { parseAllDocuments } from 'yaml'
import { sync } from '../../src/challenge/hooks.js'
import { loadConfig } from '../../src/config/config.js'
import type { DesiredChild } from '../../src/contract/protocol.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import { ApiError } from '../support/simulator/index.js'
import { resourceByKind, routeParentStatus, type KubeObject } from '../support/simulator/index.js'
import { challenge, controllerRef, observedChildren, readyWorld, syncRequest, tlsDefinition } from '../helpers/world.js'
import { componentsDir, manifestsDir, ROUTING_EXAMPLES } from '../helpers/manifests.js'
import { CRD_FILES, GATEWAY_API_MODULE, missingCrds, routeChildren, TRAEFIK_MODULE } from '../support/route-crds.js'
import { connect, install, NAMESPACE_PREFIX, type Json } from '../support/kube/harness.js'

const skip = missingCrds()
const env = skip === false ? await connect(t) : undefined
const NS = `${NAMESPACE_PREFIX}routes`

t.test(
  `routes on a real API server (${GATEWAY_API_MODULE}, ${TRAEFIK_MODULE})`,
  { skip: skip || (env?.owned === false ? 'an existing cluster: its route CRDs are left alone' : false) },
  async (t) => {
    const cluster = env as NonNullable<typeof env>
    const { rest, kubectl } = cluster
    for (const file of new Set(Object.values(CRD_FILES)))
      await kubectlOk(kubectl, ['apply', '--server-side', '-f', file])
    await kubectlOk(kubectl, [
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/httproutes.gateway.networking.k8s.io',
      'crd/tlsroutes.gateway.networking.k8s.io',
      'crd/gateways.gateway.networking.k8s.io',
      'crd/ingressroutes.traefik.io',
      'crd/ingressroutetcps.traefik.io',
      'crd/tlsstores.traefik.io',
    ])
    await install(cluster)

    await t.test('the install with every routing component applies without a warning', async (t) => {
      const rules: Record<string, string> = {
        'gateway-api-http': 'httproutes',
        'gateway-api-tls': 'tlsroutes',
        'traefik-http': 'ingressroutes',
        'traefik-tls': 'ingressroutetcps',
      }
      for (const components of [
        ['gateway-api-http', 'gateway-api-tls'],
        ['traefik-http', 'traefik-tls'],
      ]) {
        const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-overlay-'))
        t.teardown(() => rmSync(dir, { recursive: true, force: true }))
        const overlay = {
          resources: [relative(dir, manifestsDir)],
          components: components.map((name) => relative(dir, join(componentsDir, name))),
        }
        writeFileSync(join(dir, 'kustomization.yaml'), JSON.stringify(overlay))
        const applied = await kubectlOk(kubectl, ['apply', '--server-side', '--force-conflicts', '-k', dir])
        t.equal(applied.stderr, '', `${components.join(' + ')}: no warning`)
        const controller = await rest.get<{ spec: { childResources: { resource: string }[] } }>(
          '/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers/challenge-hooks',
        )
        const resources = controller.spec.childResources.map((rule) => rule.resource)
        t.strictSame(
          resources.slice(-2),
          components.map((name) => rules[name]),
          `${components.join(' + ')}: their child rules in place`,
        )
      }
      await install(cluster)
    })

    await rest.call('POST', '/api/v1/namespaces', {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    })
    t.teardown(() => rest.call('DELETE', `/api/v1/namespaces/${NS}`).catch(() => undefined))
    const path = (child: { apiVersion: string; kind: string }, name?: string) => {
      const resource = resourceByKind(child.apiVersion, child.kind)
      return `/apis/${child.apiVersion}/namespaces/${NS}/${resource?.resource}${name === undefined ? '' : `/${name}`}`
    }
    const create = (child: DesiredChild) =>
      rest.call('POST', path(child), {
        body: { ...child, metadata: { ...child.metadata, namespace: NS } },
      }) as Promise<KubeObject>

    await t.test('every route child is accepted by the API server (schema and CEL rules)', async (t) => {
      for (const [index, child] of routeChildren().entries()) {
        const stored = await create({ ...child, metadata: { ...child.metadata, name: `route-${index}` } })
        t.hasStrict(
          stored,
          { kind: child.kind, spec: child.spec },
          `${child.kind} #${index} stored as sent (defaults added)`,
        )
      }
    })

    await t.test('the CEL rules bite: an IP as SNI host, a Service backend without a port', async (t) => {
      const tls = routeChildren().find((child) => child.kind === 'TLSRoute') as DesiredChild & { spec: Json }
      const ip = { ...tls, metadata: { name: 'ip-host' }, spec: { ...tls.spec, hostnames: ['192.0.2.1'] } }
      await t.rejects(create(ip), { name: 'ApiError', message: /Hostnames cannot contain an IP/ })
      const noPort = {
        ...tls,
        metadata: { name: 'no-port' },
        spec: { ...tls.spec, rules: [{ backendRefs: [{ name: 'svc' }] }] },
      }
      await t.rejects(create(noPort), { name: 'ApiError', message: /Must have port for Service reference/ })
    })

    await t.test('the Gateway and the TLSStore of docs/examples/routing/ are accepted', async (t) => {
      const accepted: string[] = []
      for (const file of Object.values(ROUTING_EXAMPLES)) {
        for (const document of parseAllDocuments(readFileSync(file, 'utf8'))) {
          const object = document.toJS() as KubeObject | null
          if (object?.kind !== 'Gateway' && object?.kind !== 'TLSStore') continue
          const namespace = object.metadata.namespace as string
          await rest
            .call('POST', '/api/v1/namespaces', {
              body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
            })
            .catch((error: unknown) => {
              if (!(error instanceof ApiError && error.reason === 'AlreadyExists')) throw error
            })
          const stored = (await rest.call(
            'POST',
            `/apis/${object.apiVersion}/namespaces/${namespace}/${object.kind === 'Gateway' ? 'gateways' : 'tlsstores'}`,
            { body: object },
          )) as KubeObject
          t.equal(stored.metadata.name, object.metadata.name, `${object.kind} ${namespace}/${object.metadata.name}`)
          accepted.push(object.kind)
        }
      }
      // The loop skips the examples' other documents: it must have found both, or it checked nothing.
      t.strictSame(accepted.sort(), ['Gateway', 'TLSStore'], 'both examples were found and stored')
    })

    await t.test(
      'a route status written as a gateway controller would: the hook reads Running or WaitingForEndpoint from it',
      async (t) => {
        // The route was just stored and accepted: no settle time, so that the verdict alone decides the phase.
        const config = loadConfig({
          GATEWAY: 'gateway-system/challenges',
          GATEWAY_TLS_LISTENER: 'tls',
          ENDPOINT_SETTLE_MS: '0',
        })
        const parent = challenge({ name: 'pwn-tls-u-alice', definition: 'pwn-tls' })
        // The second sync: the flag Secret and the policies are the instance's own, so the answer holds every child.
        const created = sync(syncRequest(parent, { related: [tlsDefinition()] }), config, new Date())
        const first = sync(
          syncRequest(
            { ...parent, status: created.status },
            { related: [tlsDefinition()], children: observedChildren(created.children) },
          ),
          config,
          new Date(),
        )
        const route = first.children.at(-1) as DesiredChild & { spec: { parentRefs: { name: string }[] } }
        t.equal(route.kind, 'TLSRoute')
        await create(route)
        for (const [verdict, expected] of [
          [
            { accepted: 'NotAllowedByListeners', resolvedRefs: true },
            { phase: 'Pending', reason: 'WaitingForEndpoint' },
          ],
          [
            { accepted: true, resolvedRefs: true },
            { phase: 'Running', endpoint: { type: 'TLS', port: 443 } },
          ],
        ] as const) {
          const current = await rest.get<KubeObject>(path(route, route.metadata.name))
          const status = {
            parents: [
              routeParentStatus(
                current,
                route.spec.parentRefs[0] as { name: string },
                verdict,
                new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
              ),
            ],
          }
          await rest.call('PUT', `${path(route, route.metadata.name)}/status`, { body: { ...current, status } })
          const stored = await rest.get<KubeObject>(path(route, route.metadata.name))
          t.match(
            (stored.status as Json).parents,
            status.parents,
            'the API server keeps the status as written (the parentRef defaulted)',
          )
          // As Metacontroller would have made it: owned by the Challenge (this test created it as the admin).
          const owned = {
            ...stored,
            metadata: {
              ...stored.metadata,
              namespace: 'challenges',
              ownerReferences: [controllerRef(parent.metadata.uid as string)],
            },
          }
          const observed = readyWorld(first.children).map((child) => (child.kind === 'TLSRoute' ? owned : child))
          const answer = sync(
            syncRequest({ ...parent, status: first.status }, { related: [tlsDefinition()], children: observed }),
            config,
            new Date(),
          )
          t.match(answer.status, expected, `${JSON.stringify(verdict)}: ${JSON.stringify(expected)}`)
        }
      },
    )
  },
)
