/** Turns a schema error into a sentence naming the field, e.g. `spec.pod.containers[0].image: Expected string`. */
export interface SchemaError {
  path: string
  message: string
}

/** `/pod/containers/0/image` under `spec` becomes `spec.pod.containers[0].image`. */
export function fieldPath(root: string, pointer: string): string {
  let path = root
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    path += /^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`
  }
  return path
}

export function describeSchemaError(root: string, error: SchemaError): string {
  const message = error.message === 'Unexpected property' ? 'is not allowed' : error.message
  return `${fieldPath(root, error.path)}: ${message}`
}
