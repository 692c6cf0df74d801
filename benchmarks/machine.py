"""The machine a benchmark ran on, and its limits: float32 matmul throughput and memory bandwidth.

    .venv/bin/python benchmarks/machine.py

``describe()`` names the CPU, the cores, the library versions and every thread
setting that changes a timing; ``limits()`` measures what the CPU can do at
best, so each attention path can be read as a fraction of it. Measured, never
asserted in ``make test``.
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np
import torch

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def cpu_model() -> str:
    """The CPU's model name, family and model from /proc/cpuinfo (Linux), else platform's."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if not line.strip():
                    break  # the first processor is enough
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    if "model name" not in fields:
        return platform.processor() or platform.machine()
    family = f" (family {fields['cpu family']}, model {fields.get('model', '?')})" \
        if "cpu family" in fields else ""
    return fields["model name"] + family


def load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages, or None where the OS has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def blas_threads() -> dict[str, int]:
    """NumPy's BLAS library and its thread count (threadpoolctl, a learner dependency)."""
    from threadpoolctl import threadpool_info

    return {f"{p['internal_api']} ({p['user_api']})": p["num_threads"] for p in threadpool_info()}


def memory_total_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])  # MemTotal: N kB
        return round(kib / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return None


def describe() -> dict:
    """CPU model, cores, memory, Python, torch and NumPy versions, and thread counts."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": memory_total_gib(),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
        "torch": str(torch.__version__),
        "numpy": np.__version__,
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "blas_threads": blas_threads(),
        "thread_variables": {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ},
    }


def one_line(machine: dict) -> str:
    """The description as one line, for a figure's footer."""
    blas = max(machine["blas_threads"].values(), default="?")
    return (f"{machine['cpu']}, {machine['cores']} cores, torch {machine['torch']} "
            f"({machine['torch_threads']} threads), NumPy {machine['numpy']} "
            f"({blas} BLAS threads), Python {machine['python']}")


def _fastest_seconds(fn, repeats: int) -> float:
    """The fastest of ``repeats`` calls after a warm-up: a limit is the best the machine does."""
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def matmul_gflops(n: int = 2048, repeats: int = 10) -> dict:
    """float32 ``(n, n) @ (n, n)``: ``2 n^3`` FLOPs; torch (its threads) and NumPy (its BLAS)."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    out = torch.empty(n, n)
    flops = 2.0 * n**3
    t_torch = _fastest_seconds(lambda: torch.mm(a, b, out=out), repeats)
    a_np, b_np = a.numpy(), b.numpy()
    out_np = np.empty((n, n), dtype=np.float32)
    t_numpy = _fastest_seconds(lambda: np.matmul(a_np, b_np, out=out_np), repeats)
    return {"n": n, "torch_gflops": flops / t_torch / 1e9, "numpy_gflops": flops / t_numpy / 1e9}


def bandwidth_gbs(mib: int = 256, repeats: int = 5) -> dict:
    """Copy a float32 buffer of ``mib`` MiB into another: bytes read plus written per second."""
    src = torch.ones(mib * 2**20 // 4)
    dst = torch.empty_like(src)
    seconds = _fastest_seconds(lambda: dst.copy_(src), repeats)
    return {"mib": mib, "copy_gbs": 2 * src.numel() * 4 / seconds / 1e9}


def limits(matmul_n: int = 2048, copy_mib: int = 256, repeats: int = 5) -> dict:
    """The machine's measured float32 matmul throughput and memory bandwidth."""
    return {"matmul": matmul_gflops(matmul_n, repeats),
            "bandwidth": bandwidth_gbs(copy_mib, repeats)}


if __name__ == "__main__":
    print(describe())
    print(limits())
