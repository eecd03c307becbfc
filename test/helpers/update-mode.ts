/**
 * Whether a test that records files (test/fixtures.test.ts: the fixtures and their page) may rewrite them:
 * `UPDATE_FIXTURES=1` rewrites them instead of comparing, which would turn the check into a pass, so under CI
 * (`CI` set, or `REQUIRE_TOOLS=1` as .ci/run sets it) it is refused: the test fails, and compares instead.
 */
export interface UpdateMode {
  update: boolean
  /** why UPDATE_FIXTURES was refused, when it was */
  refused?: string
}

export function updateMode(env: Record<string, string | undefined> = process.env): UpdateMode {
  if (env.UPDATE_FIXTURES !== '1') return { update: false }
  const ci = env.CI !== undefined && env.CI !== '' && env.CI !== '0' && env.CI.toLowerCase() !== 'false'
  if (ci || env.REQUIRE_TOOLS === '1') {
    return {
      update: false,
      refused: `UPDATE_FIXTURES=1 under CI (${ci ? `CI=${env.CI}` : 'REQUIRE_TOOLS=1'}): the fixtures are checked there, never rewritten`,
    }
  }
  return { update: true }
}
