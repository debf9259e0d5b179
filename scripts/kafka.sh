#!/usr/bin/env bash
# A real Apache Kafka broker (KRaft mode, no ZooKeeper) for the ingester's tests, on loopback.
#
#   scripts/kafka.sh install            fetch org.apache.kafka:kafka_2.13 and its runtime jars from
#                                       Maven Central (mvn dependency:copy-dependencies on a generated
#                                       pom), cached under .hd/test-deps/kafka-<version>/
#   scripts/kafka.sh start DIR PORT     format DIR as a one-node KRaft cluster, start the broker on
#                                       127.0.0.1:PORT (controller on PORT+1), wait until it answers;
#                                       prints the broker's pid
#   scripts/kafka.sh stop DIR           stop the broker started in DIR (its pid file), wait for it
#
# Needs Java 17+ and mvn (or curl) on PATH. KAFKA_VERSION overrides the version (default below).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="${KAFKA_VERSION:-3.9.1}"
cache="${HD_TEST_DEPS:-$root/.hd/test-deps}/kafka-$version"

install() {
  if [ -f "$cache/.complete" ]; then return 0; fi
  command -v java >/dev/null || { echo "kafka.sh: java is not on PATH (Kafka needs Java 17+)" >&2; return 1; }
  command -v mvn >/dev/null || { echo "kafka.sh: mvn is not on PATH (apt-get install maven)" >&2; return 1; }
  rm -rf "$cache" && mkdir -p "$cache/libs"
  cat >"$cache/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>hd.test</groupId><artifactId>kafka-broker</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
POM
  echo "kafka.sh: fetching kafka_2.13 $version and its runtime dependencies from Maven Central" >&2
  (cd "$cache" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=libs) >&2
  touch "$cache/.complete"
}

start() {
  local dir="$1" port="$2" ctl=$(( $2 + 1 ))
  install
  mkdir -p "$dir"
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$ctl
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$ctl
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
log.retention.check.interval.ms=300000
PROPS
  cat >"$dir/log4j.properties" <<LOG
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$dir/broker.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
LOG
  local java_opts=(-Xms256m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true "-Dlog4j.configuration=file:$dir/log4j.properties" -cp "$cache/libs/*")
  if [ ! -f "$dir/data/meta.properties" ]; then
    java "${java_opts[@]}" kafka.tools.StorageTool format -t "$(java "${java_opts[@]}" kafka.tools.StorageTool random-uuid)" -c "$dir/server.properties" >"$dir/format.log" 2>&1 \
      || { cat "$dir/format.log" >&2; return 1; }
  fi
  nohup java "${java_opts[@]}" kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$dir/pid"
  for _ in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then cat "$dir/stdout.log" "$dir/broker.log" >&2 2>/dev/null; echo "kafka.sh: broker exited during start-up" >&2; return 1; fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$pid"; return 0; fi
    sleep 0.1
  done
  echo "kafka.sh: broker did not open 127.0.0.1:$port within 60 s" >&2
  kill "$pid" 2>/dev/null || true
  return 1
}

stop() {
  local dir="$1"
  [ -f "$dir/pid" ] || return 0
  local pid; pid="$(cat "$dir/pid")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || { rm -f "$dir/pid"; return 0; }; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

case "${1:-}" in
  install) install ;;
  start) [ $# -eq 3 ] || { echo "usage: $0 start DIR PORT" >&2; exit 2; }; start "$2" "$3" ;;
  stop) [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
  *) echo "usage: $0 install | start DIR PORT | stop DIR" >&2; exit 2 ;;
esac
