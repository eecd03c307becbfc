// Shared fixtures for the simulator's own tests: a CompositeController like the project's, a Challenge parent,
// and a fake hook whose behaviour each test writes as a few lines of JS.
import { challenge as buildChallenge } from '../helpers/world.js'
import { jsonResponse, type HookName, type HookResponse, type HookTransport } from '../support/simulator/hooks.js'
import type { KubeObject } from '../support/simulator/objects.js'
import type { CompositeController, SyncRequest } from '../support/simulator/index.js'

export const NS = 'ctf'

export function controller(patch: Partial<CompositeController['spec']> = {}): CompositeController {
  return {
    apiVersion: 'metacontroller.k8s.io/v1alpha1',
    kind: 'CompositeController',
    metadata: { name: 'challenge-hooks' },
    spec: {
      generateSelector: true,
      parentResource: { apiVersion: 'challenge-hooks.dev/v1alpha1', resource: 'challenges' },
      childResources: [
        { apiVersion: 'v1', resource: 'secrets', updateStrategy: { method: 'InPlace' } },
        { apiVersion: 'v1', resource: 'services', updateStrategy: { method: 'InPlace' } },
        { apiVersion: 'apps/v1', resource: 'deployments', updateStrategy: { method: 'InPlace' } },
        { apiVersion: 'networking.k8s.io/v1', resource: 'networkpolicies', updateStrategy: { method: 'InPlace' } },
      ],
      hooks: {
        sync: { webhook: { url: 'http://hooks/sync' } },
        finalize: { webhook: { url: 'http://hooks/finalize' } },
      },
      ...patch,
    },
  }
}

/** A Challenge of the definition `web` as the platform creates it (test/helpers/world.ts), labelled by owner only. */
export function challenge(name = 'web-u-alice', spec: Record<string, unknown> = {}): KubeObject {
  return buildChallenge({
    as: 'created',
    name,
    namespace: NS,
    definition: 'web',
    labels: { 'challenge-hooks.dev/owner': 'alice' },
    spec,
  }) as KubeObject
}

export function deployment(
  name: string,
  extra: { annotations?: Record<string, string>; replicas?: number; image?: string } = {},
): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS },
    spec: {
      replicas: extra.replicas ?? 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
        spec: { containers: [{ name: 'app', image: extra.image ?? 'nginx:1.27', ports: [{ containerPort: 8080 }] }] },
      },
    },
  }
}

export function service(name: string, type = 'NodePort'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: NS },
    spec: { type, selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
  }
}

export function secret(name: string, flag = 'flag{x}'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: NS },
    data: { flag: Buffer.from(flag).toString('base64') },
  }
}

export type Handler = (request: any, headers: Record<string, string>) => unknown

/** A transport whose hooks are JS functions; a function returning `{statusCode, ...}` answers with that response. */
export class FakeHook implements HookTransport {
  readonly calls: Array<{ hook: HookName; body: any; headers: Record<string, string> }> = []
  constructor(public handlers: Partial<Record<HookName, Handler>>) {}

  async call(hook: HookName, body: unknown, headers: Record<string, string> = {}): Promise<HookResponse> {
    this.calls.push({ hook, body, headers })
    const handler = this.handlers[hook]
    if (!handler) return jsonResponse({ error: 'NotFound' }, 404)
    const answer = await handler(body, headers)
    return isResponse(answer) ? answer : jsonResponse(answer)
  }

  callsOf(hook: HookName): Array<{ body: any; headers: Record<string, string> }> {
    return this.calls.filter((c) => c.hook === hook)
  }
}

function isResponse(value: unknown): value is HookResponse {
  return typeof value === 'object' && value !== null && 'statusCode' in value
}

/** A small, level-based hook: a Deployment + NodePort Service per Challenge; Ready once both are observed ready. */
export function webHook(request: SyncRequest): unknown {
  const name = request.parent.metadata.name
  const deployments = Object.values(request.children['Deployment.apps/v1'] ?? {})
  const services = Object.values(request.children['Service.v1'] ?? {})
  const available = deployments.some((d) => ((d.status as any)?.availableReplicas ?? 0) >= 1)
  const nodePort = (services[0]?.spec as any)?.ports?.[0]?.nodePort as number | undefined
  const ready = available && nodePort !== undefined
  return {
    status: { phase: ready ? 'Running' : 'Pending', ...(ready ? { endpoint: { port: nodePort } } : {}) },
    children: [deployment(name), service(name)],
  }
}
