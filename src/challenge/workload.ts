/**
 * What the observed children say about the current run's workload: is its isolation in place, is its pod ready and
 * since when, and is something wrong with the pod. Only children this Challenge owns count: an object that merely
 * carries a child's name (made by someone else, so Metacontroller never created or claimed it) is never the
 * instance's flag, policy or pod. Only the pod of the current run counts: a restart rolls its run annotation, and
 * until the pod of the new run exists, the old pod's state is not this run's.
 */
import { Reason, RUN_ANNOTATION } from '../contract/api.js'
import type { ResolvedDefinition } from './definition.js'
import { GATE_CONTAINER, GATE_MESSAGE_LIMIT } from './gate.js'
import type { ChildNames } from './names.js'
import { ownChild, type ObservedIndex } from './observed.js'
import { field, list, num, text } from './untrusted.js'
import { readTime } from './time.js'
import type { KubeObject } from '../contract/protocol.js'

/** A container that restarted this often while in CrashLoopBackOff is broken, not slow to start. */
export const CRASH_LOOP_RESTARTS = 3

export type PodProblem =
  | {
      fatal: true
      reason:
        | typeof Reason.CrashLoopBackOff
        | typeof Reason.InvalidImage
        | typeof Reason.ConfigError
        | typeof Reason.IsolationNotEnforced
      message: string
    }
  | { fatal: false; reason: typeof Reason.ImagePullBackOff | typeof Reason.Unschedulable; message: string }

/**
 * The children the pod must never run without, as [kind, name]: the flag Secret it mounts, the NetworkPolicy
 * that isolates it, and the `-internet` one with egress Internet.
 */
export function guardChildren(names: ChildNames, egress: ResolvedDefinition['egress']): [kind: string, name: string][] {
  const guards: [string, string][] = [
    ['Secret', names.flagSecret],
    ['NetworkPolicy', names.isolatePolicy],
  ]
  if (egress === 'Internet') guards.push(['NetworkPolicy', names.internetPolicy])
  return guards
}

/** The names of the guard children not observed as this Challenge's own (empty once the pod may run). */
export function missingGuards(
  children: ObservedIndex,
  names: ChildNames,
  egress: ResolvedDefinition['egress'],
): string[] {
  return guardChildren(names, egress)
    .filter(([kind, name]) => ownChild(children, kind, name, names.uid) === undefined)
    .map(([kind, name]) => `${kind} ${name}`)
}

/** The pod of this run: the instance's own, carrying this run's annotation, not on its way out. */
export function currentPod(children: ObservedIndex, names: ChildNames, run: number): KubeObject | undefined {
  const pod = ownChild(children, 'Pod', names.base, names.uid)
  return pod !== undefined && field(field(pod.metadata, 'annotations'), RUN_ANNOTATION) === String(run)
    ? pod
    : undefined
}

/** The pod's condition of `type` with status True, if it has one (none without a pod). */
function trueCondition(pod: KubeObject | undefined, type: string): unknown {
  return list(field(field(pod, 'status'), 'conditions')).find(
    (condition) => field(condition, 'type') === type && field(condition, 'status') === 'True',
  )
}

/** When the pod of this run was Ready (its readiness probes passing) since, as the kubelet recorded it; else undefined. */
export function readySince(pod: KubeObject | undefined): number | undefined {
  const ready = trueCondition(pod, 'Ready')
  return ready === undefined ? undefined : (readTime(field(ready, 'lastTransitionTime')) ?? 0)
}

/** The instants of a pod's start the kubelet recorded, for the status (scheduled, first container running). */
export function podInstants(pod: KubeObject | undefined): {
  scheduled: number | undefined
  started: number | undefined
} {
  const scheduled = readTime(field(trueCondition(pod, 'PodScheduled'), 'lastTransitionTime'))
  const starts = list(field(field(pod, 'status'), 'containerStatuses'))
    .map((container) => readTime(field(field(field(container, 'state'), 'running'), 'startedAt')))
    .filter((instant): instant is number => instant !== undefined)
  return { scheduled, started: starts.length === 0 ? undefined : Math.min(...starts) }
}

/** Said by the kubelet when an image without a numeric non-root USER meets runAsNonRoot. */
const RUNS_AS_ROOT = /runAsNonRoot and image will run as root|image has non-numeric user/

