/*
 * pgjdbc against hd_sql's PostgreSQL wire door (test/sql/pgClients.test.ts runs it).
 *
 * Usage: java -cp postgresql.jar test/sql/clients/PgJdbcClient.java HOST PORT USER PASSWORD [metadata]
 * Connects with the password (SCRAM-SHA-256), runs the shared queries and prints one JSON object:
 * {"driver", "results": {name: {"columns", "rows"}}, "errors": {name: {"sqlstate", "message"}}}
 * with every value in the canonical form the test compares (integers and decimals as strings,
 * timestamps as ISO UTC). The prepared query runs 7 times: pgjdbc switches to a named server
 * statement and binary results after prepareThreshold (5) uses, and every run must agree.
 *
 * With `metadata` it instead makes the DatabaseMetaData calls a GUI tool (DBeaver, DataGrip,
 * Metabase) makes on connecting and on opening a table, and prints
 * {"driver", "metadata": {call: {"columns", "rows"}}, "errors": {call: {"sqlstate", "message"}}}
 * (test/sql/pgCatalogClients.test.ts).
 *
 * With `protocol` it checks protocol details (setFetchSize cursors with autocommit off,
 * ResultSetMetaData, result names, an error inside a transaction) and prints
 * {"driver", "results", "errors"} (test/sql/pgDrivers.test.ts).
 */
import java.math.BigDecimal;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

public class PgJdbcClient {
  static final long T0 = 1_700_000_000L;
  static final DateTimeFormatter ISO = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  static Object canon(Object v) throws SQLException {
    if (v == null || v instanceof Boolean) return v;
    if (v instanceof BigDecimal) return ((BigDecimal) v).toPlainString();
    if (v instanceof Number) return v.toString();
    if (v instanceof Timestamp) return ISO.format(((Timestamp) v).toInstant());
    if (v instanceof Array) {
      List<Object> out = new ArrayList<>();
      for (Object x : (Object[]) ((Array) v).getArray()) out.add(canon(x));
      return out;
    }
    return v.toString();
  }

  static Map<String, Object> table(ResultSet rs) throws SQLException {
    ResultSetMetaData md = rs.getMetaData();
    List<Object> columns = new ArrayList<>();
    for (int i = 1; i <= md.getColumnCount(); i++) columns.add(md.getColumnLabel(i));
    List<Object> rows = new ArrayList<>();
    while (rs.next()) {
      List<Object> row = new ArrayList<>();
      for (int i = 1; i <= md.getColumnCount(); i++) row.add(canon(rs.getObject(i)));
      rows.add(row);
    }
    rs.close();
    Map<String, Object> t = new LinkedHashMap<>();
    t.put("columns", columns);
    t.put("rows", rows);
    return t;
  }

  /** Runs `ps` 7 times (past prepareThreshold, so the later runs use binary results); all must agree. */
  static Object repeated(PreparedStatement ps) throws SQLException {
    Object first = null;
    for (int run = 0; run < 7; run++) {
      Object t = table(ps.executeQuery());
      if (first == null) first = t;
      else if (!first.equals(t)) throw new IllegalStateException("run " + (run + 1) + " of a prepared statement answered " + t + ", the first answered " + first);
    }
    return first;
  }

  interface Action {
    void run() throws Exception;
  }

  static Map<String, Object> failure(Action a) throws Exception {
    Map<String, Object> e = new LinkedHashMap<>();
    try {
      a.run();
      e.put("sqlstate", "none");
      e.put("message", "no error");
    } catch (SQLException ex) {
      e.put("sqlstate", ex.getSQLState());
      e.put("message", ex.getMessage());
    }
    return e;
  }

  static Connection connect(String url, String user, String password, boolean simple) throws SQLException {
    Properties p = new Properties();
    p.setProperty("user", user);
    p.setProperty("password", password);
    p.setProperty("connectTimeout", "10");
    p.setProperty("sslmode", "disable");
    if (simple) p.setProperty("preferQueryMode", "simple");
    return DriverManager.getConnection(url, p);
  }

  interface MetaCall {
    ResultSet run(java.sql.DatabaseMetaData md) throws SQLException;
  }

