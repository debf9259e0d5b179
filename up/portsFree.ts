/**
 * Before `hd up` starts a node: whether its addresses are free. Another program on a node's port
 * would answer in its place (hd up would take it for the node) or make the node exit at once.
 */
import net from 'node:net';
import type { NodeSpec } from './supervisor';

/** Resolves whether `host:port` can be listened on now. */
function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * The first port of `nodes` (the one each is reached on, and its /health port) that another
 * program holds, as a sentence saying what to do; undefined when all are free.
 */
export async function portInUse(nodes: readonly NodeSpec[]): Promise<string | undefined> {
  for (const n of nodes) {
    const health = new URL(n.healthUrl);
    const ports = [n.readyPort, Number(health.port || 80)];
    for (const port of new Set(ports)) {
      if (!(await canListen(n.host, port))) {
        return `${n.host}:${port} (${n.name}'s port) is in use by another program; stop it, or give hd up other addresses with --net 127.<n>`;
      }
    }
  }
  return undefined;
}
