// The controller's writes to a parent (pkg/controller/common/finalizer, updateParentStatus): its finalizer added
// while the finalize hook is enabled and removed once the hook says finalized, and its status replaced by the
// answer's, each through AtomicUpdate (a live read, the change, the write, again on a conflict).
import { ApiError } from './admission.js'
import { MANAGER, type SyncContext, type SyncResult } from './controller.js'
import { deepEqual, type JsonObject } from './json.js'
import { refOf, type KubeObject } from './objects.js'

/** client-go's retry.DefaultBackoff: Metacontroller's AtomicUpdate tries a conflicting write this often. */
const CONFLICT_ATTEMPTS = 4
const GC_FINALIZERS = ['foregroundDeletion', 'orphan']

export class ParentWrites {
  readonly #context: SyncContext
  readonly #finalizer: string
  readonly #finalizing: () => boolean

  /** `finalizing`: whether the finalize hook is enabled. */
  constructor(context: SyncContext, finalizer: string, finalizing: () => boolean) {
    this.#context = context
    this.#finalizer = finalizer
    this.#finalizing = finalizing
  }

  /** Adds the finalizer while the finalize hook is enabled (not to a parent already going away), removes it if not. */
  async syncFinalizer(parent: KubeObject, result: SyncResult): Promise<KubeObject> {
    const has = (parent.metadata.finalizers ?? []).includes(this.#finalizer)
    const enabled = this.#finalizing()
    if (has === enabled) return parent
    if (!enabled) return this.removeFinalizer(parent, result)
    // No new finalizer on an object that is already going away.
    if (parent.metadata.deletionTimestamp !== undefined) return parent
    const { object, written } = await this.#atomicUpdate(result, parent, 'main', (current) => {
      const finalizers = current.metadata.finalizers ?? []
      if (finalizers.includes(this.#finalizer)) return false
      current.metadata.finalizers = [...finalizers, this.#finalizer]
      return true
    })
    result.finalizerAdded = written
    return object
  }

  async removeFinalizer(parent: KubeObject, result: SyncResult): Promise<KubeObject> {
    if (!(parent.metadata.finalizers ?? []).includes(this.#finalizer)) return parent
    // The last finalizer of a deleted object: the API server removes it and answers with its final state.
    const { object, written } = await this.#atomicUpdate(result, parent, 'main', (current) => {
      const finalizers = current.metadata.finalizers ?? []
      if (!finalizers.includes(this.#finalizer)) return false
      current.metadata.finalizers = finalizers.filter((f) => f !== this.#finalizer)
      return true
    })
    result.finalizerRemoved = written
    return object
  }

  /**
   * dynamic clientset AtomicUpdate / AtomicStatusUpdate: a live GET (not the cache), the change, the write; on a
   * conflict, all again. NotFound when the object was replaced by another of the same name.
   */
  async #atomicUpdate(
    result: SyncResult,
    orig: KubeObject,
    target: 'main' | 'status',
    change: (current: KubeObject) => boolean,
  ): Promise<{ object: KubeObject; written: boolean }> {
    const ref = refOf(orig)
    for (let attempt = 1; ; attempt++) {
      const current = await (this.#context.cluster.read?.(ref) ?? this.#context.cluster.get(ref))
      if (current === undefined || current.metadata.uid !== orig.metadata.uid) {
        throw new ApiError('NotFound', `${ref.kind} "${ref.name}" not found`)
      }
      if (!change(current)) return { object: current, written: false }
      try {
        const object = await this.#context.write(result, () =>
          target === 'status'
            ? this.#context.cluster.updateStatus(current, MANAGER)
            : this.#context.cluster.update(current, MANAGER),
        )
        return { object, written: true }
      } catch (error) {
        if (!(error instanceof ApiError && error.reason === 'Conflict') || attempt === CONFLICT_ATTEMPTS) throw error
      }
    }
  }

  /** Whether the finalize hook decides this deletion (the garbage collector's finalizers come first). */
  shouldFinalize(parent: KubeObject): boolean {
    // Only called for a parent being deleted, which has finalizers (or it would be gone).
    const finalizers = parent.metadata.finalizers as string[]
    return (
      this.#finalizing() && finalizers.includes(this.#finalizer) && !finalizers.some((f) => GC_FINALIZERS.includes(f))
    )
  }

  /** updateParentStatus: the answer's status and observedGeneration, unless the stored one is equal. */
  async updateStatus(parent: KubeObject, status: JsonObject | null, result: SyncResult): Promise<void> {
    const next = { ...(status ?? {}), observedGeneration: parent.metadata.generation }
    try {
      const { written } = await this.#atomicUpdate(result, parent, 'status', (current) => {
        if (deepEqual(current.status, next)) return false
        current.status = next
        return true
      })
      result.statusWritten = written
    } catch (error) {
      // Gone (its last finalizer was just removed), or changed again since: the next sync writes it.
      if (error instanceof ApiError && (error.reason === 'NotFound' || error.reason === 'Conflict')) return
      throw error
    }
  }
}
