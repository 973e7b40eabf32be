/**
 * Which repositories exist: those with a `_manifests` directory (a manifest was pushed to them).
 * Repositories with only blobs, or an upload in progress, are not known yet. The catalog, tag
 * listing and manifest lookups all use this one rule, so every name the catalog lists answers.
 *
 * A repository stays known once its last manifest is deleted (its manifests are MANIFEST_UNKNOWN,
 * its tag list is empty, the catalog lists it), on every driver, as on Distribution's filesystem
 * driver, which keeps the emptied directories. Object stores and the in-memory driver keep no
 * empty directory, so a delete first leaves a mark in `_manifests` (keepRepository).
 */
import { unlessMissing, type StorageDriver } from '../storage/driver.js';
import * as layout from './layout.js';
import { RegistryError } from './errors.js';

export async function isRepository(driver: StorageDriver, name: string): Promise<boolean> {
  return (await unlessMissing(driver.stat(layout.manifestsDir(name))))?.isDir ?? false;
}

/** the same rule read off a directory's listing (the catalog lists each directory anyway) */
export function listsRepository(childNames: readonly string[]): boolean {
  return childNames.includes(layout.MANIFESTS_DIR_NAME);
}

/** 404 NAME_UNKNOWN unless `name` is a repository */
export async function checkRepository(driver: StorageDriver, name: string): Promise<void> {
  if (!(await isRepository(driver, name))) throw nameUnknown(name);
}

/** the error of a repository that is not known (also when the metadata index says so) */
export function nameUnknown(name: string): RegistryError {
  return new RegistryError('NAME_UNKNOWN', `repository ${JSON.stringify(name)} is not known to this registry (no manifest was ever pushed to it)`, {
    detail: { name },
  });
}

/** makes sure `name` stays a repository when its last manifest goes (called before a delete) */
export async function keepRepository(driver: StorageDriver, name: string): Promise<void> {
  await driver.putContent(layout.repositoryKeep(name), Buffer.alloc(0));
}
