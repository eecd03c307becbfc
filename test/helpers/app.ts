/** A fresh app per test, closed when the test ends (the fastify/demo pattern). */
import type { FastifyInstance } from 'fastify'
import { loadConfig, type Config } from '../../src/config/config.js'
import { buildApp } from '../../src/http/app.js'
import { T0 } from './instant.js'

export interface TestTap {
  teardown(fn: () => unknown): void
}

/**
 * A test process runs the app beside the test's own work (simulator, fuzzing, module loading) on a busy machine:
 * apps built for tests do not shed on event-loop delay. Tests of shedding set their own threshold.
 */
export const TEST_ENV = { MAX_EVENT_LOOP_DELAY_MS: '0' }

export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig(TEST_ENV), ...overrides }
}

export const FIXED_NOW = new Date(T0)

export async function buildTestApp(
  t: TestTap,
  overrides: Partial<Config> = {},
  now: () => Date = () => FIXED_NOW,
): Promise<FastifyInstance> {
  const app = await buildApp(testConfig(overrides), { logger: false, now })
  t.teardown(() => app.close())
  return app
}
