/**
 * hdstore: the public API of HD, the Hyperscale Dataset Store.
 */
export {
  BatchID,
  generateBatchIdString,
  generateBatchIdNumber,
  generateBatchIdTime,
  generateBatchIdsTime,
} from './engine-rs/index';
export { encodeFrame, encodeRecords, splitRecordsForMtu, FrameDecoder, decodeDatagram, HdwpError, MTU_STANDARD, MTU_JUMBO } from './engine-rs/index';
export type { Frame, QueryAuth, HdwpRole, HdwpErrorCode } from './engine-rs/index';
export { Schema, SchemaError, RecordCodec } from './engine-rs/index';
export type { FieldInfo, FieldTypeName, SchemaJson, SchemaIssue, LineError, FieldError, ParsedBlock, TimeWindow, CsvOptions } from './engine-rs/index';
export { decodeRecords, decodeRecordsSync, arrowSchemaFor, RecordDecodeError } from './engine-rs/index';
export type { DecodeOptions, AddressPresentation, DecodeErrorCode } from './engine-rs/index';
export { encodeArrowBatch, encodeArrowBatchAsync, ArrowEncodeError } from './engine-rs/index';
export type { EncodeArrowOptions, UnknownColumns, ArrowEncodeErrorCode } from './engine-rs/index';
export { PlatformIngestClient } from './sdk/platformIngestClient';
export type { IngestClientOptions, IngestRecords } from './sdk/platformIngestClient';
export { PlatformQueryClient, ProxyError } from './sdk/platformQueryClient';
export type { QueryClientOptions, BatchCallback, ControlTls, ProxyResultEvent } from './sdk/platformQueryClient';
export { parseSccTargets } from './sdk/sccTargets';
export type { SccTarget } from './sdk/sccTargets';
export { parseHdQuery, serializeHdQuery, clampQos, QueryError, FILTER_OPS, MAX_BRANCHES } from './query/hdQuery';
export type { HdQuery, Filter, FilterOp, SubQuery, ReturnAddress, BatchError } from './query/hdQuery';
export type { SccAddress } from './control/api';
export { newQueryToken, newQueryId } from './query/token';
export { QueryDispatchClient, DispatchError } from './query/dispatch/dispatchClient';
export type { DispatchReply, CancelReply } from './query/dispatch/dispatchService';
export { ResultListener } from './hdwp/resultListener';
export type { QueryResult, BatchResult, BatchFailure, StreamFailure, OpenQuery, ResultListenerOptions } from './hdwp/resultListener';
