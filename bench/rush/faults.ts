// The pure half of the rush's fault run (`npm run bench:rush -- --faults`, bench/README.md): when each fault is
// due, and the checks of the end state that the faults must not have broken. Every check reads the objects as the
// API server lists them and says what it expects from docs/api.md alone: the expected flag is computed here with
// node:crypto from the formula of docs/api.md ("Flags"), never by the hook's own code.
import { createHmac } from 'node:crypto'
import type { KubeObject } from '../../test/support/simulator/index.js'

export type FaultKind = 'kill-metacontroller' | 'roll-hook-server' | 'kill-kubelet'

/**
 * The faults of a run and when each is due, as a share of the instances to be admitted: Metacontroller killed at
 * 20 %, the hook server rolled at 40 % and 80 %, the kubelet killed at 60 % (each once the bench has seen that many
 * admitted). Spread over admission, not creation: at 1,000 every Challenge is created in the first minute while
 * admission goes on for minutes, and a fault matters while the controllers are busy.
 */
export const FAULTS: ReadonlyArray<{ kind: FaultKind; share: number }> = [
  { kind: 'kill-metacontroller', share: 0.2 },
  { kind: 'roll-hook-server', share: 0.4 },
  { kind: 'kill-kubelet', share: 0.6 },
  { kind: 'roll-hook-server', share: 0.8 },
]

export interface PlannedFault {
  kind: FaultKind
  share: number
  /** fired once the bench has seen this many instances admitted (at least 1) */
  atAdmitted: number
}

export function faultSchedule(admitted: number, faults = FAULTS): PlannedFault[] {
  return faults.map(({ kind, share }) => ({ kind, share, atAdmitted: Math.max(1, Math.ceil(share * admitted)) }))
}

/** The faults due with `admitted` seen, in order, one at a time: the first not yet fired, if its moment has come. */
export function nextDue(schedule: PlannedFault[], fired: number, admitted: number): PlannedFault | undefined {
  const next = schedule[fired]
  return next !== undefined && admitted >= next.atAdmitted ? next : undefined
}

export interface Finding {
  /** `Kind name` of the object the finding is about */
  object: string
  problem: string
}

type Loose = Record<string, unknown>
const record = (value: unknown): Loose => (typeof value === 'object' && value !== null ? (value as Loose) : {})
const list = (value: unknown): Loose[] => (Array.isArray(value) ? value.map(record) : [])
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined)

const INSTANCE = 'challenge-hooks.dev/instance'
const UID = 'challenge-hooks.dev/uid'
const RUN = 'challenge-hooks.dev/run'
const OWNER = 'challenge-hooks.dev/owner'
const CLAIMED_BY = 'challenge-hooks.dev/claimed-by'

/**
 * `<p>` of docs/api.md ("Children") for the names the bench gives (`chal-03-u-player-0001`): the Challenge's name,
 * a DNS-1035 label of at most 54 characters not ending in `--<12 hex>`. Any other name is refused, not guessed.
 */
export function childPrefix(name: string): string {
  if (name.length > 54 || !/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(name) || /--[0-9a-f]{12}$/.test(name))
    throw new Error(`the bench names its Challenges as short DNS labels; ${name} is not one`)
  return name
}

function statusOf(challenge: KubeObject): { phase: string; reason: string; run: number } {
  const status = record(challenge.status)
  return {
    phase: text(status.phase) ?? 'none',
    reason: text(status.reason) ?? 'none',
    run: typeof status.run === 'number' ? status.run : 0,
  }
}

const admittedPhase = (challenge: KubeObject) => {
  const { phase, reason } = statusOf(challenge)
  return phase === 'Running' || (phase === 'Pending' && reason !== 'Queued' && reason !== 'NotYetAvailable')
}

/** Challenges by `phase/reason`, sorted by name. */
export function phaseCounts(challenges: KubeObject[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const challenge of challenges) {
    const { phase, reason } = statusOf(challenge)
    counts[`${phase}/${reason}`] = (counts[`${phase}/${reason}`] ?? 0) + 1
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)))
}

/**
 * Where every Challenge should end (docs/api.md, "Phases and reasons"; every definition of the rush costs 1): each
 * owner holds min(its Challenges, budget) instances Running / Ready, and the rest Pending / Queued.
 */
