// The node's private world: one holder process with new mount and network namespaces, which everything of the
// node runs in (started from a process that joined them with nsenter). The host keeps its interfaces, routes,
// firewall, mounts and kernel settings; the namespace has no uplink, so no packet can leave the machine.
//
// Outside (cli.ts): startHolder, createCgroupRoot, startNodeReaper, teardown, leftovers.
// Inside (inside.ts): prepareNamespace.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { BRIDGE, NODE_IP, POD_CIDR, STAND_IN_INTERFACES } from './layout.js'

const TEARDOWN = join(dirname(fileURLToPath(import.meta.url)), 'teardown.sh')
/** What a kubelet insists on (else it rewrites them, host-wide, or with protectKernelDefaults refuses to start). */
const KUBELET_SYSCTLS: Record<string, string> = {
  'vm/overcommit_memory': '1',
  'vm/panic_on_oom': '0',
  'kernel/panic': '10',
  'kernel/panic_on_oops': '1',
  'kernel/keys/root_maxkeys': '1000000',
  'kernel/keys/root_maxbytes': '25000000',
}
/** The directories the node's programs write to, each bind-mounted from the temp dir inside the namespace. */
const PRIVATE_DIRS = ['/run', '/var/lib', '/var/log', '/etc/cni']

export interface Holder {
  pid: number
  mntNs: string
  netNs: string
  /** the temp dir (the node's files, logs, mounts' sources) */
  dir: string
  /** the cgroup under which the kubelet puts every pod, in every hierarchy */
  cgroupRoot: string
}

/** `unshare --mount --net --propagation slave sleep infinity`: the namespaces live as long as it does. */
export async function startHolder(dir: string, cgroupRoot: string): Promise<Holder> {
  const child = spawn('unshare', ['--mount', '--net', '--propagation', 'slave', 'sleep', 'infinity'], {
    stdio: 'ignore',
  })
  const pid = child.pid as number
  const own = readlinkSync('/proc/self/ns/net')
  for (let i = 0; i < 100 && namespaceOf(pid, 'net') === own; i++) await new Promise((r) => setTimeout(r, 20))
  const holder = { pid, mntNs: namespaceOf(pid, 'mnt'), netNs: namespaceOf(pid, 'net'), dir, cgroupRoot }
  if (holder.netNs === own || holder.netNs === '')
    throw new Error(`unshare (pid ${pid}) did not make a network namespace`)
  writeFileSync(join(dir, 'holder.json'), JSON.stringify(holder))
  return holder
}

/** The command that runs `argv` inside the holder's namespaces, in `cwd` (nsenter itself starts in /). */
export function insideCommand(holder: Holder, cwd: string, argv: string[]): [string, string[]] {
  return ['nsenter', ['-t', String(holder.pid), '-m', '-n', '--', 'sh', '-c', 'cd "$0" && exec "$@"', cwd, ...argv]]
}

/**
 * The kubelet's cgroup root, made in every cgroup hierarchy (the kubelet refuses a root that does not exist).
 * A new cpuset cgroup starts with no CPUs and no memory nodes: it gets its parent's.
 */
export function createCgroupRoot(name: string): void {
  for (const mount of cgroupMounts()) {
    const path = join(mount, name)
    mkdirSync(path, { recursive: true })
    if (existsSync(join(path, 'cpuset.cpus'))) {
      for (const file of ['cpuset.cpus', 'cpuset.mems'])
        writeFileSync(join(path, file), readFileSync(join(mount, file), 'utf8'))
    }
  }
}

/** A detached teardown.sh run once `owner` dies without having cleaned up (killed by a timeout, Ctrl-C). */
export function startNodeReaper(owner: number, holder: Holder): void {
  const script = `while kill -0 ${owner} 2>/dev/null && [ -d "$5" ]; do sleep 0.5; done; [ -d "$5" ] && exec "$0" "$@"`
  spawn(
    'bash',
    ['-c', script, TEARDOWN, String(holder.pid), holder.mntNs, holder.netNs, holder.cgroupRoot, holder.dir],
    { detached: true, stdio: 'ignore' },
  ).unref()
}

