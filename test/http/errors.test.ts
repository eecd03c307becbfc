import t from 'tap'
import { buildApp, loggerOptions } from '../../src/http/app.js'
import { errorBody } from '../../src/http/errors.js'
import { FIXED_NOW, testConfig } from '../helpers/app.js'
import { logCapture } from './log-capture.js'

/** An app with extra routes that fail the way a bug would, to exercise the one error handler. */
async function appWithFailures(t: { teardown(fn: () => unknown): void }) {
  const config = testConfig()
  const log = logCapture()
  const app = await buildApp(config, { logger: { ...loggerOptions(config), stream: log.stream }, now: () => FIXED_NOW })
  t.teardown(() => app.close())
  app.get('/bug', async () => {
    throw new Error('secret internals: /work/main/src/x.ts line 3')
  })
  app.get('/upstream', async () => {
    throw Object.assign(new Error('upstream failed'), { statusCode: 502 })
  })
  app.get('/teapot', async () => {
    throw Object.assign(new Error('short and stout'), { statusCode: 418, code: 'TEAPOT' })
  })
  app.get('/odd', async () => {
    throw Object.assign(new Error('client closed request'), { statusCode: 499 })
  })
  return { app, log }
}

t.test('a 5xx says only "Internal Server Error"; the error goes to the log', async (t) => {
  const { app, log } = await appWithFailures(t)
  for (const url of ['/bug', '/upstream']) {
    const response = await app.inject({ method: 'GET', url })
    t.equal(response.statusCode, 500, url)
    t.strictSame(response.json(), { error: 'Internal Server Error', message: 'Internal Server Error' }, url)
  }
  t.match(log.entries(), [
    { level: 50, msg: 'request failed', err: { message: 'secret internals: /work/main/src/x.ts line 3' } },
    { level: 50, msg: 'request failed', err: { message: 'upstream failed' } },
  ])
})

t.test('a 4xx keeps its message and is logged at info with its code', async (t) => {
  const { app, log } = await appWithFailures(t)
  const teapot = await app.inject({ method: 'GET', url: '/teapot' })
  t.equal(teapot.statusCode, 418)
  t.strictSame(teapot.json(), { error: "I'm a Teapot", message: 'short and stout' })
  const odd = await app.inject({ method: 'GET', url: '/odd' })
  t.equal(odd.statusCode, 499)
  t.strictSame(odd.json(), { error: 'Error', message: 'client closed request' }, 'a status without a name is "Error"')
  t.match(log.entries(), [
    { level: 30, msg: 'short and stout', code: 'TEAPOT', statusCode: 418 },
    { level: 30, msg: 'client closed request', statusCode: 499 },
  ])
})

t.test('errorBody', async (t) => {
  t.strictSame(errorBody(400, 'x'), { error: 'Bad Request', message: 'x' })
  t.strictSame(errorBody(413, 'y'), { error: 'Payload Too Large', message: 'y' })
  t.strictSame(errorBody(599, 'z'), { error: 'Error', message: 'z' })
})
