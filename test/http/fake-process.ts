import { loggerOptions } from '../../src/http/app.js'
import type { ProcessPorts, ShutdownCause } from '../../src/main.js'
import { testConfig } from '../helpers/app.js'
import { logCapture } from './log-capture.js'

/** The process around start() (src/main.ts, ProcessPorts) as a test sees it: what was written to stderr, exit codes, the drain and the shutdown trigger. */
export function fakeProcess(env: Record<string, string>) {
  const log = logCapture()
  const exits: number[] = []
  let stderr = ''
  const drains: { ms: number; release(): void }[] = []
  let shutdown: ((cause: ShutdownCause) => Promise<void>) | undefined
  const ports: ProcessPorts = {
    env: { HOST: '127.0.0.1', PORT: '0', OPS_PORT: '0', ...env },
    stderr: { write: (text: string) => void (stderr += text) },
    exit: (code) => void exits.push(code),
    wait: (ms) => new Promise<void>((release) => drains.push({ ms, release })),
    onShutdown: (fn) => void (shutdown = fn),
    logger: { ...loggerOptions(testConfig()), level: 'info', stream: log.stream },
  }
  return {
    ports,
    log,
    exits,
    drains,
    stderr: () => stderr,
    shutdown: (cause: ShutdownCause) => (shutdown as (cause: ShutdownCause) => Promise<void>)(cause),
  }
}
