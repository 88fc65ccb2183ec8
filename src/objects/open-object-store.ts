import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { ObjectStore } from '../core/object-store.ts';
import { DirectoryObjectStore } from './directory-store.ts';
import { S3ObjectStore, type S3StoreOptions } from './s3-store.ts';

/** The settings `openObjectStore` reads. */
export type ObjectStoreConfig = Pick<
  Config,
  's3Bucket' | 's3Endpoint' | 's3Region' | 's3AccessKeyId' | 's3SecretAccessKey' | 's3ForcePathStyle'
>;

/**
 * The object store the configuration names, for composition code (`weir start`, the roles): the S3 bucket
 * when `WEIR_S3_BUCKET` is set, else the directory `<dataDir>/objects/`. Nothing is touched yet: an S3
 * service that is down at start shows as failed refreshes, not as a process that will not start.
 *
 * `tuning` passes the S3 adapter's timeouts and part sizes, which are not settings (their defaults suit a
 * bucket in the same region); tests shorten them.
 */
export function openObjectStore(
  config: ObjectStoreConfig,
  dataDir: string,
  tuning: Omit<S3StoreOptions, 'bucket' | 'endpoint' | 'region' | 'credentials' | 'forcePathStyle'> = {},
): ObjectStore {
  if (config.s3Bucket === undefined) return new DirectoryObjectStore({ root: join(dataDir, 'objects') });
  return new S3ObjectStore({
    ...tuning,
    bucket: config.s3Bucket,
    ...(config.s3Endpoint === undefined ? {} : { endpoint: config.s3Endpoint }),
    region: config.s3Region,
    ...(config.s3AccessKeyId !== undefined && config.s3SecretAccessKey !== undefined
      ? { credentials: { accessKeyId: config.s3AccessKeyId, secretAccessKey: config.s3SecretAccessKey } }
      : {}),
    forcePathStyle: config.s3ForcePathStyle,
  });
}
