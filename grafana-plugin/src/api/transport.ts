/**
 * The one thing the query runner needs from its environment: send an `ApiRequest`, get the
 * decoded JSON body back, or an `HttpError`. Grafana's backend_srv implements it in the
 * datasource; the contract test implements it with `fetch` against a real server.
 */
import { ApiRequest } from './requests';

export type Transport = (req: ApiRequest) => Promise<unknown>;

/** A non-2xx answer, with Sightline's error message when it gave one. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string
  ) {
    super(message);
  }
}

/** Whether an error means "this server has no such endpoint / object". */
export function isNotFound(e: unknown): boolean {
  return e instanceof HttpError && e.status === 404;
}