export function teardown(holder: Holder): void {
  const result = spawnSync(TEARDOWN, [String(holder.pid), holder.mntNs, holder.netNs, holder.cgroupRoot, holder.dir], {
    encoding: 'utf8',
  })
  if (result.status !== 0) throw new Error(`teardown.sh failed (${result.status}): ${result.stderr}`)
}

/** What is left of the run, one line per kind (empty: nothing). */
export function leftovers(holder: Holder): string[] {
  const problems: string[] = []
  const members = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name) && alive(Number(name)))
    .filter(
      (pid) => namespaceOf(Number(pid), 'mnt') === holder.mntNs || namespaceOf(Number(pid), 'net') === holder.netNs,
    )
  if (members.length > 0) problems.push(`processes in the node's namespaces: ${members.join(' ')}`)
  const cgroups = cgroupMounts()
    .map((mount) => join(mount, holder.cgroupRoot))
    .filter((path) => existsSync(path))
  if (cgroups.length > 0) problems.push(`cgroups: ${cgroups.join(' ')}`)
  if (existsSync(holder.dir)) problems.push(`temp dir: ${holder.dir}`)
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((line) => line.includes(holder.dir) || line.includes('/run/netns/cni-'))
  if (mounts.length > 0) problems.push(`mounts: ${mounts.join(' | ')}`)
  return problems
}

/**
 * Inside the namespaces, before any daemon starts: private /run, /var/lib, /var/log and /etc/cni; the kernel
 * settings the kubelet wants, as files over /proc/sys (this mount namespace only); lo, the pods' bridge with the
 * node's address, a default route into it (the Service range must be routable; there is no uplink), forwarding,
 * and the two stand-in addresses on interfaces of their own.
 */
export function prepareNamespace(dir: string): void {
  for (const target of PRIVATE_DIRS) {
    const source = join(dir, 'root', target)
    mkdirSync(source, { recursive: true })
    mkdirSync(target, { recursive: true })
    sh('mount', ['--bind', source, target])
  }
  mkdirSync(join(dir, 'sysctl'), { recursive: true })
  for (const [name, value] of Object.entries(KUBELET_SYSCTLS)) {
    if (readFileSync(`/proc/sys/${name}`, 'utf8').trim() === value) continue
    const file = join(dir, 'sysctl', name.replaceAll('/', '.'))
    writeFileSync(file, `${value}\n`)
    sh('mount', ['--bind', '-o', 'ro', file, `/proc/sys/${name}`])
  }
  sh('ip', ['link', 'set', 'lo', 'up'])
  sh('ip', ['link', 'add', BRIDGE, 'type', 'bridge'])
  sh('ip', ['address', 'add', `${NODE_IP}/${POD_CIDR.split('/')[1]}`, 'dev', BRIDGE])
  sh('ip', ['link', 'set', BRIDGE, 'up'])
  sh('ip', ['route', 'add', 'default', 'dev', BRIDGE])
  writeFileSync('/proc/sys/net/ipv4/ip_forward', '1\n')
  for (const [name, address] of Object.entries(STAND_IN_INTERFACES)) {
    // A bridge without ports stands in for a dummy interface (this kernel has no dummy driver).
    sh('ip', ['link', 'add', name, 'type', 'bridge'])
    sh('ip', ['address', 'add', `${address}/32`, 'dev', name])
    sh('ip', ['link', 'set', name, 'up'])
  }
}

export function cgroupMounts(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' '))
    .filter((fields) => {
      const type = fields[fields.indexOf('-') + 1]
      return type === 'cgroup' || type === 'cgroup2'
    })
    .map((fields) => fields[4] as string)
}

function namespaceOf(pid: number, kind: 'mnt' | 'net'): string {
  try {
    return readlinkSync(`/proc/${pid}/ns/${kind}`)
  } catch {
    return ''
  }
}

function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'))
  } catch {
    return false
  }
}

function sh(command: string, args: string[]): void {
  execFileSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'] })
}
