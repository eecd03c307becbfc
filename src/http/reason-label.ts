/**
 * The `reason` label of the hook's metrics: a reason the contract names, or `Custom`.
 */
import { Reason } from '../contract/api.js'

const KNOWN_REASONS = new Set<string>(Object.values(Reason))

/** Free-text stop reasons would make the label set unbounded. */
export function reasonLabel(reason: string): string {
  return KNOWN_REASONS.has(reason) ? reason : 'Custom'
}
