/**
 * Offline validation of desired children with kubernetes-models: the API server's own OpenAPI schemas for
 * built-in kinds, and the schemas generated from Gateway API's and Traefik's Go types for the routes (CEL rules
 * and unknown fields are checked against the real CRDs in test/manifests/routes.test.ts).
 */
import { HTTPRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/HTTPRoute'
import { TLSRoute } from '@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/TLSRoute'
import { IngressRoute } from '@kubernetes-models/traefik/traefik.io/v1alpha1/IngressRoute'
import { IngressRouteTCP } from '@kubernetes-models/traefik/traefik.io/v1alpha1/IngressRouteTCP'
import { Deployment } from 'kubernetes-models/apps/v1'
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1'
import { Pod, Secret, Service } from 'kubernetes-models/v1'

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  Secret,
  Service,
  Deployment,
  Pod,
  NetworkPolicy,
  Ingress,
  HTTPRoute,
  TLSRoute,
  IngressRoute,
  IngressRouteTCP,
}

/** Throws with the kind and name of the first child the API server would refuse. */
export function validateChild(child: { kind?: unknown; metadata?: { name?: unknown } }): void {
  const Model = MODELS[String(child.kind)]
  if (!Model) throw new Error(`unexpected child kind ${String(child.kind)}`)
  try {
    new Model(structuredClone(child) as never).validate()
  } catch (error) {
    throw new Error(`${String(child.kind)} ${String(child.metadata?.name)}: ${(error as Error).message}`, {
      cause: error,
    })
  }
}

export function validateChildren(children: readonly { kind?: unknown; metadata?: { name?: unknown } }[]): void {
  for (const child of children) validateChild(child)
}
