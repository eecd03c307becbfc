/** Worker thread of bench/server/generate.ts: the lives of some of the owner's finished Challenges. */
import { parentPort, workerData } from 'node:worker_threads'
import { createContext, live, type Life } from './generate.js'

const { root, nowMs, indexes } = workerData as { root: string; nowMs: number; indexes: number[] }
const context = await createContext(root, nowMs)
const lives: Life[] = []
for (const index of indexes) lives.push(await live(context, index))
await context.app.close()
parentPort?.postMessage(lives)
