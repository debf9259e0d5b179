/**
 * The error every HDQuery check throws (docs/query.md): it names the key that is wrong as a path
 * such as `sub_queries[1].filters[0].value`, so a client, an SCC (gRPC INVALID_ARGUMENT) and a
 * Storage Node (error frame 11, bad query) all report the same text.
 */
export class QueryError extends Error {
  /** The key at fault, e.g. `query_id` or `sub_queries[2].filters[0].op`; empty for the whole query. */
  readonly path: string;

  /**
   * @param path the key at fault
   * @param message what is wrong; the full message is `path: message` unless `bare` is set
   * @param bare use `message` as it is (for messages the contract fixes word for word)
   */
  constructor(path: string, message: string, bare = false) {
    super(bare || path === '' ? message : `${path}: ${message}`);
    this.name = 'QueryError';
    this.path = path;
  }
}
