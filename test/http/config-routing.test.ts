// The routing settings (HTTP_ROUTING, TLS_ROUTING, GATEWAY, listeners, entry points, TLS hosts and port, the
// proxy's pod selector): each bad value stops the start with a ConfigError naming the variable, and GATEWAY is
// required by an explicit Gateway API routing.
import t from 'tap'
import { ConfigError, loadConfig } from '../../src/config/config.js'

function problem(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env)
  } catch (error) {
    return error as ConfigError
  }
  throw new Error(`no ConfigError for ${JSON.stringify(env)}`)
}

t.test('a bad routing value names its variable', async (t) => {
  const cases: [Record<string, string>, string, RegExp][] = [
    [
      { HTTP_ROUTING: 'Gateway' },
      'HTTP_ROUTING',
      /^HTTP_ROUTING: must be one of Ingress, GatewayAPI, Traefik, got "Gateway"$/,
    ],
    [{ HTTP_ROUTING: 'gatewayapi' }, 'HTTP_ROUTING', /must be one of/],
    [{ TLS_ROUTING: 'Ingress' }, 'TLS_ROUTING', /^TLS_ROUTING: must be one of GatewayAPI, Traefik, got "Ingress"$/],
    [
      { GATEWAY: 'challenges' },
      'GATEWAY',
      /^GATEWAY: must be <namespace>\/<name> of the shared Gateway, such as gateway-system\/ctf, got "challenges"$/,
    ],
    [{ GATEWAY: 'a/b/c' }, 'GATEWAY', /must be <namespace>\/<name>/],
    [{ GATEWAY: 'gateway.system/ctf' }, 'GATEWAY', /must be <namespace>\/<name>/],
    [{ GATEWAY: 'gateway-system/' }, 'GATEWAY', /must be <namespace>\/<name>/],
    [{ GATEWAY: '/ctf' }, 'GATEWAY', /must be <namespace>\/<name>/],
    [{ GATEWAY: 'gateway-system/CTF' }, 'GATEWAY', /must be <namespace>\/<name>/],
    [
      { GATEWAY_HTTP_LISTENER: 'HTTPS' },
      'GATEWAY_HTTP_LISTENER',
      /^GATEWAY_HTTP_LISTENER: must be a listener name \(sectionName\), got "HTTPS"$/,
    ],
    [{ GATEWAY_TLS_LISTENER: 'tls_443' }, 'GATEWAY_TLS_LISTENER', /must be a listener name/],
    [
      { TRAEFIK_HTTP_ENTRYPOINT: 'web secure' },
      'TRAEFIK_HTTP_ENTRYPOINT',
      /^TRAEFIK_HTTP_ENTRYPOINT: must be an entry point name, got "web secure"$/,
    ],
    [{ TRAEFIK_TLS_ENTRYPOINT: '-tcp' }, 'TRAEFIK_TLS_ENTRYPOINT', /must be an entry point name/],
    [{ TLS_PORT: '0' }, 'TLS_PORT', /^TLS_PORT: must be between 1 and 65535, got 0$/],
    [{ TLS_PORT: 'https' }, 'TLS_PORT', /must be a whole number/],
    [
      { TLS_BASE_DOMAIN: 'TCP.example.org' },
      'TLS_BASE_DOMAIN',
      /^TLS_BASE_DOMAIN: must be a DNS name such as ctf.example.org/,
    ],
    [
      { TLS_BASE_DOMAIN: `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(46)}` },
      'TLS_BASE_DOMAIN',
      /^TLS_BASE_DOMAIN: must be at most 236 characters, so <instance id>.TLS_BASE_DOMAIN is a valid host$/,
    ],
    [
      { BASE_DOMAIN: `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(46)}` },
      'BASE_DOMAIN',
      /must be at most 236 characters/,
    ],
    [
      { INGRESS_POD_SELECTOR: 'traefik' },
      'INGRESS_POD_SELECTOR',
      /^INGRESS_POD_SELECTOR: "traefik" is not a label such as app.kubernetes.io\/name=traefik$/,
    ],
    [{ INGRESS_POD_SELECTOR: 'app=a=b' }, 'INGRESS_POD_SELECTOR', /"app=a=b" is not a label/],
    [{ INGRESS_POD_SELECTOR: 'app=traefik,' }, 'INGRESS_POD_SELECTOR', /"" is not a label/],
    [{ INGRESS_POD_SELECTOR: 'app=-traefik' }, 'INGRESS_POD_SELECTOR', /is not a label/],
    [{ INGRESS_POD_SELECTOR: 'Example.com/app=traefik' }, 'INGRESS_POD_SELECTOR', /is not a label/],
    [{ INGRESS_POD_SELECTOR: `app=${'a'.repeat(64)}` }, 'INGRESS_POD_SELECTOR', /is not a label/],
  ]
  for (const [env, variable, message] of cases) {
    const error = problem(env)
    t.type(error, ConfigError, JSON.stringify(env))
    t.equal(error.variable, variable, JSON.stringify(env))
    t.match(error.message, message, JSON.stringify(env))
  }
})

t.test("GATEWAY is required by an explicit GatewayAPI routing, not by TLS_ROUTING's default", async (t) => {
  t.match(problem({ HTTP_ROUTING: 'GatewayAPI' }), {
    variable: 'GATEWAY',
    message: 'GATEWAY: is required when HTTP_ROUTING=GatewayAPI: <namespace>/<name> of the shared Gateway',
  })
  t.match(problem({ TLS_ROUTING: 'GatewayAPI' }), {
    variable: 'GATEWAY',
    message: /^GATEWAY: is required when TLS_ROUTING=GatewayAPI/,
  })
  t.match(problem({ HTTP_ROUTING: 'GatewayAPI', TLS_ROUTING: 'Traefik' }), { variable: 'GATEWAY' })
  t.match(
    loadConfig({}),
    { httpRouting: 'Ingress', tlsRouting: 'GatewayAPI', gateway: undefined },
    'the default starts: TLS challenges are refused per instance',
  )
  t.match(loadConfig({ TLS_ROUTING: 'Traefik' }), { tlsRouting: 'Traefik', gateway: undefined })
  t.match(loadConfig({ HTTP_ROUTING: 'Traefik', TLS_ROUTING: 'Traefik' }), {
    httpRouting: 'Traefik',
    gateway: undefined,
  })
  t.strictSame(
    loadConfig({ TLS_ROUTING: 'GatewayAPI', GATEWAY: ' gw/ctf.example ' }).gateway,
    { namespace: 'gw', name: 'ctf.example' },
    'trimmed; a name may have dots',
  )
})

t.test('INGRESS_POD_SELECTOR: labels with or without a prefix, and empty values', async (t) => {
  t.strictSame(loadConfig({ INGRESS_POD_SELECTOR: 'app=traefik' }).ingressPodSelector, { app: 'traefik' })
  t.strictSame(
    loadConfig({ INGRESS_POD_SELECTOR: 'gateway.envoyproxy.io/owning-gateway-name=challenges,role=' })
      .ingressPodSelector,
    {
      'gateway.envoyproxy.io/owning-gateway-name': 'challenges',
      role: '',
    },
  )
})
