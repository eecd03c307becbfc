/**
 * Pre-pulled images (docs/api.md#pre-pulled-images): the DaemonSet `<definition>.images` that holds a definition's
 * images on every node of the player pool, and the definition's status.images, read from that DaemonSet and its pods.
 *
 * Each image is an image volume of its own, mounted into a container of the pause image that does nothing: no author
 * image is run, so none needs a shell, and the kubelet reports each container's wait for its own volume's image
 * (ErrImagePull, ImagePullBackOff) as that container's waiting reason, which makes the report per image.
 */
import type { IDaemonSet } from 'kubernetes-models/apps/v1/DaemonSet'
import type { Config } from '../config/config.js'
import type { DesiredChild, KubeObject } from '../contract/protocol.js'
import { ImagesState, Label, MANAGED_BY } from '../contract/api.js'
import type { ResolvedDefinition } from './definition.js'
import { isBeingDeleted, isOwnedBy, objectsOfKind, ownChild, type ObservedIndex } from './observed.js'
import { formatTime } from './time.js'
import { count, cut, field, list, record, text } from './untrusted.js'

export function imagesDaemonSetName(definition: string): string {
  return `${definition}.images`
}

/** Every image a pod of the definition runs, once each, in the pod's order: the isolation gate's, then the containers'. */
export function definitionImages(definition: ResolvedDefinition, config: Config): string[] {
  return [...new Set([config.isolationGate.image, ...definition.containers.map((container) => container.image)])]
}

/** The name of image `index`'s volume and of the container it is mounted into. */
function slot(index: number): string {
  return `image-${index}`
}

/** A pause container's: enough to start it under any LimitRange's minimum we know of, and no more. */
const PAUSE_RESOURCES = {
  requests: { cpu: '1m', memory: '8Mi', 'ephemeral-storage': '1Mi' },
  limits: { cpu: '10m', memory: '16Mi', 'ephemeral-storage': '1Mi' },
}

/**
 * The DaemonSet on the player pool's nodes. Its pods hold no flag and serve nobody: hardened as an instance's pod, on
 * the same node selector and tolerations, with the definition's pull Secrets (its images are pulled as its pods'
 * are). Not its RuntimeClass: a sandbox need not run image volumes, and the images are the node's either way.
 */
export function imagesDaemonSet(definition: ResolvedDefinition, config: Config): IDaemonSet & DesiredChild {
  const labels = { [Label.managedBy]: MANAGED_BY, [Label.prepull]: definition.name }
  const images = definitionImages(definition, config)
  const pool = config.instancePods
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: imagesDaemonSetName(definition.name), labels: { ...labels } },
    spec: {
      selector: { matchLabels: { ...labels } },
      // Every node at once: a pod that is not ready serves nobody, and a node waits for nothing else.
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '100%' } },
      revisionHistoryLimit: 2,
      template: {
        metadata: { labels: { ...labels } },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: 1,
          ...(pool.nodeSelector === undefined ? {} : { nodeSelector: { ...pool.nodeSelector } }),
          ...(pool.tolerations.length === 0
            ? {}
            : { tolerations: pool.tolerations.map((toleration) => ({ ...toleration })) }),
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65535,
            runAsGroup: 65535,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          ...(definition.imagePullSecrets.length === 0
            ? {}
            : { imagePullSecrets: definition.imagePullSecrets.map((name) => ({ name })) }),
          containers: images.map((_, index) => ({
            name: slot(index),
            image: config.prepull.pauseImage,
            imagePullPolicy: 'IfNotPresent',
            resources: structuredClone(PAUSE_RESOURCES),
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ['ALL'] },
            },
            volumeMounts: [{ name: slot(index), mountPath: '/image', readOnly: true }],
          })),
          volumes: images.map((reference, index) => ({
            name: slot(index),
            image: { reference, pullPolicy: 'IfNotPresent' },
          })),
        },
      },
    },
  }
}

export interface ImageFailure {
  node: string
  reason: string
  message: string
}

export interface ImageReport {
  image: string
  desired: number
  ready: number
  failed: number
  /** At most MAX_FAILURES, by node name. */
  failures: ImageFailure[]
}

export interface ImagesReport {
  state: ImagesState
  message?: string
  nodes: number
  images: ImageReport[]
}

/** Failures listed per image: the count says how many there are in all. */
export const MAX_FAILURES = 10

/** A container waiting for these is on its way, not failing. */
const STARTING = new Set(['ContainerCreating', 'PodInitializing'])

/** The kubelet alternates these two while it retries one pull: one reason, lest each retry write the status. */
function failureReason(reason: string): string {
  return reason === 'ErrImagePull' ? 'ImagePullBackOff' : reason
}

