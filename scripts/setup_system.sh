#!/usr/bin/env bash
# System packages the tutorial needs (Debian/Ubuntu). Run as root, or with sudo available.
#   bubblewrap  - isolates untrusted model-written programs in the judge (codefu_helpers.sandbox)
#   g++         - compiles C++17 submissions
#   python3     - the system interpreter that runs Python submissions inside the sandbox
#   python3-seccomp - libseccomp's Python bindings for that interpreter: the judge's seccomp filter
set -euo pipefail
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v g++ >/dev/null || need+=(g++)
[ -x /usr/bin/python3 ] || need+=(python3)
{ [ -x /usr/bin/python3 ] && /usr/bin/python3 -I -c "import seccomp" 2>/dev/null; } || need+=(python3-seccomp)
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing system packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
