/**
 * The gateway's configuration (src/gateway-server.ts), from the environment, read once at start with the hook
 * server's parsers: a bad value stops the start with exit code 78 and a message naming the variable. The gateway
 * shares no variable's meaning with the hook server except OWNER_BUDGET, which must be the hook server's value (it
 * is only shown to players). docs/gateway-api.md lists the variables.
 */
import {
  anyText,
  byteSize,
  ConfigError,
  integer,
  isProduction,
  oneOf,
  orElse,
  secret,
  type Env,
  type Parser,
} from './config-parsers.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

export interface GatewayConfig {
  port: number
  host: string
  logLevel: string
  bodyLimit: number
  /** The `aud` every player token must carry. */
  audience: string
  /** Path of the platforms file (keys, token keys, namespaces): src/gateway/identity.ts. */
  platformsFile: string
  /** Origins a browser may call from; none: no cross-origin call. */
  corsOrigins: string[]
  /** Calls that change something, per owner and minute. */
  rateLimit: number
  ownerBudget: number
  /** The hook server's POST /flags/verify and its bearer token; unset: no flag checks. */
  flagVerify: { url: string; token: string } | undefined
  heartbeatSeconds: number
  /** Retry-After of a 503 while the API server cannot be reached. */
  retryAfterSeconds: number
}

/** Every variable, its parser and meaning, in the order they are read. */
export const GATEWAY_VARIABLES = {
  PORT: { parser: orElse(integer(0, 65535, ' (0: any free port)'), 8090), meaning: 'listen port of the API' },
  HOST: { parser: orElse(anyText('an address of this host'), '0.0.0.0'), meaning: 'listen address' },
  LOG_LEVEL: { parser: orElse(oneOf(LOG_LEVELS), 'info'), meaning: "pino's level" },
  BODY_LIMIT: { parser: orElse(byteSize(), 16 * 1024, '`16KiB`'), meaning: 'largest request body; larger: 413' },
  GATEWAY_AUDIENCE: {
    parser: anyText('any text, such as the URL of the gateway'),
    meaning: 'the `aud` every player token must carry (**required**)',
  },
  GATEWAY_PLATFORMS_FILE: {
    parser: anyText('a path to a YAML or JSON file'),
    meaning: "the platforms, their keys, token keys and namespaces (**required**; a Secret's file)",
  },
  GATEWAY_CORS_ORIGINS: {
    parser: anyText('origins separated by commas, such as `https://ctf.example.org`'),
    meaning: 'the origins whose pages may call the API from a browser',
  },
  GATEWAY_RATE_LIMIT: {
    parser: orElse(integer(1, 100000), 30),
    meaning: 'calls that change something, per owner and minute; more: 429 with Retry-After',
  },
  OWNER_BUDGET: {
    parser: orElse(integer(0, 1000), 3),
    meaning:
      "the hook server's `OWNER_BUDGET`, shown to players as the total of their budget (with the hook server's `OWNER_BUDGET_SCOPE=None` no budget is enforced: set the most instances the platform lets a player hold)",
  },
  FLAG_VERIFY_URL: {
    parser: anyText('a URL, such as `http://challenge-hooks.challenge-hooks.svc:8080/flags/verify`'),
    meaning: "the hook server's `POST /flags/verify`; unset: `/v1/flags/verify` answers 404",
  },
  FLAG_VERIFY_TOKEN: {
    parser: secret({ blank: 'is set but blank' }),
    meaning: "the hook server's `FLAG_VERIFY_TOKEN`; required beside `FLAG_VERIFY_URL`",
  },
  GATEWAY_HEARTBEAT_SECONDS: {
    parser: orElse(integer(1, 300), 15),
    meaning: 'a comment line on every open event stream this often, so proxies keep it open',
  },
  GATEWAY_RETRY_AFTER_SECONDS: {
    parser: orElse(integer(1, 300), 5),
    meaning: 'the Retry-After of a 503 while the API server cannot be reached',
  },
} as const satisfies Record<string, { parser: Parser<unknown>; meaning: string }>

export function loadGatewayConfig(env: Env): GatewayConfig {
  const context = { production: isProduction(env) }
  const v = Object.fromEntries(
    Object.entries(GATEWAY_VARIABLES).map(([name, variable]) => [name, variable.parser.read(env, name, context)]),
  ) as { [Name in keyof typeof GATEWAY_VARIABLES]: ReturnType<(typeof GATEWAY_VARIABLES)[Name]['parser']['read']> }
  for (const required of ['GATEWAY_AUDIENCE', 'GATEWAY_PLATFORMS_FILE'] as const)
    if (v[required] === undefined) throw new ConfigError(required, 'is required')
  if ((v.FLAG_VERIFY_URL === undefined) !== (v.FLAG_VERIFY_TOKEN === undefined)) {
    const missing = v.FLAG_VERIFY_URL === undefined ? 'FLAG_VERIFY_URL' : 'FLAG_VERIFY_TOKEN'
    throw new ConfigError(missing, 'is required beside the other of FLAG_VERIFY_URL and FLAG_VERIFY_TOKEN')
  }
  if (v.FLAG_VERIFY_URL !== undefined && !URL.canParse(v.FLAG_VERIFY_URL))
    throw new ConfigError('FLAG_VERIFY_URL', `must be a URL, got "${v.FLAG_VERIFY_URL}"`)
  return {
    port: v.PORT,
    host: v.HOST,
    logLevel: v.LOG_LEVEL,
    bodyLimit: v.BODY_LIMIT,
    audience: v.GATEWAY_AUDIENCE as string,
    platformsFile: v.GATEWAY_PLATFORMS_FILE as string,
    corsOrigins: (v.GATEWAY_CORS_ORIGINS ?? '')
      .split(',')
      .map((origin) => origin.trim())
      .filter((origin) => origin !== ''),
    rateLimit: v.GATEWAY_RATE_LIMIT,
    ownerBudget: v.OWNER_BUDGET,
    flagVerify:
      v.FLAG_VERIFY_URL === undefined ? undefined : { url: v.FLAG_VERIFY_URL, token: v.FLAG_VERIFY_TOKEN as string },
    heartbeatSeconds: v.GATEWAY_HEARTBEAT_SECONDS,
    retryAfterSeconds: v.GATEWAY_RETRY_AFTER_SECONDS,
  }
}
