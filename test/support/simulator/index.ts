// A Metacontroller stand-in for tests: an in-memory cluster, the composite controller's sync loop, and transports
// to reach the hook server. See simulator.ts for what is modelled and how faithfully, and in which file.
//
//   const cluster = new Cluster()                                   // clock starts 2025-01-01T00:00:00Z
//   cluster.registerCRD(challengesCrd)                             // optional: prune + default like the API server
//   const app = await buildApp(config, { logger: false, now: () => cluster.now() })
//   const sim = new Simulator(compositeController, cluster, injectTransport(app, { token }))
//   cluster.create(definition); cluster.create(challenge)
//   await sim.runUntilQuiet()                                       // syncs until nothing is queued
//   cluster.settle(); await sim.runUntilQuiet()                     // Deployments ready, Services allocated, routes accepted
//   t.equal(await sim.runUntilQuiet(), 0)                           // nothing left to write
//   await sim.advance(1800)                                         // resyncs fire on the way
export { ApiError } from './admission.js'
export { Cluster, timestamp } from './cluster.js'
export type {
  ClusterOptions,
  DeleteOptions,
  PodFailureMode,
  WatchEvent,
  WatchListener,
  WorkloadTarget,
} from './cluster.js'
export { GATEWAY_API, GATEWAY_CONTROLLER, routeParentStatus } from './gateways.js'
export type { ParentRef, RouteConditionInput } from './gateways.js'
export { httpTransport, injectTransport, jsonResponse } from './hooks.js'
export type { EndpointOptions, HookName, HookResponse, HookTransport, HttpOptions, Injectable } from './hooks.js'
export { LAST_APPLIED } from './merge.js'
export { RESOURCES, groupName, labelMatcher, resourceByKind, resourceByName } from './objects.js'
export type { KubeObject, LabelSelector, ObjectMeta, ObjectRef, OwnerReference } from './objects.js'
export type { HookVersion } from './related.js'
export type { RelatedRule, SyncAnswer } from './response.js'
export type { Awaitable, ClusterBackend } from './backend.js'
export { Simulator } from './simulator.js'
export type {
  CompositeController,
  Hook,
  SimEvent,
  SimulatorOptions,
  SyncRequest,
  SyncResult,
  UpdateMethod,
} from './controller.js'
