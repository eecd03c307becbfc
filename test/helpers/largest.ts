/**
 * The largest objects the CRDs and the hook accept (src/contract/api.ts, Bounds): every list at its longest,
 * every string and every total at its limit. The e2e and cluster suites run them to Running, to show that they
 * still fit comfortably in one request, in etcd and in the Deployment made from them.
 */
import { Bounds } from '../../src/contract/api.js'

type Json = Record<string, unknown>

const CONTAINERS = 8

/** `count` strings whose lengths add up to exactly `total` (each at most `max`). */
function filling(count: number, total: number, max: number, prefix: string): string[] {
  const base = Math.floor(total / count)
  const longer = total - base * count
  const texts = Array.from({ length: count }, (_, index) => {
    const length = base + (index < longer ? 1 : 0)
    const head = `${prefix}${index}-`
    return (head + 'x'.repeat(Math.max(0, length - head.length))).slice(0, length)
  })
  if (texts.some((text) => text.length > max)) throw new Error('filling: an item over its limit')
  return texts
}

/** An env var name of exactly 128 characters, distinct for each tag. */
function longName(tag: string): string {
  return `${tag}_`.padEnd(128, 'N')
}

function container(index: number): Json {
  // The pod-wide totals, shared equally between the containers.
  const words = filling(Bounds.commandItems + Bounds.argsItems, Bounds.podText / CONTAINERS, Bounds.text, `c${index}w`)
  const values = filling(Bounds.podEnvItems / CONTAINERS, Bounds.podText / CONTAINERS, Bounds.text, `c${index}v`)
  const firstPort = 8000 + index * Bounds.ports
  return {
    name: `c${index}`.padEnd(63, 'x'),
    // A reference of 512 characters: host, eight path components, a tag.
    image:
      `registry.test/${Array.from({ length: 8 }, (_, part) => `p${part}`.padEnd(54, 'a')).join('/')}`.padEnd(508, 'a') +
      ':1.0',
    command: words.slice(0, Bounds.commandItems),
    args: words.slice(Bounds.commandItems),
    env: values.map((value, position) => ({ name: longName(`C${index}_E${position}`), value })),
    // Port names are unique across the pod (the API server's rule), ports too.
    ports: Array.from({ length: Bounds.ports }, (_, position) => ({
      name: `p${index}-${position}`,
      containerPort: firstPort + position,
      protocol: 'TCP',
    })),
    resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '100m', memory: '64Mi' } },
    readinessProbe: {
      httpGet: {
        path: `/${'h'.repeat(Bounds.path - 1)}`,
        port: firstPort,
        httpHeaders: Array.from({ length: Bounds.probeHeaders }, (_, position) => ({
          name: `X-Header-${position}`.padEnd(128, 'h'),
          value: 'v'.repeat(Bounds.probeText),
        })),
      },
      periodSeconds: 5,
    },
    securityContext: { runAsUser: 1000, runAsGroup: 1000 },
  }
}

/** The spec of the largest valid ChallengeDefinition: exposes the first container's first port. */
export function largestDefinitionSpec(): Json {
  return {
    displayName: 'L'.repeat(128),
    pod: { containers: Array.from({ length: CONTAINERS }, (_, index) => container(index)) },
    expose: { type: 'Internal', container: `c0`.padEnd(63, 'x'), port: 8000 },
    flag: { prefix: 'F'.repeat(64), suffix: 'S'.repeat(64), env: longName('FLAG') },
  }
}

/**
 * The largest ChallengeDefinition spec the CRD stores, whatever the hook would say of it: the largest valid one,
 * and what only the CRD bounds at its longest too: every resource name the pod may hold, each of 253 characters
 * with a quantity of 64 (names no operator allows: the hook would refuse them), port names of 15 characters, a
 * probe's every timing. Any field the CRD does not declare is pruned, so nothing else can make it larger.
 */
export function largestStoredDefinitionSpec(): Json {
  const spec = largestDefinitionSpec() as { pod: { containers: Json[] } }
  const perList = Bounds.podResourceNames / CONTAINERS / 2
  for (const [index, container] of spec.pod.containers.entries()) {
    const list = (kind: string) =>
      Object.fromEntries(
        Array.from({ length: perList }, (_, position) => [
          `c${index}${kind}${position}.example.com/`.padEnd(253, 'r'),
          `1${'0'.repeat(63)}`,
        ]),
      )
    container.resources = { requests: list('q'), limits: list('l') }
    container.ports = (container.ports as Json[]).map((port, position) => ({
      ...port,
      name: `p${index}-${position}-`.padEnd(15, 'n'),
    }))
    const probe = container.readinessProbe as { httpGet: Json }
    container.readinessProbe = {
      httpGet: { ...probe.httpGet, port: `p${index}-0-`.padEnd(15, 'n'), scheme: 'HTTPS' },
      initialDelaySeconds: 3600,
      periodSeconds: 3600,
      timeoutSeconds: 3600,
      successThreshold: 3600,
      failureThreshold: 3600,
    }
    container.securityContext = { runAsUser: 2147483647, runAsGroup: 2147483647 }
  }
  return spec
}

/** The largest Challenge.spec.parameters: 16 names of 128 characters, names and values at their total. */
export function largestParameters(): Record<string, string> {
  const values = filling(16, Bounds.parametersText - 16 * 128, Bounds.text, 'param')
  return Object.fromEntries(values.map((value, index) => [longName(`P${index}`), value]))
}
