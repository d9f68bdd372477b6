"""What `make` installs on this machine, decided from what the machine has: the setup plan.

``make plan`` (``python3 -m demos.engine.setup_plan``) prints the plan and installs nothing.
``make setup``, which every target runs first, carries out its steps (``--install``) before
``pip install -e '.[dev]'``; the builds chosen here already satisfy that install's pins
(``torch==2.13.0``, ``jax[cpu]==0.10.2``: a CUDA build of jaxlib's plugin beside the same
jaxlib is still ``jax`` 0.10.2), so pip keeps them.

- **An NVIDIA driver** (``nvidia-smi`` answers): torch from PyPI, whose Linux wheel is the CUDA
  build, NVIDIA's NVML bindings (``nvidia-ml-py``: the deck reads who else holds the GPU), and
  JAX's CUDA build chosen by the newest CUDA version the driver supports (the "CUDA
  Version" nvidia-smi prints): 13 or newer gives ``jax[cuda13]``, 12 gives ``jax[cuda12]``; an
  older driver keeps JAX on the CPU and says so. Without this step JAX would run on the host
  while torch runs on the GPU, and every torch-vs-JAX figure would compare two devices.
- **macOS on Apple silicon:** the default wheels (torch with its MPS backend, JAX on the CPU).
- **Linux without an NVIDIA GPU**, x86_64: torch's CPU-only wheel from PyTorch's CPU index when
  that index answers; otherwise PyPI's default, the CUDA build, with one line saying what that
  costs and how to choose.
- **Windows:** the default wheels, and a line: the deck is developed on Linux; WSL2 with the
  Linux steps is the tested way.

Two settings override the choice: ``DEMOS_TORCH_INDEX`` (a pip index URL for torch, or ``pypi``)
and ``DEMOS_JAX_BUILD`` (``cpu``, ``cuda12`` or ``cuda13``). This module needs the standard
library only: it runs before anything is installed.
"""
from __future__ import annotations

import argparse
import platform
import re
import shutil
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from typing import Callable

from demos.engine.settings import SettingError, get

TORCH = "torch==2.13.0"
JAX_VERSION = "0.10.2"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
NVML = "nvidia-ml-py==13.615.71"  # NVIDIA's NVML bindings: who else holds the GPU (demos.engine.gpu_share)


@dataclass(frozen=True)
class Machine:
    """What the plan is decided from."""
    system: str                      # platform.system(): Linux, Darwin, Windows
    arch: str                        # platform.machine(): x86_64, arm64, aarch64, AMD64
    nvidia: dict | None = None       # {"driver", "cuda", "gpus"} when nvidia-smi answered
    nvidia_problem: str = ""         # nvidia-smi is there but did not answer


@dataclass
class Plan:
    machine: str                                             # the machine, in words
    steps: list[tuple[str, list[str]]] = field(default_factory=list)  # (why, pip install arguments)
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        out = [f"machine: {self.machine}"]
        for why, args in self.steps:
            out += [f"  {why}", "    pip install " + " ".join(_quote(a) for a in args)]
        if not self.steps:
            out.append("  no extra step: pip install -e '.[dev]' installs the pinned wheels")
        out += [f"  note: {n}" for n in self.notes]
        out.append("then: pip install -e '.[dev]' (the pins in pyproject.toml)")
        return "\n".join(out)


def _quote(arg: str) -> str:
    return f'"{arg}"' if "[" in arg else arg


def read_nvidia_smi(text: str) -> dict | None:
    """The driver, the newest CUDA version it supports and the GPUs, from plain ``nvidia-smi``
    output (its header table); None when the text holds no driver line."""
    driver = re.search(r"Driver Version:\s*([\d.]+)", text)
    cuda = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", text)
    if not driver:
        return None
    gpus = re.findall(r"^\|\s+\d+\s+(.+?)\s{2,}.*$", text, flags=re.M)
    return {"driver": driver.group(1), "cuda": (int(cuda.group(1)), int(cuda.group(2))) if cuda else None,
            "gpus": [g.strip() for g in gpus if "N/A" not in g[:4]]}


