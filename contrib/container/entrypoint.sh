#!/bin/sh
# berth's container entrypoint, a drop-in for Distribution's (distribution-library-image's
# entrypoint.sh, registry:2 and registry:3):
# - a configuration path as the command (`docker run berth /etc/distribution/config.yml`) means serve;
# - `serve`, `garbage-collect`, `help`, berth's other commands and flags run berth with them;
# - anything else (`sh`, ...) runs as it is;
# - `healthcheck` is the image's HEALTHCHECK (healthcheck.mjs).
# Without REGISTRY_CONFIGURATION_PATH, the configuration is the first of
# /etc/distribution/config.yml (registry:3's place) and /etc/docker/registry/config.yml
# (registry:2's, where the image's own is) that exists. Tested by test/app/container-entrypoint.test.ts.
set -e

if [ -z "$REGISTRY_CONFIGURATION_PATH" ]; then
  for candidate in ${BERTH_CONFIG_CANDIDATES:-/etc/distribution/config.yml /etc/docker/registry/config.yml}; do
    if [ -f "$candidate" ]; then
      export REGISTRY_CONFIGURATION_PATH="$candidate"
      break
    fi
  done
fi

case "$1" in
  '') set -- berth serve ;;
  *.yaml|*.yml) set -- berth serve "$@" ;;
  serve|garbage-collect|help|config|verify|uploads|version|-*) set -- berth "$@" ;;
  healthcheck) shift; set -- node "$(dirname "$0")/healthcheck.mjs" "$@" ;;
esac

exec "$@"
