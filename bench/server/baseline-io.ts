/**
 * The I/O limit: bare node:http that reads the body, JSON.parses it and answers with the bytes the real server
 * answered to that request (recorded by measure.ts, looked up by the request's length). Nothing else.
 *
 *   node baseline-io.js   (PORT, BENCH_RESPONSES = a JSON file [{requestBytes, headers, body}])
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'

interface Recorded {
  requestBytes: number
  headers: Record<string, string>
  body: string
}

const recorded = JSON.parse(readFileSync(process.env.BENCH_RESPONSES as string, 'utf8')) as Recorded[]
const answers = new Map(recorded.map((r) => [r.requestBytes, { headers: r.headers, body: Buffer.from(r.body) }]))

const server = createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    const body = Buffer.concat(chunks)
    try {
      JSON.parse(body.toString('utf8'))
    } catch {
      res.writeHead(400).end()
      return
    }
    const answer = answers.get(body.length)
    if (answer === undefined) {
      res.writeHead(500).end()
      return
    }
    res.writeHead(200, { ...answer.headers, 'content-length': answer.body.length })
    res.end(answer.body)
  })
})
server.keepAliveTimeout = 5000
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('ready\n'))
process.on('SIGTERM', () => server.close(() => process.exit(0)))
