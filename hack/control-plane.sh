#!/usr/bin/env bash
# A real, local Kubernetes control plane (etcd + kube-apiserver) for berth's tests.
#
#   hack/control-plane.sh build   build etcd, kube-apiserver, kube-scheduler, kube-controller-manager and
#                                 kubectl from the Go module proxy into
#                                 ${BERTH_CACHE:-$HOME/.cache/berth}/k8s-<version>/bin (no-op when they are
#                                 already there)
#   hack/control-plane.sh up [--nodes N]
#                                 start etcd + kube-apiserver on free loopback ports with N Ready Nodes
#                                 that have no kubelet (node-1..node-N in zones a/b/c), print the lines
#                                 to paste into another shell (KUBECONFIG, PATH with the built kubectl,
#                                 a client certificate for berth's endpoints), run until Ctrl-C, then
#                                 tear down and delete the data (--keep keeps it; --help for the rest)
#   hack/control-plane.sh bin-dir print the binaries directory
#   hack/control-plane.sh clean   delete the binaries and the generated wrapper modules
#
# Version pins live only in hack/versions.env. Wrapper modules are generated under the cache directory,
# never in the repository. The control plane itself (certificates, flags, why no controller-manager or
# kubelet runs) is described in tests/kube/controlplane.py.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/versions.env
. "${ROOT}/hack/versions.env"
# shellcheck source=hack/k8s-wrapper.sh
. "${ROOT}/hack/k8s-wrapper.sh"

CACHE=${BERTH_CACHE:-${HOME}/.cache/berth}
OUT=${CACHE}/k8s-${K8S_VERSION}
BIN=${OUT}/bin
STAMP=${BIN}/.versions
K8S_BINARIES=(kube-apiserver kube-scheduler kube-controller-manager kubectl)
ALL_BINARIES=(etcd "${K8S_BINARIES[@]}")
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
BUILD_JOBS=${BUILD_JOBS:-2}

