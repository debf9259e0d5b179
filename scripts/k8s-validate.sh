#!/usr/bin/env bash
# Validates Kubernetes manifests offline against the Kubernetes API's JSON schemas (strict: unknown
# fields refused), for test/deploy/manifests.test.ts. The schemas come with PyPI's
# `kubernetes-validate` (it ships them for every Kubernetes minor version it supports), installed in a
# virtual environment cached under .hd/test-deps/, so nothing is fetched at validation time.
#
#   scripts/k8s-validate.sh install        create the virtual environment, pip-install the validator
#   scripts/k8s-validate.sh FILE...        install if needed, then validate every resource in FILEs
#                                          (multi-document YAML); exit 0 when all pass, 1 when one
#                                          does not (each failure printed), 3 when the validator
#                                          cannot be installed here (no python3 with venv, no PyPI)
#
# K8S_VERSION: the Kubernetes version validated against (default below, the oldest the manifests
# must run on). KUBERNETES_VALIDATE_VERSION pins the package.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="${KUBERNETES_VALIDATE_VERSION:-1.37.0}"
k8s="${K8S_VERSION:-1.31.0}"
venv="${HD_TEST_DEPS:-$root/.hd/test-deps}/kubernetes-validate"
# shellcheck source=lib/pyvenv.sh
. "$root/scripts/lib/pyvenv.sh"

install() {
  pyvenv_install k8s-validate.sh "$venv" bin/kubernetes-validate "kubernetes-validate $version (Kubernetes JSON schemas)" 'import kubernetes_validate' "kubernetes-validate==$version"
}

case "${1:-}" in
  install) install ;;
  "" | -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  *)
    # A process of its own: inside an `if`, errexit would not stop a failed pip (pyvenv.sh relies on it).
    if ! bash "$0" install; then
      echo "k8s-validate.sh: the validator could not be installed here (python3 with venv and PyPI are needed)" >&2
      exit 3
    fi
    "$venv/bin/kubernetes-validate" --strict --quiet --kubernetes-version "$k8s" "$@"
    ;;
esac
