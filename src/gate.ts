/**
 * The isolation gate's program (docs/api.md, "The isolation gate"): the init container of every instance's pod,
 * run from the hook server's image as `node dist/isolation-gate.js` (src/isolation-gate.ts is its three-line entry).
 * It exits 0 once its pod's egress is seen blocked, so the author's containers start only after the rules are in
 * force; it exits 1 with its reason in the container's termination message when they are not in force in time, or
 * when the pod has IPv6 addresses the policies may not cover. Everything it touches comes through GateIo, so the
 * tests run it in-process on a clock of their own.
 */
import { connect, type Socket } from 'node:net'
import { readFileSync, writeFileSync } from 'node:fs'
import { HOST_AND_PORT } from './contract/patterns.js'
import { GATE_ATTEMPT_TIMEOUT_MS, GATE_BLOCKED_IN_A_ROW, GATE_INTERVAL_MS, GateEnv } from './challenge/gate.js'

export type Outcome = 'reached' | 'blocked'

export interface GateIo {
  now(): number
  sleep(ms: number): Promise<void>
  /** One TCP connection attempt: reached when it connects, blocked when refused, unreachable or unanswered. */
  attempt(host: string, port: number): Promise<Outcome>
  /** The pod's IPv6 addresses other than loopback, as `address%interface`. */
  ipv6Addresses(): string[]
  /** A line on stdout: the report of a gate that passed. */
  log(line: string): void
  /** The reason of a gate that failed: the container's termination message, and stderr. */
  fail(message: string): void
}

export interface Report {
  isolationGate: 'enforced'
  target: string
  startedAt: number
  /** The start of the last attempt that connected; null when none did (the rules were in force from the start). */
  lastReachedAt: number | null
  /** The start of the first of the consecutive blocked attempts: the rules were in force by then. */
  firstBlockedAt: number
  passedAt: number
  attempts: number
  reached: number
}

/** `host:port` or `[v6]:port`, split; undefined when it is neither. */
export function splitTarget(target: string): { host: string; port: number } | undefined {
  const match = new RegExp(HOST_AND_PORT).exec(target)
  if (match === null) return undefined
  return { host: (match[1] ?? match[2]) as string, port: Number(match[3]) }
}

/** What to try: ISOLATION_GATE_TARGET, or the API server's in-cluster address the kubelet gives every container. */
function targetOf(env: Record<string, string | undefined>): { text: string; what: string } | undefined {
  const configured = env[GateEnv.target]?.trim()
  if (configured) return { text: configured, what: GateEnv.target }
  const host = env.KUBERNETES_SERVICE_HOST?.trim()
  const port = env.KUBERNETES_SERVICE_PORT?.trim()
  if (!host || !port) return undefined
  return { text: host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`, what: 'the API server' }
}

const IPV6_ADVICE = `turn IPv6 off in the pods' network namespaces, or set ${GateEnv.ipv6Enforced}=true if the cluster's NetworkPolicy engine enforces the policies over IPv6 (docs/install.md)`

/** Why the pod may not start over IPv6, or undefined. */
function ipv6Refusal(env: Record<string, string | undefined>, io: GateIo): string | undefined {
  if (env[GateEnv.ipv6Enforced]?.trim() === 'true') return undefined
  const addresses = io.ipv6Addresses()
  if (addresses.length === 0) return undefined
  return `The pod has IPv6 addresses (${addresses.join(', ')}), which NetworkPolicy engines that enforce IPv4 only let through: ${IPV6_ADVICE}.`
}

/** Runs the gate; its exit code. */
export async function runGate(env: Record<string, string | undefined>, io: GateIo): Promise<number> {
  const startedAt = io.now()
  const refuse = (message: string) => {
    io.fail(message)
    return 1
  }
  const target = targetOf(env)
  const split = target === undefined ? undefined : splitTarget(target.text)
  if (target === undefined || split === undefined) {
    return refuse(
      target === undefined
        ? `No target to try: neither ${GateEnv.target} nor KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are set.`
        : `${GateEnv.target} is not an address and a port: "${target.text}".`,
    )
  }
  const early = ipv6Refusal(env, io)
  if (early !== undefined) return refuse(early)
  const timeoutSeconds = Number(env[GateEnv.timeoutSeconds]) || 60
  const deadline = startedAt + timeoutSeconds * 1000
  let [attempts, reached, inARow, firstBlockedAt] = [0, 0, 0, startedAt]
  let lastReachedAt: number | null = null
  while (io.now() < deadline) {
    const at = io.now()
    const outcome = await io.attempt(split.host, split.port)
    attempts++
    if (outcome === 'reached') {
      reached++
      inARow = 0
      lastReachedAt = at
    } else {
      if (inARow === 0) firstBlockedAt = at
      inARow++
      if (inARow >= GATE_BLOCKED_IN_A_ROW) {
        // An address that came up while the gate tried (router advertisements) counts as much as one from the start.
        const late = ipv6Refusal(env, io)
        if (late !== undefined) return refuse(late)
        const report: Report = {
          isolationGate: 'enforced',
          target: target.text,
          startedAt,
          lastReachedAt,
          firstBlockedAt,
          passedAt: io.now(),
          attempts,
          reached,
        }
        io.log(JSON.stringify(report))
        return 0
      }
    }
    await io.sleep(GATE_INTERVAL_MS)
  }
  return refuse(
    `Egress isolation is not in force: ${target.text} (${target.what}), which every egress mode forbids, accepted ${reached} of ${attempts} connections over ${timeoutSeconds} s, and never ${GATE_BLOCKED_IN_A_ROW} in a row were blocked. The node needs a NetworkPolicy engine that enforces the instance's policies (docs/install.md); an API server address that egress Internet reaches belongs in CLUSTER_CIDRS.`,
  )
}

