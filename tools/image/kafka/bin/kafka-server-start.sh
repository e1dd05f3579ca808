#!/bin/sh
exec /opt/kafka/bin/kafka-run-class.sh kafka.Kafka "$@"
