/**
 * The SDK's side of mutual TLS on the SCCs' gRPC QueryDispatch port (docs/control-plane.md, "Which
 * links are mutual TLS"): an SCC registered with the DMS serves that port only to callers with a
 * DMS-CA certificate of an allowed role (`client` among them). A query client that registered
 * (registerWithDms), or was given `dispatchTls`, dispatches and cancels over mutual TLS with that
 * material; one without a certificate calls plain gRPC, as toward an SCC running without a DMS.
 */
import type * as grpc from '@grpc/grpc-js';
import { dispatchCredentials } from '../net/grpcTls';
import type { ControlTls } from './proxyClient';

/**
 * Channel credentials for the SCCs from `tls` (CA bundle, certificate, key), or undefined for
 * plain gRPC when any of the three is missing. The SCC's certificate must chain to the CA bundle;
 * its name is not checked (an SCC target is an address, not a node name).
 */
export function sccDispatchCredentials(tls: ControlTls | undefined): grpc.ChannelCredentials | undefined {
  if (!tls?.ca || !tls.cert || !tls.key) return undefined;
  return dispatchCredentials({ keyPem: tls.key, certPem: tls.cert, caPem: tls.ca });
}
