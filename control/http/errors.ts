/**
 * Errors of the control-plane HTTP APIs (DMS-Core and the HD Proxy). Every error answers
 * `{ "error": "<code>", "message": "<what and how to fix>" }` with the HTTP status of the table in
 * docs/control-plane.md; the codes the reference fixes (unknown_dataset 404, query_timeout 504,
 * upstream_unavailable 502) keep its statuses.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import type { LogFn } from '../../lib/logging';

/** The error codes and their HTTP statuses. */
export const HTTP_ERRORS = {
  invalid_json: 400,
  invalid_request: 400,
  invalid_csr: 400,
  invalid_schema: 400,
  invalid_policy: 400,
  invalid_query: 400,
  unauthenticated: 401,
  forbidden: 403,
  name_mismatch: 403,
  license_limit: 403,
  not_found: 404,
  unknown_node: 404,
  unknown_dataset: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  internal: 500,
  policy_error: 500,
  upstream_unavailable: 502,
  not_ready: 503,
  query_timeout: 504,
} as const;

/** An error code of {@link HTTP_ERRORS}. */
export type HttpErrorCode = keyof typeof HTTP_ERRORS;

/** The JSON body of every error answer. */
export interface ErrorBody {
  readonly error: HttpErrorCode;
  readonly message: string;
}

/** An error to answer with its code's status. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  /** @param code the error code; @param message what went wrong, naming the key or setting */
  constructor(
    readonly code: HttpErrorCode,
    message: string,
  ) {
    super(message);
  }

  /** The HTTP status of the code. */
  get status(): number {
    return HTTP_ERRORS[this.code];
  }

  /** The JSON body. */
  body(): ErrorBody {
    return { error: this.code, message: this.message };
  }
}

/** Maps what fastify itself raises (body parsing, limits) to our codes. */
function fromFastify(err: FastifyError): HttpError {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new HttpError('invalid_json', `the request body is not valid JSON: ${err.message}`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpError('payload_too_large', err.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new HttpError('unsupported_media_type', `${err.message}; send application/json`);
    default:
      if (err instanceof SyntaxError || err.statusCode === 400) return new HttpError('invalid_json', `the request body is not valid JSON: ${err.message}`);
      return new HttpError('internal', err.message);
  }
}

/**
 * Installs the error and not-found handlers on a fastify app, so every failure answers the
 * {@link ErrorBody} shape. `log` receives internal errors (level `error`).
 */
export function installErrorHandlers(app: FastifyInstance, log: LogFn): void {
  app.setErrorHandler((err: FastifyError | HttpError, _req, reply) => {
    const e = err instanceof HttpError ? err : fromFastify(err);
    if (e.code === 'internal') log(`internal error: ${err.stack ?? err.message}`, 'error');
    void reply.code(e.status).send(e.body());
  });
  app.setNotFoundHandler((req, reply) => {
    void reply.code(404).send({ error: 'not_found', message: `no route ${req.method} ${req.url.split('?')[0]}` } satisfies ErrorBody);
  });
}
