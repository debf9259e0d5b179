# Sourced by the test scripts that need a Python package from PyPI (s3.sh, flightsql-client.sh,
# pg-clients.sh): one idempotent way to make a virtual environment under .hd/test-deps/.
#
#   pyvenv_install TAG VENV READY "DESCRIPTION" "CHECK" PIP_ARG...
#
# Does nothing when VENV/READY (a file the install makes, e.g. bin/python) is there and VENV/.complete
# marks a finished install. Otherwise makes VENV afresh, pip-installs PIP_ARG..., runs the Python
# statement CHECK in it (empty: none) and marks it complete, so an interrupted install is redone.
# TAG prefixes the messages (the calling script's name). Needs python3 with the venv module.
pyvenv_install() {
  local tag="$1" venv="$2" ready="$3" what="$4" check="$5"
  shift 5
  if [ -x "$venv/$ready" ] && [ -f "$venv/.complete" ]; then return 0; fi
  command -v python3 >/dev/null || { echo "$tag: python3 is not on PATH" >&2; return 1; }
  rm -rf "$venv"
  echo "$tag: installing $what from PyPI into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check "$@" >&2
  if [ -n "$check" ]; then "$venv/bin/python" -c "$check" >&2; fi
  touch "$venv/.complete"
}
