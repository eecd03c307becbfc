/**
 * The hook without the framework: bare node:http that reads the body, JSON.parses it, runs the project's pure
 * `sync` (dist/challenge/hooks.js, the configuration from the same environment as the real server) and answers
 * JSON.stringify of the result. No validation, no depth check, no ETag, no metrics, no logging.
 *
 *   node baseline-sync.js   (PORT, BENCH_ROOT, and the real server's environment)
 */
import { createServer } from 'node:http'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

type Sync = (request: unknown, config: unknown, now: Date) => unknown
const root = process.env.BENCH_ROOT as string
const dist = (file: string) => pathToFileURL(join(root, 'dist', file)).href
const { sync } = (await import(dist('challenge/hooks.js'))) as { sync: Sync }
const { loadConfig } = (await import(dist('config/config.js'))) as { loadConfig: (env: NodeJS.ProcessEnv) => unknown }
const config = loadConfig(process.env)

const server = createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    let body: string
    try {
      body = JSON.stringify(sync(JSON.parse(Buffer.concat(chunks).toString('utf8')), config, new Date()))
    } catch {
      res.writeHead(500).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
    res.end(body)
  })
})
server.keepAliveTimeout = 5000
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'))
process.on('SIGTERM', () => server.close(() => process.exit(0)))
