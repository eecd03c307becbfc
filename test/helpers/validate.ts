/** Offline validation of desired children with kubernetes-models (the API server's own OpenAPI schemas). */
import { Deployment } from 'kubernetes-models/apps/v1'
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1'
import { Secret, Service } from 'kubernetes-models/v1'

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  Secret,
  Service,
  Deployment,
  NetworkPolicy,
  Ingress,
}

/** Throws with the kind and name of the first child the API server would refuse. */
export function validateChild(child: { kind?: unknown; metadata?: { name?: unknown } }): void {
  const Model = MODELS[String(child.kind)]
  if (!Model) throw new Error(`unexpected child kind ${String(child.kind)}`)
  try {
    new Model(structuredClone(child) as never).validate()
  } catch (error) {
    throw new Error(`${String(child.kind)} ${String(child.metadata?.name)}: ${(error as Error).message}`)
  }
}

export function validateChildren(children: readonly { kind?: unknown; metadata?: { name?: unknown } }[]): void {
  for (const child of children) validateChild(child)
}
