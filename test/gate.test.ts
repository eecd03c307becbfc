// The isolation gate's program (src/gate.ts) in-process: a clock of the test's own, attempts answered from a script,
// and its real I/O against loopback and temporary files. What it decides is docs/api.md's "The isolation gate":
// 3 blocked attempts in a row 20 ms apart pass, a pod with IPv6 addresses is refused unless the engine enforces
// IPv6, and no 3 in a row within the timeout fail with the reason as the termination message.
import { once } from 'node:events'
import { EventEmitter } from 'node:events'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { attemptTcp, ipv6AddressesOf, podIo, runGate, splitTarget, type GateIo, type Outcome } from '../src/gate.js'

const T0 = 1_800_000_000_000
const API = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }

/**
 * A gate on a clock that moves only when it sleeps (20 ms) or attempts (`attemptMs` each); `outcomes` answer the
 * attempts in order, the last one repeated; `ipv6` is what /proc/net/if_inet6 shows at each reading.
 */
function scripted(outcomes: Outcome[], options: { attemptMs?: number; ipv6?: string[][] } = {}) {
  let clock = T0
  const attempts: string[] = []
  const logs: string[] = []
  const failures: string[] = []
  const ipv6 = [...(options.ipv6 ?? [[]])]
  const io: GateIo = {
    now: () => clock,
    sleep: async (ms) => {
      clock += ms
    },
    attempt: async (host, port) => {
      attempts.push(`${host} ${port} at +${clock - T0}`)
      clock += options.attemptMs ?? 1
      return (outcomes.length > 1 ? outcomes.shift() : outcomes[0]) as Outcome
    },
    ipv6Addresses: () => (ipv6.length > 1 ? ipv6.shift() : ipv6[0]) as string[],
    log: (line) => logs.push(line),
    fail: (message) => failures.push(message),
  }
  return { io, attempts, logs, failures }
}

t.test('reached twice, then blocked 3 times in a row: exit 0 and the report of the instants', async (t) => {
  const gate = scripted(['reached', 'reached', 'blocked', 'blocked', 'blocked'])
  t.equal(await runGate({ ...API, ISOLATION_GATE_TIMEOUT_SECONDS: '60', POLICY_ENFORCES_IPV6: 'false' }, gate.io), 0)
  // Each attempt takes 1 ms, then 20 ms apart: they start at 0, 21, 42, 63, 84.
  t.strictSame(gate.attempts, [
    '10.96.0.1 443 at +0',
    '10.96.0.1 443 at +21',
    '10.96.0.1 443 at +42',
    '10.96.0.1 443 at +63',
    '10.96.0.1 443 at +84',
  ])
  t.strictSame(
    gate.logs.map((line) => JSON.parse(line) as unknown),
    [
      {
        isolationGate: 'enforced',
        target: '10.96.0.1:443',
        startedAt: T0,
        lastReachedAt: T0 + 21,
        firstBlockedAt: T0 + 42,
        passedAt: T0 + 85,
        attempts: 5,
        reached: 2,
      },
    ],
  )
  t.strictSame(gate.failures, [])
})

t.test('blocked from the first attempt: lastReachedAt is null', async (t) => {
  const gate = scripted(['blocked'])
  t.equal(await runGate(API, gate.io), 0)
  t.strictSame(JSON.parse(gate.logs[0] as string), {
    isolationGate: 'enforced',
    target: '10.96.0.1:443',
    startedAt: T0,
    lastReachedAt: null,
    firstBlockedAt: T0,
    passedAt: T0 + 43,
    attempts: 3,
    reached: 0,
  })
})

t.test('two blocked, then one reached: the count starts again (a passing refusal is not the rules)', async (t) => {
  const gate = scripted(['blocked', 'blocked', 'reached', 'blocked', 'blocked', 'blocked'])
  t.equal(await runGate(API, gate.io), 0)
  t.match(JSON.parse(gate.logs[0] as string), {
    lastReachedAt: T0 + 42,
    firstBlockedAt: T0 + 63,
    attempts: 6,
    reached: 1,
  })
})

