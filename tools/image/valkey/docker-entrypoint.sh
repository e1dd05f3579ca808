#!/bin/sh
# As the official image's: a server started as root gets /data (and the ACL file written
# there) handed to the valkey user and runs as it; any other command runs as given.
set -eu
if [ "$(id -u)" = 0 ] && { [ "${1:-}" = redis-server ] || [ "${1:-}" = valkey-server ]; }; then
  find /data ! -user valkey -exec chown valkey:valkey '{}' +
  exec setpriv --reuid=valkey --regid=valkey --init-groups "$@"
fi
exec "$@"
