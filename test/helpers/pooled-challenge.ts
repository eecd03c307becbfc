// A Challenge's world when its definition keeps a warm pool, seen from the Challenge's own hook: the definition with
// its pool's state, and the flag Secret of a pooled pod claimed for the Challenge (docs/api.md#warm-pools).
import type { KubeObject } from '../../src/contract/protocol.js'
import { UID, webDefinition } from './world.js'

export const DEFINITION_UID = 'definition-uid-1'

/** web-login with a pool of 2 and a PerInstance flag, its status.pool in `poolState`. */
export function pooledDefinition(poolState = 'Ready', spec: Record<string, unknown> = {}): KubeObject {
  const definition = webDefinition({ flag: { mode: 'PerInstance' }, pool: { size: 2 }, ...spec })
  definition.metadata.uid = DEFINITION_UID
  definition.status = { pool: { state: poolState } }
  return definition
}

/** The flag Secret of the pool's pod in `slot`, claimed for the Challenge UID: the definition's child. */
export function claimedSecret(slot: string): KubeObject {
  return <KubeObject>{
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `web-login.pool-${slot}-flag`,
      namespace: 'challenges',
      uid: `pool-secret-uid-${slot}`,
      labels: {
        'app.kubernetes.io/managed-by': 'challenge-hooks',
        'challenge-hooks.dev/definition': 'web-login',
        'challenge-hooks.dev/pool-slot': slot,
        'challenge-hooks.dev/claimed-by': UID,
      },
      ownerReferences: [
        {
          apiVersion: 'challenge-hooks.dev/v1alpha1',
          kind: 'ChallengeDefinition',
          name: 'web-login',
          uid: DEFINITION_UID,
          controller: true,
        },
      ],
    },
    data: { flag: 'ZmxhZ3tzb21ldGhpbmd9' },
  }
}