def this_machine(run: Callable = subprocess.run) -> Machine:
    """The facts of the machine this runs on."""
    system, arch = platform.system(), platform.machine()
    smi = shutil.which("nvidia-smi")
    if not smi:
        return Machine(system, arch)
    try:
        r = run([smi], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return Machine(system, arch, nvidia_problem=f"nvidia-smi did not run ({exc.__class__.__name__})")
    facts = read_nvidia_smi(r.stdout or "")
    if r.returncode != 0 or facts is None:
        first = ((r.stderr or r.stdout or "").strip().splitlines() or ["no output"])[0][:120]
        return Machine(system, arch, nvidia_problem=f"nvidia-smi answered without a driver ({first})")
    return Machine(system, arch, nvidia=facts)


def index_answers(url: str = CPU_INDEX, timeout_s: float = 4.0) -> bool:
    """Whether a pip index answers here (PyTorch's CPU index, by default)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url + "/torch/", method="HEAD"), timeout=timeout_s) as r:
            return r.status < 400
    except Exception:
        return False


def plan_for(m: Machine, cpu_index_answers: Callable[[], bool] = index_answers,
             torch_index: str | None = None, jax_build: str | None = None) -> Plan:
    """The plan for machine ``m``; ``torch_index`` and ``jax_build`` are the overrides
    (DEMOS_TORCH_INDEX, DEMOS_JAX_BUILD)."""
    torch_step: list[str] | None = None
    jax = None
    notes: list[str] = []
    if m.nvidia:
        cuda = m.nvidia["cuda"]
        gpus = ", ".join(m.nvidia["gpus"]) or "a GPU"
        where = f"{m.system} {m.arch}, NVIDIA driver {m.nvidia['driver']}" + (
            f" (CUDA {cuda[0]}.{cuda[1]})" if cuda else "") + f": {gpus}"
        if cuda and cuda[0] >= 13:
            jax = "cuda13"
        elif cuda and cuda[0] == 12:
            jax = "cuda12"
        else:
            notes.append(f"this driver supports CUDA {cuda[0]}.{cuda[1] if cuda else '?'}; JAX's CUDA wheels need 12 "
                         "or newer, so JAX stays on the CPU (update the driver, then make setup again)"
                         if cuda else "nvidia-smi printed no CUDA version: JAX stays on the CPU")
        torch_step = [TORCH, NVML]  # PyPI's Linux torch wheel is the CUDA build; NVML reads who shares the GPU
        notes.append("torch comes from PyPI, whose Linux wheel is the CUDA build; `python -m demos info --check` "
                     "then says whether torch and JAX both see the GPU")
    elif m.system == "Darwin":
        where = f"macOS {m.arch}"
        notes.append("the default wheels: torch runs on the CPU and on MPS (Apple's GPU), JAX on the CPU")
    elif m.system == "Windows":
        where = f"Windows {m.arch}"
        notes.append("the deck is developed and tested on Linux: on Windows, WSL2 with the Linux steps is the "
                     "tested way (torch.compile on a native Windows CPU also needs MSVC's compiler)")
    else:
        where = f"{m.system} {m.arch}, no NVIDIA GPU"
        if m.nvidia_problem:
            where += f" ({m.nvidia_problem})"
        if m.arch in ("x86_64", "AMD64") and torch_index is None:
            if cpu_index_answers():
                torch_step = [TORCH, "--index-url", CPU_INDEX]
            else:
                notes.append(f"PyTorch's CPU index ({CPU_INDEX}) did not answer, so torch comes from pip's "
                             "configured index. From PyPI that is the CUDA build on Linux, with several GB of CUDA "
                             "libraries this machine cannot use. To choose: DEMOS_TORCH_INDEX=<index URL> make setup")
    if torch_index:
        torch_step = [TORCH] if torch_index == "pypi" else [TORCH, "--index-url", torch_index]
    if jax_build:
        jax = None if jax_build == "cpu" else jax_build
    plan = Plan(where, notes=notes)
    if torch_step:
        why = ("torch's CPU-only wheel (no CUDA libraries)" if CPU_INDEX in torch_step else
               "torch from the index DEMOS_TORCH_INDEX names" if torch_index and torch_index != "pypi" else
               "torch from PyPI (on Linux its wheel is the CUDA build), and NVML's bindings (who else holds the GPU)"
               if NVML in torch_step else "torch from PyPI (on Linux its wheel is the CUDA build)")
        plan.steps.append((why, torch_step))
    if jax:
        plan.steps.append((f"JAX's CUDA build (jax[{jax}]), so JAX runs on the same GPU as torch",
                           [f"jax[{jax}]=={JAX_VERSION}"]))
    return plan


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m demos.engine.setup_plan",
                                 description="What `make` installs on this machine (make plan)")
    ap.add_argument("--install", action="store_true", help="carry out the plan's steps with this Python's pip")
    args = ap.parse_args(argv)
    try:
        torch_index, jax_build = get("DEMOS_TORCH_INDEX"), get("DEMOS_JAX_BUILD")
    except SettingError as exc:
        print(f"setup: {exc}", file=sys.stderr)
        return 2
    plan = plan_for(this_machine(), torch_index=torch_index, jax_build=jax_build)
    print(plan.text(), flush=True)
    if args.install:
        for _why, step in plan.steps:
            r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *step])
            if r.returncode != 0:
                print(f"setup: pip install {' '.join(step)} failed (exit {r.returncode})", file=sys.stderr)
                return r.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
