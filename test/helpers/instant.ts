/**
 * The tests' instant: the fixed clocks of every suite start here (and the recorded fixtures were made at it), so a
 * time written out in a test's expectation is an offset from this one instant.
 */
export const TEST_INSTANT = '2026-11-22T12:00:00Z'
/** TEST_INSTANT in milliseconds. */
export const T0 = Date.parse(TEST_INSTANT)