  /** The DatabaseMetaData calls a GUI tool makes, in the order DBeaver makes them; each one's rows or error. */
  static void metadata(String url, String user, String password) throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    Map<String, Object> results = new LinkedHashMap<>();
    Map<String, Object> errors = new LinkedHashMap<>();
    try (Connection c = connect(url, user, password, false)) {
      java.sql.DatabaseMetaData md = c.getMetaData();
      out.put("driver", "pgjdbc " + md.getDriverVersion() + " (server " + md.getDatabaseProductVersion() + ")");
      Map<String, MetaCall> calls = new LinkedHashMap<>();
      calls.put("getCatalogs", m -> m.getCatalogs());
      calls.put("getSchemas", m -> m.getSchemas());
      calls.put("getSchemasPublic", m -> m.getSchemas(null, "public"));
      calls.put("getTableTypes", m -> m.getTableTypes());
      calls.put("getTables", m -> m.getTables(null, "public", "%", new String[] {"TABLE", "VIEW"}));
      calls.put("getTablesAll", m -> m.getTables(null, null, "%", null));
      calls.put("getColumns", m -> m.getColumns(null, "public", "flows", "%"));
      calls.put("getPrimaryKeys", m -> m.getPrimaryKeys(null, "public", "flows"));
      calls.put("getIndexInfo", m -> m.getIndexInfo(null, "public", "flows", false, true));
      calls.put("getImportedKeys", m -> m.getImportedKeys(null, "public", "flows"));
      calls.put("getExportedKeys", m -> m.getExportedKeys(null, "public", "flows"));
      calls.put("getTypeInfo", m -> m.getTypeInfo());
      calls.put("getFunctions", m -> m.getFunctions(null, "public", "%"));
      calls.put("getProcedures", m -> m.getProcedures(null, "public", "%"));
      calls.put("getFunctionColumns", m -> m.getFunctionColumns(null, "public", "fen_piece", "%"));
      calls.put("getTablePrivileges", m -> m.getTablePrivileges(null, "public", "flows"));
      calls.put("getBestRowIdentifier", m -> m.getBestRowIdentifier(null, "public", "flows", java.sql.DatabaseMetaData.bestRowSession, true));
      for (Map.Entry<String, MetaCall> e : calls.entrySet()) {
        try {
          results.put(e.getKey(), table(e.getValue().run(md)));
        } catch (SQLException ex) {
          Map<String, Object> f = new LinkedHashMap<>();
          f.put("sqlstate", ex.getSQLState());
          f.put("message", ex.getMessage());
          errors.put(e.getKey(), f);
        }
      }
      // What a tool shows on opening a table: its rows, through the same connection.
      try (Statement st = c.createStatement()) {
        results.put("openTable", table(st.executeQuery("SELECT count(*) AS n FROM flows WHERE ts >= " + T0 + " AND ts < " + (T0 + 10))));
      }
    }
    out.put("metadata", results);
    out.put("errors", errors);
    System.out.println(json(out));
  }

  /** pgjdbc's rows held in memory for `rs` (PgResultSet's `rows`): at most the fetch size while it reads through a cursor. */
  static int heldRows(ResultSet rs) throws Exception {
    for (Class<?> k = rs.getClass(); k != null; k = k.getSuperclass()) {
      try {
        java.lang.reflect.Field f = k.getDeclaredField("rows");
        f.setAccessible(true);
        Object rows = f.get(rs);
        return rows == null ? -1 : ((List<?>) rows).size();
      } catch (NoSuchFieldException e) {
        // look in the superclass
      }
    }
    return -2;
  }

  /** The result metadata (ResultSetMetaData) of `rs`, one entry per column. */
  static List<Object> columnMetadata(ResultSet rs) throws SQLException {
    ResultSetMetaData md = rs.getMetaData();
    List<Object> cols = new ArrayList<>();
    for (int i = 1; i <= md.getColumnCount(); i++) {
      Map<String, Object> col = new LinkedHashMap<>();
      col.put("label", md.getColumnLabel(i));
      col.put("type", String.valueOf(md.getColumnType(i)));
      col.put("typeName", md.getColumnTypeName(i));
      col.put("precision", String.valueOf(md.getPrecision(i)));
      col.put("scale", String.valueOf(md.getScale(i)));
      col.put("className", md.getColumnClassName(i));
      cols.add(col);
    }
    return cols;
  }

  /**
   * Protocol details (test/sql/pgDrivers.test.ts): with autocommit off, two cursors read in
   * turn with setFetchSize (Execute row limits, PortalSuspended, portals kept across Sync inside
   * the transaction); ResultSetMetaData of the types drivers map; PostgreSQL's result names; an
   * error inside the transaction (25P02 until rollback); prepared statements with parameters.
   */
  static void protocol(String url, String user, String password) throws Exception {
    Map<String, Object> out = new LinkedHashMap<>();
    Map<String, Object> results = new LinkedHashMap<>();
    Map<String, Object> errors = new LinkedHashMap<>();
    try (Connection c = connect(url, user, password, false)) {
      out.put("driver", "pgjdbc " + c.getMetaData().getDriverVersion());
      c.setAutoCommit(false);
      try (PreparedStatement a = c.prepareStatement("SELECT ts FROM flows WHERE ts >= ? AND ts < ? ORDER BY ts");
          PreparedStatement b = c.prepareStatement("SELECT ts, proto FROM flows WHERE ts >= ? AND ts < ? ORDER BY ts DESC")) {
        for (PreparedStatement ps : new PreparedStatement[] {a, b}) {
          ps.setFetchSize(7);
          ps.setLong(1, T0);
          ps.setLong(2, T0 + 30);
        }
        ResultSet ra = a.executeQuery();
        ResultSet rb = b.executeQuery();
        List<Object> ta = new ArrayList<>();
        List<Object> tb = new ArrayList<>();
        int held = -1;
        for (boolean more = true; more; ) {
          more = false;
          if (ra.next()) {
            ta.add(ra.getString(1));
            if (held == -1) held = heldRows(ra);
            more = true;
          }
          if (rb.next()) {
            tb.add(rb.getString(1) + ":" + rb.getString(2));
            more = true;
          }
        }
        results.put("fetchA", ta);
        results.put("fetchB", tb);
        results.put("heldAfterFirstRow", String.valueOf(held));
      }
      c.commit();
      try (Statement st = c.createStatement()) {
        try (ResultSet rs = st.executeQuery("SELECT count(*) AS c, sum(bytes) AS s, 2.50::DECIMAL(5,2) AS d, [1, 2]::INTEGER[] AS ints, 7::SMALLINT AS small, 8 AS i4, "
            + "1.5::REAL AS r, 0.5::DOUBLE AS f8, true AS b, 'x' AS t, min(src_ip) AS ip, to_timestamp(0) AS at, TIMESTAMP '2024-01-02 03:04:05' AS ts, DATE '2024-01-02' AS day, "
            + "'\\x01'::BLOB AS bin, 12345678901234567890::HUGEINT AS h FROM flows WHERE ts >= " + T0 + " AND ts < " + (T0 + 3))) {
          results.put("metadata", columnMetadata(rs));
        }
        results.put("names", table(st.executeQuery("SELECT count(*), sum(bytes), 1 + 1, 2::int, count(*) AS n FROM flows WHERE ts >= " + T0 + " AND ts < " + (T0 + 30))));
        errors.put("inTransaction", failure(() -> st.executeQuery("SELECT * FROM nope")));
        errors.put("afterError", failure(() -> st.executeQuery("SELECT 1")));
        c.rollback();
        results.put("afterRollback", table(st.executeQuery("SELECT 1 AS one")));
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT proto, count(*) FROM flows WHERE ts >= ? AND ts < ? AND dst_port = ? GROUP BY proto ORDER BY proto")) {
        ps.setLong(1, T0);
        ps.setLong(2, T0 + 30);
        ps.setInt(3, 443);
        results.put("prepared", repeated(ps));
      }
      c.commit();
    }
    out.put("results", results);
    out.put("errors", errors);
    System.out.println(json(out));
  }

  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/hd";
    String user = args[2];
    String password = args[3];
    if (args.length > 4 && args[4].equals("protocol")) {
      protocol(url, user, password);
      return;
    }
    if (args.length > 4 && args[4].equals("metadata")) {
      metadata(url, user, password);
      return;
    }
    Map<String, Object> results = new LinkedHashMap<>();
    Map<String, Object> errors = new LinkedHashMap<>();
    Map<String, Object> out = new LinkedHashMap<>();
    // The simple query protocol: preferQueryMode=simple sends one Query message per statement.
    try (Connection c = connect(url, user, password, true); Statement st = c.createStatement()) {
      results.put("simple", table(st.executeQuery("SELECT proto, count(*) AS n, sum(bytes) AS total FROM flows WHERE ts >= " + T0 + " AND ts < " + (T0 + 30) + " GROUP BY proto ORDER BY proto")));
    }
    try (Connection c = connect(url, user, password, false)) {
      out.put("driver", "pgjdbc " + c.getMetaData().getDriverVersion() + " (server " + c.getMetaData().getDatabaseProductVersion() + ")");
      try (PreparedStatement ps = c.prepareStatement("SELECT ts, proto, src_ip, dst_port, to_timestamp(ts) AS at FROM flows WHERE ts >= ? AND proto = ? AND (dst_port = 53) = ? AND to_timestamp(ts) < ?::TIMESTAMPTZ ORDER BY ts")) {
        ps.setLong(1, T0);
        ps.setString(2, "icmp");
        ps.setBoolean(3, true);
        ps.setTimestamp(4, Timestamp.from(Instant.ofEpochSecond(T0 + 12)));
        results.put("prepared", repeated(ps));
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT CAST(NULL AS INTEGER) AS a, ?::VARCHAR AS b, ?::INTEGER AS c, 'x' AS d")) {
        ps.setNull(1, Types.VARCHAR);
        ps.setNull(2, Types.INTEGER);
        results.put("nulls", table(ps.executeQuery()));
      }
      try (PreparedStatement ps = c.prepareStatement("SELECT [1, 2]::INTEGER[] AS ints, ['x', 'y z', NULL]::VARCHAR[] AS texts, 2.50::DECIMAL(5,2) AS d, true AS b, 0.5::DOUBLE AS f, 12345678901::BIGINT AS big, 7::SMALLINT AS small, 'é ü' AS utf")) {
        results.put("types", repeated(ps));
      }
      try (Statement st = c.createStatement()) {
        // What older pgjdbc versions (and BI tools on top of it) send after connecting.
        st.execute("SET extra_float_digits = 3");
        st.execute("SET application_name = 'hd clients'");
        // Session questions drivers and BI tools ask (answered by the door, not DuckDB).
        results.put("version", table(st.executeQuery("SELECT version()")));
        results.put("show", table(st.executeQuery("SHOW application_name")));
        results.put("showIsolation", table(st.executeQuery("SHOW TRANSACTION ISOLATION LEVEL")));
        errors.put("unknownTable", failure(() -> st.executeQuery("SELECT * FROM nope")));
        // The connection stays usable after an error.
        results.put("afterError", table(st.executeQuery("SELECT 1 AS one")));
      }
    }
    errors.put("wrongPassword", failure(() -> connect(url, user, password + "-wrong", false).close()));
    out.put("results", results);
    out.put("errors", errors);
    System.out.println(json(out));
  }

  static String json(Object v) {
    if (v == null) return "null";
    if (v instanceof Boolean) return v.toString();
    if (v instanceof Map) {
      StringBuilder b = new StringBuilder("{");
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        if (b.length() > 1) b.append(',');
        b.append(json(e.getKey().toString())).append(':').append(json(e.getValue()));
      }
      return b.append('}').toString();
    }
    if (v instanceof List) {
      StringBuilder b = new StringBuilder("[");
      for (Object x : (List<?>) v) {
        if (b.length() > 1) b.append(',');
        b.append(json(x));
      }
      return b.append(']').toString();
    }
    StringBuilder b = new StringBuilder("\"");
    for (char ch : v.toString().toCharArray()) {
      if (ch == '"' || ch == '\\') b.append('\\').append(ch);
      // Everything outside printable ASCII escaped: the output does not depend on the JVM's stdout encoding.
      else if (ch < 0x20 || ch > 0x7e) b.append(String.format("\\u%04x", (int) ch));
      else b.append(ch);
    }
    return b.append('"').toString();
  }
}
