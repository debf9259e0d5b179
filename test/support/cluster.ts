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
}

/** A running SCC with its Storage Nodes. */
export interface Cluster {
  readonly host: string;
  readonly scc: { readonly proc: HdProcess; readonly productionPort: number; readonly commandPort: number; readonly observabilityPort: number; readonly queryGrpcPort: number };
  readonly sns: ClusterSn[];
  /** Starts Storage Node `i` again (after a stop or a crash) on its ports and data. */
  restartSn(i: number): Promise<void>;
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
}

const HOST = '127.0.0.1';

function startSn(sn: ClusterSn, recordSize: number, schemaDir: string): HdProcess {
  return startHd(['run', 'pipelines/storage-node.yaml', '--config', sn.configFile, '--quiet'], { RECORD_SIZE: String(recordSize), SCHEMA_DIR: schemaDir });
}

/** Starts `storageNodes` Storage Nodes (default 2) and an SCC replicating to all of them. */
export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const recordSize = opts.recordSize ?? 150;
  const schemaDir = mkdtempSync(path.join(os.tmpdir(), 'hd-schemas-'));
  (opts.schemas ?? []).forEach((s, i) => writeFileSync(path.join(schemaDir, `schema${i}.json`), s));
  const sns: ClusterSn[] = [];
  for (let i = 0; i < (opts.storageNodes ?? 2); i++) {
    const dir = mkdtempSync(path.join(os.tmpdir(), `hd-sn${i + 1}-`));
    const [productionPort, commandPort, observabilityPort] = [await freePort(), await freePort(), await freePort()];
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
    const sn: ClusterSn = { name: `sn${i + 1}`, dir, configFile, productionPort, commandPort, observabilityPort, proc: undefined as unknown as HdProcess };
    sn.proc = startSn(sn, recordSize, schemaDir);
    sns.push(sn);
  }
  for (const sn of sns) await waitForPort(HOST, sn.productionPort, sn.proc);
  const [productionPort, commandPort, observabilityPort, queryGrpcPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const proc = startHd(['run', 'pipelines/scc.yaml', '--quiet'], {
    PRODUCTION_IP: HOST,
    PRODUCTION_PORT: String(productionPort),
    COMMAND_PORT: String(commandPort),
    OBSERVABILITY_PORT: String(observabilityPort),
    QUERY_GRPC_PORT: String(queryGrpcPort),
    RECORD_SIZE: String(recordSize),
    NODE_NAME: 'scc-test',
    SN_TARGETS: sns.map((s) => `${s.name}:${HOST}:${s.commandPort}:${s.productionPort}`).join(','),
    ...opts.sccEnv,
  });
  await waitForPort(HOST, productionPort, proc);
  return {
    host: HOST,
    scc: { proc, productionPort, commandPort, observabilityPort, queryGrpcPort },
    sns,
    async restartSn(i: number) {
      const sn = sns[i] as ClusterSn;
      await sn.proc.stop();
      sn.proc = startSn(sn, recordSize, schemaDir);
      await waitForPort(HOST, sn.productionPort, sn.proc);
    },
    async stop() {
      await proc.stop();
      for (const sn of sns) {
        await sn.proc.stop();
        rmSync(sn.dir, { recursive: true, force: true });
      }
      rmSync(schemaDir, { recursive: true, force: true });
    },
  };
}
