#!/usr/bin/env bash
# The parity oracle: kube-scheduler v1.36.3's framework run in process over a `berth simulate` state file
# (source: hack/parity-oracle/main.go; see docs/parity.md).
#
#   hack/parity-oracle.sh build   build the oracle from the pinned k8s.io/kubernetes module into
#                                 ${BERTH_CACHE:-$HOME/.cache/berth}/k8s-<version>/parity-oracle/ (a no-op
#                                 when a binary built from the same source hash is there); prints its path
#   hack/parity-oracle.sh path    print the binary's path (exit 1 if it has not been built)
#   hack/parity-oracle.sh clean   delete the oracle binaries and its wrapper module
#
# Built like hack/control-plane.sh builds kube-scheduler: a generated wrapper module in the cache directory
# requires k8s.io/kubernetes@K8S_VERSION and replaces every staging module by k8s.io/<name> v0.<minor>.<patch>.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/versions.env
. "${ROOT}/hack/versions.env"
# shellcheck source=hack/k8s-wrapper.sh
. "${ROOT}/hack/k8s-wrapper.sh"

CACHE=${BERTH_CACHE:-${HOME}/.cache/berth}
OUT=${CACHE}/k8s-${K8S_VERSION}/parity-oracle
SRC=${ROOT}/hack/parity-oracle/main.go
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
BUILD_JOBS=${BUILD_JOBS:-2}

log() { printf '[parity-oracle] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# The binary is named after a hash of everything that decides its content.
source_hash() {
  cat "${SRC}" "${ROOT}/hack/versions.env" "${ROOT}/hack/k8s-wrapper.sh" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16
}

binary() { echo "${OUT}/parity-oracle-$(source_hash)"; }

cmd_build() {
  local bin w kv gomod dl start=${SECONDS}
  bin=$(binary)
  if [[ -x "${bin}" ]]; then
    echo "${bin}"
    return 0
  fi
  [[ -x "${GO}" ]] || die "go not found (set GO=/path/to/go); Go >= ${GO_MIN_VERSION} is needed"
  export GOTOOLCHAIN=local CGO_ENABLED=0
  export GOFLAGS="-mod=mod -buildvcs=false -p=${BUILD_JOBS}"
  kv=${K8S_VERSION}
  w=${OUT}/wrapper
  rm -rf "${w}"
  mkdir -p "${w}"
  printf 'module local/parityoracle\n\ngo 1.26.0\n' >"${w}/go.mod"
  dl=$(cd "${w}" && "${GO}" mod download -json "k8s.io/kubernetes@${kv}") ||
    die "the Go module proxy refused k8s.io/kubernetes@${kv}"
  gomod=$(printf '%s\n' "${dl}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [[ -f "${gomod}" ]] || die "no go.mod for k8s.io/kubernetes@${kv}"
  k8s_wrapper_gomod "${gomod}" local/parityoracle hack/parity-oracle.sh >"${w}/go.mod"
  cp "${SRC}" "${w}/main.go"
  log "building the oracle against k8s.io/kubernetes ${kv} (GOFLAGS=${GOFLAGS})"
  (cd "${w}" && "${GO}" build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "-s -w" -o "${bin}.tmp" .) ||
    die "building the oracle failed"
  # Binaries of older sources are dead weight.
  find "${OUT}" -maxdepth 1 -name 'parity-oracle-*' ! -name "$(basename "${bin}")*" -delete
  mv -f "${bin}.tmp" "${bin}"
  log "built ${bin} in $((SECONDS - start)) s"
  echo "${bin}"
}

cmd_path() {
  local bin
  bin=$(binary)
  [[ -x "${bin}" ]] || die "not built: run hack/parity-oracle.sh build"
  echo "${bin}"
}

main() {
  local cmd=${1:-help}
  case "${cmd}" in
    build) cmd_build ;;
    path) cmd_path ;;
    clean) rm -rf "${OUT}" ;;
    -h | --help | help) sed -n '2,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" ;;
    *) die "unknown command '${cmd}' (try: build, path, clean)" ;;
  esac
}

main "$@"
