/*
 * pgjdbc against hd_sql's PostgreSQL wire door (test/sql/pgClients.test.ts runs it).
 *
 * Usage: java -cp postgresql.jar test/sql/clients/PgJdbcClient.java HOST PORT USER PASSWORD
 * Connects with the password (SCRAM-SHA-256), runs the shared queries and prints one JSON object:
 * {"driver", "results": {name: {"columns", "rows"}}, "errors": {name: {"sqlstate", "message"}}}
 * with every value in the canonical form the test compares (integers and decimals as strings,
 * timestamps as ISO UTC). The prepared query runs 7 times: pgjdbc switches to a named server
 * statement and binary results after prepareThreshold (5) uses, and every run must agree.
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

  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/hd";
    String user = args[2];
    String password = args[3];
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
