/** A fresh app per test, closed when the test ends (the fastify/demo pattern). */
import type { FastifyInstance } from 'fastify'
import { loadConfig, type Config } from '../../src/config.js'
import { buildApp } from '../../src/http/app.js'

export interface TestTap {
  teardown(fn: () => unknown): void
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}), ...overrides }
}

export const FIXED_NOW = new Date('2026-11-22T12:00:00Z')

export async function buildTestApp(
  t: TestTap,
  overrides: Partial<Config> = {},
  now: () => Date = () => FIXED_NOW,
): Promise<FastifyInstance> {
  const app = await buildApp(testConfig(overrides), { logger: false, now })
  t.teardown(() => app.close())
  return app
}