t.test('ISOLATION_GATE_TARGET wins over the API server; an IPv6 API server is bracketed', async (t) => {
  const configured = scripted(['blocked'])
  t.equal(await runGate({ ...API, ISOLATION_GATE_TARGET: ' [fd00::53]:9153 ' }, configured.io), 0)
  t.strictSame(configured.attempts[0], 'fd00::53 9153 at +0')
  t.match(JSON.parse(configured.logs[0] as string), { target: '[fd00::53]:9153' })
  const v6 = scripted(['blocked'])
  t.equal(await runGate({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, v6.io), 0)
  t.strictSame(v6.attempts[0], 'fd00::1 443 at +0')
  t.match(JSON.parse(v6.logs[0] as string), { target: '[fd00::1]:443' })
})

t.test('never 3 blocked in a row within the timeout: exit 1, the reason as the termination message', async (t) => {
  // Reached, blocked, blocked, reached, ... : 21 ms each, so 6 s hold 286 attempts.
  const pattern: Outcome[] = []
  for (let i = 0; i < 400; i++) pattern.push(i % 3 === 0 ? 'reached' : 'blocked')
  const gate = scripted(pattern)
  t.equal(await runGate({ ...API, ISOLATION_GATE_TIMEOUT_SECONDS: '6' }, gate.io), 1)
  t.strictSame(gate.failures, [
    "Egress isolation is not in force: 10.96.0.1:443 (the API server), which every egress mode forbids, accepted 96 of 286 connections over 6 s, and never 3 in a row were blocked. The node needs a NetworkPolicy engine that enforces the instance's policies (docs/install.md); an API server address that egress Internet reaches belongs in CLUSTER_CIDRS.",
  ])
  t.strictSame(gate.logs, [])
})

t.test('no NetworkPolicy engine: every attempt reaches, the gate gives up at its timeout (60 s unset)', async (t) => {
  const gate = scripted(['reached'], { attemptMs: 980 })
  t.equal(await runGate({ ...API, ISOLATION_GATE_TARGET: '10.0.0.10:9153' }, gate.io), 1)
  t.strictSame(gate.attempts.length, 60)
  t.strictSame(gate.failures, [
    "Egress isolation is not in force: 10.0.0.10:9153 (ISOLATION_GATE_TARGET), which every egress mode forbids, accepted 60 of 60 connections over 60 s, and never 3 in a row were blocked. The node needs a NetworkPolicy engine that enforces the instance's policies (docs/install.md); an API server address that egress Internet reaches belongs in CLUSTER_CIDRS.",
  ])
})

t.test('IPv6 addresses at the start: refused before any attempt, unless the engine enforces IPv6', async (t) => {
  const addresses = ['fe80::8c3a:5bff:fe1d:2e3f%eth0', '2001:db8::10%eth0']
  const refused = scripted(['blocked'], { ipv6: [addresses] })
  t.equal(await runGate({ ...API, POLICY_ENFORCES_IPV6: 'false' }, refused.io), 1)
  t.strictSame(refused.attempts, [])
  t.strictSame(refused.failures, [
    "The pod has IPv6 addresses (fe80::8c3a:5bff:fe1d:2e3f%eth0, 2001:db8::10%eth0), which NetworkPolicy engines that enforce IPv4 only let through: turn IPv6 off in the pods' network namespaces, or set POLICY_ENFORCES_IPV6=true if the cluster's NetworkPolicy engine enforces the policies over IPv6 (docs/install.md).",
  ])
  const unset = scripted(['blocked'], { ipv6: [addresses] })
  t.equal(await runGate(API, unset.io), 1, 'unset is not true')
  const enforced = scripted(['blocked'], { ipv6: [addresses] })
  t.equal(await runGate({ ...API, POLICY_ENFORCES_IPV6: 'true' }, enforced.io), 0, 'true: the engine covers IPv6')
  t.equal(enforced.attempts.length, 3)
})

t.test('an IPv6 address that comes up while the gate tries: refused when it would pass', async (t) => {
  const gate = scripted(['blocked'], { ipv6: [[], ['2001:db8::10%eth0']] })
  t.equal(await runGate(API, gate.io), 1)
  t.equal(gate.attempts.length, 3)
  t.strictSame(gate.logs, [])
  t.match(gate.failures, [/^The pod has IPv6 addresses \(2001:db8::10%eth0\)/])
})

t.test('no target, or a target that is not an address and a port', async (t) => {
  const none = scripted(['blocked'])
  t.equal(await runGate({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }, none.io), 1)
  t.strictSame(none.failures, [
    'No target to try: neither ISOLATION_GATE_TARGET nor KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are set.',
  ])
  const bad = scripted(['blocked'])
  t.equal(await runGate({ ...API, ISOLATION_GATE_TARGET: 'kubernetes.default:443:1' }, bad.io), 1)
  t.strictSame(bad.failures, ['ISOLATION_GATE_TARGET is not an address and a port: "kubernetes.default:443:1".'])
  t.strictSame([...none.attempts, ...bad.attempts], [])
  t.strictSame(splitTarget('[fd00::1]:443'), { host: 'fd00::1', port: 443 })
  t.strictSame(splitTarget('10.0.0.1:53'), { host: '10.0.0.1', port: 53 })
  t.equal(splitTarget('10.0.0.1'), undefined)
})

t.test('one attempt over loopback: a listener is reached, a closed port is blocked', async (t) => {
  const server = createServer((socket) => socket.end())
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  t.equal(await attemptTcp('127.0.0.1', port), 'reached')
  server.close()
  await once(server, 'close')
  t.equal(await attemptTcp('127.0.0.1', port), 'blocked', 'refused')
})

t.test(
  'an attempt nobody answers is blocked at its timeout; an answer after the decision changes nothing',
  async (t) => {
    const sockets: EventEmitter[] = []
    const silent = () => {
      const socket = Object.assign(new EventEmitter(), { destroy: () => undefined })
      sockets.push(socket)
      return socket as unknown as Socket
    }
    t.equal(await attemptTcp('10.96.0.1', 443, 5, silent), 'blocked')
    // Refused, then (as a late event) connected: the first word counts.
    const late = attemptTcp('10.96.0.1', 443, 60_000, silent)
    sockets[1]?.emit('error', new Error('connect ECONNREFUSED'))
    sockets[1]?.emit('connect')
    t.equal(await late, 'blocked')
  },
)

t.test("/proc/net/if_inet6: every address but loopback's, in its short form, with its interface", async (t) => {
  const file = [
    '00000000000000000000000000000001 01 80 10 80       lo',
    'fe800000000000008c3a5bfffe1d2e3f 02 40 20 80     eth0',
    '20010db8000000000000000000000010 02 40 00 00     eth0',
    '',
  ].join('\n')
  t.strictSame(ipv6AddressesOf(file), ['fe80::8c3a:5bff:fe1d:2e3f%eth0', '2001:db8::10%eth0'])
  t.strictSame(ipv6AddressesOf(''), [], 'IPv6 off in the namespace: an empty file')
})

t.test("the pod's I/O: /proc read, missing or unreadable; the termination message written", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gate-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const ifInet6 = join(dir, 'if_inet6')
  writeFileSync(ifInet6, 'fe800000000000008c3a5bfffe1d2e3f 02 40 20 80     eth0\n')
  const terminationLog = join(dir, 'termination-log')
  const io = podIo({ ifInet6, terminationLog })
  t.strictSame(io.ipv6Addresses(), ['fe80::8c3a:5bff:fe1d:2e3f%eth0'])
  t.strictSame(podIo({ ifInet6: join(dir, 'none'), terminationLog }).ipv6Addresses(), [], 'no file: no IPv6')
  t.strictSame(
    podIo({ ifInet6: dir, terminationLog }).ipv6Addresses(),
    [`unknown: ${dir} cannot be read (EISDIR)`],
    'a file that cannot be read proves nothing: counted as an address',
  )
  const stderr: string[] = []
  const stdout: string[] = []
  const write = { err: process.stderr.write.bind(process.stderr), out: process.stdout.write.bind(process.stdout) }
  process.stderr.write = (text: string) => stderr.push(text) > 0
  process.stdout.write = (text: string) => stdout.push(text) > 0
  try {
    io.fail('Egress isolation is not in force.')
    podIo({ ifInet6, terminationLog: join(dir, 'missing', 'termination-log') }).fail('No target.')
    io.log('{"isolationGate":"enforced"}')
  } finally {
    process.stderr.write = write.err
    process.stdout.write = write.out
  }
  t.equal(readFileSync(terminationLog, 'utf8'), 'Egress isolation is not in force.')
  t.strictSame(stderr, ['Egress isolation is not in force.\n', 'No target.\n'])
  t.strictSame(stdout, ['{"isolationGate":"enforced"}\n'])
  const before = io.now()
  await io.sleep(1)
  t.ok(io.now() >= before, 'the real clock')
  const server = createServer((socket) => socket.end())
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.equal(await io.attempt('127.0.0.1', (server.address() as { port: number }).port), 'reached')
  server.close()
})
