"""The numerical kernels a benchmark run uses, pinned so that its records are the same on every x86-64 CPU.

numpy, OpenBLAS (numpy's BLAS), torch's ATen, MKL (torch's BLAS) and oneDNN each choose their kernels by the
CPU's vector width at load time: AVX-512 on one machine, AVX2 on another. The float32 sums of the networks then
round otherwise, a co-trained user's behaviour clone ends a few ulps apart, and a seed's record moves in its last
digits. Each library reads an environment variable that caps its choice, and reads it once, when it loads; so
``scope-envs bench`` sets them and, where this process already loaded the libraries without them, starts itself
again with them (``pin_or_restart``) before any run. Its worker processes inherit both.

What a pin cannot cap is the C library: numpy's baseline ``tanh`` is glibc's ``tanhf``, whose results changed in
glibc 2.41. The networks' tanh is therefore the package's own (``scope_envs.train.activation``: IEEE operations
only, the same bits everywhere); ``exp`` and ``log`` (the softmax) stay the libraries' (glibc's ``expf`` and
``logf`` have been the same code since 2.28).

Levels (``SCOPE_ENVS_KERNELS``):

* ``portable`` (default): the x86-64-v2 baseline every CPU that runs numpy 2 has (SSE4.2): numpy's dispatch
  above its baseline off, OpenBLAS's Nehalem kernels, ATen's ``default``, MKL's ``COMPATIBLE`` path, oneDNN's
  SSE4.1. The same records on any such CPU.
* ``avx2``: the x86-64-v3 level (AVX2 and FMA: Intel since 2013, AMD since 2015): the same records on any such
  CPU (not the same as ``portable``'s); an error on a CPU without AVX2 (what each level costs:
  ``benchmarks/kernel_speed.py``).
* ``native``: nothing pinned (each library at the CPU's width): faster where the kernels matter, and the records
  then belong to the machine (the report's ``machine`` line names the widths).

    >>> sorted(settings("portable"))[:2]
    ['ATEN_CPU_CAPABILITY', 'MKL_CBWR']
    >>> settings("native")
    {}
"""

from __future__ import annotations

import os
import sys

LEVEL_VARIABLE = "SCOPE_ENVS_KERNELS"
LEVELS = ("portable", "avx2", "native")
DEFAULT_LEVEL = "portable"
PINNED = LEVELS[:2]  # the levels that pin, in the order of PINS' values
# each variable that caps a library's kernels: (the library that reads it when it loads, its value at each of PINNED)
PINS = {
    # numpy's dispatch targets above X86_V2 / above X86_V3
    "NPY_DISABLE_CPU_FEATURES": ("numpy", ("X86_V3 X86_V4 AVX512_ICL AVX512_SPR", "X86_V4 AVX512_ICL AVX512_SPR")),
    "OPENBLAS_CORETYPE": ("numpy", ("Nehalem", "Haswell")),
    "ATEN_CPU_CAPABILITY": ("torch", ("default", "avx2")),
    "MKL_CBWR": ("torch", ("COMPATIBLE", "AVX2")),
    "ONEDNN_MAX_CPU_ISA": ("torch", ("SSE41", "AVX2")),
}


class KernelLevelError(ValueError):
    """``SCOPE_ENVS_KERNELS`` names no level."""


def level(environ=None) -> str:
    """The level asked for: ``SCOPE_ENVS_KERNELS``, else ``DEFAULT_LEVEL``."""
    value = (os.environ if environ is None else environ).get(LEVEL_VARIABLE, DEFAULT_LEVEL).strip().lower()
    if value not in LEVELS:
        raise KernelLevelError(f"{LEVEL_VARIABLE}={value!r} names no kernel level; use one of {', '.join(LEVELS)}")
    return value


