/**
 * The typed TypeScript face of engine-rs. Everything else in HD reaches native code through the
 * classes and functions exported here, never through the addon directly.
 */
export { BatchID, generateBatchIdString, generateBatchIdNumber, generateBatchIdTime, generateBatchIdsTime } from './batchId';
export { encodeFrame, encodeRecords, splitRecordsForMtu, FrameDecoder, decodeDatagram, HdwpError, HDWP_ERROR_CODES, HDWP_VERSION, HDWP_HEADER_LEN, HDWP_DEFAULT_MAX_PAYLOAD, HDWP_DEFAULT_MAX_FRAME, HDWP_ERROR_FRAME_CODES, MTU_STANDARD, MTU_JUMBO } from './hdwp';
export type { Frame, HelloFrame, RecordsFrame, EobFrame, BbnFrame, QueryFrame, CancelFrame, ErrorFrame, CreditFrame, AggregateFrame, QueryAuth, HdwpRole, HdwpErrorCode, FrameDecoderOptions, EncodeRecordsOptions } from './hdwp';
export { Schema, SchemaError } from './schema';
export type { FieldInfo, FieldTypeName, TimeUnitName, EnumInfo, SchemaJson, SchemaIssue } from './schema';
export { RecordCodec } from './codec';
export type { FieldError, LineError, ParsedBlock, TimeWindow, CsvOptions } from './codec';
export { decodeRecords, decodeRecordsSync, arrowSchemaFor, RecordDecodeError } from './decode';
export type { DecodeOptions, AddressPresentation, DecodeErrorCode } from './decode';
export { encodeColumnar, readColumnar, ColumnarFrameError } from './columnar';
export type { ColumnarErrorCode, ColumnarOptions } from './columnar';
export { PgTextRows } from './pgTextRows';
export type { PgTextColumn, PgTextCells, PgIntValues } from './pgTextRows';
export { encodeArrowBatch, encodeArrowBatchAsync, ArrowEncodeError } from './encodeArrow';
export type { EncodeArrowOptions, UnknownColumns, ArrowEncodeErrorCode } from './encodeArrow';
export { threadAffinity, currentThreadId } from './affinity';
export { HashChain, BatchDigest, HASH_ALGORITHMS, DEFAULT_HASH_CHAIN_BLOCK_SIZE, DEFAULT_HASH_RECORD_SIZE, isHashAlgorithm, setHashThreads, hashThreads } from './hashChain';
export type { HashAlgorithmName, HashChainOptions, HashChainResult } from './hashChain';
export { SegmentWriter, segmentFileName, verifySegment, recoverSegments, directIoSupported, uringIoRefusal, SEGMENT_EXT, SEGMENT_IO_MODES } from './segment';
export type { SegmentWriterOptions, SegmentSummary, SegmentVerification, SegmentRecovery, SegmentIo } from './segment';
export { DEFAULT_RECORD_CACHE_BYTES, setRecordCacheBytes, recordCacheStats } from './recordCache';
export type { RecordCacheStats } from './recordCache';
export { enableGpuFilter, gpuStats } from './gpu';
export type { GpuStats } from './gpu';
export { SegmentReader, readSegment } from './segmentReader';
export { SegmentError, SEGMENT_ERROR_CODES } from './segmentError';
export type { SegmentErrorCode } from './segmentError';
export { zoneKeyValue } from './segmentZones';
export type { ZoneField, ZoneKind, Zone, ZoneValue } from './segmentZones';
export { AggregateAccumulator, AggregatePlan, ScanFilter, SegmentScanner, TopPlan, evaluateFilter, zoneFieldsOf, memoryReadBaseline, DEFAULT_SCAN_BLOCKS } from './scan';
export type { GroupScanBudget, ScanStep, SegmentScanOptions, SummaryGroup, TopSpec } from './scan';
export { QueryError, ScanError, SCAN_ERROR_CODES } from './scanError';
export type { ScanErrorCode } from './scanError';