/**
 * What the DaemonSet (a child of the definition) and its pods (related by their label, counted only when the
 * DaemonSet observed as the definition's own controls them) say of each image. Until the DaemonSet's status is of
 * its current generation, its count of nodes is not that of the pods it makes now: Pulling, with no count trusted.
 */
export function imagesReport(
  children: ObservedIndex,
  related: ObservedIndex,
  definition: ResolvedDefinition,
  definitionUid: string,
  config: Config,
): ImagesReport {
  const images = definitionImages(definition, config)
  const daemonSet = ownChild(children, 'DaemonSet', imagesDaemonSetName(definition.name), definitionUid)
  const status = field(daemonSet, 'status')
  const observed = count(field(status, 'observedGeneration'))
  const current =
    daemonSet !== undefined && observed !== undefined && observed >= (count(daemonSet.metadata.generation) ?? 0)
  const nodes = current ? (count(field(status, 'desiredNumberScheduled')) ?? 0) : 0
  const dsUid = text(daemonSet?.metadata.uid)
  const pods =
    dsUid === undefined
      ? []
      : objectsOfKind(related, 'Pod').filter((pod) => isOwnedBy(pod, dsUid) && !isBeingDeleted(pod))
  const reports = images.map((image) => imageReport(image, nodes, pods))
  const failed = reports.some((report) => report.failed > 0)
  const ready = current && nodes > 0 && reports.every((report) => report.ready >= nodes)
  return {
    state: failed ? ImagesState.Failed : ready ? ImagesState.Ready : ImagesState.Pulling,
    ...(current && nodes === 0 ? { message: NO_NODES } : {}),
    nodes,
    images: reports,
  }
}

export const NO_NODES = "No node may run the definition's pods (INSTANCE_NODE_SELECTOR, INSTANCE_TOLERATIONS)."

function imageReport(image: string, nodes: number, pods: readonly KubeObject[]): ImageReport {
  let ready = 0
  const failures: ImageFailure[] = []
  for (const pod of pods) {
    const spec = field(pod, 'spec')
    // The volume that pulls this image in this pod (a pod of an earlier rendering may have none).
    const volume = list(field(spec, 'volumes')).find((each) => text(field(field(each, 'image'), 'reference')) === image)
    const name = text(field(volume, 'name'))
    if (name === undefined) continue
    const state = field(
      list(field(field(pod, 'status'), 'containerStatuses')).find((each) => text(field(each, 'name')) === name),
      'state',
    )
    if (record(field(state, 'running')) !== undefined) {
      ready += 1
      continue
    }
    const waiting = record(field(state, 'waiting'))
    const reason = text(waiting?.reason)
    if (reason === undefined || STARTING.has(reason)) continue
    failures.push({
      node: text(field(spec, 'nodeName')) ?? '',
      reason: failureReason(reason),
      message: text(waiting?.message) ?? '',
    })
  }
  failures.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))
  return { image, desired: nodes, ready, failed: failures.length, failures: failures.slice(0, MAX_FAILURES) }
}

/** The CRD's bound on a failure's message. */
export const FAILURE_MESSAGE_LIMIT = 1024

/**
 * status.images to answer: the parent's as it is while what it says is the same (a failure's message left aside:
 * the kubelet words each retry anew), else the new report stamped with now. Every Challenge of the definition relates
 * it, so an unchanged status must be the same bytes.
 */
export function imagesStatus(previous: unknown, report: ImagesReport, at: number): Record<string, unknown> {
  const current = record(field(previous, 'images'))
  if (current !== undefined && sameReport(current, report)) return current
  return {
    state: report.state,
    ...(report.message === undefined ? {} : { message: report.message }),
    since: current !== undefined && current.state === report.state ? current.since : formatTime(at),
    nodes: report.nodes,
    images: report.images.map((image) => ({
      ...image,
      failures: image.failures.map((failure) => ({ ...failure, message: cut(failure.message, FAILURE_MESSAGE_LIMIT) })),
    })),
  }
}

/** Whether the written status says what the report says, failures' messages aside. */
function sameReport(current: Record<string, unknown>, report: ImagesReport): boolean {
  const gist = (images: unknown) =>
    JSON.stringify(
      list(images).map((image) => [
        field(image, 'image'),
        field(image, 'desired'),
        field(image, 'ready'),
        field(image, 'failed'),
        list(field(image, 'failures')).map((failure) => [field(failure, 'node'), field(failure, 'reason')]),
      ]),
    )
  return (
    current.state === report.state &&
    current.message === report.message &&
    current.nodes === report.nodes &&
    gist(current.images) === gist(report.images)
  )
}
