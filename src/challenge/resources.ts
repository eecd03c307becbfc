/**
 * Container resources as the API server will judge them, checked before any pod is asked for: a definition the
 * API server would refuse (a request above its limit, a zero limit) otherwise ends as an unexplained
 * StartupTimeout after holding the owner's budget for the whole startup window. Extended resources (GPUs, FPGAs)
 * are scarce and uncapped by the defaults, so only those the operator allows may be asked for.
 */
import { QUANTITY } from '../contract/patterns.js'
import type { DefinitionContainer } from '../contract/api.js'

/** Requests and limits of a container that sets none (each one the author leaves out keeps its default). */
export const DEFAULT_RESOURCES = {
  requests: { cpu: '50m', memory: '64Mi', 'ephemeral-storage': '64Mi' },
  limits: { cpu: '500m', memory: '256Mi', 'ephemeral-storage': '256Mi' },
} as const

const STANDARD = ['cpu', 'memory', 'ephemeral-storage']
const QUANTITY_PARTS = new RegExp(QUANTITY)

const DECIMAL_SUFFIX: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 }
const BINARY_SUFFIX: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 }

/**
 * The value of a Kubernetes quantity (`500m`, `1.5`, `64Mi`, `1e3`), or undefined when it does not parse. A float
 * is exact enough to compare a request with a limit: equal quantities written alike give equal floats, and
 * `compare` allows for the rounding of differently written ones.
 */
export function quantityValue(quantity: string | number): number | undefined {
  if (typeof quantity === 'number') return Number.isFinite(quantity) && quantity >= 0 ? quantity : undefined
  const match = QUANTITY_PARTS.exec(quantity)
  if (!match) return undefined
  const [, mantissa, exponent, suffix = ''] = match
  const power =
    exponent !== undefined
      ? Number(exponent)
      : Object.hasOwn(BINARY_SUFFIX, suffix)
        ? undefined
        : (DECIMAL_SUFFIX[suffix] as number)
  const value =
    power === undefined ? Number(mantissa) * 2 ** (BINARY_SUFFIX[suffix] as number) : Number(`${mantissa}e${power}`)
  return Number.isFinite(value) ? value : undefined
}

/** True when `request` is above `limit`, beyond the rounding of two ways of writing one value. */
export function above(request: number, limit: number): boolean {
  return request > limit * (1 + 1e-12)
}

/** The effective requests and limits of a container: the author's, and the defaults for what they left out. */
export function effectiveResources(container: DefinitionContainer): {
  requests: Record<string, string | number>
  limits: Record<string, string | number>
} {
  return {
    requests: { ...DEFAULT_RESOURCES.requests, ...container.resources?.requests },
    limits: { ...DEFAULT_RESOURCES.limits, ...container.resources?.limits },
  }
}

/**
 * What the API server (or the operator's configuration) would refuse in one container's resources, naming the
 * field, or undefined.
 */
export function resourcesProblem(
  container: DefinitionContainer,
  at: string,
  allowedExtended: readonly string[],
): string | undefined {
  const own = container.resources ?? {}
  for (const kind of ['requests', 'limits'] as const) {
    for (const [name, quantity] of Object.entries(own[kind] ?? {})) {
      const field = `${at}.resources.${kind}.${name}`
      if (!STANDARD.includes(name) && !allowedExtended.includes(name)) {
        return `${field}: the resource ${name} is not allowed here (the operator allows extended resources with ALLOWED_EXTENDED_RESOURCES)`
      }
      if (quantityValue(quantity) === undefined) return `${field}: "${quantity}" is not a quantity`
    }
  }
  for (const name of Object.keys(own.requests ?? {})) {
    // The API server never overcommits an extended resource: its request needs an equal limit.
    if (!STANDARD.includes(name) && !Object.hasOwn(own.limits ?? {}, name))
      return `${at}.resources.limits.${name}: required beside requests.${name}`
  }
  const { requests, limits } = effectiveResources(container)
  for (const [name, limit] of Object.entries(limits)) {
    const limitValue = quantityValue(limit) as number
    if (limitValue === 0 && STANDARD.includes(name)) return `${at}.resources.limits.${name}: must be above 0`
    const request = requests[name]
    if (request === undefined) continue
    const requestValue = quantityValue(request) as number
    if (!STANDARD.includes(name) && requestValue !== limitValue)
      return `${at}.resources.requests.${name}: must equal its limit (${limit})`
    if (above(requestValue, limitValue)) {
      const whence = Object.hasOwn(own.limits ?? {}, name) ? '' : ' (the default, as limits.' + name + ' is unset)'
      return `${at}.resources.requests.${name}: ${request} is above its limit ${limit}${whence}`
    }
  }
  return undefined
}

/**
 * A value above 0 of cpu (cores) or of bytes written back as a quantity an author reads: whole cores or millicores
 * (rounded up), and bytes in the largest binary unit that holds them whole.
 */
export function formatQuantity(value: number, resource: string): string {
  if (resource === 'cpu') return Number.isInteger(value) ? String(value) : `${Math.ceil(value * 1000 - 1e-6)}m`
  for (const [suffix, power] of [...Object.entries(BINARY_SUFFIX)].reverse()) {
    const units = value / 2 ** power
    if (Number.isInteger(units)) return `${units}${suffix}`
  }
  return String(Math.ceil(value))
}
