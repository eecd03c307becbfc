// TLS between Metacontroller and the hooks (TLS_CERT_FILE, TLS_KEY_FILE): the hook port speaks HTTPS with the
// given certificate, which a client trusting it as its CA (Metacontroller's webhook caBundle) accepts; the ops port
// stays plain HTTP for the kubelet's probes; a missing or unusable pair stops the start with exit 78.
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { EX_CONFIG, start } from '../../src/main.js'
import { toolMissing } from '../support/tools.js'
import { get, post } from './http-client.js'
import { fakeProcess } from './fake-process.js'
import { newRequest } from '../helpers/hook-requests.js'

const dir = mkdtempSync(join(tmpdir(), 'challenge-hooks-tls-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const cert = join(dir, 'tls.crt')
const key = join(dir, 'tls.key')

function selfSigned(certFile: string, keyFile: string): boolean {
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '1',
        '-keyout',
        keyFile,
        '-out',
        certFile,
        '-subj',
        '/CN=challenge-hooks.challenge-hooks.svc',
        '-addext',
        'subjectAltName=DNS:challenge-hooks.challenge-hooks.svc,IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    )
    return true
  } catch {
    return false
  }
}

function httpsPost(
  port: number,
  path: string,
  body: string,
  ca: Buffer | undefined,
): Promise<{ statusCode: number; body: string }> {
  return new Promise((resolve, reject) => {
    const call = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        ...(ca ? { ca } : {}),
      },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('end', () =>
          resolve({ statusCode: response.statusCode as number, body: Buffer.concat(chunks).toString('utf8') }),
        )
      },
    )
    call.on('error', reject)
    call.end(body)
  })
}

const skip = selfSigned(cert, key) ? false : toolMissing('openssl is needed to make a test certificate')

t.test('the hook port speaks HTTPS with the configured certificate; the ops port stays HTTP', { skip }, async (t) => {
  const { readFileSync } = await import('node:fs')
  const fake = fakeProcess({ TLS_CERT_FILE: cert, TLS_KEY_FILE: key })
  const app = (await start(fake.ports)) as FastifyInstance
  t.ok(app, fake.stderr())
  t.teardown(() => app.close())
  const port = (app.server.address() as AddressInfo).port
  const answer = await httpsPost(port, '/sync', JSON.stringify(newRequest()), readFileSync(cert))
  t.equal(answer.statusCode, 200, 'a client trusting the certificate (the caBundle) gets its answer')
  t.match(JSON.parse(answer.body), { status: { phase: 'Pending' } })
  await t.rejects(
    httpsPost(port, '/sync', '{}', undefined),
    /self[- ]signed/,
    'a client that does not trust it refuses the server',
  )
  await t.rejects(post(port, '/sync', JSON.stringify(newRequest())), 'plain HTTP gets no answer on the hook port')
  const ready = await get((app.ops.server.address() as AddressInfo).port, '/readyz')
  t.equal(ready.statusCode, 200, 'probes stay plain HTTP')
})

t.test(
  'a missing, unreadable or unusable pair stops the start with exit 78 naming the variable',
  { skip },
  async (t) => {
    const other = join(dir, 'other.key')
    selfSigned(join(dir, 'other.crt'), other)
    const garbage = join(dir, 'garbage.pem')
    writeFileSync(garbage, 'not a certificate')
    const cases: [Record<string, string>, RegExp][] = [
      [{ TLS_CERT_FILE: cert }, /^challenge-hooks: invalid configuration: TLS_KEY_FILE: is required beside the other/],
      [{ TLS_KEY_FILE: key }, /^challenge-hooks: invalid configuration: TLS_CERT_FILE: is required beside the other/],
      [{ TLS_CERT_FILE: join(dir, 'absent.crt'), TLS_KEY_FILE: key }, /TLS_CERT_FILE: cannot read .*absent\.crt/],
      [{ TLS_CERT_FILE: cert, TLS_KEY_FILE: join(dir, 'absent.key') }, /TLS_KEY_FILE: cannot read .*absent\.key/],
      [
        { TLS_CERT_FILE: cert, TLS_KEY_FILE: other },
        /TLS_CERT_FILE: with TLS_KEY_FILE is not a usable PEM certificate and key/,
      ],
      [{ TLS_CERT_FILE: garbage, TLS_KEY_FILE: key }, /TLS_CERT_FILE: with TLS_KEY_FILE is not a usable/],
    ]
    for (const [env, message] of cases) {
      const fake = fakeProcess(env)
      t.equal(await start(fake.ports), undefined, JSON.stringify(env))
      t.strictSame(fake.exits, [EX_CONFIG])
      t.match(fake.stderr(), message)
    }
  },
)
