#!/bin/sh
KAFKA_HEAP_OPTS="-Xmx64m" exec /opt/kafka/bin/kafka-run-class.sh org.apache.kafka.tools.BrokerApiVersionsCommand "$@"
