# A GPU build from pip alone (docs/user-guide.md): run by hand, as root, from the repository
# root on a machine with the NVIDIA driver, the MLIR pack unpacked by .gpu/setup.sh (the
# device tool's machine: an earlier call carried .gpu; this one carries .whl, which holds
# the nvidia-cuda-nvcc-cu12 wheel). Moves /usr/local/cuda* away and back.
set -u
REPO=$(pwd)
source .gpu/setup.sh
python3 -m venv /tmp/v || exit 1
# python3 there is itself a venv (/opt/torch/.venv) holding numba, numpy and pytest: seen
# from ours through a .pth, after our own site-packages
python3 -c "import site; print(site.getsitepackages()[0])" > /tmp/v/lib/python3.12/site-packages/base.pth
/tmp/v/bin/pip install -q --no-index --no-deps --no-build-isolation . 2>&1 | tail -3
/tmp/v/bin/pip install -q --no-index --no-deps .whl/nvidia_cuda_nvcc_cu12-*.whl 2>&1 | tail -3
/tmp/v/bin/pip list 2>/dev/null | grep -i -E "numba-mlir-gpu|nvidia-cuda-nvcc"
hidden=()
for d in /usr/local/cuda /usr/local/cuda-[0-9]*; do
  if [ -e "$d" ]; then mv "$d" "$d.hidden-by-test" && hidden+=("$d"); fi
done
trap 'for d in "${hidden[@]}"; do mv "$d.hidden-by-test" "$d"; done' EXIT
echo "hidden: ${hidden[*]}"
export PATH=$(echo "$PATH" | tr ':' '\n' | grep -v -i cuda | paste -sd:)
unset CUDA_HOME CUDA_PATH
export PYTHONPATH=/tmp/mlir-site
echo "PATH=$PATH"; which ptxas nvcc || echo "no ptxas or nvcc on PATH"
cd /tmp
/tmp/v/bin/python - <<'PY'
import numba_mlir_gpu, os
from numba_mlir_gpu.compiler.toolkit import find_toolkit
print("package:", numba_mlir_gpu.__file__)
print("toolkit:", find_toolkit().describe())
PY
/tmp/v/bin/python -m numba_mlir_gpu.example || echo "EXAMPLE FAILED"
cd "$REPO"
/tmp/v/bin/python -m pytest -q -p no:cacheprovider -n 8 -W error::numba_mlir_gpu.compiler.gpu_binaries.PtxasWarning \
  tests/test_aot.py tests/test_fp64.py tests/test_device_functions.py tests/test_ufunc_rules.py -k "not test_sweep" 2>&1 | tail -15
