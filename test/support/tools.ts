/**
 * A test that needs a tool this machine lacks (kubectl, the route CRDs of the Go module cache) is skipped with the reason, except
 * under CI (`REQUIRE_TOOLS=1`, set by .ci/run, which builds or provides every tool): there a missing tool is a
 * failure, so a green CI never hides a test that did not run.
 */
export function toolMissing(reason: string): string {
  if (process.env.REQUIRE_TOOLS === '1') throw new Error(`REQUIRE_TOOLS=1 and a test's tool is missing: ${reason}`)
  return reason
}
