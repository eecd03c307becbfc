// Names the cluster suite shares: the API, the identities it writes as, its namespaces.
export const API = 'challenge-hooks.dev/v1alpha1'
export const CHALLENGES = `/apis/${API}`
/** Metacontroller's identity, upstream-style: service account metacontroller in namespace metacontroller. */
export const METACONTROLLER_SA = 'system:serviceaccount:metacontroller:metacontroller'
export const NAMESPACE_PREFIX = 'chtest-'
/** Field managers, as the API server records them: the CTF platform and a challenge author. */
export const PLATFORM = 'ctf-platform'
export const AUTHOR = 'kubectl'
export const COMPOSITE_CONTROLLER = '/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers/challenge-hooks'
/** The warm pools' CompositeController (parent ChallengeDefinition), installed beside the Challenges' one. */
export const POOLS_CONTROLLER = '/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers/challenge-hooks-pools'
/** Both, in the order the stand-in starts them. */
export const CONTROLLERS = [COMPOSITE_CONTROLLER, POOLS_CONTROLLER] as const
