// The children of one parent, as Metacontroller's composite controller and pkg/controller/common handle them: the
// parent's selector, claiming (adopting orphans the selector matches, releasing owned children it no longer
// matches), the desired set with its invariants, and ManageChildren: delete what is no longer desired, then create
// or update each child by its rule's update strategy.
import { ApiError } from './admission.js'
import { MANAGER, type ChildRule, type SyncContext, type SyncResult, type UpdateMethod } from './controller.js'
import { deepEqual } from './json.js'
import { applyUpdate, setLastApplied } from './merge.js'
import {
  controllerOf,
  controllerRefTo,
  describe,
  labelMatcher,
  refOf,
  resourceByKind,
  type KubeObject,
  type LabelMatcher,
  type LabelSelector,
  type ObjectRef,
  type OwnerReference,
} from './objects.js'

const BENIGN_CHILD_ERRORS = new Set(['NotFound', 'AlreadyExists', 'Conflict'])

export class Children {
  readonly #context: SyncContext
  readonly #rules: ChildRule[]
  readonly #generateSelector: boolean

  constructor(context: SyncContext, rules: ChildRule[], generateSelector: boolean) {
    this.#context = context
    this.#rules = rules
    this.#generateSelector = generateSelector
  }

  /** Whether objects of this kind are children of the controller. */
  isChildKind(object: KubeObject): boolean {
    return this.#rules.some(
      (rule) => rule.resource.apiVersion === object.apiVersion && rule.resource.kind === object.kind,
    )
  }

  /** The parent's selector: the generated `controller-uid` label, or its own `spec.selector`. */
  selector(parent: KubeObject): LabelMatcher {
    if (this.#generateSelector) {
      return labelMatcher({ matchLabels: { 'controller-uid': String(parent.metadata.uid) } })
    }
    const selector = (parent.spec as { selector?: LabelSelector } | undefined)?.selector ?? {}
    if (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0) {
      throw new Error('.spec.selector must have either matchLabels, matchExpressions, or both')
    }
    return labelMatcher(selector)
  }

  /** claimChildren: the children of each rule, adopting orphans the selector matches and releasing those it no longer does. */
  async claim(
    parent: KubeObject,
    selector: LabelMatcher,
    result: SyncResult,
  ): Promise<Array<[ChildRule, KubeObject[]]>> {
    const claimed: Array<[ChildRule, KubeObject[]]> = []
    const parentDeleting = parent.metadata.deletionTimestamp !== undefined
    for (const rule of this.#rules) {
      const children: KubeObject[] = []
      for (const obj of this.#context.cluster.list(
        rule.resource.apiVersion,
        rule.resource.kind,
        parent.metadata.namespace,
      )) {
        const owner = controllerOf(obj)
        const matches = selector(obj.metadata.labels)
        if (owner !== undefined) {
          if (owner.uid !== parent.metadata.uid) continue
          if (matches) children.push(obj)
          else if (!parentDeleting) {
            // Owned but no longer selected: let go of it.
            obj.metadata.ownerReferences = (obj.metadata.ownerReferences as OwnerReference[]).filter(
              (ref) => ref.uid !== parent.metadata.uid,
            )
            await this.#context.write(result, () => this.#context.cluster.update(obj, MANAGER))
            result.released.push(refOf(obj))
          }
        } else if (matches && !parentDeleting && obj.metadata.deletionTimestamp === undefined) {
          // An orphan the parent's selector matches: adopt it.
          obj.metadata.ownerReferences = [...(obj.metadata.ownerReferences ?? []), controllerRefTo(parent)]
          children.push(await this.#context.write(result, () => this.#context.cluster.update(obj, MANAGER)))
          result.adopted.push(refOf(obj))
        }
      }
      claimed.push([rule, children])
    }
    return claimed
  }

  /** Namespace defaults and the selector invariant (generateSelector adds the controller-uid label). */
  desired(parent: KubeObject, children: KubeObject[], selector: LabelMatcher): KubeObject[] {
    const desired = new Map<string, KubeObject>()
    for (const child of children) {
      const labels = child.metadata.labels ?? {}
      if (this.#generateSelector && labels['controller-uid'] === undefined) {
        child.metadata.labels = { ...labels, 'controller-uid': String(parent.metadata.uid) }
      }
      if (!selector(child.metadata.labels)) {
        throw new Error(
          `labels on desired child ${String(child.kind)} ${String(child.metadata.namespace)}/${String(child.metadata.name)} don't match parent selector`,
        )
      }
      // Keyed like Metacontroller's object map: a later duplicate replaces an earlier one.
      desired.set(`${child.apiVersion}|${child.kind}|${child.metadata.namespace}/${child.metadata.name}`, child)
    }
    return [...desired.values()]
  }

  /** common.ManageChildren: delete what is no longer desired, then create or update per update strategy. */
  async manage(
    parent: KubeObject,
    observed: KubeObject[],
    desired: KubeObject[],
    result: SyncResult,
    errors: string[],
  ): Promise<void> {
    const sameObject = (a: KubeObject, b: KubeObject) =>
      a.apiVersion === b.apiVersion &&
      a.kind === b.kind &&
      a.metadata.namespace === b.metadata.namespace &&
      a.metadata.name === b.metadata.name
    for (const child of observed) {
      if (child.metadata.deletionTimestamp !== undefined || desired.some((d) => sameObject(d, child))) continue
      await this.#tryWrite(
        result,
        errors,
        refOf(child),
        () => this.#context.cluster.delete(refOf(child), { uid: child.metadata.uid }),
        result.deleted,
      )
    }
    for (const child of desired) {
      const ref = refOf(child)
      const rule = this.#rules.find((r) => r.resource.apiVersion === child.apiVersion && r.resource.kind === child.kind)
      if (!resourceByKind(child.apiVersion, child.kind)) {
        errors.push(`can't find resource for ${String(child.apiVersion)}/${child.kind}`)
        continue
      }
      if (rule === undefined) {
        result.warnings.push(
          `${describe(ref)} is not a child type of this controller: created once, never updated or deleted`,
        )
      }
      if (child.metadata.namespace !== parent.metadata.namespace) {
        result.warnings.push(
          `${describe(ref)} is outside the parent's namespace: never observed, and garbage-collected`,
        )
      }
      const current = observed.find((o) => sameObject(o, child))
      if (current === undefined) {
        setLastApplied(child, child)
        child.metadata.ownerReferences = [...(child.metadata.ownerReferences ?? [])]
        if (!child.metadata.ownerReferences.some((o) => o.uid === parent.metadata.uid))
          child.metadata.ownerReferences.push(controllerRefTo(parent))
        await this.#tryWrite(result, errors, ref, () => this.#context.cluster.create(child, MANAGER), result.created)
        continue
      }
      // Observed children are of this controller's child types, so the rule exists.
      await this.#updateChild(current, child, (rule as ChildRule).method, result, errors)
    }
  }

  async #updateChild(
    observed: KubeObject,
    desired: KubeObject,
    method: UpdateMethod,
    result: SyncResult,
    errors: string[],
  ): Promise<void> {
    const ref = refOf(observed)
    let merged: KubeObject
    try {
      merged = applyUpdate(observed, desired)
    } catch (error) {
      errors.push(`${describe(ref)}: ${(error as Error).message}`)
      return
    }
    if (deepEqual(merged, observed) || observed.metadata.deletionTimestamp !== undefined) return
    switch (method) {
      case 'OnDelete':
        return
      case 'Recreate':
      case 'RollingRecreate':
        // Deleted now, created by a later sync once it is gone.
        await this.#tryWrite(
          result,
          errors,
          ref,
          () => this.#context.cluster.delete(ref, { uid: observed.metadata.uid }),
          result.deleted,
        )
        return
      case 'InPlace':
      case 'RollingInPlace':
        await this.#tryWrite(result, errors, ref, () => this.#context.cluster.update(merged, MANAGER), result.updated)
        return
      default:
        errors.push(`invalid update strategy for ${observed.kind}: unknown method "${String(method)}"`)
    }
  }

  /**
   * A child write; API errors are collected (the sync still writes status). As in Metacontroller's ManageChildren,
   * a child already gone (NotFound), already there (AlreadyExists) or changed since it was read (Conflict) is no
   * error: the next sync sees the new state. Anything else (Invalid, Forbidden, ...) is.
   */
  async #tryWrite(
    result: SyncResult,
    errors: string[],
    ref: ObjectRef,
    write: () => unknown,
    done: ObjectRef[],
  ): Promise<void> {
    try {
      await this.#context.write(result, write)
      done.push(ref)
    } catch (error) {
      if (error instanceof ApiError && BENIGN_CHILD_ERRORS.has(error.reason)) return
      errors.push(`${describe(ref)}: ${(error as Error).message}`)
    }
  }
}
