# Sourced by the GPU-machine scripts (sessions/tests/gpu/run.sh, ffi-python/benches/run_ccl_gpu.sh):
# points rffi at a build made elsewhere (BUILD, from sessions/tests/gpu/stage.sh) and makes NCCL
# findable. Expects ROOT (the checkout) and BUILD (the folder with librffi.so and rffi-worker).
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
export RFFI_LIBRARY_PATH="$BUILD/librffi.so" RFFI_WORKER="$BUILD/rffi-worker"
export PYTHONPATH="$ROOT/ffi-python:$ROOT/sessions/tests/gpu${PYTHONPATH:+:$PYTHONPATH}"
# cudarc opens NCCL by the names libnccl.so, libnccl.so.13 ... libnccl.so.1, not libnccl.so.2
# (the name NCCL's packages install): give it the first where only the versioned one exists.
if ! ldconfig -p | grep -q 'libnccl\.so '; then
  lib=$(ldconfig -p | grep -o '/[^ ]*libnccl\.so\.2$' | head -1)
  [ -z "$lib" ] && lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  mkdir -p /tmp/rffi-nccl && ln -sf "$lib" /tmp/rffi-nccl/libnccl.so
  export LD_LIBRARY_PATH="/tmp/rffi-nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "libnccl.so -> $lib"
fi
