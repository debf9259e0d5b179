"""chDB's side of `npm run bench:peers` (bench/peers/chdb.ts runs it in the chDB virtual environment).

Reads one JSON request on stdin and writes one JSON answer on stdout, timing inside Python:
  {"mode": "ingest", "path": DIR, "csv": FILE, "table": DDL}
      -> {"ingest_ms": ms, "rows": n}
  {"mode": "query", "path": DIR, "q2": SQL, "q3": [SQL...], "q4group": SQL, "q4rows": SQL, "q5": SQL, "warm_runs": k,
   "group_runs": k, "warmup_rounds": k, "warmup_ms": ms}
      -> {"q2_cold_ms", "q2_warm_ms": [...], "q2": [..], "q3_ms": [...], "q3_rows", "q4group_ms": [...],
          "q4group": [[..]], "q4rows_ms": [...], "q4rows": n, "q5_ms": [...], "q5": "n"}
Results come back as CSV text (the client receiving rows); the first query of a "query" process,
which opens the session again, is the cold one.
"""
import json
import sys
import time

from chdb import session


def rows(res):
    text = res.bytes().decode() if hasattr(res, "bytes") else str(res)
    return [line.split(",") for line in text.splitlines() if line]


def timed(sess, sql):
    t = time.perf_counter()
    res = sess.query(sql, "CSV")
    out = rows(res)
    return (time.perf_counter() - t) * 1000, out


def main():
    req = json.load(sys.stdin)
    sess = session.Session(req["path"])
    try:
        if req["mode"] == "ingest":
            sess.query("CREATE DATABASE IF NOT EXISTS bench ENGINE = Atomic")
            sess.query("USE bench")
            sess.query(req["table"])
            t = time.perf_counter()
            sess.query(f"INSERT INTO flows SELECT * FROM file('{req['csv']}', 'CSV')")
            ms = (time.perf_counter() - t) * 1000
            n = int(rows(sess.query("SELECT count() FROM flows", "CSV"))[0][0])
            print(json.dumps({"ingest_ms": ms, "rows": n}))
            return
        sess.query("USE bench")
        out = {}
        out["q2_cold_ms"], q2 = timed(sess, req["q2"])
        out["q2"] = [v.strip('"') for v in q2[0]]
        # The same warm-up as workload.ts runQueries (WARMUP_ROUNDS rounds of Q2, Q4a, Q5, and
        # on until WARMUP_MS have gone by, then Q3 once).
        started, k = time.perf_counter(), 0
        while k < req["warmup_rounds"] or (time.perf_counter() - started) * 1000 < req["warmup_ms"]:
            for q in (req["q2"], req["q4group"], req["q5"]):
                timed(sess, q)
            k += 1
        for q in req["q3"]:
            timed(sess, q)
        out["q2_warm_ms"] = [timed(sess, req["q2"])[0] for _ in range(req["warm_runs"])]
        out["q3_ms"], out["q3_rows"] = [], 0
        for q in req["q3"]:
            ms, r = timed(sess, q)
            out["q3_ms"].append(ms)
            out["q3_rows"] += len(r)
        out["q4group_ms"] = []
        for _ in range(req["group_runs"]):
            ms, g = timed(sess, req["q4group"])
            out["q4group_ms"].append(ms)
        out["q4group"] = [[v.strip('"') for v in r] for r in g]
        out["q4rows_ms"] = []
        for _ in range(3):
            ms, r = timed(sess, req["q4rows"])
            out["q4rows_ms"].append(ms)
        out["q4rows"] = len(r)
        out["q5_ms"] = []
        for _ in range(req["warm_runs"]):
            ms, c = timed(sess, req["q5"])
            out["q5_ms"].append(ms)
        out["q5"] = c[0][0].strip('"')
        print(json.dumps(out))
    finally:
        sess.close()


if __name__ == "__main__":
    main()
