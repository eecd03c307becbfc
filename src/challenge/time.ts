/**
 * Times. The hook reads a date-time exactly as the API server validates one (`format: date-time`), so every time
 * a stored object holds has a meaning here, and it writes RFC 3339 at whole seconds in UTC, like Kubernetes'
 * own metav1.Time, always within the years the API server accepts (0000-9999).
 */

export function toSeconds(ms: number): number {
  return Math.floor(ms / 1000) * 1000
}

/** The first and the last second the API server accepts in a date-time we write (4-digit years, UTC). */
export const EARLIEST_TIME = -62_167_219_200_000 // 0000-01-01T00:00:00Z
export const LATEST_TIME = 253_402_300_799_000 // 9999-12-31T23:59:59Z

/**
 * RFC 3339 in UTC at whole seconds. An instant outside the years 0000-9999 (a definition open until the last
 * second of 9999 in a zone west of UTC ends in the year 10000) is clamped to the nearest one the API server
 * accepts: a status with a time it refuses would never be written.
 */
export function formatTime(ms: number): string {
  const clamped = Math.min(Math.max(toSeconds(ms), EARLIEST_TIME), LATEST_TIME)
  // toISOString always ends in ".000Z" here (whole seconds, 4-digit year); a slice is a tenth of a regex replace.
  return `${new Date(clamped).toISOString().slice(0, -5)}Z`
}

/**
 * The API server's date-time check (kube-openapi's strfmt.IsDateTime), on the text lowercased and split at each
 * `t`: the part before the first is a date Go's `time.Parse("2006-01-02")` accepts (a 4-character year that may
 * carry a sign, a real day of that month), the part after it matches this, and any further `t` part is ignored.
 * The `.` before a fraction is any character, as in the API server's own pattern; an offset is any `±HH:MM`.
 */
const TIME_OF_DAY = /^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-])([0-9]{2}):([0-9]{2}))$/
const DATE = /^(\d{4}|[+-]\d{3})-(\d{2})-(\d{2})$/
const MS_PER_MINUTE = 60_000

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** Days of a month in the proleptic Gregorian calendar, as Go counts them (negative years too). */
function daysIn(month: number, year: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] as number)
}

/**
 * The instant a date-time names, read as the API server reads it (lowercase `t` and `z`, any `±HH:MM` offset,
 * signed 3-digit years), to the whole second (a fraction is not a deadline anyone sets); undefined for anything
 * that is not a date-time the API server would store.
 */
export function readTime(value: unknown): number | undefined {
  if (typeof value !== 'string' || value.length < 4) return undefined
  const parts = value.toLowerCase().split('t')
  const date = DATE.exec(parts[0] as string)
  const time = parts.length < 2 ? null : TIME_OF_DAY.exec(parts[1] as string)
  if (date === null || time === null) return undefined
  const year = Number(date[1])
  const month = Number(date[2])
  const day = Number(date[3])
  const [hours, minutes, seconds] = [Number(time[1]), Number(time[2]), Number(time[3])]
  if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hours > 23 || minutes > 59 || seconds > 59) {
    return undefined
  }
  const instant = new Date(0)
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0-99 as 1900-1999.
  instant.setUTCFullYear(year, month - 1, day)
  instant.setUTCHours(hours, minutes, seconds, 0)
  const offset = time[6] === undefined ? 0 : (time[6] === '-' ? -1 : 1) * (Number(time[7]) * 60 + Number(time[8]))
  return instant.getTime() - offset * MS_PER_MINUTE
}

/** The earliest of the defined instants, or undefined when none is. */
export function earliest(...instants: (number | undefined)[]): number | undefined {
  let result: number | undefined
  for (const instant of instants) {
    if (instant !== undefined && (result === undefined || instant < result)) result = instant
  }
  return result
}
