/**
 * What an instance's containers get beside the definition's env: the flag (PerOwner, PerInstance or Static) and
 * the Challenge's parameters, checked before anything is rendered.
 */
import { Bounds, Label, MANAGED_BY } from '../contract/api.js'
import type { RelatedResourceRule } from '../contract/protocol.js'
import { characters, type ResolvedDefinition } from './definition.js'
import { objectsOfKind, type ObservedIndex } from './observed.js'
import { flagSecretPart, ownerMessage, type OwnerKey } from './hmac.js'

export type FlagResult = { ok: true; data: string } | { ok: false; message: string }

function base64(text: string): string {
  return Buffer.from(text).toString('base64')
}

/** Names that would read an object's prototype wherever a parameter is looked up by name: refused, as the CRD does. */
const PROTOTYPE_NAMES = ['__proto__', 'constructor', 'prototype']

export function parametersProblem(parameters: Record<string, string>, flagEnv: string): string | undefined {
  const names = Object.keys(parameters)
  const hostile = names.find((name) => PROTOTYPE_NAMES.includes(name))
  if (hostile !== undefined) return `spec.parameters: the name ${hostile} is refused (it names an object prototype).`
  if (names.includes(flagEnv)) return `spec.parameters: ${flagEnv} is reserved for the flag.`
  const text = characters(Object.entries(parameters).flat())
  return text > Bounds.parametersText
    ? `spec.parameters: the names and values together must be at most ${Bounds.parametersText} characters, got ${text}.`
    : undefined
}

/**
 * The customize rule that relates a definition's Static flag sources: the Secrets of the namespace labelled with the
 * definition, never the hook's own flag Secrets (an instance's or a pool's). A Challenge and its definition's pool
 * relate the same ones.
 */
export function staticFlagSecrets(namespace: string, definition: string): RelatedResourceRule {
  return {
    apiVersion: 'v1',
    resource: 'secrets',
    namespace,
    labelSelector: {
      matchLabels: { [Label.definition]: definition },
      matchExpressions: [{ key: Label.managedBy, operator: 'NotIn', values: [MANAGED_BY] }],
    },
  }
}

/** The instance the flag is made for: its owner, its uid, and the related objects (a Static flag's Secret). */
export interface FlagInput {
  ownerKey: OwnerKey
  uid: string
  related: ObservedIndex
}

/** The flag's bytes, base64 as a Secret's `data` holds them. The value itself never leaves this function's caller. */
export function flagData(instance: FlagInput, definition: ResolvedDefinition, flagSecret: string): FlagResult {
  const { prefix, suffix, mode, staticSecretRef } = definition.flag
  switch (mode) {
    case 'PerOwner':
      return { ok: true, data: base64(prefix + flagSecretPart(flagSecret, ownerMessage(instance.ownerKey)) + suffix) }
    case 'PerInstance':
      return { ok: true, data: base64(prefix + flagSecretPart(flagSecret, instance.uid) + suffix) }
    case 'Static': {
      const ref = staticSecretRef as { name: string; key: string }
      const secret = objectsOfKind(instance.related, 'Secret').find((candidate) => candidate.metadata.name === ref.name)
      const data = (secret?.data as Record<string, unknown> | undefined)?.[ref.key]
      if (typeof data !== 'string' || data === '') {
        return {
          ok: false,
          message: `The flag Secret "${ref.name}" (key "${ref.key}") was not found; it must carry the label ${Label.definition}=${definition.name}.`,
        }
      }
      return { ok: true, data }
    }
  }
}
