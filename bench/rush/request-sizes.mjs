// Preloaded (node --import) into the hook server by the rush benchmark (bench/rush/run.ts): records the method,
// path and Content-Length of every request the server receives, one line each, into RUSH_SIZES_FILE, so that the
// benchmark knows the exact size of every hook call (the server's own histogram has only coarse buckets). It reads
// one header per request and appends to a file once a second: nothing the server does is changed.
import { appendFileSync } from 'node:fs'
import { Server } from 'node:http'

const file = process.env.RUSH_SIZES_FILE
if (file) {
  let lines = []
  const flush = () => {
    if (lines.length === 0) return
    appendFileSync(file, lines.join('\n') + '\n')
    lines = []
  }
  const emit = Server.prototype.emit
  Server.prototype.emit = function (event, request, ...rest) {
    if (event === 'request' && request.method === 'POST')
      lines.push(`${request.url} ${request.headers['content-length'] ?? ''}`)
    return emit.call(this, event, request, ...rest)
  }
  setInterval(flush, 1000).unref()
  process.on('exit', flush)
}
