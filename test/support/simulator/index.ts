// A Metacontroller stand-in for tests: an in-memory cluster, the composite controller's sync loop, and transports
// to reach the hook server. See simulator.ts for what is modelled and how faithfully.
export { ApiError } from './admission.js'
export { Cluster, timestamp } from './cluster.js'
export type { ClusterOptions, DeleteOptions, PodFailureMode, WatchEvent, WatchListener, WorkloadTarget } from './cluster.js'
export { httpTransport, injectTransport, jsonResponse } from './hooks.js'
export type { EndpointOptions, HookName, HookResponse, HookTransport, HttpOptions, Injectable } from './hooks.js'
export { LAST_APPLIED } from './merge.js'
export { RESOURCES, groupName, labelMatcher } from './objects.js'
export type { KubeObject, LabelSelector, ObjectMeta, ObjectRef, OwnerReference } from './objects.js'
export type { HookVersion } from './related.js'
export type { RelatedRule, SyncAnswer } from './response.js'
export { Simulator } from './simulator.js'
export type {
  CompositeController,
  Hook,
  SimEvent,
  SimulatorOptions,
  SyncRequest,
  SyncResult,
  UpdateMethod,
} from './simulator.js'
