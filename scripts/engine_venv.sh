#!/usr/bin/env bash
# Build the virtualenv of a served engine under .engines/NAME (git-ignored).
# The engine's own dependencies never enter evalrun's venv: evalrun only talks
# to the server it launches over HTTP.
#
# llama.cpp: llama-cpp-python has no CPU wheel on PyPI, so pip builds it from
# the sdist with cmake (17-20 minutes cold on a loaded 2-core machine). pip keeps
# the built wheel in its cache (~/.cache/pip/wheels), so a second install is seconds.
set -euo pipefail
name="${1:?usage: engine_venv.sh llamacpp}"
python="${PYTHON:-python3}"
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.engines/$name"
case "$name" in
  llamacpp) spec="llama-cpp-python[server]==0.3.36 (portable AVX2)"; pip_spec="llama-cpp-python[server]==0.3.36"
            probe="import llama_cpp.server";;
  *) echo "unknown engine: $name (known: llamacpp)" >&2; exit 2;;
esac
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$probe" 2>/dev/null \
   && [ -f "$venv/.installed" ] && [ "$(cat "$venv/.installed")" = "$spec" ]; then
  touch "$venv/.installed"; echo "$venv: $spec already installed"; exit 0
fi
start=$(date +%s)
rm -rf "$venv"  # built another way, or half built: from scratch (a cached wheel makes it seconds)
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# A portable AVX2 build, not -march=native: a virtual machine can advertise Intel AMX
# that its hypervisor does not enable, and ggml's native build then dies on its first
# matrix multiply (SIGSEGV in ldtilecfg). pip keys its wheel cache by the sdist, not by
# these flags: the same flags every time keep the cached wheel the one they describe.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON}"
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
  "$venv/bin/python" -m pip install "$pip_spec"
"$venv/bin/python" -c "import ctypes, llama_cpp as l; print('llama.cpp:', l.llama_print_system_info().decode().strip())"
"$venv/bin/python" -c "$probe"
echo "$spec" > "$venv/.installed"
echo "$venv: $spec installed in $(( $(date +%s) - start )) s"
