import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { inSubnet, parseProductionInterface, parseSubnet, type Subnet } from '../../transport/productionInterface';
import { prepareNodeHost, type NodeHostOptions } from '../../roles/services/nodeHost';

const p = suite('production_interface and the data-plane subnet');

p('the three forms: kernel, PCIe address, DPDK virtual device', () => {
  assert.equal(parseProductionInterface(''), { kind: 'kernel', name: '' });
  assert.equal(parseProductionInterface('eth1'), { kind: 'kernel', name: 'eth1' });
  assert.equal(parseProductionInterface('0000:3B:00.0'), { kind: 'userSpace', device: '0000:3b:00.0', pci: ['0000:3b:00.0'], vdevs: [] });
  assert.equal(parseProductionInterface('dpdk:net_tap0,iface=hd0'), { kind: 'userSpace', device: 'net_tap0', pci: [], vdevs: ['net_tap0,iface=hd0'] });
  assert.equal(parseProductionInterface('dpdk:net_af_packet1,iface=eth2,qpairs=1'), { kind: 'userSpace', device: 'net_af_packet1', pci: [], vdevs: ['net_af_packet1,iface=eth2,qpairs=1'] });
  for (const bad of ['dpdk:', 'dpdk:tap0', 'dpdk:net_tap', 'dpdk:net_tap0,iface', 'dpdk:net_tap0 iface=x']) {
    const r = parseProductionInterface(bad);
    assert.ok('error' in r && /is not dpdk:<vdev>/.test(r.error), bad);
  }
});

p('subnets in CIDR form, and membership', () => {
  const s = parseSubnet('10.150.0.77/24') as Subnet;
  assert.equal(s, { base: (10 << 24 | 150 << 16) >>> 0, prefix: 24 });
  assert.ok(inSubnet('10.150.0.1', s));
  assert.ok(inSubnet('10.150.0.255', s));
  assert.not.ok(inSubnet('10.150.1.1', s));
  assert.not.ok(inSubnet('not an ip', s));
  assert.ok(inSubnet('1.2.3.4', parseSubnet('0.0.0.0/1') as Subnet));
  assert.ok(inSubnet('192.0.2.9', parseSubnet('192.0.2.9/32') as Subnet));
  for (const bad of ['10.150.0.0', '10.150.0.0/33', '10.150.0.0/0', '10.150.0.300/24', '/24', 'x/8']) {
    const r = parseSubnet(bad);
    assert.ok('error' in r && /CIDR form/.test(r.error), bad);
  }
});

const options = (over: Partial<NodeHostOptions>): NodeHostOptions => ({
  mtuMode: 'standard',
  productionInterface: { value: 'dpdk:net_null0', setting: 'production_interface' },
  productionIp: { value: '10.150.0.5', setting: 'production_ip' },
  dataPlaneSubnet: { value: '10.150.0.0/24', setting: 'PLATFORM_DATA_PLANE_SUBNET' },
  masterCpuset: undefined,
  transportCores: 1,
  kvCores: 1,
  report: () => undefined,
  ...over,
});

p('a node with a user-space NIC is refused before DPDK starts when its address is not one of the subnet', async () => {
  const refusal = (o: NodeHostOptions): Promise<string> => prepareNodeHost(o).then(() => 'started', (e: Error) => e.message);
  assert.match(await refusal(options({ productionIp: { value: '0.0.0.0', setting: 'production_ip' } })), /user-space NIC, which owns its address: set production_ip to this node's address in PLATFORM_DATA_PLANE_SUBNET=10\.150\.0\.0\/24 \(got 0\.0\.0\.0\)/);
  assert.match(await refusal(options({ productionIp: { value: '10.151.0.5', setting: 'production_ip' } })), /got 10\.151\.0\.5/);
  assert.match(await refusal(options({ dataPlaneSubnet: { value: '10.150.0.0', setting: 'PLATFORM_DATA_PLANE_SUBNET' } })), /PLATFORM_DATA_PLANE_SUBNET: '10\.150\.0\.0' is not an IPv4 subnet in CIDR form/);
  assert.match(await refusal(options({ productionInterface: { value: 'dpdk:bogus', setting: 'production_interface' } })), /^production_interface: 'dpdk:bogus' is not dpdk:<vdev>/);
});

p.run();
