/**
 * Reading JSON the hook did not write and cannot trust to have the expected shape: observed children and pods,
 * siblings, the previous status. Every reader checks the type before it uses a value, so an object where a string
 * belongs (even one whose `toString` is not callable) reads as absent instead of throwing: a malformed object
 * never turns a request into a 500.
 */

export type Loose = Record<string, unknown>

/** An object (not an array), or undefined. */
export function record(value: unknown): Loose | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Loose) : undefined
}

/** `value[key]` when value is an object, else undefined. */
export function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Loose)[key] : undefined
}

/** An array as it is; anything else is an empty list. */
export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

/** A non-empty string, or undefined. */
export function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** A number, or 0 when it is anything else. */
export function num(value: unknown): number {
  return typeof value === 'number' ? value : 0
}

/** A whole number from 0 up to the largest exact one, or undefined. */
export function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined
}

/** Longest piece of someone else's text a message quotes. */
const QUOTED_LENGTH = 128

/**
 * Text an author, the platform or another component wrote, inside a message a player may read: in double
 * quotes, cut to a readable length, with control characters, quotes and what could start markup (`<`, `>`, `&`)
 * escaped as JSON escapes them, so a platform that shows the message as HTML shows the text, never runs it.
 */
export function quote(value: string, length = QUOTED_LENGTH): string {
  return JSON.stringify(cut(value, length)).replace(MARKUP, escape)
}

const MARKUP = /[<>&]/g
/**
 * `value` in at most `length` UTF-16 units, the last of a longer one an ellipsis; never between the halves of a
 * surrogate pair. A lone half is no character: Go's JSON decoder (Metacontroller's) puts U+FFFD in its place, so a
 * status holding one would never read back as the one answered, and would be written again at every sync.
 */
export function cut(value: string, length: number): string {
  if (value.length <= length) return value
  const last = value.charCodeAt(length - 2)
  const end = last >= 0xd800 && last <= 0xdbff ? length - 2 : length - 1
  return `${value.slice(0, end)}…`
}

function escape(character: string): string {
  return `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`
}
