#!/usr/bin/env bash
# Builds the API reference from the headers with Doxygen (docs/Doxyfile) into build/doxygen/html,
# and fails if Doxygen warns (an unknown command, a malformed comment), printing the warnings.
# tools/test.sh runs it; needs Debian's doxygen (tools/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/doxygen
rm -f build/doxygen/warnings.log
doxygen docs/Doxyfile
if [ -s build/doxygen/warnings.log ]; then
  echo "doxygen: $(wc -l < build/doxygen/warnings.log) warning lines" \
    "(build/doxygen/warnings.log):" >&2
  head -50 build/doxygen/warnings.log >&2
  exit 1
fi
echo "doxygen: build/doxygen/html/index.html, no warnings"
