import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { checkMtuMode, datagramPayloadBytes, MtuModeError, parseMtuMode, productionInterfaceOf, readInterfaceMtu } from '../../net/mtuMode';

const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    assert.instance(err, MtuModeError);
    return (err as Error).message;
  }
  throw new Error('not refused');
};

const modes = suite('MTU modes');
modes('datagram bytes per mode, less a sender header; modes read in any case', () => {
  assert.is(datagramPayloadBytes('standard'), 1200);
  assert.is(datagramPayloadBytes('jumbo'), 8500);
  assert.is(datagramPayloadBytes('standard', 48), 1152);
  assert.throws(() => datagramPayloadBytes('standard', 1200), /0\.\.1199 bytes in standard mode/);
  assert.throws(() => datagramPayloadBytes('jumbo', -1), RangeError);
  assert.is(parseMtuMode('Jumbo'), 'jumbo');
  assert.is(parseMtuMode(' STANDARD '), 'standard');
  assert.is(parseMtuMode('9000'), undefined);
});
modes.run();

const check = suite('checkMtuMode (this host: lo has MTU 65536)');
check('standard needs no interface; jumbo on lo (by name or by its address) passes and says so', () => {
  assert.equal(checkMtuMode('standard', '', '0.0.0.0'), { mode: 'standard', datagram_bytes: 1200 });
  const lo = readInterfaceMtu('lo');
  assert.ok(lo !== undefined && lo >= 8550, `lo has MTU ${lo}`);
  assert.equal(checkMtuMode('jumbo', 'lo', '0.0.0.0'), { mode: 'jumbo', datagram_bytes: 8500, interface: 'lo', interface_mtu: lo });
  assert.equal(productionInterfaceOf('', '127.0.0.1'), { name: 'lo', from: 'address' });
  assert.is(checkMtuMode('jumbo', '', '127.0.0.1').interface, 'lo');
});
check('jumbo with no interface to check, or an unknown one, is refused with what to set', () => {
  assert.match(refusal(() => checkMtuMode('jumbo', '', '0.0.0.0')), /MTU_MODE=jumbo needs the production interface's MTU to be checked, but PRODUCTION_INTERFACE is empty and PRODUCTION_IP=0\.0\.0\.0 is on no single interface; set PRODUCTION_INTERFACE/);
  assert.match(refusal(() => checkMtuMode('jumbo', 'nosuch0', '0.0.0.0', { iface: 'production_interface', ip: 'production_ip' })), /production_interface=nosuch0 is no kernel interface of this host/);
  assert.match(refusal(() => checkMtuMode('jumbo', '0000:01:00.0', '0.0.0.0')), /PRODUCTION_INTERFACE=0000:01:00\.0 is no kernel interface/);
});
check.run();
