/**
 * A server service (the DMS, the Proxy, hd_sql) as the runner sees it: started before the stages,
 * closed after them. A server that fails to start fails the run with its message.
 */
import type { RunningService } from '../../pipelines/registry';

/** Something that listens until it is closed. */
export interface Closable {
  close(): Promise<void>;
}

/** Starts a server; the runner closes it when the run ends. It gives its users nothing. */
export async function serve(start: () => Promise<Closable>): Promise<RunningService<undefined>> {
  const server = await start();
  return { value: undefined, stop: () => server.close() };
}
