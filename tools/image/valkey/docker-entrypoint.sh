#!/bin/sh
# As the official image's: a server started as root gets /data (and the ACL file written
# there) handed to the valkey user and runs as it; any other command runs as given. Like the
# official image's build, the server's protected mode is off (its network is the container's;
# access is the ACL file's, or the caller's to decide).
set -eu
if [ "${1:-}" = redis-server ] || [ "${1:-}" = valkey-server ]; then
  set -- "$@" --protected-mode no
  if [ "$(id -u)" = 0 ]; then
    find /data ! -user valkey -exec chown valkey:valkey '{}' +
    exec setpriv --reuid=valkey --regid=valkey --init-groups "$@"
  fi
fi
exec "$@"
