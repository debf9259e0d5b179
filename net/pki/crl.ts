/**
 * Certificate revocation lists (X.509 v2 CRLs, RFC 5280 §5). node-forge builds certificates but not
 * CRLs, so the list is laid out here with forge's ASN.1 writer and signed with Node's crypto. The
 * list carries no nextUpdate: DMS-CA replaces it whenever a certificate is revoked, and a TLS
 * context holding an old copy must not start refusing everyone when a date passes.
 */
import { sign } from 'node:crypto';
import forge from 'node-forge';

const { asn1 } = forge;
const T = asn1.Type;
const C = asn1.Class;

/** One revoked certificate. */
export interface RevokedEntry {
  /** Serial number as hex. */
  readonly serial: string;
  readonly revokedAt: Date;
}

function integerFromHex(hex: string): forge.asn1.Asn1 {
  let h = hex.toLowerCase().replace(/^0+(?=.)/, '');
  if (h.length % 2 === 1) h = `0${h}`;
  if (parseInt(h.slice(0, 2), 16) >= 0x80) h = `00${h}`;
  return asn1.create(C.UNIVERSAL, T.INTEGER, false, forge.util.hexToBytes(h));
}

function time(d: Date): forge.asn1.Asn1 {
  // RFC 5280: UTCTime through 2049, GeneralizedTime from 2050.
  return d.getUTCFullYear() < 2050
    ? asn1.create(C.UNIVERSAL, T.UTCTIME, false, asn1.dateToUtcTime(d))
    : asn1.create(C.UNIVERSAL, T.GENERALIZEDTIME, false, asn1.dateToGeneralizedTime(d));
}

function sha256WithRsa(): forge.asn1.Asn1 {
  return asn1.create(C.UNIVERSAL, T.SEQUENCE, true, [
    asn1.create(C.UNIVERSAL, T.OID, false, asn1.oidToDer(forge.pki.oids.sha256WithRSAEncryption).getBytes()),
    asn1.create(C.UNIVERSAL, T.NULL, false, ''),
  ]);
}

/**
 * Builds and signs a CRL issued by the CA certificate `caCertPem` with `caKeyPem`. `crlNumber`
 * must grow with every new list (the CRL Number extension).
 */
export function buildCrl(caCertPem: string, caKeyPem: string, revoked: readonly RevokedEntry[], crlNumber: number, thisUpdate = new Date()): string {
  const ca = forge.pki.certificateFromPem(caCertPem);
  const tbsParts: forge.asn1.Asn1[] = [
    asn1.create(C.UNIVERSAL, T.INTEGER, false, asn1.integerToDer(1).getBytes()), // v2
    sha256WithRsa(),
    forge.pki.distinguishedNameToAsn1(ca.subject),
    time(thisUpdate),
  ];
  if (revoked.length > 0) {
    tbsParts.push(
      asn1.create(
        C.UNIVERSAL,
        T.SEQUENCE,
        true,
        revoked.map((r) => asn1.create(C.UNIVERSAL, T.SEQUENCE, true, [integerFromHex(r.serial), time(r.revokedAt)])),
      ),
    );
  }
  const crlNumberExt = asn1.create(C.UNIVERSAL, T.SEQUENCE, true, [
    asn1.create(C.UNIVERSAL, T.OID, false, asn1.oidToDer('2.5.29.20').getBytes()),
    asn1.create(C.UNIVERSAL, T.OCTETSTRING, false, asn1.toDer(asn1.create(C.UNIVERSAL, T.INTEGER, false, asn1.integerToDer(crlNumber).getBytes())).getBytes()),
  ]);
  tbsParts.push(asn1.create(C.CONTEXT_SPECIFIC, 0, true, [asn1.create(C.UNIVERSAL, T.SEQUENCE, true, [crlNumberExt])]));
  const tbs = asn1.create(C.UNIVERSAL, T.SEQUENCE, true, tbsParts);
  const tbsDer = Buffer.from(asn1.toDer(tbs).getBytes(), 'binary');
  const signature = sign('sha256', tbsDer, caKeyPem);
  const crl = asn1.create(C.UNIVERSAL, T.SEQUENCE, true, [
    tbs,
    sha256WithRsa(),
    asn1.create(C.UNIVERSAL, T.BITSTRING, false, `\u0000${signature.toString('binary')}`),
  ]);
  const der = asn1.toDer(crl).getBytes();
  return forge.pem.encode({ type: 'X509 CRL', body: der });
}
