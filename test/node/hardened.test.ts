// The hardened pod runs on the real runtime (containerd + runc): a Restricted instance starts, and what its
// process sees of itself is what the contract promises (challenge-api.md, Security of an instance): not root,
// no privilege escalation (no_new_privs), the runtime's seccomp filter, no capabilities, a read-only root with a
// writable /tmp, and its limits in the kernel's cgroups; a Baseline instance may run as root but still cannot open
// a raw socket (NET_RAW dropped); an image that insists on root gets the contract's error under Restricted.
import t from 'tap'
import {
  app,
  definition,
  identityOf,
  podOf,
  reaches,
  running,
  startNodeSuite,
  type Json,
} from '../support/node/harness.js'

const suite = await startNodeSuite(t)

t.test('a Restricted instance runs on the real runtime, confined as the contract says', async (t) => {
  const s = await suite.scenario(t, 'hardened')
  await s.create(
    definition('web', {
      pod: app('probe', 8080),
      expose: { type: 'NodePort', port: 8080 },
      network: { egress: 'None' },
    }),
  )
  await s.create(s.challenge('web', 'alice'))
  await running(s, 'web-u-alice')
  const pod = await podOf(s, 'web-u-alice')
  const id = await identityOf(suite, s.ns, pod.name)
  t.comment(
    `the instance's process: uid ${id.uid}, gid ${id.gid}, groups [${(id.groups as number[]).join(', ')}], NoNewPrivs ${id.noNewPrivs}, Seccomp ${id.seccomp}, CapEff ${id.capEff}, CapBnd ${id.capBnd}, root writable ${id.rootWritable}, /tmp writable ${id.tmpWritable}, memory limit ${id.memoryLimit}, cpu quota ${id.cpuQuota}`,
  )
  t.strictSame(
    {
      uid: id.uid,
      noNewPrivs: id.noNewPrivs,
      seccomp: id.seccomp,
      capEff: id.capEff,
      capBnd: id.capBnd,
      rootWritable: id.rootWritable,
      tmpWritable: id.tmpWritable,
      rawSocket: id.rawSocket,
    },
    // The image's user (10001); 1: no_new_privs; 2: a seccomp filter (RuntimeDefault); no capability at all.
    {
      uid: 10001,
      noNewPrivs: '1',
      seccomp: '2',
      capEff: '0000000000000000',
      capBnd: '0000000000000000',
      rootWritable: false,
      tmpWritable: true,
      rawSocket: 'operation not permitted',
    },
    'non-root, no privilege escalation, seccomp, no capabilities, read-only root, writable /tmp, no raw socket',
  )
  // The definition's limits (64Mi, 200m), as the kernel enforces them (cgroup v1: bytes, and quota per 100 ms).
  t.strictSame(
    { memory: id.memoryLimit, cpu: id.cpuQuota },
    { memory: String(64 * 1024 * 1024), cpu: '20000' },
    'memory and CPU limits in the cgroups',
  )
  // The definition names no user: the kubelet hands containerd the image's uid alone (its USER 10001:10001 loses its
  // group on the way), so the hook's runAsGroup on the container is what keeps the process out of group 0.
  t.strictSame(
    { gid: id.gid, groups: id.groups },
    { gid: 65534, groups: [65534] },
    'gid 65534 (nogroup, set by the hook), no group 0',
  )
})

t.test(
  "a Restricted container whose definition names a user or a group alone: nogroup beside the user, the image's uid beside the group",
  async (t) => {
    const s = await suite.scenario(t, 'hardened-ids')
    await s.create(
      definition('named', {
        pod: app('probe', 8080, { securityContext: { runAsUser: 10002 } }),
        expose: { type: 'NodePort', port: 8080 },
        network: { egress: 'None' },
      }),
    )
    await s.create(
      definition('grouped', {
        pod: app('probe', 8080, { securityContext: { runAsGroup: 4000 } }),
        expose: { type: 'NodePort', port: 8080 },
        network: { egress: 'None' },
      }),
    )
    await s.create(s.challenge('named', 'alice'))
    await s.create(s.challenge('grouped', 'alice'))
    const ids: Record<string, Json> = {}
    for (const name of ['named-u-alice', 'grouped-u-alice']) {
      await running(s, name)
      const id = await identityOf(suite, s.ns, (await podOf(s, name)).name)
      ids[name] = { uid: id.uid, gid: id.gid, groups: id.groups }
    }
    t.comment(
      `runAsUser 10002 alone: ${JSON.stringify(ids['named-u-alice'])}; runAsGroup 4000 alone: ${JSON.stringify(ids['grouped-u-alice'])}`,
    )
    t.strictSame(
      ids,
      {
        // The hook adds runAsGroup 65534 (nogroup) beside the definition's runAsUser.
        'named-u-alice': { uid: 10002, gid: 65534, groups: [65534] },
        // A group alone starts (on the container the kubelet supplies the image's uid): the image's 10001, the group 4000.
        'grouped-u-alice': { uid: 10001, gid: 4000, groups: [4000] },
      },
      'no group 0 either way',
    )
  },
)

t.test('a Baseline instance may run as root, without NET_RAW: no raw socket', async (t) => {
  const s = await suite.scenario(t, 'hardened-baseline', { podSecurity: 'baseline' })
  await s.create(
    definition('tool', {
      pod: app('probe-root', 8080),
      expose: { type: 'NodePort', port: 8080 },
      network: { egress: 'None' },
      security: { profile: 'Baseline' },
    }),
  )
  await s.create(s.challenge('tool', 'alice'))
  await running(s, 'tool-u-alice')
  const id = await identityOf(suite, s.ns, (await podOf(s, 'tool-u-alice')).name)
  t.comment(
    `the Baseline instance's process: uid ${id.uid}, gid ${id.gid}, CapEff ${id.capEff}, raw socket: ${id.rawSocket}`,
  )
  // CAP_NET_RAW is bit 13: the runtime's default set (0x00000000a80425fb) without it is 0x00000000a80405fb.
  t.strictSame(
    { uid: id.uid, capEff: id.capEff, rawSocket: id.rawSocket },
    { uid: 0, capEff: '00000000a80405fb', rawSocket: 'operation not permitted' },
    'root, the default capabilities less NET_RAW, and no raw socket',
  )
})

t.test("an image that runs as root is refused under Restricted, with the contract's reason", async (t) => {
  const s = await suite.scenario(t, 'hardened-root')
  await s.create(
    definition('rooted', {
      pod: app('root-app', 8080),
      expose: { type: 'NodePort', port: 8080 },
      network: { egress: 'None' },
    }),
  )
  await s.create(s.challenge('rooted', 'alice'))
  const status = await reaches(s, 'rooted-u-alice', 'Error')
  t.comment(`status: ${status.phase} / ${status.reason}: ${status.message}`)
  t.strictSame(
    { phase: status.phase, reason: status.reason, endpoint: status.endpoint },
    { phase: 'Error', reason: 'ConfigError', endpoint: undefined },
    'Error / ConfigError, no endpoint',
  )
  t.match(String(status.message), /container app runs as root/i, 'a message that says why: the image runs as root')
})