log() { printf '[control-plane] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

python_bin() {
  if [[ -x "${ROOT}/.venv/bin/python" ]]; then
    echo "${ROOT}/.venv/bin/python"
  else
    command -v python3 || die "python3 not found"
  fi
}

# Print "<name> <size> <version line>" for every binary; return 1 if one is missing.
report_binaries() {
  local b ok=0 size
  for b in "${ALL_BINARIES[@]}"; do
    if [[ -x "${BIN}/${b}" ]]; then
      size=$(du -hL "${BIN}/${b}" | cut -f1)
      log "  found ${BIN}/${b} (${size})"
    else
      log "  missing ${BIN}/${b}"
      ok=1
    fi
  done
  return "${ok}"
}

all_present() {
  local b
  for b in "${ALL_BINARIES[@]}"; do
    [[ -x "${BIN}/${b}" ]] || return 1
  done
  [[ -f "${STAMP}" ]] && grep -qx "k8s=${K8S_VERSION}" "${STAMP}" && grep -q '^etcd=v' "${STAMP}"
}

check_go() {
  [[ -x "${GO}" ]] || die "go not found (set GO=/path/to/go); Go >= ${GO_MIN_VERSION} is needed"
  local v
  v=$("${GO}" env GOVERSION)
  log "using ${GO} (${v})"
  # Never let the go command download a toolchain: the machine only reaches module proxies.
  export GOTOOLCHAIN=local CGO_ENABLED=0
  export GOFLAGS="-mod=mod -buildvcs=false -p=${BUILD_JOBS}"
}

# build_k8s: kube-apiserver, kube-scheduler, kubectl from k8s.io/kubernetes@K8S_VERSION.
build_k8s() {
  local kv=${K8S_VERSION} sv w gomod info build_date major minor ld key val kv_pair
  sv="v0.${kv#v1.}" # v1.36.3 -> v0.36.3: staging modules are tagged v0.<minor>.<patch>
  major=${kv#v}; major=${major%%.*}
  minor=${kv#v*.}; minor=${minor%%.*}
  w=${OUT}/wrapper/k8s
  rm -rf "${w}"
  mkdir -p "${w}"
  printf 'module local/k8sbin\n\ngo 1.26.0\n' >"${w}/go.mod"

  log "fetching k8s.io/kubernetes@${kv} metadata"
  local dl
  if ! dl=$(cd "${w}" && "${GO}" mod download -json "k8s.io/kubernetes@${kv}" 2>&1); then
    printf '%s\n' "${dl}" >&2
    die "the Go module proxy refused k8s.io/kubernetes@${kv}; set K8S_VERSION in hack/versions.env to another 1.36 patch (then 1.35.x)"
  fi
  gomod=$(printf '%s\n' "${dl}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  info=$(printf '%s\n' "${dl}" | sed -n 's/.*"Info": "\(.*\)".*/\1/p')
  [[ -f "${gomod}" ]] || die "no go.mod for k8s.io/kubernetes@${kv} in: ${dl}"
  # Deterministic build date (keeps the Go build cache warm): the release time recorded by the proxy.
  build_date=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "${info}")
  build_date=${build_date:-1970-01-01T00:00:00Z}

  local tools=()
  for key in "${K8S_BINARIES[@]}"; do tools+=("k8s.io/kubernetes/cmd/${key}"); done
  k8s_wrapper_gomod "${gomod}" local/k8sbin hack/control-plane.sh "${tools[@]}" >"${w}/go.mod"
  log "wrapper module ${w}/go.mod: $(grep -c ' => ' "${w}/go.mod") staging replaces (${sv})"

  ld="-s -w"
  for kv_pair in "gitVersion=${kv}" "gitMajor=${major}" "gitMinor=${minor}" "gitTreeState=clean" \
    "gitCommit=unknown" "buildDate=${build_date}"; do
    key=${kv_pair%%=*}; val=${kv_pair#*=}
    ld+=" -X 'k8s.io/component-base/version.${key}=${val}' -X 'k8s.io/client-go/pkg/version.${key}=${val}'"
  done

  local tmp=${OUT}/bin.tmp pkgs=() b start=${SECONDS}
  rm -rf "${tmp}"
  mkdir -p "${tmp}" "${BIN}"
  for b in "${K8S_BINARIES[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/${b}"); done
  log "building ${K8S_BINARIES[*]} ${kv} (GOFLAGS=${GOFLAGS}); a cold build takes a long while"
  if ! (cd "${w}" && "${GO}" build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "${ld}" \
    -o "${tmp}/" "${pkgs[@]}"); then
    die "building Kubernetes ${kv} failed (if the proxy refused a module, see the message above and set K8S_VERSION in hack/versions.env to another 1.36 patch, then 1.35.x)"
  fi
  for b in "${K8S_BINARIES[@]}"; do mv -f "${tmp}/${b}" "${BIN}/${b}"; done
  rm -rf "${tmp}"
  log "built ${K8S_BINARIES[*]} in $((SECONDS - start)) s"
  "${BIN}/kube-apiserver" --version >&2
}

# build_etcd_version VERSION: the etcd server binary from go.etcd.io/etcd/server/v3@VERSION.
build_etcd_version() {
  local ev=$1 w=${OUT}/wrapper/etcd tmp=${OUT}/etcd.tmp start=${SECONDS}
  rm -rf "${w}" "${tmp}"
  mkdir -p "${w}" "${tmp}" "${BIN}"
  # etcd's own go.mod has replace directives, so `go install …@version` refuses it: use a wrapper.
  cat >"${w}/go.mod" <<EOF
// Generated by hack/control-plane.sh -- build-only module, safe to delete.
module local/etcdbin

go 1.26.0

tool go.etcd.io/etcd/server/v3

require go.etcd.io/etcd/server/v3 ${ev}
EOF
  log "building etcd ${ev}"
  if ! (cd "${w}" && "${GO}" build -trimpath \
    -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=${ev}-modproxy" \
    -o "${tmp}/etcd" go.etcd.io/etcd/server/v3); then
    log "building etcd ${ev} failed (see above)"
    return 1
  fi
  mv -f "${tmp}/etcd" "${BIN}/etcd"
  rm -rf "${tmp}"
  log "built etcd ${ev} in $((SECONDS - start)) s"
  "${BIN}/etcd" --version >&2
  ETCD_BUILT=${ev}
}

build_etcd() {
  build_etcd_version "${ETCD_VERSION}" && return 0
  log "falling back to etcd ${ETCD_FALLBACK_VERSION}"
  build_etcd_version "${ETCD_FALLBACK_VERSION}" || die "could not build etcd ${ETCD_VERSION} nor ${ETCD_FALLBACK_VERSION}"
}

# stamp_set KEY VALUE: record what was built in ${STAMP} (one KEY=VALUE line per component).
stamp_set() {
  local rest=""
  [[ -f "${STAMP}" ]] && rest=$(grep -v "^$1=" "${STAMP}" || true)
  printf '%s\n%s=%s\n' "${rest}" "$1" "$2" | sed '/^$/d' >"${STAMP}.tmp"
  mv -f "${STAMP}.tmp" "${STAMP}"
}

cmd_build() {
  local start=${SECONDS} b need_k8s=0 need_etcd=0
  if all_present; then
    log "all binaries for Kubernetes ${K8S_VERSION} present ($(tr '\n' ' ' <"${STAMP}")):"
    report_binaries
    return 0
  fi
  check_go
  for b in "${K8S_BINARIES[@]}"; do [[ -x "${BIN}/${b}" ]] || need_k8s=1; done
  grep -qx "k8s=${K8S_VERSION}" "${STAMP}" 2>/dev/null || need_k8s=1
  [[ -x "${BIN}/etcd" ]] && grep -q '^etcd=v' "${STAMP}" 2>/dev/null || need_etcd=1
  if [[ ${need_k8s} -eq 1 ]]; then
    build_k8s
    stamp_set k8s "${K8S_VERSION}"
  fi
  if [[ ${need_etcd} -eq 1 ]]; then
    build_etcd
    stamp_set etcd "${ETCD_BUILT}"
  fi
  stamp_set go "$("${GO}" env GOVERSION)"
  log "done in $((SECONDS - start)) s:"
  report_binaries
}

cmd_up() {
  local py
  py=$(python_bin)
  exec "${py}" "${ROOT}/tests/kube/controlplane.py" up --bin-dir "${BIN}" "$@"
}

cmd_clean() {
  log "removing ${OUT}"
  rm -rf "${OUT}"
}

main() {
  local cmd=${1:-help}
  [[ $# -gt 0 ]] && shift
  case "${cmd}" in
    build) cmd_build "$@" ;;
    up) cmd_up "$@" ;;
    bin-dir) echo "${BIN}" ;;
    clean) cmd_clean ;;
    -h | --help | help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}" ;;
    *) die "unknown command '${cmd}' (try: build, up, bin-dir, clean)" ;;
  esac
}

main "$@"
