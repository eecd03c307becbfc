// What the API server's own metrics say it checked: every write, admitted (2xx) or refused (4xx), by verb, read from
// the counter apiserver_request_total of its /metrics (Prometheus text). The cluster runner prints the figure at
// the end of the suite; a /metrics without that counter is an error, never a figure of 0.

/** Writes the API server counted, by verb (as the metric names them: POST, PUT, PATCH, APPLY, DELETE, ...). */
export interface WriteCounts {
  /** how many samples of apiserver_request_total the text held (any verb) */
  samples: number
  byVerb: Map<string, { admitted: number; refused: number }>
}

/** The metric names verbs by HTTP method: a create is POST, an update PUT, a server-side apply APPLY. */
const WRITE_VERBS = ['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']

export function countWrites(text: string): WriteCounts {
  const byVerb = new Map<string, { admitted: number; refused: number }>()
  let samples = 0
  for (const match of text.matchAll(/^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$/gm)) {
    samples += 1
    const labels = Object.fromEntries([...(match[1] as string).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]))
    const verb = String(labels.verb)
    if (!WRITE_VERBS.includes(verb)) continue
    const entry = byVerb.get(verb) ?? { admitted: 0, refused: 0 }
    const code = Number(labels.code)
    if (code >= 200 && code < 300) entry.admitted += Number(match[2])
    else if (code >= 400 && code < 500) entry.refused += Number(match[2])
    byVerb.set(verb, entry)
  }
  return { samples, byVerb }
}

/** The closing line of the cluster suite; throws when the text holds no sample of the counter (nothing was read). */
export function describeWrites(text: string): string {
  const { samples, byVerb } = countWrites(text)
  if (samples === 0)
    throw new Error(`no apiserver_request_total sample in the API server's /metrics (${text.length} bytes read)`)
  const total = (field: 'admitted' | 'refused') => [...byVerb.values()].reduce((sum, entry) => sum + entry[field], 0)
  const verbs = [...byVerb]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([verb, entry]) => `${verb.toLowerCase()} ${entry.admitted}`)
    .join(', ')
  return `API server checked ${total('admitted') + total('refused')} writes: ${total('admitted')} admitted (${verbs}), ${total('refused')} refused (4xx)`
}
