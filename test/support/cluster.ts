/**
 * A real write path for integration tests: Storage Nodes and one SCC as `hd run` processes on
 * loopback, on free ports, each node in its own temporary directory.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, startHd, waitForPort, type HdProcess } from './hdProcess';

/** One Storage Node process and where it listens. */
export interface ClusterSn {
  readonly name: string;
  readonly dir: string;
  readonly configFile: string;
  readonly productionPort: number;
  readonly commandPort: number;
  readonly observabilityPort: number;
  proc: HdProcess;
  /** Its environment beyond the defaults (the DMS registration variables with `dms`). */
  readonly env?: Record<string, string>;
}

/** A running SCC with its Storage Nodes. */
export interface Cluster {
  readonly host: string;
  readonly scc: {
    readonly proc: HdProcess;
    readonly productionPort: number;
    readonly commandPort: number;
    readonly observabilityPort: number;
    readonly queryGrpcPort: number;
    /** With `dms`: where the SCC keeps its certificate and key (STATE_DIR). */
    readonly stateDir?: string;
  };
  readonly sns: ClusterSn[];
  /** Starts Storage Node `i` again (after a stop or a crash) on its ports and data, with `env` added to its environment. */
  restartSn(i: number, env?: Record<string, string>): Promise<void>;
  /** The SCC's environment (to start it again by hand). */
  readonly sccEnv: Record<string, string>;
  /** Stops every process and removes the data directories. */
  stop(): Promise<void>;
}

/** Settings of {@link startCluster}. */
export interface ClusterOptions {
  readonly storageNodes?: number;
  readonly recordSize?: number;
  /** Extra SCC environment (BATCH_TIMEOUT_MS, TIMEOUT_ACTION, ...). */
  readonly sccEnv?: Record<string, string>;
  /** Extra keys of every Storage Node's config.json. */
  readonly snConfig?: Record<string, unknown>;
  /** Dataset schema JSON texts the Storage Nodes know (SCHEMA_DIR): query filters compile against them. */
  readonly schemas?: readonly string[];
  /** Register every node with this DMS: the SCC ↔ Storage Node links are then mutual TLS. */
  readonly dms?: ClusterDms;
  /** Cold-boot synchronisation: every Storage Node gets the others as SYNC_PEERS, the SCC their SN_OBSERVABILITY_PORTS. */
  readonly syncPeers?: boolean;
  /** Environment added to every process, SCC and Storage Nodes (OTEL_GRPC_URL, ...). */
  readonly env?: Record<string, string>;
}

/** A DMS the cluster's nodes register with (test/control/support.ts starts one). */
export interface ClusterDms {
  readonly url: string;
  /** A file holding the DMS-CA certificate (PLATFORM_CA_CERT_PEM). */
  readonly caFile: string;
  /** A fresh bootstrap token for node `name` of `role` (POST /v1/bootstrap-tokens; an SCC's declares it). */
  token(name: string, role: 'scc' | 'storageNode'): Promise<string>;
  /** More environment of every node (PLATFORM_KEY_BITS, PLATFORM_CRL_REFRESH_MS, ...). */
  readonly env?: Record<string, string>;
}

async function dmsEnv(dms: ClusterDms | undefined, name: string, role: 'scc' | 'storageNode'): Promise<Record<string, string>> {
  if (!dms) return {};
  return { DMS_URL: dms.url, PLATFORM_CA_CERT_PEM: dms.caFile, PLATFORM_BOOTSTRAP_TOKEN: await dms.token(name, role), ...dms.env };
}

const HOST = '127.0.0.1';

function startSn(sn: ClusterSn, recordSize: number, schemaDir: string, extra: Record<string, string> = {}): HdProcess {
  return startHd(['run', 'pipelines/storage-node.yaml', '--config', sn.configFile, '--quiet'], { RECORD_SIZE: String(recordSize), SCHEMA_DIR: schemaDir, ...sn.env, ...extra });
}

