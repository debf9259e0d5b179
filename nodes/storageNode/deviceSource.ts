/**
 * Which devices a Storage Node stores on (docs/storage-node.md, "Configuration from the DMS"), with
 * the precedence of its other settings: `storage_devices` in config.json (the operator set them),
 * else the `devices` the DMS hands the node (declared with `PUT /v1/nodes/{name}`), else one
 * directory beside the config file. Taken once at start: the devices hold the node's segments, and
 * recovery builds the batch index from them, so a change on the DMS applies at the next start.
 */
import type { DmsNodeConfig } from '../../net/dmsConfigFeed';
import { defaultDevices, withDevices, type StorageNodeConfig } from './config';

/** Where the devices in force came from. */
export type DevicesFrom = 'config' | 'dms' | 'dms-cache' | 'default';

/** What {@link resolveDevices} knows of the DMS. */
export interface DevicesDms {
  /** The node is registered (DMS_URL is set). */
  readonly registered: boolean;
  /** The DMS's configuration at start, when it (or the cache of it) gave one. */
  readonly config: DmsNodeConfig | undefined;
  /** Where that configuration came from. */
  readonly origin: 'dms' | 'dms-cache';
  /** The configuration cache file, for the message when there is none. */
  readonly cacheFile?: string;
}

/**
 * `config` with its devices settled, and where they came from. Throws (naming the source and every
 * bad entry) when the DMS's devices are unusable here, and when a registered node without
 * `storage_devices` has neither an answer from the DMS nor a cached one: it could not tell which
 * devices hold its segments, and starting on the default directory would hide them.
 */
export function resolveDevices(config: StorageNodeConfig, dms: DevicesDms): { config: StorageNodeConfig; from: DevicesFrom } {
  if (config.storageDevicesSet) return { config, from: 'config' };
  const declared = dms.config?.devices ?? [];
  if (declared.length > 0) return { config: withDevices(config, declared, `the DMS's devices of node '${config.nodeName}'`), from: dms.origin };
  if (dms.registered && !dms.config) {
    throw new Error(
      `config.json has no storage_devices and the DMS has not answered with this node's configuration${dms.cacheFile ? ` (nor is one cached in ${dms.cacheFile})` : ''}: ` +
        'the node cannot tell which devices hold its segments; set storage_devices, or start it once the DMS answers',
    );
  }
  return { config: withDevices(config, defaultDevices(config.nodeName), 'the default device'), from: 'default' };
}
