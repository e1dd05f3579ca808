#!/bin/sh
# java with the broker's jars on the class path, as the release's script of the same name.
exec java ${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m} -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError \
  -Djava.awt.headless=true -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.yaml \
  ${KAFKA_OPTS:-} -cp '/opt/kafka/libs/*' "$@"
