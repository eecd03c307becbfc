// What the suite must leave as it found it on the (shared) machine: a snapshot of the host's network (interfaces,
// addresses, routes, rules, iptables, nftables, ipsets), its mounts and the kernel settings a node is known to
// change. Compared before and after the run; any difference fails the suite.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/** Host-wide settings a kubelet or kube-proxy would change (the suite shows them other values in its namespace). */
const SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
  'net/netfilter/nf_conntrack_max',
  'net/ipv4/ip_forward',
  'net/bridge/bridge-nf-call-iptables',
  'net/ipv4/conf/all/route_localnet',
]

export type HostSnapshot = Record<string, string>

export function snapshotHost(): HostSnapshot {
  return {
    links: run('ip', ['-o', 'link', 'show']).replace(/\s+link\/\S+ [0-9a-f:]+ brd [0-9a-f:]+/g, ''),
    addresses: run('ip', ['-o', 'address', 'show']),
    routes: run('ip', ['route', 'show', 'table', 'all']) + run('ip', ['-6', 'route', 'show', 'table', 'all']),
    rules: run('ip', ['rule', 'show']),
    iptables: withoutCounters(run('iptables-save', [])) + withoutCounters(run('ip6tables-save', [])),
    nftables: run('nft', ['list', 'ruleset']),
    ipsets: run('ipset', ['list', '-n']),
    mounts: readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((line) => line.split(' ').slice(3, 5).join(' '))
      .sort()
      .join('\n'),
    sysctls: SYSCTLS.map((name) => `${name}=${readOr(`/proc/sys/${name}`)}`).join('\n'),
  }
}

/** One line per aspect that changed, with what was added and what went (empty: unchanged). */
export function hostChanges(before: HostSnapshot, after: HostSnapshot): string[] {
  const changes: string[] = []
  for (const key of Object.keys(before)) {
    const was = new Set((before[key] ?? '').split('\n'))
    const now = new Set((after[key] ?? '').split('\n'))
    const added = [...now].filter((line) => !was.has(line))
    const gone = [...was].filter((line) => !now.has(line))
    if (added.length > 0 || gone.length > 0)
      changes.push(`${key}: added [${added.join(' | ')}] removed [${gone.join(' | ')}]`)
  }
  return changes
}

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8' })
  if (result.error !== undefined) return `(${command} unavailable: ${result.error.message})`
  return `${result.stdout}${result.status === 0 ? '' : `(exit ${result.status}: ${result.stderr.trim()})`}`
}

/** iptables-save prints a date and packet counters, which change by themselves. */
function withoutCounters(text: string): string {
  return text
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .map((line) => line.replace(/\[\d+:\d+\]/g, ''))
    .join('\n')
}

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim()
  } catch {
    return '(absent)'
  }
}
