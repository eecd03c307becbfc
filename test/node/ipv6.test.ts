// Isolation over IPv6. The node's NetworkPolicy engine (kube-router) filters IPv4 alone, so isolation holds only if
// no pod has IPv6 (the node's configuration: the CNI tuning plugin switches it off in every pod's network
// namespace, docs/install.md "Pods without IPv6") or the engine enforces IPv6 too. This test does what an instance's
// code could do, from an egress-None instance's pod: IPv4 connections (refused) fill its ARP table, each
// neighbour's MAC gives its EUI-64 link-local address, and it connects over IPv6, to those addresses and to every
// IPv6 address the targets themselves have (link-local with the zone eth0, or global): the other owner's exposed
// and unexposed ports, the other owner's Internal instance, a pod of another namespace, CoreDNS's ports, and a
// service of the node's listening on every address (reached at the bridge's link-local address). Ingress too: a pod
// of another namespace (no policy of its own) tries the instance's unexposed ports. Nothing may be reached, over
// IPv4 as over IPv6, while the node itself reaches every target over IPv4 (each is alive). Then what makes it so:
// every pod has no IPv6 address, cannot switch IPv6 back on, and the operator's check (scripts/check-pod-ipv6.sh)
// says so.
import { execFile } from 'node:child_process'
import { createSocket } from 'node:dgram'
import { connect, createServer, type AddressInfo } from 'node:net'
import { networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { createNamespace } from '../support/kube/harness.js'
import { repoRoot } from '../support/kube/controlplane.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import {
  app,
  BRIDGE,
  definition,
  image,
  NODE_IP,
  NODE_NAME,
  podOf,
  probeFrom,
  running,
  startNodeSuite,
  workstation,
  type Suite,
} from '../support/node/harness.js'

const suite = await startNodeSuite(t)

/** What `probe net` says of a pod's network namespace. */
interface PodNet {
  interfaces: { name: string; mac: string; addresses: string[] }[]
  disableIPv6: Record<string, string>
  switchOn: string
  neighbours: Record<string, string>
}

async function netOf(s: Suite, ns: string, pod: string): Promise<PodNet> {
  const result = await kubectlOk(s.kubectl, ['exec', '-n', ns, pod, '--', '/probe', 'net'])
  return JSON.parse(result.stdout) as PodNet
}

/** An IPv6 address in its shortest form (what Go and Node print), so one address is tried once. */
function canonical(address: string): string {
  return new URL(`http://[${address}]/`).hostname.slice(1, -1)
}

/** The link-local address a MAC gives by modified EUI-64 (RFC 4291, appendix A): U/L bit flipped, ff:fe inserted. */
function eui64(mac: string): string {
  const b = mac.split(':').map((hex) => parseInt(hex, 16))
  const bytes = [(b[0] as number) ^ 0x02, b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]] as number[]
  const groups = [0, 2, 4, 6].map((i) => (((bytes[i] as number) << 8) | (bytes[i + 1] as number)).toString(16))
  return canonical(`fe80::${groups.join(':')}`)
}

/** Every IPv6 address a pod has, loopback aside (prefix length dropped). */
function ipv6Of(net: PodNet, withLoopback = false): string[] {
  return net.interfaces
    .filter((link) => withLoopback || link.name !== 'lo')
    .flatMap((link) => link.addresses)
    .map((cidr) => cidr.replace(/\/\d+$/, ''))
    .filter((address) => address.includes(':'))
    .map(canonical)
}

/** A place packets go to: its IPv4 address and the IPv6 addresses to try. */
interface Place {
  ipv4: string
  ipv6: string[]
}

interface Row {
  label: string
  to: Place
  kind: 'tcp' | 'udp'
  port: number
}

const linkLocal = (address: string) => address.startsWith('fe80:')
/** How a host names an IPv6 address: a link-local one with the interface it is reached by. */
const v6host = (address: string, zone: string) => (linkLocal(address) ? `${address}%${zone}` : address)

