#!/usr/bin/env bash
# CPU-side check that the cuTENSOR shim can stand in for the real library under a
# given libcudecomp.so: every cuTENSOR symbol it imports (name@version) is exported
# by the shim, and the library loads with all symbols bound (LD_BIND_NOW) against it.
# Usage: tools/gpu_rig/check_shim_symbols.sh LIBCUDECOMP SHIM_DIR
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 path/to/libcudecomp.so dir/with/shim/libcutensor.so.2" >&2; exit 2; }
lib=$1; shim_dir=$2
[[ -f "$lib" ]] || { echo "error: no library at '$lib'" >&2; exit 2; }
[[ -f "$shim_dir/libcutensor.so.2" ]] || { echo "error: no libcutensor.so.2 in '$shim_dir'" >&2; exit 2; }
need=$(nm -D --undefined-only "$lib" | awk '{print $2}' | grep -i cutensor | sort)
have=$(nm -D --defined-only "$shim_dir/libcutensor.so.2" | awk '{print $3}' | sed 's/@@/@/' | grep -i cutensor | sort)
missing=$(comm -23 <(echo "$need") <(echo "$have"))
echo "imported by $(basename "$lib"): $(echo "$need" | wc -l) cuTENSOR symbols"
echo "$need" | sed 's/^/  /'
if [[ -n "$missing" ]]; then
  echo "MISSING from the shim:"; echo "$missing" | sed 's/^/  /'; exit 1
fi
echo "all present in $shim_dir/libcutensor.so.2"
out=$(LD_LIBRARY_PATH="$shim_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_BIND_NOW=1 ldd -r "$lib" 2>&1)
echo "$out" | grep -q "libcutensor.so.2 => $(cd "$shim_dir" && pwd)/libcutensor.so.2" ||
  { echo "FAIL: the loader did not pick the shim:"; echo "$out"; exit 1; }
if echo "$out" | grep -qi -e "undefined symbol" -e "not found" -e "version .* not found"; then
  echo "FAIL: unresolved at load time:"; echo "$out" | grep -i -e "undefined" -e "not found"; exit 1
fi
echo "ldd -r with LD_BIND_NOW: every symbol of $(basename "$lib") resolves, libcutensor.so.2 => shim"
