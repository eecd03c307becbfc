/**
 * Whole hook requests for the HTTP and fuzz tests, each a step of one instance's life, built with the pure hooks
 * so they are exactly what Metacontroller would send next: a new Challenge, the same one Running with its
 * children observed, the same one being deleted, and a customize call.
 */
import type { CustomizeRequest, SyncRequest } from '../../src/contract/protocol.js'
import { prepared, step } from './drive.js'
import { challenge, netcatDefinition, readyWorld, syncRequest, webDefinition } from './world.js'

export type Version = 'v1' | 'v2'

const CONTROLLER = {
  apiVersion: 'metacontroller.k8s.io/v1alpha1',
  kind: 'CompositeController',
  metadata: { name: 'challenge-hooks' },
}

export function newRequest(version: Version = 'v1'): SyncRequest {
  return syncRequest(challenge(), { related: [webDefinition()], version })
}

/** Two syncs on: admitted, children created and observed ready, status Running. */
export function runningRequest(version: Version = 'v1', kind: 'web' | 'netcat' = 'web'): SyncRequest {
  const definition = kind === 'web' ? webDefinition() : netcatDefinition({}, 'web-login')
  const first = prepared(challenge(), { related: [definition] })
  const observed = readyWorld(first.response.children)
  const second = step(first.parent, { children: observed, related: [definition] })
  return syncRequest(second.parent, { children: observed, related: [definition], version })
}

/** The running instance after `kubectl delete`: the finalize hook's request. */
export function finalizingRequest(version: Version = 'v1'): SyncRequest {
  const running = runningRequest(version)
  const parent = structuredClone(running.parent)
  parent.metadata.deletionTimestamp = '2026-11-22T12:00:00Z'
  return { ...running, parent, finalizing: true }
}

export function customizeRequest(): CustomizeRequest {
  return { controller: CONTROLLER, parent: challenge() as CustomizeRequest['parent'] }
}
