/**
 * Every optional feature, in the order their parts apply: the wrappers around the storage driver
 * (features/storage.ts builds it) from the innermost out (the CDN middleware inside, then the bounds on each
 * store call, the metrics that time every storage call outside); the pull-through cache reads through the finished storage, and pulls are
 * recorded (activity) around whatever serves them.
 */
import { activityFeature } from './activity.js';
import { cloudfrontFeature } from './cloudfront.js';
import { deadlinesFeature } from './deadlines.js';
import { debugFeature } from './debug.js';
import { gcFeature } from './gc.js';
import { expiryFeature } from './expiry.js';
import { healthFeature } from './health.js';
import { metadataFeature } from './metadata.js';
import { policiesFeature } from './policies.js';
import { proxyFeature } from './proxy.js';
import { redisFeature } from './redis.js';
import { replicationFeature } from './replication.js';
import { retentionFeature } from './retention.js';
import { signaturesFeature } from './signatures.js';
import { uiFeature } from './ui.js';
import { uploadPurgeFeature } from './upload-purge.js';

export const FEATURES = [cloudfrontFeature, deadlinesFeature, redisFeature, proxyFeature, activityFeature, metadataFeature, policiesFeature, expiryFeature, retentionFeature, gcFeature, uploadPurgeFeature, replicationFeature, healthFeature, debugFeature, uiFeature, signaturesFeature] as const;
