/**
 * The parsers of src/config/config.ts's table: each reads one environment variable and says, for docs/configuration.md,
 * what it accepts and its default. A blank value (empty or spaces) is the same as an unset one; a bad value throws
 * a ConfigError naming the variable.
 */
import { isIP } from 'node:net'
import {
  DIGITS,
  DNS_LABEL,
  DNS_SUBDOMAIN,
  ENTRY_POINT,
  EXTENDED_RESOURCE_NAME,
  HOST_AND_PORT,
  LABEL_KEY,
  LABEL_VALUE,
  QUANTITY,
} from '../contract/patterns.js'

export type Env = Record<string, string | undefined>

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`)
    this.name = 'ConfigError'
  }
}

/** sysexits.h EX_CONFIG, the exit code of a process whose configuration is wrong: restarting will not help. */
export const EX_CONFIG = 78

/** What every parser may know besides its own variable. */
export interface ParseContext {
  production: boolean
}

export interface Parser<T> {
  /** The variable's value (its default when unset or blank); a ConfigError naming it when it is bad. */
  read(env: Env, name: string, context: ParseContext): T
  /** What a value may be, as docs/configuration.md says it (Markdown). */
  accepts: string
  /** The default as the docs show it (Markdown); undefined: unset. */
  shown?: string
}

const isDnsLabel = RegExp.prototype.test.bind(new RegExp(DNS_LABEL))
const isDnsSubdomain = RegExp.prototype.test.bind(new RegExp(DNS_SUBDOMAIN))
const isLabelKey = RegExp.prototype.test.bind(new RegExp(LABEL_KEY))
const isLabelValue = RegExp.prototype.test.bind(new RegExp(LABEL_VALUE))
const isDigits = RegExp.prototype.test.bind(new RegExp(DIGITS))
const isExtendedResourceName = RegExp.prototype.test.bind(new RegExp(EXTENDED_RESOURCE_NAME))
const QUANTITY_PARTS = new RegExp(QUANTITY)

export const DEVELOPMENT_FLAG_SECRET = 'challenge-hooks-development-secret-do-not-use-in-production'
const MIN_PRODUCTION_SECRET_LENGTH = 32
/**
 * A production secret must not be a word or a short pattern repeated to length: its estimated bits (length ×
 * the Shannon entropy of its characters' frequencies) and its distinct characters have floors. `openssl rand -hex
 * 16` (32 hex characters, 128 random bits) estimates at 99-125 bits with at least 9 distinct characters (2,000
 * draws), `-hex 32` at 227 and more; `passwordpassword…` has 7 distinct characters, a 4-character pattern 64 bits.
 */
const MIN_SECRET_BITS = 80
const MIN_SECRET_SYMBOLS = 8
const PLACEHOLDER = /CHANGE-?ME/i
/** Hosts are `<16 hex instance id>.<domain>`: the domain leaves room for the id within 253 characters. */
const MAX_HOST_DOMAIN = 253 - 17

export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const
type TaintEffect = (typeof TAINT_EFFECTS)[number]

export interface Toleration {
  key: string
  operator: 'Equal' | 'Exists'
  value?: string
  effect?: TaintEffect
}

export interface GatewayRef {
  namespace: string
  name: string
}

/** The trimmed value, or undefined when unset or blank. */
export function text(env: Env, name: string): string | undefined {
  const value = env[name]
  return value === undefined || value.trim() === '' ? undefined : value.trim()
}

/** `value` in backticks, for the docs. */
const code = (value: string | number) => `\`${value}\``

/** The parser with a default for an unset or blank variable, which the docs show (as `shown`, else the value). */
export function orElse<T>(parser: Parser<T | undefined>, fallback: T, shown = code(String(fallback))): Parser<T> {
  return { accepts: parser.accepts, shown, read: (env, name, context) => parser.read(env, name, context) ?? fallback }
}

/** The parser with a default written as a value of the variable: read anew each time (a fresh object). */
export function orText<T>(parser: Parser<T | undefined>, fallback: string): Parser<T> {
  return {
    accepts: parser.accepts,
    shown: code(fallback),
    read: (env, name, context) => parser.read({ [name]: text(env, name) ?? fallback }, name, context) as T,
  }
}

/** Any text, as it is (trimmed). */
export function anyText(accepts: string): Parser<string | undefined> {
  return { accepts, read: (env, name) => text(env, name) }
}

