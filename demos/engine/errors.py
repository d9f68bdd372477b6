"""One clear line for every way a demo can fail, and memory released afterwards."""
from __future__ import annotations

import gc
import re
from difflib import get_close_matches
from typing import Iterable


class DemoError(Exception):
    """An expected failure whose message is already one readable line."""


def unknown_name(kind: str, name: str, valid: Iterable[str]) -> DemoError:
    valid = list(valid)
    close = get_close_matches(str(name), valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return DemoError(f"unknown {kind} {name!r}{hint}; valid: {', '.join(valid)}")


def is_oom(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}".lower()
    return (
        "outofmemory" in text
        or "out of memory" in text
        or "resource_exhausted" in text
        or "resource exhausted" in text
        or isinstance(exc, MemoryError)
    )


def release_memory() -> None:
    """Free what a failed or finished demo left behind (host and device)."""
    gc.collect()
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            elif hasattr(torch, "mps") and torch.backends.mps.is_available():
                torch.mps.empty_cache()
        except Exception:  # pragma: no cover - best effort
            pass


def one_line(exc: BaseException, context: str = "") -> str:
    """Turn any exception into one line a lecturer can read aloud."""
    prefix = f"{context}: " if context else ""
    if isinstance(exc, DemoError):
        return prefix + str(exc)
    if is_oom(exc):
        return prefix + "out of memory (memory released; try a smaller size)"
    whole = str(exc)
    text = whole.strip().splitlines()
    first = next((line.strip() for line in text if line.strip()), type(exc).__name__)
    low = first.lower()
    if "not implemented for" in low or "unsupported dtype" in low or "does not support" in low:
        return prefix + f"this device does not support that dtype/op ({first[:160]})"
    if "C++ compile error" in whole:  # Inductor's CppCompileError: the compiler's own words are the cause
        return prefix + f"torch.compile's C++ compile failed ({compiler_cause(whole)})"
    if "no working c++ compiler" in whole.lower() or "invalidcxxcompiler" in type(exc).__name__.lower():
        tried = re.search(r"cpp\.cxx: \(None, '([^']*)'\)", whole)
        which = f"{tried.group(1)!r} does not run" if tried else "none found"
        return prefix + (f"torch.compile on CPU needs a working C++ compiler ({which}; unset CXX or "
                         "apt-get install g++ python3-dev)")
    if "g++" in low or "c++ compiler" in low:
        return prefix + "torch.compile on CPU needs a C++ compiler (apt-get install g++ python3-dev)"
    return prefix + f"{type(exc).__name__}: {first[:200]}"


def compiler_cause(text: str) -> str:
    """The line of a compiler's output that says what went wrong (Inductor puts the output after
    'Output:'); the first error line, else the first line, shortened."""
    out = text.split("Output:", 1)[1] if "Output:" in text else text
    lines = [ln.strip() for ln in out.splitlines() if ln.strip() and not ln.startswith("Set TORCHDYNAMO")]
    pick = next((ln for ln in lines if re.search(r"\b(fatal error|error)\b", ln)), lines[0] if lines else "no output")
    pick = re.sub(r"^\S+?:\d+:\d+:\s*", "", pick)  # drop file:line:col
    return pick[:180]