/**
 * One connection attempt. Unanswered after `timeoutMs`, the socket is given one more turn of the event loop's poll
 * before it counts as blocked: a gate starved of CPU must not read a connection that was answered as one that was
 * dropped.
 */
export function attemptTcp(
  host: string,
  port: number,
  timeoutMs = GATE_ATTEMPT_TIMEOUT_MS,
  open: (options: { host: string; port: number }) => Socket = connect,
): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = open({ host, port })
    let done = false
    const finish = (outcome: Outcome) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resolve(outcome)
    }
    const timer = setTimeout(() => setImmediate(() => finish('blocked')), timeoutMs)
    socket.once('connect', () => finish('reached'))
    socket.once('error', () => finish('blocked'))
  })
}

/**
 * The addresses of `/proc/net/if_inet6` other than loopback's, as `address%interface` (its lines: 32 hex digits,
 * the interface's index, prefix length, scope and flags in hex, then its name).
 */
export function ipv6AddressesOf(ifInet6: string): string[] {
  return ifInet6
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length === 6 && /^[0-9a-f]{32}$/i.test(fields[0] as string) && fields[5] !== 'lo')
    .map(([hex, , , , , name]) => {
      const groups = (hex as string).match(/.{4}/g) as string[]
      // The URL parser writes an IPv6 address in its shortest form.
      return `${new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1)}%${name as string}`
    })
}

/** The gate's I/O in a pod: the clock, TCP, /proc and the kubelet's termination-message file. */
export function podIo(paths = { ifInet6: '/proc/net/if_inet6', terminationLog: '/dev/termination-log' }): GateIo {
  return {
    now: () => Date.now(),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    attempt: (host, port) => attemptTcp(host, port),
    ipv6Addresses() {
      try {
        return ipv6AddressesOf(readFileSync(paths.ifInet6, 'utf8'))
      } catch (error) {
        // No such file: the kernel has no IPv6 at all. A file that cannot be read proves nothing: refused.
        const code = (error as NodeJS.ErrnoException).code
        return code === 'ENOENT' ? [] : [`unknown: ${paths.ifInet6} cannot be read (${code})`]
      }
    },
    log: (line) => process.stdout.write(`${line}\n`),
    fail(message) {
      process.stderr.write(`${message}\n`)
      try {
        writeFileSync(paths.terminationLog, message)
      } catch {
        // Outside a pod there is no termination-message file; stderr has said it.
      }
    },
  }
}