export function outcomeFindings(challenges: KubeObject[], budget: number): Finding[] {
  const byOwner = new Map<string, KubeObject[]>()
  for (const challenge of challenges) {
    const owner = challenge.metadata.labels?.[OWNER] ?? '(no owner label)'
    byOwner.set(owner, [...(byOwner.get(owner) ?? []), challenge])
  }
  const findings: Finding[] = []
  for (const [owner, own] of [...byOwner].sort(([a], [b]) => a.localeCompare(b))) {
    const running = own.filter((c) => statusOf(c).phase === 'Running' && statusOf(c).reason === 'Ready')
    const queued = own.filter((c) => statusOf(c).phase === 'Pending' && statusOf(c).reason === 'Queued')
    for (const challenge of own.filter((c) => !running.includes(c) && !queued.includes(c))) {
      const { phase, reason } = statusOf(challenge)
      findings.push({ object: `Challenge ${challenge.metadata.name}`, problem: `ended ${phase}/${reason}` })
    }
    const expected = Math.min(own.length, budget)
    if (running.length !== expected)
      findings.push({
        object: `owner ${owner}`,
        problem: `${running.length} Running of ${own.length}, expected ${expected} (budget ${budget})`,
      })
  }
  return findings
}

/** The kinds of child whose every object the bench lists, as docs/api.md "Children" names them for the rush. */
export const CHILD_KINDS = ['Secret', 'NetworkPolicy', 'Pod', 'Service', 'Ingress'] as const

/**
 * Children that should not be there: no controlling Challenge, a Challenge that no longer exists (by uid), labels
 * naming another instance or uid, a Challenge that holds no children (not admitted, or torn down), a pod of another
 * run than the Challenge's current one, an object still being deleted. `children` holds every object of the kinds
 * listed that carries the instance label (the hook labels each child with it); other objects are not the hook's.
 */
export function orphanFindings(challenges: KubeObject[], children: KubeObject[]): Finding[] {
  const byUid = new Map(challenges.map((c) => [String(c.metadata.uid), c]))
  const findings: Finding[] = []
  for (const child of children) {
    const object = `${child.kind} ${child.metadata.name}`
    const found = (problem: string) => findings.push({ object, problem })
    const controller = list(child.metadata.ownerReferences).find((ref) => ref.controller === true)
    if (controller === undefined || controller.kind !== 'Challenge') {
      found('no controlling Challenge')
      continue
    }
    const owner = byUid.get(String(controller.uid))
    if (owner === undefined) {
      found(`its Challenge ${String(controller.name)} (uid ${String(controller.uid)}) no longer exists`)
      continue
    }
    const labels = child.metadata.labels ?? {}
    if (labels[UID] !== owner.metadata.uid)
      found(`labelled uid ${labels[UID]}, its Challenge's is ${owner.metadata.uid}`)
    if (labels[INSTANCE] !== childPrefix(owner.metadata.name))
      found(`labelled instance ${labels[INSTANCE]}, its Challenge is ${owner.metadata.name}`)
    if (!child.metadata.name.startsWith(childPrefix(owner.metadata.name)))
      found(`named for another instance than ${owner.metadata.name}`)
    if (!admittedPhase(owner)) {
      const { phase, reason } = statusOf(owner)
      found(`its Challenge is ${phase}/${reason}, which holds no children`)
    }
    if (child.kind === 'Pod' && child.metadata.annotations?.[RUN] !== String(statusOf(owner).run))
      found(`a pod of run ${child.metadata.annotations?.[RUN]}, its Challenge is at run ${statusOf(owner).run}`)
    if (child.metadata.deletionTimestamp !== undefined) found('still being deleted')
  }
  return findings
}

/** Every Challenge with more than one pod (by the pods' controlling owner, terminating ones included). */
export function duplicatePodFindings(challenges: KubeObject[], pods: KubeObject[]): Finding[] {
  const names = new Map(challenges.map((c) => [String(c.metadata.uid), c.metadata.name]))
  const byOwner = new Map<string, string[]>()
  for (const pod of pods) {
    const uid =
      text(list(pod.metadata.ownerReferences).find((ref) => ref.controller === true)?.uid) ?? pod.metadata.labels?.[UID]
    if (uid === undefined) continue
    byOwner.set(uid, [...(byOwner.get(uid) ?? []), pod.metadata.name])
  }
  return [...byOwner]
    .filter(([, own]) => own.length > 1)
    .map(([uid, own]) => ({
      object: `Challenge ${names.get(uid) ?? `(gone, uid ${uid})`}`,
      problem: `${own.length} pods: ${[...own].sort().join(', ')}`,
    }))
}

export interface FlagSpec {
  mode: 'PerOwner' | 'PerInstance'
  prefix?: string
  suffix?: string
}

/** The pooled pod serving a Challenge and the uid its flag is made from, when its status records a claim. */
function claimOf(challenge: KubeObject): { pod: string; flagUid: string } | undefined {
  const pool = record(record(challenge.status).pool)
  const pod = text(pool.pod)
  const flagUid = text(pool.flagUid)
  return pool.state === 'Claimed' && pod !== undefined && flagUid !== undefined ? { pod, flagUid } : undefined
}