/** Starts `storageNodes` Storage Nodes (default 2) and an SCC replicating to all of them. */
export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const recordSize = opts.recordSize ?? 150;
  const schemaDir = mkdtempSync(path.join(os.tmpdir(), 'hd-schemas-'));
  (opts.schemas ?? []).forEach((s, i) => writeFileSync(path.join(schemaDir, `schema${i}.json`), s));
  const sns: ClusterSn[] = [];
  const count = opts.storageNodes ?? 2;
  const obsPorts: number[] = [];
  for (let i = 0; i < count; i++) obsPorts.push(await freePort());
  const syncPeers = (i: number): Record<string, string> =>
    opts.syncPeers
      ? {
          SYNC_PEERS: obsPorts
            .map((p, j) => `sn${j + 1}:${HOST}:${p}`)
            .filter((_, j) => j !== i)
            .join(','),
        }
      : {};
  for (let i = 0; i < count; i++) {
    const dir = mkdtempSync(path.join(os.tmpdir(), `hd-sn${i + 1}-`));
    const [productionPort, commandPort, observabilityPort] = [await freePort(), await freePort(), obsPorts[i] as number];
    const configFile = path.join(dir, 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        node_name: `sn${i + 1}`,
        production_ip: HOST,
        production_port: productionPort,
        command_port: commandPort,
        observability_port: observabilityPort,
        reserve_bytes: 0,
        storage_devices: [{ name: 'd0', address: 'd0', type: 'dir' }],
        ...opts.snConfig,
      }),
    );
    const env = { ...opts.env, ...(await dmsEnv(opts.dms, `sn${i + 1}`, 'storageNode')), ...syncPeers(i) };
    const sn: ClusterSn = { name: `sn${i + 1}`, dir, configFile, productionPort, commandPort, observabilityPort, proc: undefined as unknown as HdProcess, env };
    sn.proc = startSn(sn, recordSize, schemaDir);
    sns.push(sn);
  }
  for (const sn of sns) await waitForPort(HOST, sn.productionPort, sn.proc);
  const [productionPort, commandPort, observabilityPort, queryGrpcPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const stateDir = opts.dms ? mkdtempSync(path.join(os.tmpdir(), 'hd-scc-state-')) : undefined;
  const sccDms = opts.dms ? { ...(await dmsEnv(opts.dms, 'scc-test', 'scc')), STATE_DIR: stateDir as string } : {};
  const sccEnv: Record<string, string> = {
    ...opts.env,
    PRODUCTION_IP: HOST,
    PRODUCTION_PORT: String(productionPort),
    COMMAND_PORT: String(commandPort),
    OBSERVABILITY_PORT: String(observabilityPort),
    QUERY_GRPC_PORT: String(queryGrpcPort),
    RECORD_SIZE: String(recordSize),
    NODE_NAME: 'scc-test',
    SN_TARGETS: sns.map((s) => `${s.name}:${HOST}:${s.commandPort}:${s.productionPort}`).join(','),
    ...sccDms,
    ...(opts.syncPeers && { SN_OBSERVABILITY_PORTS: sns.map((s) => `${s.name}:${s.observabilityPort}`).join(',') }),
    ...opts.sccEnv,
  };
  const proc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], sccEnv);
  await waitForPort(HOST, productionPort, proc);
  return {
    host: HOST,
    scc: { proc, productionPort, commandPort, observabilityPort, queryGrpcPort, ...(stateDir !== undefined && { stateDir }) },
    sns,
    sccEnv,
    async restartSn(i: number, env?: Record<string, string>) {
      const sn = sns[i] as ClusterSn;
      await sn.proc.stop();
      sn.proc = startSn(sn, recordSize, schemaDir, env);
      await waitForPort(HOST, sn.productionPort, sn.proc);
    },
    async stop() {
      await proc.stop();
      for (const sn of sns) {
        await sn.proc.stop();
        rmSync(sn.dir, { recursive: true, force: true });
      }
      rmSync(schemaDir, { recursive: true, force: true });
      if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
