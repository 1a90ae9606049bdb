"""python -m numba_mlir_gpu.aot module:function [SIGNATURE ...] --arch sm_80,sm_90 -o DIR"""
from __future__ import annotations

import argparse
import os
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m numba_mlir_gpu.aot",
        description="Build a function's GPU code ahead of time, with no GPU needed.")
    parser.add_argument("function", help="module:function (a dispatcher or a plain function)")
    parser.add_argument("signatures", nargs="*",
                        help='Numba signatures, e.g. "void(f4[:], f4[:])"; none: the declared ones')
    parser.add_argument("--arch", default=None, help="GPU architectures, e.g. sm_80,sm_90,sm_100")
    parser.add_argument("-o", "--out", required=True, help="the build folder")
    parser.add_argument("--link", action="append", default=[],
                        help="an LLVM bitcode device library to link (repeatable)")
    parser.add_argument("--device-arrays", action="store_true",
                        help="the signatures' arrays are GPU arrays (CuPy, PyTorch, numba.cuda)")
    args = parser.parse_args(argv)
    from numba.core import config
    if str(config.CPU_NAME).lower() != "generic":
        # Numba read its CPU at import: start again with the generic one
        env = dict(os.environ, NUMBA_CPU_NAME="generic", NUMBA_CPU_FEATURES="")
        os.execve(sys.executable, [sys.executable, "-m", "numba_mlir_gpu.aot",
                                   *(sys.argv[1:] if argv is None else argv)], env)
    from .builder import DEFAULT_ARCHS, build_here, resolve
    from .inspect import contents
    sys.path.insert(0, os.getcwd())
    built = build_here(resolve(args.function), args.signatures,
                       args.arch or DEFAULT_ARCHS, args.out, args.link,
                       args.device_arrays)
    for b in built:
        print(f"built {b.function}{b.signature} into {b.folder}")
    for entry in contents(args.out):
        for i, module in enumerate(entry.objects):
            kinds = ", ".join(f"{arch} {kind} ({len(blob)} bytes)" for arch, kind, blob in module)
            print(f"  {entry.index_file} {entry.signature} GPU module {i}: {kinds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
