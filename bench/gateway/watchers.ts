/**
 * The streams' baseline of bench:gateway, in a process of its own so that its memory and CPU are measured apart: a
 * bare watch on the API server for each Challenge (a fieldSelector watch, what each stream of the gateway opened before
 * they shared one per namespace), and nothing else. Prints `start <RSS in MiB>` before it opens anything, `open <count> <refused>` once every watch has its answer's head, then `event <write> <ms>` for each
 * status write it sees (the writes carry `bench-w<n>x` in status.message).
 *
 * Environment: WATCH_SERVER (https://...), WATCH_CA (a file), WATCH_TOKEN, WATCH_NAMESPACE, WATCH_NAMES (a file of
 * names, one a line).
 */
import { readFileSync } from 'node:fs'
import { inBatches, openStream, type StreamHandle } from './load.js'

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`watchers: ${name} is required`)
  return value
}
const target = {
  base: env('WATCH_SERVER'),
  ca: readFileSync(env('WATCH_CA'), 'utf8'),
  headers: { authorization: `Bearer ${env('WATCH_TOKEN')}`, accept: 'application/json' },
}
const namespace = env('WATCH_NAMESPACE')
const names = readFileSync(env('WATCH_NAMES'), 'utf8').split('\n').filter(Boolean)
const streams: StreamHandle[] = []
let refused = 0
process.stdout.write(`start ${process.memoryUsage().rss / 1024 / 1024}\n`)
await new Promise((done) => setTimeout(done, 1000))

await inBatches(names, 50, async (name) => {
  const stream = openStream(
    target,
    `/apis/challenge-hooks.dev/v1alpha1/namespaces/${namespace}/challenges?watch=true&fieldSelector=metadata.name%3D${name}`,
    {},
    (text, at) => {
      for (const match of text.matchAll(/bench-w(\d+)x/g)) process.stdout.write(`event ${match[1]} ${at}\n`)
    },
  )
  streams.push(stream)
  if ((await stream.opened) !== 200) refused++
})
process.stdout.write(`open ${streams.length - refused} ${refused}\n`)
process.on('SIGTERM', () => {
  for (const stream of streams) stream.close()
  process.exit(0)
})
