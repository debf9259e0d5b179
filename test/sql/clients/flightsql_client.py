"""A Flight SQL client from outside the project for test/sql/flightSql.test.ts: ADBC's Flight SQL
driver (adbc_driver_flightsql, DB-API through adbc_driver_manager). Reads a JSON list of steps on
stdin, runs each against the URI in argv[1] and prints one JSON answer per step (a JSON list).
argv[2], when given, is a JSON object of the driver's database options (db_kwargs), e.g.
{"username": ..., "password": ..., "adbc.flight.sql.client_option.tls_root_certs": <PEM>}; a
connection that fails (refused credentials) answers [{"error": ...}] for the whole run.

Steps: {"op": "query", "sql"}                        -> {"columns", "rows"} (a statement query, not prepared)
       {"op": "prepared", "sql", "params": [[...]]}   -> {"runs": [{"columns", "rows"}, ...]} (one prepared
                                                         statement executed once per parameter row)
       {"op": "schema", "sql"}                        -> [[name, type], ...] of the result, not run
       {"op": "objects"}                              -> adbc_get_objects(depth="all") as a list
       {"op": "table_schema", "table"}                -> [[name, type], ...]
       {"op": "table_types"}                          -> [type, ...]
       {"op": "info"}                                 -> {info_name: value}
A failing step answers {"error": {"class", "status", "message"}} and the next step runs.
"""
import json
import sys

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow


def result(cur):
    table = cur.fetch_arrow_table()
    return {
        "columns": [[f.name, str(f.type)] for f in table.schema],
        "rows": [list(r.values()) for r in table.to_pylist()],
    }


def run(conn, step):
    op = step["op"]
    if op == "query":
        # Not through cursor.execute (which prepares first): a plain statement query, so the
        # driver sends CommandStatementQuery (GetFlightInfo, then DoGet of its ticket).
        with conn.cursor() as cur:
            stmt = cur.adbc_statement
            stmt.set_sql_query(step["sql"])
            handle, _ = stmt.execute_query()
            table = pyarrow.RecordBatchReader._import_from_c(handle.address).read_all()
            return {
                "columns": [[f.name, str(f.type)] for f in table.schema],
                "rows": [list(r.values()) for r in table.to_pylist()],
            }
    if op == "prepared":
        runs = []
        with conn.cursor() as cur:
            for row in step["params"]:
                cur.execute(step["sql"], row)
                runs.append(result(cur))
        return {"runs": runs}
    if op == "schema":
        # The result schema without running the statement (GetSchema of CommandStatementQuery).
        with conn.cursor() as cur:
            return [[f.name, str(f.type)] for f in cur.adbc_execute_schema(step["sql"])]
    if op == "objects":
        return conn.adbc_get_objects(depth="all").read_all().to_pylist()
    if op == "table_schema":
        schema = conn.adbc_get_table_schema(step["table"])
        return [[f.name, str(f.type)] for f in schema]
    if op == "table_types":
        return conn.adbc_get_table_types()
    if op == "info":
        return {str(k): v for k, v in conn.adbc_get_info().items()}
    raise ValueError(f"unknown step {op!r}")


def error_of(e):
    status = getattr(e, "status_code", None)
    return {"error": {"class": type(e).__name__, "status": getattr(status, "name", str(status)), "message": str(e)}}


def main():
    steps = json.load(sys.stdin)
    out = []
    db_kwargs = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    try:
        conn = flight_sql.connect(sys.argv[1], db_kwargs=db_kwargs)
    except Exception as e:  # noqa: BLE001 - a refused login is an answer the test asserts on
        json.dump([error_of(e)], sys.stdout, default=str)
        return
    with conn:
        for step in steps:
            try:
                out.append(run(conn, step))
            except Exception as e:  # noqa: BLE001 - every failure is an answer the test asserts on
                out.append(error_of(e))
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main()