/** Tries, from a pod, each row over IPv4 and over each of its IPv6 addresses; per row, whether any got through. */
async function fromPod(
  ns: string,
  pod: string,
  rows: Row[],
): Promise<Record<string, { ipv4: boolean; ipv6: boolean }>> {
  const targets: Record<string, string> = {}
  rows.forEach((row, i) => {
    targets[`${i} ipv4`] = `${row.kind}:${row.to.ipv4}:${row.port}`
    row.to.ipv6.forEach(
      (address, j) => (targets[`${i} ipv6 ${j}`] = `${row.kind}:[${v6host(address, 'eth0')}]:${row.port}`),
    )
  })
  const results = await probeFrom(suite, ns, pod, targets)
  const any = (prefix: string) =>
    Object.entries(results).some(([label, result]) => label.startsWith(prefix) && result.reached)
  return Object.fromEntries(rows.map((row, i) => [row.label, { ipv4: any(`${i} ipv4`), ipv6: any(`${i} ipv6 `) }]))
}

/** The same from this process, on the node: over IPv4, and over IPv6 through the bridge. */
async function fromNode(rows: Row[]): Promise<Record<string, { ipv4: boolean; ipv6: boolean }>> {
  const one = async (row: Row, host: string) => (row.kind === 'udp' ? udp(host, row.port) : tcp(host, row.port))
  return Object.fromEntries(
    await Promise.all(
      rows.map(async (row) => {
        const ipv6 = await Promise.all(row.to.ipv6.map((address) => one(row, v6host(address, BRIDGE))))
        return [row.label, { ipv4: await one(row, row.to.ipv4), ipv6: ipv6.some(Boolean) }] as const
      }),
    ),
  )
}

function tcp(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2000 })
    socket.on('connect', () => (socket.destroy(), resolve(true)))
    socket.on('timeout', () => (socket.destroy(), resolve(false)))
    socket.on('error', () => resolve(false))
  })
}

function udp(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4')
    const timer = setTimeout(() => (socket.close(), resolve(false)), 2000)
    socket.on('message', () => (clearTimeout(timer), socket.close(), resolve(true)))
    socket.on('error', () => (clearTimeout(timer), socket.close(), resolve(false)))
    socket.send('ping', port, host)
  })
}

function table(rows: Row[], columns: Record<string, Record<string, { ipv4: boolean; ipv6: boolean }>>): string {
  const names = Object.keys(columns).flatMap((name) => [`${name}, IPv4`, `${name}, IPv6`])
  const cell = (hit: boolean | undefined) => (hit === undefined ? '' : hit ? 'reached' : '-').padEnd(26)
  return [
    `  ${'target'.padEnd(38)}${names.map((name) => name.padEnd(26)).join('')}IPv6 addresses tried`,
    ...rows.map(
      (row) =>
        `  ${row.label.padEnd(38)}${Object.values(columns)
          .map((column) => cell(column[row.label]?.ipv4) + cell(column[row.label]?.ipv6))
          .join('')}${row.to.ipv6.join(' ')}`,
    ),
  ].join('\n')
}

