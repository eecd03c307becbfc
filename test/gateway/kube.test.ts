// The gateway's API server client (src/gateway/kube.ts): what cannot be had now is Unavailable (the routes answer
// 503), every other refusal a KubeError with the API server's code and message.
import { KubeConfig } from '@kubernetes/client-node'
import t from 'tap'
import { KubeError, kubeClient, Unavailable, type WatchEvent } from '../../src/gateway/kube.js'
import { eventually } from '../support/eventually.js'
import { startFakeApiServer } from './fake-apiserver.js'

const PATH = '/apis/challenge-hooks.dev/v1alpha1/namespaces/challenges/challenges'

t.test('a kubeconfig without a current cluster is refused at once', async (t) => {
  t.throws(() => kubeClient(new KubeConfig(), 1000), { message: 'the kubeconfig has no current cluster' })
})

t.test('no answer, a cut answer, a proxy page, a closed HTTPS port: Unavailable; a refusal: KubeError', async (t) => {
  const fake = await startFakeApiServer(t)
  const kube = kubeClient(fake.kubeconfig, 300)
  fake.mode = 'silent'
  await t.rejects(kube.get(`${PATH}/x`), new Unavailable('the API server cannot be reached: no answer within 300 ms'))
  fake.mode = 'cut'
  await t.rejects(kube.get(`${PATH}/x`), { name: 'Unavailable', message: /^the API server's answer was cut: / })
  fake.mode = 'html'
  await t.rejects(kube.get(`${PATH}/x`), new Unavailable('the API server answered 502: HTTP 502'))
  fake.mode = 'up'
  await t.rejects(kube.call('GET', '/apis/x/y/namespaces/finals/challenges'), new KubeError(404, 'no such path'))
  t.equal(await kube.get(`${PATH}/x`), undefined, 'a 404 is nothing')

  const https = new KubeConfig()
  https.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  })
  await t.rejects(kubeClient(https, 1000).get('/api'), {
    name: 'Unavailable',
    message: /^the API server cannot be reached: connect ECONNREFUSED/,
  })
})

t.test('calls one after the other share one connection; a proxy keeps the agent KubeConfig made', async (t) => {
  const fake = await startFakeApiServer(t)
  const kube = kubeClient(fake.kubeconfig, 1000)
  for (let i = 0; i < 3; i++) t.equal(await kube.get(`${PATH}/x`), undefined)
  t.strictSame([fake.requests.length, fake.connections], [3, 1])
  await t.rejects(kube.call('GET', '/apis/x/y/namespaces/finals/challenges'), new KubeError(404, 'no such path'))
  t.equal(fake.connections, 1, 'a refusal keeps the connection too')

  // Through a proxy that is not there: the proxy's agent is used as KubeConfig made it (it connects to the proxy).
  const proxied = new KubeConfig()
  proxied.loadFromOptions({
    clusters: [{ name: 'c', server: fake.url.replace('http:', 'https:'), proxyUrl: 'http://127.0.0.1:1' }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  })
  await t.rejects(kubeClient(proxied, 1000).get('/api'), {
    name: 'Unavailable',
    message: /^the API server cannot be reached: connect ECONNREFUSED 127\.0\.0\.1:1$/,
  })
  t.equal(fake.connections, 1, 'nothing reached the API server past the proxy')
})

t.test('a watch: its events, a line that is no event skipped, a cut connection, an abort', async (t) => {
  const fake = await startFakeApiServer(t)
  const kube = kubeClient(fake.kubeconfig, 1000)
  const seen: WatchEvent[] = []
  const controller = new AbortController()
  const cut = kube.watch(PATH, { fieldSelector: 'metadata.name=a' }, (event) => seen.push(event), controller.signal)
  await eventually('the watch', () => fake.requests.some((request) => request.includes('watch=true')))
  fake.watchLine('not json')
  fake.put('challenges', 'challenges', { metadata: { name: 'a' }, spec: {} })
  await eventually('the event', () => seen.length === 1)
  fake.cutWatches()
  await t.rejects(cut, { name: 'Unavailable', message: /^the watch was cut: / })
  t.strictSame(
    seen.map((event) => [event.type, (event.object.metadata as { name: string }).name]),
    [['ADDED', 'a']],
  )

  const aborted = new AbortController()
  const quiet = kube.watch(PATH, {}, () => undefined, aborted.signal)
  await eventually(
    'the second watch',
    () => fake.requests.filter((request) => request.includes('watch=true')).length === 2,
  )
  aborted.abort()
  await quiet
  t.pass('an aborted watch ends quietly')
  const early = new AbortController()
  early.abort()
  await t.rejects(
    kube.watch(PATH, {}, () => undefined, early.signal),
    { name: 'Unavailable' },
  )
})
