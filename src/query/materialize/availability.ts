/**
 * Whether a version can be materialized, and why not (SPEC §4, `materialization.can_materialize` and
 * `reason`): the rewrite decides, for SQL and insights alike, so what the API says is what a refresh does.
 */
import type { EndpointVersion, MaterializationBucket } from '../../core/ports.ts';
import { AppError } from '../../errors/app-error.ts';
import { compileVersion } from '../compile/version.ts';
import { planMaterialization } from './rewrite.ts';

export interface Materializability {
  readonly canMaterialize: boolean;
  /** Why it cannot, for a person; null when it can. */
  readonly reason: string | null;
}

const known = new WeakMap<EndpointVersion, Map<MaterializationBucket, Materializability>>();

export function materializability(
  version: EndpointVersion,
  bucket: MaterializationBucket,
  database?: string,
): Materializability {
  let byBucket = known.get(version);
  if (!byBucket) known.set(version, (byBucket = new Map<MaterializationBucket, Materializability>()));
  let answer = byBucket.get(bucket);
  if (!answer) {
    try {
      const plan = planMaterialization(version, compileVersion(version, database), {
        now: new Date(),
        database,
        bucket,
      });
      answer =
        'cannot' in plan
          ? { canMaterialize: false, reason: plan.cannot }
          : { canMaterialize: true, reason: null };
    } catch (err) {
      // A version accepted by an older Weir whose dialect this one reads differently.
      answer = {
        canMaterialize: false,
        reason: err instanceof Error ? err.message : 'The query does not compile.',
      };
    }
    byBucket.set(bucket, answer);
  }
  return answer;
}

/** 400 `cannot_materialize` with the reason, unless the version can be materialized. */
export function requireMaterializable(version: EndpointVersion, bucket: MaterializationBucket): void {
  const { canMaterialize, reason } = materializability(version, bucket);
  if (!canMaterialize) {
    throw new AppError('cannot_materialize', {
      detail: reason ?? 'This version cannot be materialized.',
      attr: 'is_materialized',
    });
  }
}