t.test('IPv6: an instance reaches nothing over IPv6, and no pod has IPv6 to be reached by', async (t) => {
  // A service of the node's listening on every address, IPv6 included (as sshd or a metrics exporter often do).
  const nodeService = createServer((socket) => socket.on('error', () => undefined).end('node service\n'))
  await new Promise<void>((resolve) => nodeService.listen(0, '::', resolve))
  t.teardown(() => nodeService.close())
  const nodePort = (nodeService.address() as AddressInfo).port

  const s = await suite.scenario(t, 'ipv6')
  const other = await createNamespace(suite, t, 'ipv6-elsewhere')
  const elsewhere = await workstation(suite, other, 'elsewhere')
  const probe = app('probe', 8080)
  await s.create(
    definition('v6-none', { pod: probe, expose: { type: 'NodePort', port: 8080 }, network: { egress: 'None' } }),
  )
  await s.create(
    definition('v6-dns', { pod: probe, expose: { type: 'NodePort', port: 8080 }, network: { egress: 'DNS' } }),
  )
  await s.create(
    definition('v6-internal', { pod: probe, expose: { type: 'Internal', port: 8080 }, network: { egress: 'None' } }),
  )
  await s.create(s.challenge('v6-none', 'alice'))
  await s.create(s.challenge('v6-dns', 'bob'))
  await s.create(s.challenge('v6-internal', 'bob'))
  for (const name of ['v6-none-u-alice', 'v6-dns-u-bob', 'v6-internal-u-bob']) await running(s, name)
  const alice = await podOf(s, 'v6-none-u-alice')
  const bob = await podOf(s, 'v6-dns-u-bob')
  const bobInternal = await podOf(s, 'v6-internal-u-bob')
  const { items: dnsPods } = await suite.rest.get<{ items: { status: { podIP: string } }[] }>(
    '/api/v1/namespaces/kube-system/pods?labelSelector=k8s-app%3Dkube-dns',
  )
  const coreDnsIP = (dnsPods[0] as { status: { podIP: string } }).status.podIP

  // The attacker's way in: IPv4 connections, refused by the policy, still resolve each neighbour's MAC.
  const ipv4Targets = { bob: bob.ip, bobInternal: bobInternal.ip, elsewhere: elsewhere.ip, coredns: coreDnsIP }
  await probeFrom(
    suite,
    s.ns,
    alice.name,
    Object.fromEntries([...Object.entries(ipv4Targets), ['node', NODE_IP]].map(([k, ip]) => [k, `tcp:${ip}:8080`])),
  )
  const aliceNet = await netOf(suite, s.ns, alice.name)
  const own: Record<string, PodNet> = {
    alice: aliceNet,
    bob: await netOf(suite, s.ns, bob.name),
    bobInternal: await netOf(suite, s.ns, bobInternal.name),
    elsewhere: await netOf(suite, other, elsewhere.name),
  }
  const learned = (ip: string) => {
    const mac = aliceNet.neighbours[ip]
    return mac === undefined ? [] : [eui64(mac)]
  }
  const ownEth0 = (net: PodNet) => net.interfaces.filter((link) => link.name === 'eth0').map((link) => eui64(link.mac))
  const place = (ipv4: string, ...ipv6: string[][]): Place => ({ ipv4, ipv6: [...new Set(ipv6.flat())].sort() })
  const bridge = (networkInterfaces()[BRIDGE] ?? []).filter((a) => a.family === 'IPv6').map((a) => canonical(a.address))
  const to = {
    alice: place(alice.ip, ipv6Of(own.alice as PodNet), ownEth0(own.alice as PodNet)),
    bob: place(bob.ip, learned(bob.ip), ipv6Of(own.bob as PodNet)),
    bobInternal: place(bobInternal.ip, learned(bobInternal.ip), ipv6Of(own.bobInternal as PodNet)),
    elsewhere: place(elsewhere.ip, learned(elsewhere.ip), ipv6Of(own.elsewhere as PodNet)),
    coredns: place(coreDnsIP, learned(coreDnsIP)),
    node: place(NODE_IP, learned(NODE_IP), bridge),
  }
  const egressRows: Row[] = [
    { label: "bob's instance port 8080 (exposed)", to: to.bob, kind: 'tcp', port: 8080 },
    { label: "bob's instance port 9090", to: to.bob, kind: 'tcp', port: 9090 },
    { label: "bob's instance UDP 9053", to: to.bob, kind: 'udp', port: 9053 },
    { label: "bob's Internal instance port 8080", to: to.bobInternal, kind: 'tcp', port: 8080 },
    { label: 'pod of another namespace', to: to.elsewhere, kind: 'tcp', port: 8080 },
    { label: 'CoreDNS TCP 53', to: to.coredns, kind: 'tcp', port: 53 },
    { label: 'CoreDNS health 8080', to: to.coredns, kind: 'tcp', port: 8080 },
    { label: 'CoreDNS ready 8181', to: to.coredns, kind: 'tcp', port: 8181 },
    { label: 'node service on every address', to: to.node, kind: 'tcp', port: nodePort },
  ]
  const ingressRows: Row[] = [
    { label: "alice's instance port 9090", to: to.alice, kind: 'tcp', port: 9090 },
    { label: "alice's instance UDP 9053", to: to.alice, kind: 'udp', port: 9053 },
  ]
  // Every target has an IPv6 address to try (the MAC alone gives one): the test cannot pass by trying nothing.
  t.strictSame(
    [...egressRows, ...ingressRows].filter((row) => row.to.ipv6.length === 0).map((row) => row.label),
    [],
    'every target has IPv6 addresses to try (from its MAC or its own report)',
  )

  const node = await fromNode([...egressRows, ...ingressRows])
  const aliceSaw = await fromPod(s.ns, alice.name, egressRows)
  const elsewhereSaw = await fromPod(other, elsewhere.name, ingressRows)
  t.comment(
    `from alice's egress-None instance (and, for alice's own ports, from a pod of another namespace), beside the node:\n${table(
      [...egressRows, ...ingressRows],
      { node, 'alice None': aliceSaw, 'another namespace': elsewhereSaw },
    )}`,
  )
  const each = (rows: Row[], value: { ipv4: boolean; ipv6: boolean }) =>
    Object.fromEntries(rows.map((row) => [row.label, value]))
  t.strictSame(
    Object.fromEntries(Object.entries(node).map(([label, seen]) => [label, seen.ipv4])),
    Object.fromEntries([...egressRows, ...ingressRows].map((row) => [row.label, true])),
    'the node reaches every target over IPv4: each is alive',
  )
  t.strictSame(
    aliceSaw,
    each(egressRows, { ipv4: false, ipv6: false }),
    "alice's egress-None instance reaches nothing, over IPv4 or IPv6",
  )
  t.strictSame(
    elsewhereSaw,
    each(ingressRows, { ipv4: false, ipv6: false }),
    "a pod of another namespace reaches none of alice's unexposed ports, over IPv4 or IPv6",
  )

  // What makes it so on this node: no pod has IPv6, and no instance can switch it back on.
  for (const [name, net] of Object.entries(own)) {
    t.comment(
      `${name}: IPv6 addresses [${ipv6Of(net, true).join(' ')}], disable_ipv6 ${JSON.stringify(net.disableIPv6)}, switching it on: ${net.switchOn || 'done'}`,
    )
    t.strictSame(
      { addresses: ipv6Of(net, true), disableIPv6: net.disableIPv6, switchOnRefused: net.switchOn !== '' },
      { addresses: [], disableIPv6: { all: '1', default: '1', eth0: '1' }, switchOnRefused: true },
      `${name}'s pod has no IPv6 address, IPv6 is off in its namespace, and it cannot switch IPv6 on`,
    )
  }

  // The operator's check (docs/install.md), run as an operator would, with an image of `cat` of the suite's own.
  const check = await promisify(execFile)(
    join(repoRoot, 'scripts/check-pod-ipv6.sh'),
    ['--image', image('cat'), s.ns],
    { env: { ...process.env, KUBECONFIG: suite.kubeconfig } },
  ).then(
    (done) => ({ code: 0, stdout: done.stdout }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout }),
  )
  t.comment(`scripts/check-pod-ipv6.sh ${s.ns}:\n${check.stdout.trimEnd()}`)
  t.strictSame(
    check,
    {
      code: 0,
      stdout: `ok: a pod of ${s.ns} on node ${NODE_NAME} has no IPv6 address (IPv6 is off in its network namespace)\n`,
    },
    "the operator's check finds no IPv6 in a pod of the challenges namespace",
  )
})
