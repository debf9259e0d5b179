"""psycopg 3 against hd_sql's PostgreSQL wire door (test/sql/pgClients.test.ts runs it).

Usage: python psycopg_client.py HOST PORT USER PASSWORD [protocol]
Connects with the password (SCRAM-SHA-256), runs the shared queries (the prepared and the types
query a second time with binary results, which must agree) and prints one JSON object:
{"driver", "results": {name: {"columns", "rows"}}, "errors": {name: {"sqlstate", "message"}}} with every value in
the canonical form the test compares (integers and decimals as strings, timestamps as ISO UTC).

With `protocol` it checks protocol details instead (test/sql/pgDrivers.test.ts): psycopg's default
transaction mode (the transaction status after each step, an error inside the transaction, nested
transactions as savepoints), autocommit, cursor.description (type OIDs, precision and scale), result
names and the parameters the server reported.
"""
import datetime
import decimal
import json
import sys

import psycopg
from psycopg import ClientCursor

T0 = 1_700_000_000


def canon(v):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, (int, decimal.Decimal, float)):
        return str(v)
    if isinstance(v, datetime.datetime):
        u = v.astimezone(datetime.timezone.utc)
        return u.strftime("%Y-%m-%dT%H:%M:%S.") + f"{u.microsecond // 1000:03d}Z"
    if isinstance(v, list):
        return [canon(x) for x in v]
    return str(v)


def table(cur):
    return {"columns": [d.name for d in cur.description], "rows": [[canon(v) for v in row] for row in cur.fetchall()]}


def same_in_binary(conn, name, out, query, params=None):
    """Runs `query` again asking for every result column in binary; it must answer the same."""
    with conn.cursor(binary=True) as cur:
        cur.execute(query, params)
        again = table(cur)
    if again != out["results"][name]:
        raise SystemExit(f"{name}: binary results {again} differ from text results {out['results'][name]}")


def failure(fn):
    """The SQLSTATE and message of the error `fn` raises. libpq keeps no SQLSTATE for a failed
    connection attempt, so psycopg's is None there and the test reads the message instead."""
    try:
        fn()
    except psycopg.Error as e:
        return {"sqlstate": e.sqlstate, "message": str(e)}
    return {"sqlstate": "none", "message": "no error"}


METADATA_QUERY = (
    "SELECT count(*) AS c, sum(bytes) AS s, 2.50::DECIMAL(5,2) AS d, [1, 2]::INTEGER[] AS ints, 7::SMALLINT AS small, 8 AS i4, "
    "1.5::REAL AS r, 0.5::DOUBLE AS f8, true AS b, 'x' AS t, min(src_ip) AS ip, to_timestamp(0) AS at, TIMESTAMP '2024-01-02 03:04:05' AS ts, "
    f"DATE '2024-01-02' AS day, '\\x01'::BLOB AS bin, 12345678901234567890::HUGEINT AS h FROM flows WHERE ts >= {T0} AND ts < {T0 + 3}"
)
NAMES_QUERY = f"SELECT count(*), sum(bytes), 1 + 1, 2::int, count(*) AS n FROM flows WHERE ts >= {T0} AND ts < {T0 + 30}"


