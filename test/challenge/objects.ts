// The instance the domain tests of single rules look at (decisions, workload, flag, observed and budget tests),
// and a maker of bare objects in its namespace.
import { childNames } from '../../src/challenge/names.js'
import type { KubeObject } from '../../src/protocol.js'

export const NAMESPACE = 'ctf'
export const UID = '5b1f0c2e-8f7d-4c53-9a59-0d7b3a1e2f10'
export const names = childNames('web-login-u-alice', UID)

/** A `kind` object named `name` in NAMESPACE; `extra` replaces whole top-level fields (metadata too). */
export function object(kind: string, name: string, extra: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: 'v1', kind, metadata: { name, namespace: NAMESPACE }, ...extra } as KubeObject
}
