/**
 * The hook port's certificate and key (TLS_CERT_FILE, TLS_KEY_FILE), read at start and checked to be a usable pair,
 * so that a wrong file stops the start naming the variable rather than failing the first handshake.
 */
import { readFileSync } from 'node:fs'
import { createSecureContext } from 'node:tls'
import { ConfigError, type Config } from '../config/config.js'

/** The hook port's certificate and key, checked to be a usable pair; a problem is a ConfigError naming the variable. */
export function readHookTls(config: Config): { cert: Buffer; key: Buffer } | undefined {
  if (config.hookTls === undefined) return undefined
  const read = (variable: string, file: string): Buffer => {
    try {
      return readFileSync(file)
    } catch (error) {
      throw new ConfigError(variable, `cannot read ${file}: ${(error as Error).message}`)
    }
  }
  const pair = {
    cert: read('TLS_CERT_FILE', config.hookTls.certFile),
    key: read('TLS_KEY_FILE', config.hookTls.keyFile),
  }
  try {
    createSecureContext(pair)
  } catch (error) {
    throw new ConfigError(
      'TLS_CERT_FILE',
      `with TLS_KEY_FILE is not a usable PEM certificate and key: ${(error as Error).message}`,
    )
  }
  return pair
}