export function integer(min: number, max: number, note = ''): Parser<number | undefined> {
  return {
    accepts: `a whole number from ${min} to ${max}${note}`,
    read(env, name) {
      const raw = text(env, name)
      if (raw === undefined) return undefined
      if (!isDigits(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`)
      const value = Number(raw)
      if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`)
      return value
    },
  }
}

/** A value that matches `pattern`: `what` names it in the error (`must be a namespace name, got …`). */
export function matching(pattern: string, what: string, accepts: string): Parser<string | undefined> {
  const test = RegExp.prototype.test.bind(new RegExp(pattern))
  return {
    accepts,
    read(env, name) {
      const value = text(env, name)
      if (value !== undefined && !test(value)) throw new ConfigError(name, `must be ${what}, got "${value}"`)
      return value
    },
  }
}

/** Bytes or a size with a unit: 8388608, 512KiB, 8MiB, 8MB. */
export function byteSize(): Parser<number | undefined> {
  const units: Record<string, number> = { b: 1, kb: 1000, kib: 1024, mb: 1_000_000, mib: 1024 * 1024 }
  return {
    accepts: 'bytes, or a whole number with `KB`, `KiB`, `MB` or `MiB` (any case), from 1KiB to 256MiB',
    read(env, name) {
      const raw = text(env, name)
      if (raw === undefined) return undefined
      const match = /^(\d+)\s*(B|KB|KiB|MB|MiB)?$/i.exec(raw)
      if (!match) throw new ConfigError(name, `must be a size such as 8388608 or 8MiB, got "${raw}"`)
      const bytes = Number(match[1]) * (units[(match[2] ?? 'b').toLowerCase()] as number)
      if (bytes < 1024 || bytes > 256 * 1024 * 1024) throw new ConfigError(name, 'must be between 1KiB and 256MiB')
      return bytes
    },
  }
}

export function oneOf<T extends string>(values: readonly T[]): Parser<T | undefined> {
  return {
    accepts: values.map(code).join(' \\| '),
    read(env, name) {
      const value = text(env, name)
      if (value !== undefined && !values.includes(value as T)) {
        throw new ConfigError(name, `must be one of ${values.join(', ')}, got "${value}"`)
      }
      return value as T | undefined
    },
  }
}

/** A DNS name that leaves room for `<instance id>.` before it. */
export function hostDomain(): Parser<string | undefined> {
  const dnsName = matching(DNS_SUBDOMAIN, 'a DNS name such as ctf.example.org', '')
  return {
    accepts: `a DNS name (lowercase) of at most ${MAX_HOST_DOMAIN} characters, so that \`<instance id>.\` fits before it`,
    read(env, name, context) {
      const value = dnsName.read(env, name, context)
      if (value !== undefined && value.length > MAX_HOST_DOMAIN) {
        throw new ConfigError(
          name,
          `must be at most ${MAX_HOST_DOMAIN} characters, so <instance id>.${name} is a valid host`,
        )
      }
      return value
    },
  }
}

/** `<namespace>/<name>` of a Gateway. */
export function gatewayRef(): Parser<GatewayRef | undefined> {
  return {
    accepts: '`<namespace>/<name>`',
    read(env, name) {
      const raw = text(env, name)
      if (raw === undefined) return undefined
      const [namespace = '', gateway = '', ...rest] = raw.split('/')
      if (rest.length > 0 || !isDnsLabel(namespace) || !isDnsSubdomain(gateway)) {
        throw new ConfigError(
          name,
          `must be <namespace>/<name> of the shared Gateway, such as gateway-system/ctf, got "${raw}"`,
        )
      }
      return { namespace, name: gateway }
    },
  }
}

/** `key=value[,key=value]`: labels a set of pods carries. */
export function labels(): Parser<Record<string, string> | undefined> {
  return {
    accepts: '`key=value[,key=value]`: labels',
    read(env, name) {
      const raw = text(env, name)
      if (raw === undefined) return undefined
      const result: Record<string, string> = {}
      for (const entry of raw.split(',')) {
        const [key = '', value, ...rest] = entry.trim().split('=')
        if (value === undefined || rest.length > 0 || !isLabelKey(key) || !isLabelValue(value)) {
          throw new ConfigError(name, `"${entry.trim()}" is not a label such as app.kubernetes.io/name=traefik`)
        }
        result[key] = value
      }
      return result
    },
  }
}

/** `key[=value][:Effect][,...]`: taints as `kubectl taint` writes them; no effect tolerates all. */
export function tolerations(): Parser<Toleration[]> {
  return {
    accepts: `\`key[=value][:Effect][,…]\` as \`kubectl taint\` writes them; Effect is ${TAINT_EFFECTS.map(code).join(', ')}`,
    shown: 'none',
    read(env, name) {
      const raw = text(env, name)
      if (raw === undefined) return []
      return raw.split(',').map((entry) => {
        const [taint = '', effect, ...rest] = entry.trim().split(':')
        const [key = '', value, ...more] = taint.split('=')
        const valid =
          rest.length === 0 &&
          more.length === 0 &&
          isLabelKey(key) &&
          (value === undefined || isLabelValue(value)) &&
          (effect === undefined || (TAINT_EFFECTS as readonly string[]).includes(effect))
        if (!valid)
          throw new ConfigError(name, `"${entry.trim()}" is not a taint to tolerate such as pool=challenges:NoSchedule`)
        return {
          key,
          operator: value === undefined ? 'Exists' : 'Equal',
          ...(value === undefined ? {} : { value }),
          ...(effect === undefined ? {} : { effect: effect as TaintEffect }),
        }
      })
    },
  }
}

/** A comma-separated list, each entry trimmed and checked by `check` (which throws). */
function list(accepts: string, check: (entry: string, name: string) => void): Parser<string[]> {
  return {
    accepts,
    shown: 'none',
    read(env, name) {
      const raw = text(env, name)
      if (raw === undefined) return []
      return raw.split(',').map((each) => {
        const entry = each.trim()
        check(entry, name)
        return entry
      })
    },
  }
}

export function cidrs(): Parser<string[]> {
  return list('comma-separated CIDRs, IPv4 or IPv6 (`10.0.0.0/8`, `fd00::/8`)', (cidr, name) => {
    const [address = '', bits = '', ...rest] = cidr.split('/')
    const family = isIP(address)
    const max = family === 6 ? 128 : 32
    if (family === 0 || rest.length > 0 || !isDigits(bits) || Number(bits) > max) {
      throw new ConfigError(name, `"${cidr}" is not a CIDR such as 10.0.0.0/8 or fd00::/8`)
    }
  })
}

/**
 * An IP address and a port, `10.96.0.1:443` or `[fd00::1]:443`: no name, since a pod of egress `None` cannot look one
 * up (a failed lookup would look like a blocked connection).
 */
export function addressAndPort(): Parser<string | undefined> {
  return {
    accepts: 'an IP address and a port: `10.96.0.1:443`, `[fd00::1]:443`',
    read(env, name) {
      const value = text(env, name)
      if (value === undefined) return undefined
      const match = new RegExp(HOST_AND_PORT).exec(value)
      // One of the two host groups matched whenever the expression did.
      const [address, port] = match === null ? ['', 0] : [(match[1] ?? match[2]) as string, Number(match[3])]
      const family = isIP(address)
      if (family === 0 || (family === 6) !== value.startsWith('[') || port < 1 || port > 65535)
        throw new ConfigError(
          name,
          `must be an IP address and a port such as 10.96.0.1:443 or [fd00::1]:443, got "${value}"`,
        )
      return value
    },
  }
}

/** `true` or `false`. */
export function boolean(): Parser<boolean | undefined> {
  const values = oneOf(['true', 'false'])
  return {
    accepts: values.accepts,
    read(env, name, context) {
      const value = values.read(env, name, context)
      return value === undefined ? undefined : value === 'true'
    },
  }
}

/** Extended resources: domain-qualified names outside kubernetes.io (cpu and memory are always allowed). */
export function extendedResources(): Parser<string[]> {
  return list('comma-separated extended resource names (`nvidia.com/gpu`)', (resource, name) => {
    if (!isExtendedResourceName(resource) || resource.length > 253) {
      throw new ConfigError(name, `"${resource}" is not an extended resource name such as nvidia.com/gpu`)
    }
  })
}

/** The resources a unit of cost holds, one quantity per resource (COST_UNIT); those left out keep the default. */
export const COST_UNIT_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'] as const
export type CostUnit = Record<(typeof COST_UNIT_RESOURCES)[number], string>
export const DEFAULT_COST_UNIT: CostUnit = { cpu: '2', memory: '2Gi', 'ephemeral-storage': '2Gi' }

/** `cpu=2,memory=2Gi,ephemeral-storage=2Gi`: each a quantity above 0, any left out at its default. */
export function costUnit(): Parser<CostUnit> {
  const shown = COST_UNIT_RESOURCES.map((name) => `${name}=${DEFAULT_COST_UNIT[name]}`).join(',')
  return {
    accepts: `\`name=quantity[,…]\` for ${COST_UNIT_RESOURCES.map(code).join(', ')}; one left out keeps its default`,
    shown: code(shown),
    read(env, name) {
      const raw = text(env, name)
      const unit = { ...DEFAULT_COST_UNIT }
      if (raw === undefined) return unit
      for (const entry of raw.split(',')) {
        const [resource = '', quantity, ...rest] = entry.trim().split('=')
        const known = (COST_UNIT_RESOURCES as readonly string[]).includes(resource)
        // A quantity whose digits are all zeros (0, 0.0, 0Mi, 0e3) is no unit: nothing would fit in it.
        const match = quantity === undefined ? null : QUANTITY_PARTS.exec(quantity)
        if (rest.length > 0 || !known || match === null || !/[1-9]/.test(match[1] as string)) {
          throw new ConfigError(
            name,
            `"${entry.trim()}" is not a resource and a quantity above 0 such as cpu=2 (resources: ${COST_UNIT_RESOURCES.join(', ')})`,
          )
        }
        unit[resource as keyof CostUnit] = quantity as string
      }
      return unit
    },
  }
}

export function runtimeClasses(): Parser<string[]> {
  return list('comma-separated RuntimeClass names (DNS labels)', (runtimeClass, name) => {
    if (!isDnsLabel(runtimeClass))
      throw new ConfigError(name, `"${runtimeClass}" is not a RuntimeClass name such as gvisor`)
  })
}

/** Estimated bits of a secret: its length times the Shannon entropy of its characters' frequencies. */
export function estimatedBits(value: string): number {
  const counts = new Map<string, number>()
  for (const character of value) counts.set(character, (counts.get(character) ?? 0) + 1)
  const length = [...value].length
  let perCharacter = 0
  for (const n of counts.values()) perCharacter -= (n / length) * Math.log2(n / length)
  return length * perCharacter
}

/**
 * A secret. In production it must not be a placeholder, the development value, short or easy to guess; `required`
 * is the problem when it is missing there, `blank` the problem when it is set but blank (undefined: allowed).
 */
export function secret(problems: { required?: string; blank?: string }): Parser<string | undefined> {
  return {
    accepts: `any text; in production at least ${MIN_PRODUCTION_SECRET_LENGTH} characters, not a placeholder (\`CHANGE-ME\`) nor easy to guess (generate one: \`openssl rand -hex 32\`)`,
    read(env, name, { production }) {
      const value = text(env, name)
      if (!production) return value
      if (value === undefined) {
        if (problems.required !== undefined) throw new ConfigError(name, problems.required)
        if (problems.blank !== undefined && env[name] !== undefined) throw new ConfigError(name, problems.blank)
        return value
      }
      if (PLACEHOLDER.test(value))
        throw new ConfigError(name, 'still holds the placeholder of manifests/secrets/secrets.env.example')
      if (value === DEVELOPMENT_FLAG_SECRET)
        throw new ConfigError(name, 'is the public development value; generate one: openssl rand -hex 32')
      if (value.length < MIN_PRODUCTION_SECRET_LENGTH) {
        throw new ConfigError(name, `must be at least ${MIN_PRODUCTION_SECRET_LENGTH} characters in production`)
      }
      if (new Set(value).size < MIN_SECRET_SYMBOLS || estimatedBits(value) < MIN_SECRET_BITS) {
        throw new ConfigError(
          name,
          'is too easy to guess (a word or a pattern repeated); generate one: openssl rand -hex 32',
        )
      }
      return value
    },
  }
}

/** NODE_ENV says production in any case, with or without spaces around it: a spelling never turns the checks off. */
export function isProduction(env: Env): boolean {
  return env.NODE_ENV?.trim().toLowerCase() === 'production'
}

export function production(): Parser<boolean> {
  return {
    accepts: '`production` in any case, spaces around it ignored; anything else is not production',
    read: (env) => isProduction(env),
  }
}

/** A DNS label (a namespace, a RuntimeClass): `what` names it in the error. */
export const dnsLabel = (what: string) =>
  matching(DNS_LABEL, what, `${what}: a DNS label (lowercase letters, digits and \`-\`, at most 63)`)
/** A DNS subdomain (most object names): `what` names it in the error. */
export const dnsSubdomain = (what: string) =>
  matching(DNS_SUBDOMAIN, what, `${what}: DNS labels joined by \`.\`, at most 253`)
/** A Traefik entry point name. */
export const entryPoint = () =>
  matching(ENTRY_POINT, 'an entry point name', 'an entry point name (letters, digits, `-` and `_`, at most 63)')
