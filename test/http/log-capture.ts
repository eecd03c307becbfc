/** pino options that write to memory: the app's own options (level, redaction) with a stream the test reads. */
export interface LogCapture {
  stream: { write(line: string): void }
  /** Every line written, as text (for "never appears" checks) and parsed. */
  text(): string
  entries(): Record<string, unknown>[]
}

export function logCapture(): LogCapture {
  const lines: string[] = []
  return {
    stream: { write: (line: string) => void lines.push(line) },
    text: () => lines.join(''),
    entries: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
  }
}
