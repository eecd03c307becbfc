/**
 * Order in a log of what happened (`Kind/name` deletions, log messages): "every A before any B" holds only when both
 * happened. An index of -1 for an entry that never came would make `last(A) < first(B)` pass on its own, so these
 * say what is missing instead.
 */

/** Where entries of `kind` (the part before the first `/`, or the whole entry) stand in `log`; undefined when none. */
export function span(log: readonly string[], kind: string): { first: number; last: number } | undefined {
  const kinds = log.map((entry) => entry.split('/')[0])
  const first = kinds.indexOf(kind)
  return first === -1 ? undefined : { first, last: kinds.lastIndexOf(kind) }
}

/** Why "every `before` comes before any `after`" does not hold in `log`, or undefined when it does. */
export function orderProblem(log: readonly string[], before: string, after: string): string | undefined {
  const [a, b] = [span(log, before), span(log, after)]
  if (a === undefined || b === undefined)
    return `${[a === undefined ? before : undefined, b === undefined ? after : undefined].filter(Boolean).join(' and ')} never in: ${log.join(', ')}`
  return a.last < b.first
    ? undefined
    : `a ${after} (at ${b.first}) before the last ${before} (at ${a.last}): ${log.join(', ')}`
}
