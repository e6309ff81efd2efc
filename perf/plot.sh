#!/usr/bin/env bash
# Draws perf/plots/*.svg from the recorded tables perf/results/*.csv (perf/plot.py); prints one
# line per plot written. Needs Debian's python3-matplotlib, installed here if missing (as root).
#   perf/plot.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Debian's interpreter: the one python3-matplotlib is installed for (another python3 may come
# first on PATH).
py=/usr/bin/python3
if ! "$py" -c 'import matplotlib' 2>/dev/null; then
  echo "== installing python3-matplotlib" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y python3-matplotlib >/dev/null
fi
exec "$py" "$here/plot.py"
