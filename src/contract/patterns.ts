/**
 * The regular expressions of names and values Kubernetes defines, one of each, named for what they match. They are
 * JSON Schema `pattern` strings (the schemas of src/contract/api.ts and src/contract/protocol.ts use them as they are);
 * code that tests a value makes a RegExp of one (src/config/config.ts, src/challenge/resources.ts). The CRDs in
 * manifests/crds write the same patterns for the API server, and test/challenge/crd-agreement.test.ts checks that
 * they do.
 */

/** An RFC 1123 label: a namespace, a container, a RuntimeClass, an owner id. At most 63 characters. */
export const DNS_LABEL = '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'

/** An RFC 1123 subdomain: most object names (Secrets, IngressClasses, a Gateway's listeners). At most 253 characters. */
export const DNS_SUBDOMAIN = '^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'

/**
 * The name of a ChallengeDefinition as a Challenge refers to it: lowercase alphanumerics at both ends, `-` and `.`
 * inside. Its 63 characters (it is also the value of the label challenge-hooks.dev/definition) are a maxLength.
 */
export const DEFINITION_NAME = '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$'

/** A key of a Secret's data: alphanumerics, `-`, `_` and `.`. Its 253 characters are a maxLength. */
export const SECRET_KEY = '^[-._a-zA-Z0-9]+$'

/** The characters of a label value that is not empty: alphanumeric at both ends, `-`, `_` and `.` inside, at most 63. */
const LABEL_VALUE_TEXT = '[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?'

/** A label value, which may be empty. */
export const LABEL_VALUE = `^(${LABEL_VALUE_TEXT})?$`

/** A label value that is not empty: an object's uid, which the pods of a Challenge carry as a label. */
export const NON_EMPTY_LABEL_VALUE = `^${LABEL_VALUE_TEXT}$`

/** A label key: an optional DNS subdomain and `/`, then a name of at most 63 characters (label value characters). */
export const LABEL_KEY = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\\/)?${LABEL_VALUE_TEXT}$`

/** An environment variable name (a C identifier) of at most 128 characters. */
export const ENV_NAME = '^[A-Za-z_][A-Za-z0-9_]{0,127}$'

/** A port name as a container or a probe writes it (an IANA service name; its 15 characters are a separate maxLength). */
export const PORT_NAME = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'

/** A resource.Quantity: 500m, 1.5, 64Mi, 1e3, 2G. Groups: the number, a decimal exponent, a suffix. */
export const QUANTITY = '^\\+?(\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE]([+-]?\\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$'

/** A key of a container's requests or limits: cpu, memory, or a domain-qualified name; at most 253 characters. */
export const RESOURCE_NAME = '^(?=.{1,253}$)[a-z0-9]([-a-z0-9.\\/]*[a-z0-9])?$'

/** An extended resource an operator may allow (nvidia.com/gpu): a domain, `/`, a name. Its 253 characters are checked apart. */
export const EXTENDED_RESOURCE_NAME = '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'

/**
 * What the API server stores as a `format: date-time` (src/challenge/time.ts, readTime): `t` and `z` in either case,
 * any `±HH:MM` offset, a signed 3-digit year, any character before a fraction, anything after a second `t`. A
 * request the API server accepted must never be refused by the hook (a 400 on every hook would stop the
 * Challenge's syncs and hang its deletion on the finalizer). What this pattern lets through and is still not a date
 * (February 30) is refused where it is read, as the object's problem.
 */
export const DATE_TIME =
  '^(\\d{4}|[+-]\\d{3})-\\d{2}-\\d{2}[Tt]([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d([^\\nTt]\\d+)?([Zz]|[+-]\\d{2}:\\d{2})([Tt][\\s\\S]*)?$'

/** A Traefik entry point name, as its static configuration writes them. */
export const ENTRY_POINT = '^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$'

/** A host name or an IP address (v4 or v6) players connect to. */
export const HOST = '^[A-Za-z0-9.:-]{1,253}$'

/**
 * An address and a port, `host:port` or `[v6]:port`: group 1 the bracketed host, group 2 the plain one, group 3 the
 * port (the isolation gate's target, as the hook's setting and the gate read it).
 */
export const HOST_AND_PORT = '^(?:\\[([^\\]]+)\\]|([^:[\\]]+)):(\\d{1,5})$'

/** A container image reference as the hook renders it: no whitespace, at most 512 characters (the definition's bound). */
export const IMAGE_REFERENCE = '^\\S{1,512}$'

/** A whole number written in decimal digits only: no sign, no fraction, no exponent. */
export const DIGITS = '^\\d+$'