def settings(name: str) -> dict[str, str]:
    """The environment a level sets (``{}``: ``native``)."""
    if name not in LEVELS:
        raise KernelLevelError(f"kernel level must be one of {LEVELS}, got {name!r}")
    if name == "native" or not _x86():
        return {}
    if name == "avx2" and not _has_avx2():  # its kernels would not run here (OpenBLAS's Haswell: illegal instructions)
        raise KernelLevelError(f"{LEVEL_VARIABLE}=avx2: this CPU has no AVX2 and FMA; use portable (any x86-64 CPU)")
    return {variable: values[PINNED.index(name)] for variable, (_, values) in PINS.items()}


def environment(name: str, base=None) -> dict[str, str]:
    """The environment a child process runs at level ``name`` with: ``base`` (``os.environ``) without any pin it
    holds, plus the level's own pins and ``SCOPE_ENVS_KERNELS`` (so ``native`` is native even where ``base`` was
    pinned)."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in PINS}
    return {**env, **settings(name), LEVEL_VARIABLE: name}


def _has_avx2() -> bool:
    from numpy._core._multiarray_umath import __cpu_features__

    return bool(__cpu_features__.get("AVX2") and __cpu_features__.get("FMA3"))


def _x86() -> bool:
    import platform

    return platform.machine().lower() in ("x86_64", "amd64", "i686", "x86")


def loaded_before_set(wanted: dict[str, str]) -> bool:
    """Whether this process must start again for ``wanted`` to take: a variable differs from it, and the library
    that reads it at load has loaded already."""
    return any(os.environ.get(k) != v and PINS[k][0] in sys.modules for k, v in wanted.items())


def pin_or_restart() -> str:
    """Pin this process's kernels to the asked level: set the variables, and where numpy or torch already loaded
    without them, replace this process by the same command with them (``os.execve``; the command line and the
    rest of the environment kept; the new process finds them set and goes on). Returns the level."""
    name = level()
    wanted = settings(name)
    if all(os.environ.get(k) == v for k, v in wanted.items()):
        return name
    restart = loaded_before_set(wanted)
    os.environ.update(wanted)
    if restart:
        sys.stdout.flush()
        sys.stderr.flush()
        argv = list(getattr(sys, "orig_argv", [])) or [sys.executable, *sys.argv]
        os.execve(sys.executable, [sys.executable, *argv[1:]], dict(os.environ))
    return name


def describe() -> str:
    """The level asked for, whether it took, and the two choices the report's machine line does not name otherwise
    (it names OpenBLAS's and ATen's kernels): numpy's widest dispatch target and MKL's code path."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    numpy_width = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)] or ["baseline"]
    try:
        asked = level()
        held = "" if in_effect(asked) else " asked, not in effect (numpy or torch loaded first)"
    except KernelLevelError as e:
        asked, held = "?", f" ({e})"
    return f"{asked} kernels{held}: numpy dispatch {numpy_width[-1]}, MKL {os.environ.get('MKL_CBWR', 'auto')}"


def in_effect(name: str = "portable") -> bool:
    """Whether the libraries loaded in this process run level ``name``'s kernels or narrower ones (read off what
    each chose)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    from threadpoolctl import threadpool_info

    pins = settings(name)
    if not pins:
        return True  # native, or not x86: nothing to pin
    off = pins["NPY_DISABLE_CPU_FEATURES"].split()
    ok = not any(__cpu_features__.get(f) for f in __cpu_dispatch__ if f in off)
    ok &= all(i.get("architecture") in (None, pins["OPENBLAS_CORETYPE"]) for i in threadpool_info()
              if i.get("internal_api") == "openblas")
    if "torch" in sys.modules:
        import torch

        capability = {"default": "DEFAULT", "avx2": "AVX2"}[pins["ATEN_CPU_CAPABILITY"]]
        ok &= torch.backends.cpu.get_cpu_capability() in ("DEFAULT", capability)
        ok &= os.environ.get("MKL_CBWR") == pins["MKL_CBWR"]
    return bool(ok)