function waitingProblem(status: unknown): PodProblem | undefined {
  const container = text(field(status, 'name')) ?? 'unknown'
  const waiting = field(field(status, 'state'), 'waiting')
  const reason = text(field(waiting, 'reason'))
  switch (reason) {
    case 'InvalidImageName':
      return {
        fatal: true,
        reason: Reason.InvalidImage,
        message: `The image of container ${container} is not a valid image name.`,
      }
    case 'CreateContainerConfigError':
    case 'CreateContainerError':
    case 'RunContainerError':
      if (RUNS_AS_ROOT.test(text(field(waiting, 'message')) ?? '')) {
        return {
          fatal: true,
          reason: Reason.ConfigError,
          message: `The image of container ${container} runs as root, which the Restricted profile does not allow: use an image with a numeric non-root USER, set securityContext.runAsUser, or security.profile Baseline.`,
        }
      }
      return {
        fatal: true,
        reason: Reason.ConfigError,
        message: `Container ${container} cannot be created (${reason}).`,
      }
    case 'CrashLoopBackOff': {
      if (num(field(status, 'restartCount')) < CRASH_LOOP_RESTARTS) return undefined
      const oom = text(field(field(field(status, 'lastState'), 'terminated'), 'reason')) === 'OOMKilled'
      return oom
        ? {
            fatal: true,
            reason: Reason.CrashLoopBackOff,
            message: `Container ${container} keeps running out of memory (killed at its memory limit).`,
          }
        : { fatal: true, reason: Reason.CrashLoopBackOff, message: `Container ${container} keeps crashing.` }
    }
    case 'ImagePullBackOff':
    case 'ErrImagePull':
      return {
        fatal: false,
        reason: Reason.ImagePullBackOff,
        message: `The image of container ${container} cannot be pulled yet; retrying.`,
      }
    default:
      return undefined
  }
}

/**
 * The isolation gate's failure: it exited non-zero (now, or before the kubelet restarted it), saying why in its
 * termination message. Once seen, the run ends: the egress policy was not in force in time, or never will be.
 */
function gateProblem(status: unknown): PodProblem | undefined {
  const failed = [field(status, 'state'), field(status, 'lastState')]
    .map((state) => field(state, 'terminated'))
    .find((terminated) => terminated !== undefined && num(field(terminated, 'exitCode')) !== 0)
  if (failed === undefined) return undefined
  const said = (text(field(failed, 'message')) ?? '').trim().slice(0, GATE_MESSAGE_LIMIT)
  const reason = text(field(failed, 'reason'))
  return {
    fatal: true,
    reason: Reason.IsolationNotEnforced,
    message: `The isolation gate did not let the instance start: ${
      said === ''
        ? `it exited with code ${num(field(failed, 'exitCode'))}${reason === undefined ? '' : ` (${reason})`}.`
        : said
    }`,
  }
}

/** The most serious problem of the pod: fatal ones first, then image pulls, then scheduling. */
export function podProblem(pod: KubeObject | undefined): PodProblem | undefined {
  const status = field(pod, 'status')
  const problems: PodProblem[] = []
  for (const container of list(field(status, 'initContainerStatuses'))) {
    const problem =
      (field(container, 'name') === GATE_CONTAINER ? gateProblem(container) : undefined) ?? waitingProblem(container)
    if (problem) problems.push(problem)
  }
  for (const container of list(field(status, 'containerStatuses'))) {
    const problem = waitingProblem(container)
    if (problem) problems.push(problem)
  }
  const unschedulable = list(field(status, 'conditions')).some(
    (condition) =>
      field(condition, 'type') === 'PodScheduled' &&
      field(condition, 'status') === 'False' &&
      field(condition, 'reason') === 'Unschedulable',
  )
  if (unschedulable) {
    problems.push({
      fatal: false,
      reason: Reason.Unschedulable,
      message: 'The cluster has no room for the instance yet; waiting for capacity.',
    })
  }
  // The containers' problems come before the scheduling one: the first left is an image pull when there is one.
  return problems.find((problem) => problem.fatal) ?? problems[0]
}

/**
 * A pod that will never run again by itself: Failed (evicted, its node lost) or Succeeded (every container exited
 * 0 under a policy that does not restart them). The hook leaves it out of its answer, Metacontroller deletes it,
 * and the next sync asks for a new one.
 */
export function podEnded(pod: KubeObject | undefined): boolean {
  const phase = field(field(pod, 'status'), 'phase')
  return phase === 'Failed' || phase === 'Succeeded'
}
