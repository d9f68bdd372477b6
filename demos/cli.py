"""``python -m demos info | bench | record`` — the engine without Jupyter."""
from __future__ import annotations

import argparse
import importlib
import sys
import time

from . import BACKENDS

# Topic modules (one per deck part). Each may define ``record(record, quick=False)`` to add
# its section to a results record; missing modules are skipped.
TOPICS = ("eager", "fusion", "roofline", "internals", "recompilation")


def cmd_info(args: argparse.Namespace) -> int:
    from .devices import backend_status, machine_info

    m = machine_info()
    print("Machine")
    for key in ("device", "device_name", "gpu_name", "gpu_memory_gib", "compute_capability", "driver",
                "cuda_version", "cpu", "cpu_threads", "torch_threads", "python", "platform", "torch", "jax",
                "jaxlib", "jax_backend", "jax_devices", "triton"):
        if m.get(key) not in (None, "", []):
            print(f"  {key:<18} {m[key]}")
    print("Backends" + (" (each test-compiled)" if args.check else ""))
    status = backend_status(check_compile=args.check)
    for b in BACKENDS:
        s = status[b]
        mark = "ok " if s["ok"] else "NO "
        line = f"  {mark} {b:<14} {s['detail']}"
        if not s["ok"] and s.get("fix"):
            line += f"\n      fix: {s['fix']}"
        print(line)
    return 0


def _parse_list(text: str | None, valid, kind: str) -> list[str] | None:
    if not text:
        return None
    from .errors import unknown_name

    items = [t.strip() for t in text.split(",") if t.strip()]
    for t in items:
        if t not in valid:
            raise unknown_name(kind, t, valid)
    return items


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import bench, table, text_progress
    from .workloads import WORKLOADS

    workloads = _parse_list(args.workload, WORKLOADS, "workload")
    backends = _parse_list(args.backend, BACKENDS, "backend")
    t0 = time.perf_counter()
    rec = bench(workloads, backends, quick=args.quick, dtype=args.dtype, progress=text_progress())
    print(table(rec))
    print(f"\n{rec.stamp} · dtype {args.dtype} · {time.perf_counter() - t0:.1f} s wall")
    if args.json:
        path = rec.save(args.json)
        print(f"wrote {path}")
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from .bench import bench, text_progress

    t0 = time.perf_counter()
    rec = bench(quick=args.quick, progress=text_progress())
    rec.label = "reference run" + (" (quick)" if args.quick else "")
    for name, hook in _topic_hooks("record"):
        print(f"recording {name}…", file=sys.stderr, flush=True)
        t1 = time.perf_counter()
        try:
            hook(rec, quick=args.quick)
        except Exception as exc:  # keep the rest of the record
            from .errors import one_line

            rec.sections.setdefault("errors", {})[name] = one_line(exc)
            print(f"  {name}: {one_line(exc)}", file=sys.stderr)
        print(f"  {name}: {time.perf_counter() - t1:.1f} s", file=sys.stderr)
    rec.sections.setdefault("meta", {})["record_wall_s"] = round(time.perf_counter() - t0, 1)
    path = rec.save(args.out)
    print(f"wrote {path} ({time.perf_counter() - t0:.1f} s)")
    return 0


def _topic_hooks(hook_name: str):
    """(name, function) for every topic module that defines ``hook_name``."""
    for name in TOPICS:
        try:
            mod = importlib.import_module(f"demos.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"demos.{name}":
                continue
            raise
        hook = getattr(mod, hook_name, None)
        if hook is not None:
            yield name, hook


def cmd_warm(args: argparse.Namespace) -> int:
    """Compile every demo at its default sizes into the persistent caches in .cache/."""
    from .errors import one_line

    t0 = time.perf_counter()
    failed = 0
    for name, hook in _topic_hooks("warm"):
        t1 = time.perf_counter()
        print(f"warming {name}…", flush=True)
        try:
            hook()
        except Exception as exc:
            failed += 1
            print(f"  {name}: {one_line(exc)}")
        print(f"  {name}: {time.perf_counter() - t1:.1f} s", flush=True)
    print(f"caches warm in {time.perf_counter() - t0:.1f} s")
    return 1 if failed else 0


def cmd_ui_bench(args: argparse.Namespace) -> int:
    from .uibench import run

    topics = _parse_list(args.topic, TOPICS, "topic") or TOPICS
    rows = run(topics)
    if rows:
        import statistics

        meds = [r["median_s"] for r in rows]
        print(f"\n{len(rows)} panels · median of medians {statistics.median(meds):.3f} s · worst {max(meds):.3f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    from .errors import DemoError

    ap = argparse.ArgumentParser(prog="python -m demos", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("info", help="machine, devices, versions and which backends work")
    p.add_argument("--check", action="store_true", help="really test-compile with torch.compile")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("bench", help="every workload × every working backend")
    p.add_argument("--quick", action="store_true", help="small sizes (well under a few minutes on 2 cores)")
    p.add_argument("--json", metavar="FILE", help="also write the results record to FILE")
    p.add_argument("--workload", help="comma-separated subset of workloads")
    p.add_argument("--backend", help="comma-separated subset of backends")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.set_defaults(func=cmd_bench)
    p = sub.add_parser("record", help="run every demo's defaults and write assets/results/<device>-<date>.json")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", metavar="FILE", help="where to write (default: assets/results/<device>-<date>.json)")
    p.set_defaults(func=cmd_record)
    p = sub.add_parser("ui-bench", help="warm interaction latency of every live panel")
    p.add_argument("--topic", help="comma-separated topics (default: all)")
    p.set_defaults(func=cmd_ui_bench)
    p = sub.add_parser("warm", help="compile every demo's defaults into the caches in .cache/")
    p.set_defaults(func=cmd_warm)
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except DemoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
