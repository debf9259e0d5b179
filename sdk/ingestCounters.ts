/**
 * The ingest client's two counters (the reference's records_ingested and bytes_ingested).
 */
import { counterText } from './controlHeaders';

/** Counts what the non-broadcast send path ingested and prints it in the Prometheus text format. */
export class IngestCounters {
  private records = 0;
  private bytes = 0;

  /** Adds one successful send. */
  add(records: number, bytes: number): void {
    this.records += records;
    this.bytes += bytes;
  }

  /** The counters, as a scrape endpoint of the caller's would serve them. */
  text(): string {
    return counterText([
      ['records_ingested', 'Records sent to the primary SCC (non-broadcast sends).', this.records],
      ['bytes_ingested', 'Record bytes sent to the primary SCC (non-broadcast sends).', this.bytes],
    ]);
  }
}
