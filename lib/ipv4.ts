/** IPv4 dotted-quad text as a number: shared by SQL address literals (sql/inetAddress.ts) and the data-plane subnet (transport/productionInterface.ts). */

/**
 * A dotted-quad IPv4 address as its uint32: four decimal octets 0..255, no sign, no leading zero
 * (`01.2.3.4` is refused, as the engine's encoder refuses it). Undefined for anything else.
 * @example ipv4Value('10.0.0.9') // 167772169
 */
export function ipv4Value(text: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!m) return undefined;
  let v = 0;
  for (let i = 1; i <= 4; i++) {
    const o = m[i] as string;
    if (o.length > 1 && o.startsWith('0')) return undefined;
    const n = Number(o);
    if (n > 255) return undefined;
    v = v * 256 + n;
  }
  return v;
}
