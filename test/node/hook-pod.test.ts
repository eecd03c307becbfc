// The hook server as a pod under its own manifests (manifests/hook-server.yaml, installed by the suite as an
// operator would): its image is the one the node imported at its start (test/support/node/hook-image.ts: the Node
// binary that runs this suite, its shared libraries and the checkout's bundled dist/server.js), under the
// reference the Deployment names, so that nothing is pulled. Then the Deployment is scaled to one
// replica: the pod must start under the manifest's hardened context, become Ready on its ops port, say at start
// what its configuration lacks (config.env's PUBLIC_HOST placeholder), answer a /sync through its Service, and be
// reachable from Metacontroller's namespace only.
import t from 'tap'
import { createNamespace } from '../support/kube/harness.js'
import { kubectlOk } from '../support/kube/kubectl.js'
import { HOOK_IMAGE } from '../support/node/hook-image.js'
import { newRequest } from '../helpers/hook-requests.js'
import { probeFrom, startNodeSuite, workstation, type Json } from '../support/node/harness.js'

const suite = await startNodeSuite(t)
const NS = 'challenge-hooks'
const SELECTOR = 'app.kubernetes.io/name=challenge-hooks,app.kubernetes.io/component=hook-server'

t.test(
  'the hook server as a pod of its own manifests: Ready, warns, answers /sync through its Service, only Metacontroller reaches it',
  async (t) => {
    const deployment = await suite.rest.get<{ spec: { template: { spec: { containers: { image: string }[] } } } }>(
      `/apis/apps/v1/namespaces/${NS}/deployments/challenge-hooks`,
    )
    t.equal(
      deployment.spec.template.spec.containers[0]?.image,
      HOOK_IMAGE,
      'the image the node imported at its start (test/support/node/hook-image.ts), which is also the isolation gate',
    )
    t.teardown(() => kubectlOk(suite.kubectl, ['-n', NS, 'scale', 'deployment/challenge-hooks', '--replicas=0']))
    const scaled = Date.now()
    await kubectlOk(suite.kubectl, ['-n', NS, 'scale', 'deployment/challenge-hooks', '--replicas=1'])
    await kubectlOk(suite.kubectl, ['-n', NS, 'rollout', 'status', 'deployment/challenge-hooks', '--timeout=120s'])
    t.comment(`scaled to 1 → rolled out (pod Ready on /readyz) in ${((Date.now() - scaled) / 1000).toFixed(1)} s`)
    const pods = (
      await suite.rest.get<{ items: { metadata: { name: string }; status: Json }[] }>(`/api/v1/namespaces/${NS}/pods`, {
        query: { labelSelector: SELECTOR },
      })
    ).items
    t.equal(pods.length, 1, 'one pod')

    // What it said at start: one JSON line each (pino).
    const logs = (await kubectlOk(suite.kubectl, ['-n', NS, 'logs', 'deployment/challenge-hooks'])).stdout
    const lines = logs
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Json)
    t.match(
      lines.find((line) => line.opsPort !== undefined),
      { port: 8080, opsPort: 8081, msg: 'serving hook calls on port, probes and metrics on opsPort' },
      "listening on the manifest's ports",
    )
    const warnings = lines.filter((line) => line.level === 40).map((line) => String(line.msg))
    t.comment(`its start-up warnings:\n  ${warnings.join('\n  ')}`)
    t.ok(
      warnings.includes(
        `PUBLIC_HOST is 127.0.0.1, a loopback address (127.0.0.1 is its default, when unset): NodePort endpoints will say 127.0.0.1, so players will see "nc 127.0.0.1 <nodePort>", which reaches nothing from their machines. Set PUBLIC_HOST to a node's public name or address.`,
      ),
      "it warns that config.env's PUBLIC_HOST placeholder reaches no player",
    )

    // A /sync through the Service, as Metacontroller calls it (the node itself may reach every pod).
    const service = await suite.rest.get<{ spec: { clusterIP: string } }>(
      `/api/v1/namespaces/${NS}/services/challenge-hooks`,
    )
    const url = `http://${service.spec.clusterIP}:80/sync`
    const body = JSON.stringify(newRequest())
    // kube-proxy programs the Service some time after the pod is Ready (its minimum sync period is a second, the
    // same delay the hook's ENDPOINT_SETTLE_MS waits out for instances): refused until then, so the first call is
    // retried for up to 10 s, and how long it took is said.
    const asked = Date.now()
    let unauthorized: Response | undefined
    for (;;) {
      unauthorized = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } }).catch(
        (error: Error) => {
          if (Date.now() - asked > 10_000) throw error
          return undefined
        },
      )
      if (unauthorized !== undefined) break
      await new Promise((done) => setTimeout(done, 100))
    }
    t.comment(`the Service answered ${Date.now() - asked} ms after the pod was Ready`)
    t.equal(unauthorized.status, 401, 'without the token: 401')
    const answer = await fetch(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${suite.token}` },
    })
    const sync = (await answer.json()) as { status?: Json; children?: unknown[] }
    t.equal(answer.status, 200, 'with the token of challenge-hooks-secrets: 200')
    t.match(sync.status, { phase: 'Pending' }, 'a first sync answered: Pending, children to create')

    // Who reaches it: a pod in Metacontroller's namespace does, a pod of another namespace does not.
    const caller = await workstation(suite, 'metacontroller', 'hook-caller')
    t.teardown(() =>
      suite.kubectl([
        '-n',
        'metacontroller',
        'delete',
        'pod/hook-caller',
        'networkpolicy/hook-caller-anywhere',
        '--wait=false',
      ]),
    )
    const other = await createNamespace(suite, t, 'hook-elsewhere')
    const stranger = await workstation(suite, other, 'stranger')
    const target = { hook: `tcp:${service.spec.clusterIP}:80` }
    const fromMetacontroller = await probeFrom(suite, 'metacontroller', caller.name, target)
    const fromElsewhere = await probeFrom(suite, other, stranger.name, target)
    t.strictSame(
      { metacontroller: fromMetacontroller.hook?.reached, elsewhere: fromElsewhere.hook?.reached },
      { metacontroller: true, elsewhere: false },
      `its NetworkPolicy: Metacontroller's namespace reaches the hook port, another namespace does not (${fromElsewhere.hook?.error})`,
    )
  },
)