def protocol(conninfo, password):
    out = {"driver": f"psycopg {psycopg.__version__} (libpq {psycopg.pq.version()})", "results": {}, "errors": {}}
    r = out["results"]
    status = lambda conn: conn.info.transaction_status.name  # noqa: E731
    # The default transaction mode: the first statement opens a transaction (BEGIN), commit() / rollback() end it.
    with psycopg.connect(**conninfo, password=password) as conn:
        r["statuses"] = [status(conn)]
        with conn.cursor() as cur:
            cur.execute(NAMES_QUERY)
            r["names"] = table(cur)
            r["statuses"].append(status(conn))
            cur.execute(METADATA_QUERY)
            r["description"] = [[d.name, d.type_code, d.internal_size, d.precision, d.scale] for d in cur.description]
            cur.fetchall()
            out["errors"]["inTransaction"] = failure(lambda: cur.execute("SELECT * FROM nope"))
            r["statuses"].append(status(conn))
            out["errors"]["afterError"] = failure(lambda: cur.execute("SELECT 1"))
            conn.rollback()
            r["statuses"].append(status(conn))
            with conn.transaction():
                cur.execute("SELECT 1 AS one")
                r["inBlock"] = table(cur)
                try:
                    with conn.transaction():  # a savepoint, rolled back to by the error
                        cur.execute("SELECT * FROM nope")
                except psycopg.errors.UndefinedTable:
                    r["savepointRolledBack"] = True
                cur.execute("SELECT 2 AS two")
                r["afterSavepoint"] = table(cur)
            r["statuses"].append(status(conn))
            cur.execute("SET application_name = 'in a transaction'")
            conn.rollback()
            cur.execute("SHOW application_name")
            r["applicationNameAfterRollback"] = table(cur)
            conn.commit()
        r["reported"] = {n: conn.info.parameter_status(n) for n in ["server_version", "DateStyle", "TimeZone", "integer_datetimes", "standard_conforming_strings", "client_encoding", "IntervalStyle"]}
    with psycopg.connect(**conninfo, password=password, autocommit=True) as conn:
        with conn.cursor() as cur:
            cur.execute(NAMES_QUERY)
            r["autocommitNames"] = table(cur)
            r["autocommitStatus"] = status(conn)
    print(json.dumps(out))


def main():
    host, port, user, password = sys.argv[1:5]
    conninfo = dict(host=host, port=int(port), user=user, dbname="hd", connect_timeout=10)
    if len(sys.argv) > 5 and sys.argv[5] == "protocol":
        return protocol(conninfo, password)
    out = {"driver": f"psycopg {psycopg.__version__} (libpq {psycopg.pq.version()})", "results": {}, "errors": {}}
    with psycopg.connect(**conninfo, password=password, autocommit=True) as conn:
        # The simple query protocol: a client-side cursor merges nothing and sends one Query message.
        with ClientCursor(conn) as cur:
            cur.execute(f"SELECT proto, count(*) AS n, sum(bytes) AS total FROM flows WHERE ts >= {T0} AND ts < {T0 + 30} GROUP BY proto ORDER BY proto")
            out["results"]["simple"] = table(cur)
        with conn.cursor() as cur:
            # Server-side binding (the extended protocol) with int, text, bool and timestamptz parameters.
            at = datetime.datetime.fromtimestamp(T0 + 12, tz=datetime.timezone.utc)
            prepared = (
                "SELECT ts, proto, src_ip, dst_port, to_timestamp(ts) AS at FROM flows "
                "WHERE ts >= %s AND proto = %s AND (dst_port = 53) = %s AND to_timestamp(ts) < %s::TIMESTAMPTZ ORDER BY ts"
            )
            cur.execute(prepared, (T0, "icmp", True, at), prepare=True)
            out["results"]["prepared"] = table(cur)
            same_in_binary(conn, "prepared", out, prepared, (T0, "icmp", True, at))
            cur.execute("SELECT CAST(NULL AS INTEGER) AS a, %s::VARCHAR AS b, %s::INTEGER AS c, 'x' AS d", (None, None))
            out["results"]["nulls"] = table(cur)
            types = (
                "SELECT [1, 2]::INTEGER[] AS ints, ['x', 'y z', NULL]::VARCHAR[] AS texts, 2.50::DECIMAL(5,2) AS d, "
                "true AS b, 0.5::DOUBLE AS f, 12345678901::BIGINT AS big, 7::SMALLINT AS small, 'é ü' AS utf"
            )
            cur.execute(types)
            out["results"]["types"] = table(cur)
            same_in_binary(conn, "types", out, types)
            # Session questions drivers and BI tools ask (answered by the door, not DuckDB).
            cur.execute("SELECT version()")
            out["results"]["version"] = table(cur)
            cur.execute("SET application_name = 'hd clients'")
            cur.execute("SHOW application_name")
            out["results"]["show"] = table(cur)
            cur.execute("SHOW TRANSACTION ISOLATION LEVEL")
            out["results"]["showIsolation"] = table(cur)
            out["errors"]["unknownTable"] = failure(lambda: cur.execute("SELECT * FROM nope"))
            # The connection stays usable after an error.
            cur.execute("SELECT 1 AS one")
            out["results"]["afterError"] = table(cur)
    out["errors"]["wrongPassword"] = failure(lambda: psycopg.connect(**conninfo, password=password + "-wrong").close())
    print(json.dumps(out))


main()
