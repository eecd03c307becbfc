/** Times in the status are RFC 3339 at whole seconds, like Kubernetes' own metav1.Time. */

export function toSeconds(ms: number): number {
  return Math.floor(ms / 1000) * 1000
}

export function formatTime(ms: number): string {
  // toISOString always ends in ".000Z" here (whole seconds, any year); a slice is a tenth of a regex replace.
  return `${new Date(toSeconds(ms)).toISOString().slice(0, -5)}Z`
}

/** Parses a time we wrote or a date-time the API server validated; undefined stays undefined. */
export function parseTime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const ms = Date.parse(value)
  return Number.isNaN(ms) ? undefined : ms
}

/** The earliest of the defined instants, or undefined when none is. */
export function earliest(...instants: (number | undefined)[]): number | undefined {
  let result: number | undefined
  for (const instant of instants) {
    if (instant !== undefined && (result === undefined || instant < result)) result = instant
  }
  return result
}
