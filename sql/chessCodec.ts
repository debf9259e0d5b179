/**
 * Chess values in their stored form, computed by engine-rs's own codec (never a second
 * implementation): SAN → the 16-bit move code, FEN → the 30-byte packed position
 * (docs/schema.md, "chess_move", "chess_fen"). Each direction encodes a one-field record with
 * `RecordCodec` and decodes it back with the decoder hd_sql presents rows with, so a value counts as
 * encodable only when the column would present exactly that text again.
 */
import { RecordCodec } from '../engine-rs/codec';
import { decodeRecordsSync } from '../engine-rs/decode';
import { Schema } from '../engine-rs/schema';

/** Bytes of a packed position (chess_fen). */
export const FEN_PACKED_LEN = 30;
/** Offset of the flags byte in a packed position: bit 0 side to move, bits 1-4 castling. */
export const FEN_FLAGS_OFFSET = 8;
/** Offset of the piece nibbles in a packed position. */
export const FEN_BOARD_OFFSET = 14;

/** One move code and the SAN a chess_move column presents for it. */
export interface SanCode {
  readonly code: number;
  readonly san: string;
}

// A private schema holding one field of each chess type: the codec is the dataset codec's, the
// offsets are ours. Chess layouts are fixed (big-endian codes) whatever a dataset's byte order.
const MOVE_AT = 8;
const FEN_AT = 10;
let probe: { schema: Schema; codec: RecordCodec } | undefined;

function probeSchema(): { schema: Schema; codec: RecordCodec } {
  if (!probe) {
    const schema = Schema.parse({
      id: 'hd_chess_probe',
      name: 'hd_chess_probe',
      record_size: FEN_AT + FEN_PACKED_LEN,
      time_field: 'ts',
      fields: [
        { name: 'ts', offset: 0, size: 8, type: 'timestamp' },
        { name: 'move', offset: MOVE_AT, size: 2, type: 'chess_move' },
        { name: 'position', offset: FEN_AT, size: FEN_PACKED_LEN, type: 'chess_fen' },
      ],
    });
    probe = { schema, codec: new RecordCodec(schema) };
  }
  return probe;
}

/** Encodes `text` into field `field` of a probe record; undefined when the codec refuses it or it does not read back as `text`. */
function roundTrip(field: 'move' | 'position', text: string): Buffer | undefined {
  const { schema, codec } = probeSchema();
  const { record, errors } = codec.encodeRecord({ [field]: text });
  if (errors.length > 0) return undefined;
  try {
    const back = decodeRecordsSync(schema, record).getChild(field)?.get(0) as unknown;
    return back === text ? record : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The move code of a SAN exactly as a chess_move column presents it (`Nf3`, `exd8=Q+`, `O-O`),
 * or undefined (not SAN, an alias such as `0-0`, or text no code encodes).
 */
export function sanToCode(san: string): number | undefined {
  const record = roundTrip('move', san);
  return record === undefined ? undefined : record.readUInt16BE(MOVE_AT);
}

/**
 * The 30 packed bytes of a FEN exactly as a chess_fen column presents it (six fields, castling in
 * KQkq order), or undefined (not a FEN, or a spelling the column would not present, such as a
 * four-field FEN).
 */
export function fenToPacked(fen: string): Buffer | undefined {
  const record = roundTrip('position', fen);
  return record === undefined ? undefined : Buffer.from(record.subarray(FEN_AT, FEN_AT + FEN_PACKED_LEN));
}

/** True when the codec accepts `san` as a move (aliases such as `0-0` too), whatever it reads back as. */
export function sanEncodes(san: string): boolean {
  const { codec } = probeSchema();
  const { record, errors } = codec.encodeRecord({ move: san });
  return errors.length === 0 && record.readUInt16BE(MOVE_AT) !== 0;
}

let sanCodes: readonly SanCode[] | undefined;

/**
 * Every move code some SAN encodes to, with that SAN, in code order: all 65 536 codes decoded once
 * by the column decoder (codes that read as `?` or as no move are left out).
 */
export function allSanCodes(): readonly SanCode[] {
  if (!sanCodes) {
    const { schema } = probeSchema();
    const size = schema.recordSize;
    const records = Buffer.alloc(65536 * size);
    for (let code = 0; code < 65536; code++) records.writeUInt16BE(code, code * size + MOVE_AT);
    const col = decodeRecordsSync(schema, records).getChild('move');
    const out: SanCode[] = [];
    for (let code = 1; code < 65536; code++) {
      const san = col?.get(code) as unknown;
      if (typeof san === 'string' && san !== '' && san !== '?') out.push({ code, san });
    }
    sanCodes = out;
  }
  return sanCodes;
}
