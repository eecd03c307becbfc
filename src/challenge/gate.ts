/**
 * The isolation gate: the init container every instance's pod starts with (docs/api.md, "The isolation gate"). A
 * NetworkPolicy engine puts a new pod under its rules when it sees the pod, which may be after its containers have
 * started; the gate holds the author's containers back until the pod's egress is seen blocked, so the author's
 * process, the pod's readiness, its endpoint and every player's connection come after the rules. Its program is
 * src/isolation-gate.ts, in the hook server's own image; this module is what the pod says of it and what both
 * sides must agree on (the container's name, the variables it reads), so it imports nothing.
 */

/** The init container's name, which a definition's container may not take. */
export const GATE_CONTAINER = 'isolation-gate'

/** Where the hook server's image (Dockerfile) keeps node and the gate's bundle. */
export const GATE_COMMAND = ['/nodejs/bin/node', '/app/dist/isolation-gate.js'] as const

/** The variables the gate reads: the hook server's own settings of the same names, handed to the pod. */
export const GateEnv = {
  target: 'ISOLATION_GATE_TARGET',
  timeoutSeconds: 'ISOLATION_GATE_TIMEOUT_SECONDS',
  ipv6Enforced: 'POLICY_ENFORCES_IPV6',
} as const

/**
 * The resources the gate asks for, each the largest of the author's containers (resources.ts, effective): so the pod
 * asks for no more than without the gate (the API server counts an init container as the larger of itself and the
 * sum of the containers), and a LimitRange that accepts the author's containers accepts the gate (every bound is
 * met by the container it was taken from; a ratio too, as the largest limit is at most the ratio times its own
 * container's request, which is at most the largest request). Node needs about 50 ms of CPU and 47 MB to start.
 */
export const GATE_BOUNDED_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'] as const

/** The gate's user and group: `nobody` and `nogroup`, which own nothing; it reads and writes no file of its own. */
export const GATE_USER = 65534

/** Consecutive blocked attempts before the gate lets the author's containers start. */
export const GATE_BLOCKED_IN_A_ROW = 3
/** Between two attempts. */
export const GATE_INTERVAL_MS = 20
/**
 * An attempt unanswered this long counts as blocked (engines that drop rather than reject). A connection that is let
 * through is answered within milliseconds inside a cluster; the gate checks for an answer once more before it
 * decides, so a late turn of its own event loop cannot pass for a drop.
 */
export const GATE_ATTEMPT_TIMEOUT_MS = 500

/** The longest part of the gate's message the status repeats. */
export const GATE_MESSAGE_LIMIT = 1000