/**
 * The flag docs/api.md ("Flags") says an instance holds: prefix + hex(HMAC-SHA256(FLAG_SECRET, message))[0:32] +
 * suffix, the message `<namespace>/<definition>/<owner.kind>/<owner.id>` (PerOwner) or, PerInstance, the
 * Challenge's uid, or for one served by a warm pool the uid of the pooled pod's flag Secret (`status.pool.flagUid`,
 * docs/api.md "Warm pools"); prefix and suffix default to `flag{` and `}`.
 */
export function expectedFlag(flagSecret: string, challenge: KubeObject, flag: FlagSpec): string {
  const spec = record(challenge.spec)
  const owner = record(spec.owner)
  const message =
    flag.mode === 'PerInstance'
      ? (claimOf(challenge)?.flagUid ?? String(challenge.metadata.uid))
      : `${challenge.metadata.namespace}/${String(record(spec.definitionRef).name)}/${String(owner.kind)}/${String(owner.id)}`
  const part = createHmac('sha256', flagSecret).update(message).digest('hex').slice(0, 32)
  return `${flag.prefix ?? 'flag{'}${part}${flag.suffix ?? '}'}`
}

/**
 * No flag served to the wrong instance: every Challenge holding children has its flag Secret `<p>-flag` (key
 * `flag`) holding exactly its expected flag (a flag that is another Challenge's is named as such), and its pod
 * mounts that Secret at /flag in every container and exposes it as the definition's variable (`flag.env`). One
 * served by a warm pool (`status.pool.state: Claimed`) has instead the pooled pod's Secret `<pod>-flag`, whose uid
 * is its `flagUid` and which is labelled `claimed-by` it, as the pod is.
 */
export function flagFindings(
  challenges: KubeObject[],
  secrets: KubeObject[],
  pods: KubeObject[],
  expected: (challenge: KubeObject) => string,
  flagEnv: string,
): Finding[] {
  const findings: Finding[] = []
  const whose = new Map<string, string[]>()
  for (const challenge of challenges) {
    const flag = expected(challenge)
    whose.set(flag, [...(whose.get(flag) ?? []), challenge.metadata.name])
  }
  const secretsByName = new Map(secrets.map((s) => [s.metadata.name, s]))
  for (const challenge of challenges.filter(admittedPhase)) {
    const claim = claimOf(challenge)
    const name = `${claim === undefined ? childPrefix(challenge.metadata.name) : claim.pod}-flag`
    const object = `Challenge ${challenge.metadata.name}`
    const secret = secretsByName.get(name)
    const encoded = text(record(secret?.data).flag)
    if (encoded === undefined) {
      findings.push({ object, problem: `no flag Secret ${name} with a key flag` })
    } else if (claim !== undefined && secret?.metadata.uid !== claim.flagUid) {
      findings.push({ object, problem: `${name} is not the Secret of its flagUid ${claim.flagUid}` })
    } else if (claim !== undefined && secret?.metadata.labels?.[CLAIMED_BY] !== challenge.metadata.uid) {
      findings.push({ object, problem: `${name} is not labelled ${CLAIMED_BY} with its uid` })
    } else {
      const held = Buffer.from(encoded, 'base64').toString('utf8')
      if (held !== expected(challenge)) {
        const others = (whose.get(held) ?? []).filter((other) => other !== challenge.metadata.name)
        findings.push({
          object,
          problem: `${name} holds ${others.length > 0 ? `the flag of ${others.join(', ')}` : 'a flag no Challenge should have'}`,
        })
      }
    }
    const own = pods.filter((pod) =>
      claim === undefined
        ? list(pod.metadata.ownerReferences).find((ref) => ref.controller === true)?.uid === challenge.metadata.uid
        : pod.metadata.name === claim.pod,
    )
    if (claim !== undefined && own.every((pod) => pod.metadata.labels?.[CLAIMED_BY] !== challenge.metadata.uid))
      findings.push({ object, problem: `no pod ${claim.pod} labelled ${CLAIMED_BY} with its uid` })
    for (const pod of own) {
      const spec = record(pod.spec)
      const volume = list(spec.volumes).find((v) => record(v.secret).secretName === name)
      for (const container of list(spec.containers)) {
        const mounted = list(container.volumeMounts).some(
          (m) => volume !== undefined && m.name === volume.name && m.mountPath === '/flag',
        )
        const exposed = list(container.env).some(
          (e) => e.name === flagEnv && record(record(e.valueFrom).secretKeyRef).name === name,
        )
        if (!mounted || !exposed)
          findings.push({
            object: `Pod ${pod.metadata.name}`,
            problem: `container ${String(container.name)} ${!mounted ? `does not mount ${name} at /flag` : `has no ${flagEnv} from ${name}`}`,
          })
      }
    }
  }
  return findings
}
