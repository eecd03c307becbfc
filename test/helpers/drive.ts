/** Drives the pure hooks through time: one call, then the world as it would look after Metacontroller applied it. */
import { finalize, sync } from '../../src/challenge/hooks.js'
import type { Config } from '../../src/config/config.js'
import type { KubeObject, SyncResponse } from '../../src/contract/protocol.js'
import { testConfig } from './app.js'
import { observedChildren, syncRequest, type Json, type RequestOptions } from './world.js'
import { T0 } from './instant.js'

export const at = (seconds: number): Date => new Date(T0 + seconds * 1000)

export interface Step {
  response: SyncResponse
  status: Json
  parent: KubeObject & { spec: Json }
}

/** Runs sync (or finalize) and returns the answer plus the parent carrying the new status. */
export function step(
  parent: KubeObject & { spec: Json },
  options: RequestOptions & { now?: Date; config?: Partial<Config> } = {},
): Step {
  const config = testConfig(options.config)
  const request = syncRequest(parent, options)
  const run = options.finalizing ? finalize : sync
  const response = run(request, config, options.now ?? at(0))
  return { response, status: response.status, parent: { ...parent, status: response.status } }
}

/**
 * The first sync of a new instance, then the next one once Metacontroller has created what the first answered:
 * its flag Secret and NetworkPolicies are observed as its own, so this answer holds every child, the Deployment
 * included (the first holds no Deployment).
 */
export function prepared(
  parent: KubeObject & { spec: Json },
  options: RequestOptions & { now?: Date; config?: Partial<Config> } = {},
): Step {
  const first = step(parent, options)
  return step(first.parent, { ...options, children: observedChildren(first.response.children) })
}

export function kinds(response: SyncResponse): string[] {
  return response.children.map((child) => `${child.kind}/${child.metadata.name}`)
}
