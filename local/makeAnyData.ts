/**
 * `arrow.makeData` for a type chosen at run time. apache-arrow types its props per type parameter,
 * which a reader that switches on the type id cannot name; the props are the same either way.
 */
import * as arrow from 'apache-arrow';

/** Props of a Data of any type: `type`, `length`, and the buffers that type uses. */
export interface AnyDataProps {
  readonly type: arrow.DataType;
  readonly length: number;
  readonly data?: ArrayBufferView;
  readonly valueOffsets?: Int32Array;
  readonly nullBitmap?: Uint8Array;
}

/** Builds Data from props whose type is only known at run time. */
export function makeAnyData(props: AnyDataProps): arrow.Data {
  return (arrow.makeData as unknown as (p: AnyDataProps) => arrow.Data)(props);
}
