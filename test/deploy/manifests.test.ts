/**
 * The container image definition and the Kubernetes manifests (docs/deploy.md), checked as files:
 * the Dockerfile's stages, user, health check and entrypoint; every manifest parsed (the `yaml`
 * package) and held to the rules docs/deploy.md states; `kubectl kustomize` renders the base and the
 * kernel-bypass overlay where kubectl is installed. The entrypoint's mapping of the container
 * variables is run for real (`hd-node --print-env`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAllDocuments } from 'yaml';

const root = path.resolve(__dirname, '..', '..');
const base = path.join(root, 'deploy', 'kubernetes', 'base');

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string } } }[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: string } };
  livenessProbe?: { httpGet?: { path: string; port: string } };
  securityContext?: { allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] } };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string }; configMap?: { name: string } }[];
}

function loadBase(): K8sObject[] {
  const kustomization = parseAllDocuments(readFileSync(path.join(base, 'kustomization.yaml'), 'utf8'))[0]?.toJS() as { resources: string[] };
  const out: K8sObject[] = [];
  for (const f of kustomization.resources) {
    for (const doc of parseAllDocuments(readFileSync(path.join(base, f), 'utf8'))) {
      assert.equal(doc.errors, [], `${f} parses`);
      out.push(doc.toJS() as K8sObject);
    }
  }
  return out;
}

const podSpec = (o: K8sObject): PodSpec => (o.spec as { template: { spec: PodSpec } }).template.spec;
const workloads = (objs: K8sObject[]): K8sObject[] => objs.filter((o) => o.kind === 'StatefulSet' || o.kind === 'Deployment');

const image = suite('Dockerfile');
const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));

image('multi-stage: the addon and the TypeScript are built in stages the runtime copies from', () => {
  const froms = instructions.filter((l) => /^FROM /i.test(l));
  assert.ok(froms.length >= 3, froms.join('\n'));
  const named = froms.map((l) => /\bAS (\S+)$/i.exec(l)?.[1]).filter(Boolean);
  assert.equal(named, ['native', 'build']);
  assert.ok(instructions.some((l) => /^COPY --from=build /.test(l)), 'the runtime copies the built package');
  assert.ok(instructions.some((l) => /^COPY --from=native /.test(l)), 'the build stage takes the addon');
  assert.not.match(froms[froms.length - 1] as string, /rust/, 'no toolchain in the runtime');
});

image('a non-root USER, a HEALTHCHECK and an ENTRYPOINT whose files exist', () => {
  const user = instructions.filter((l) => /^USER /.test(l)).pop();
  assert.ok(user, 'USER is set');
  assert.not.match(user as string, /^USER (root|0)(:|$)/);
  const hc = instructions.find((l) => /^HEALTHCHECK /.test(l));
  assert.match(hc ?? '', /CMD \["node", "\/opt\/hd\/deploy\/image\/healthcheck\.js"\]/);
  assert.match(instructions.find((l) => /^ENTRYPOINT /.test(l)) ?? '', /hd-node\.js/);
  for (const f of ['deploy/image/hd-node.js', 'deploy/image/healthcheck.js', 'package-lock.json', 'engine-rs/Cargo.lock']) assert.ok(existsSync(path.join(root, f)), f);
});

image('.dockerignore keeps build outputs and node_modules out of the context, not the sources the stages copy', () => {
  const ignored = readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  for (const p of ['node_modules', 'dist', 'engine-rs/target', '.git']) assert.ok(ignored.includes(p), p);
  for (const copied of ['engine-rs/core', 'engine-rs/node', 'deploy/image/hd-node.js', 'package.json']) assert.not.ok(ignored.some((p) => copied === p || copied.startsWith(`${p}/`)), copied);
});

image.run();

const k8s = suite('Kubernetes manifests (kustomize base)');

k8s('every role has a workload; Storage Nodes are a StatefulSet with a persistent volume per node', () => {
  const objs = loadBase();
  const roles = workloads(objs).map((o) => podSpec(o).containers[0]?.args?.[0]).sort();
  assert.equal(roles, ['dms', 'ingester', 'proxy', 'scc', 'sql', 'storage-node']);
  const sn = objs.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'storage-node') as K8sObject;
  assert.ok(sn, 'storage-node StatefulSet');
  const spec = sn.spec as { replicas: number; serviceName: string; volumeClaimTemplates: { metadata: { name: string } }[] };
  assert.ok(spec.replicas >= 2);
  assert.is(spec.volumeClaimTemplates[0]?.metadata.name, 'data');
  assert.ok(podSpec(sn).containers[0]?.volumeMounts?.some((m) => m.name === 'data' && m.mountPath === '/var/lib/hd'));
  const svc = objs.find((o) => o.kind === 'Service' && o.metadata.name === spec.serviceName);
  assert.is((svc?.spec as { clusterIP?: string }).clusterIP, 'None', 'a headless Service gives each node a stable name');
});

k8s('every pod runs as non-root without privilege escalation, with /health probes on a declared port', () => {
  for (const o of workloads(loadBase())) {
    const p = podSpec(o);
    assert.ok(p.securityContext?.runAsNonRoot, `${o.metadata.name}: runAsNonRoot`);
    assert.ok((p.securityContext?.runAsUser ?? 0) > 0, `${o.metadata.name}: runAsUser`);
    for (const c of p.containers) {
      assert.is(c.image, 'hdstore', `${o.metadata.name}: the image kustomize sets`);
      assert.is(c.securityContext?.allowPrivilegeEscalation, false, `${o.metadata.name}`);
      assert.equal(c.securityContext?.capabilities?.drop, ['ALL'], `${o.metadata.name}`);
      for (const probe of [c.readinessProbe, c.livenessProbe]) {
        assert.is(probe?.httpGet?.path, '/health', `${o.metadata.name}: probe`);
        assert.ok(c.ports?.some((x) => x.name === probe?.httpGet?.port && x.containerPort === 8080), `${o.metadata.name}: probe port`);
      }
    }
  }
});

k8s("the reference's container variables reach every node; tokens and the CA come from Secrets, per node", () => {
  const objs = loadBase();
  const platform = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'hd-platform') as K8sObject;
  for (const v of ['PLATFORM_DMS_URL', 'PLATFORM_CA_CERT_PEM', 'MASTER_CPUSET', 'PLATFORM_CONTROL_PLANE_SUBNET', 'PLATFORM_DATA_PLANE_SUBNET', 'HD_BOOTSTRAP_TOKEN_DIR']) assert.ok(platform.data?.[v], v);
  for (const o of workloads(objs)) {
    const c = podSpec(o).containers[0] as Container;
    assert.ok(c.envFrom?.some((e) => e.configMapRef?.name === 'hd-platform'), `${o.metadata.name}: hd-platform`);
    assert.ok(c.env?.some((e) => e.name === 'PLATFORM_NODE_NAME'), `${o.metadata.name}: PLATFORM_NODE_NAME`);
  }
  for (const name of ['scc', 'storage-node', 'hd-proxy']) {
    const o = workloads(objs).find((x) => x.metadata.name === name) as K8sObject;
    const p = podSpec(o);
    const secretOf = (mount: string): string | undefined => {
      const m = p.containers[0]?.volumeMounts?.find((x) => x.mountPath === mount);
      return p.volumes?.find((v) => v.name === m?.name)?.secret?.secretName;
    };
    assert.is(secretOf(platform.data?.HD_BOOTSTRAP_TOKEN_DIR as string), 'hd-bootstrap-tokens', `${name}: tokens`);
    assert.is(secretOf(path.dirname(platform.data?.PLATFORM_CA_CERT_PEM as string)), 'hd-dms-ca', `${name}: CA`);
  }
  const sn = workloads(objs).find((x) => x.metadata.name === 'storage-node') as K8sObject;
  const nodeName = podSpec(sn).containers[0]?.env?.find((e) => e.name === 'PLATFORM_NODE_NAME');
  assert.is(nodeName?.value, '$(POD_NAME)', 'each Storage Node is named after its pod, so it picks its own token');
});

k8s('every Secret the manifests name is documented in docs/deploy.md', () => {
  const doc = readFileSync(path.join(root, 'docs', 'deploy.md'), 'utf8');
  const secrets = new Set<string>();
  for (const o of workloads(loadBase())) {
    const p = podSpec(o);
    for (const v of p.volumes ?? []) if (v.secret) secrets.add(v.secret.secretName);
    for (const e of p.containers.flatMap((c) => c.env ?? [])) if (e.valueFrom?.secretKeyRef) secrets.add(e.valueFrom.secretKeyRef.name);
  }
  assert.ok(secrets.size >= 4, [...secrets].join());
  for (const s of secrets) assert.ok(doc.includes(`\`${s}\``), `docs/deploy.md names ${s}`);
});

k8s('kubectl kustomize renders the base and the kernel-bypass overlay (hugepage pools, IPC_LOCK)', () => {
  const v = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  if (v.status !== 0) {
    console.warn('\n  SKIPPED: kubectl is not installed here; the manifests were checked as parsed YAML only\n');
    return;
  }
  const render = (dir: string): K8sObject[] => {
    const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    return parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject);
  };
  const objs = render(base);
  assert.is(objs.length, loadBase().length);
  for (const o of objs) if (o.kind !== 'Namespace') assert.is((o.metadata as { namespace?: string }).namespace, 'hd', `${o.kind}/${o.metadata.name}`);
  const bypass = render(path.join(root, 'deploy', 'kubernetes', 'overlays', 'kernel-bypass'));
  for (const name of ['scc', 'storage-node']) {
    const c = podSpec(bypass.find((o) => o.kind === 'StatefulSet' && o.metadata.name === name) as K8sObject).containers[0] as Container & { resources: { limits: Record<string, string> }; securityContext: { capabilities: { add: string[] } } };
    assert.ok(c.resources.limits['hugepages-2Mi'] && c.resources.limits['hugepages-1Gi'], name);
    assert.equal(c.securityContext.capabilities.add, ['IPC_LOCK']);
    assert.ok(c.volumeMounts?.some((m) => m.mountPath === '/dev/hugepages-2M') && c.volumeMounts.some((m) => m.mountPath === '/dev/hugepages-1G'), name);
  }
});

k8s('every manifest validates against the Kubernetes API schemas (strict; scripts/k8s-validate.sh)', () => {
  // Rendered by kustomize where kubectl is installed (the base with its namespace, and the overlay); else the base's files as written.
  const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-k8s-'));
  try {
    const files: string[] = [];
    if (kubectl) {
      for (const [name, src] of [
        ['base.yaml', base],
        ['kernel-bypass.yaml', path.join(root, 'deploy', 'kubernetes', 'overlays', 'kernel-bypass')],
      ] as const) {
        const r = spawnSync('kubectl', ['kustomize', src], { encoding: 'utf8' });
        assert.is(r.status, 0, r.stderr);
        writeFileSync(path.join(dir, name), r.stdout);
        files.push(path.join(dir, name));
      }
    } else {
      const kustomization = parseAllDocuments(readFileSync(path.join(base, 'kustomization.yaml'), 'utf8'))[0]?.toJS() as { resources: string[] };
      files.push(...kustomization.resources.map((f) => path.join(base, f)));
    }
    const r = spawnSync('bash', [path.join(root, 'scripts', 'k8s-validate.sh'), ...files], { encoding: 'utf8', timeout: 300_000 });
    if (r.status === 3) {
      console.warn(`\n  SKIPPED: the Kubernetes schema validator is not available here (${r.stderr.trim().split('\n').pop() ?? ''}); the manifests were not validated against the API schemas\n`);
      return;
    }
    assert.is(r.status, 0, `the manifests do not validate against the Kubernetes API schemas:\n${r.stdout}${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

k8s.run();

const entry = suite('hd-node: the container variables mapped onto each role');
const printEnv = (role: string, env: Record<string, string>): { status: number | null; vars: Record<string, string>; err: string } => {
  const r = spawnSync(process.execPath, [path.join(root, 'deploy', 'image', 'hd-node.js'), '--print-env', role], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', ...env } });
  return { status: r.status, vars: r.status === 0 ? (JSON.parse(r.stdout) as Record<string, string>) : {}, err: r.stderr };
};

entry('PLATFORM_NODE_NAME, PLATFORM_DMS_URL and the subnets become the role variables; set ones win', () => {
  const r = printEnv('scc', { PLATFORM_NODE_NAME: 'scc-7', PLATFORM_DMS_URL: 'https://dms:6986', PLATFORM_CONTROL_PLANE_SUBNET: '127.0.0.0/8', PLATFORM_DATA_PLANE_SUBNET: '127.0.0.0/8', HD_DATA_DIR: '/tmp/hd-x' });
  assert.is(r.status, 0, r.err);
  assert.is(r.vars.NODE_NAME, 'scc-7');
  assert.is(r.vars.DMS_URL, 'https://dms:6986');
  assert.is(r.vars.COMMAND_INTERFACE, '127.0.0.1');
  assert.is(r.vars.PRODUCTION_IP, '127.0.0.1');
  assert.is(r.vars.STATE_DIR, '/tmp/hd-x/identity');
  const set = printEnv('scc', { PLATFORM_NODE_NAME: 'scc-7', NODE_NAME: 'mine', PLATFORM_DATA_PLANE_SUBNET: '127.0.0.0/8', PRODUCTION_IP: '127.0.0.9' });
  assert.is(set.vars.NODE_NAME, undefined, 'NODE_NAME as set');
  assert.is(set.vars.PRODUCTION_IP, undefined, 'PRODUCTION_IP as set');
});

entry('a subnet with no local address, or a malformed one, is refused naming the variable', () => {
  const none = printEnv('storage-node', { PLATFORM_NODE_NAME: 'sn1', PLATFORM_DATA_PLANE_SUBNET: '198.51.100.0/24' });
  assert.is(none.status, 2);
  assert.match(none.err, /no local IPv4 address in PLATFORM_DATA_PLANE_SUBNET 198\.51\.100\.0\/24/);
  const bad = printEnv('dms', { PLATFORM_CONTROL_PLANE_SUBNET: '10.0.0/8' });
  assert.is(bad.status, 2);
  assert.match(bad.err, /PLATFORM_CONTROL_PLANE_SUBNET must be an IPv4 CIDR/);
  assert.is(printEnv('nope', {}).status, 2);
});

entry("a Storage Node's config.json is written from the variables; its token is read from the token directory by node name", async () => {
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
  const os = await import('node:os');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hd-node-'));
  try {
    writeFileSync(path.join(dir, 'sn-3'), 'token-of-sn-3\n');
    const r = printEnv('storage-node', { PLATFORM_NODE_NAME: 'sn-3', PLATFORM_DATA_PLANE_SUBNET: '127.0.0.0/8', HD_DATA_DIR: path.join(dir, 'data'), HD_BOOTSTRAP_TOKEN_DIR: dir });
    assert.is(r.status, 0, r.err);
    assert.is(r.vars.PLATFORM_BOOTSTRAP_TOKEN, 'token-of-sn-3');
    const config = JSON.parse(readFileSync(r.vars.CONFIG_FILE as string, 'utf8')) as { node_name: string; production_ip: string; storage_devices: { address: string }[] };
    assert.is(config.node_name, 'sn-3');
    assert.is(config.production_ip, '127.0.0.1');
    assert.equal(config.storage_devices.map((d) => d.address), [path.join(dir, 'data', 'd0')]);
    assert.ok(readdirSync(path.join(dir, 'data')).includes('d0'), 'the device directory exists');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

entry.run();
