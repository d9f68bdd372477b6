"""``python -m demos info | bench | record | trace | quiz | …`` — the deck without Jupyter."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from demos.engine.devices import BACKENDS
from demos.engine.errors import DemoError



def cmd_info(args: argparse.Namespace) -> int:
    from demos.engine.devices import backend_status, machine_info, old_gpu_warning, same_device

    m = machine_info()
    print("Machine")
    for key in ("device", "device_name", "gpu_name", "gpu_memory_gib", "compute_capability", "driver",
                "cuda_version", "cpu", "cpu_threads", "torch_threads", "python", "platform", "torch", "jax",
                "jaxlib", "jax_backend", "jax_devices", "triton"):
        if m.get(key) not in (None, "", []):
            print(f"  {key:<18} {m[key]}")
    print("Measuring (the declared state, demos/engine/protocol.py)")
    for line in _protocol_lines():
        print(f"  {line}")
    print("Backends" + (" (each test-compiled)" if args.check else ""))
    status = backend_status(check_compile=args.check)
    for b in BACKENDS:
        s = status[b]
        mark = "ok " if s["ok"] else "NO "
        line = f"  {mark} {b:<14} {s['detail']}"
        if not s["ok"] and s.get("fix"):
            line += f"\n      fix: {s['fix']}"
        print(line)
    ok, where, fix = same_device()
    print(f"  {'ok ' if ok else 'NO '} {'same device':<14} {where}" + (f"\n      fix: {fix}" if fix else ""))
    old = old_gpu_warning()
    if old:
        print(f"  !   {'old GPU':<14} {old}")
    return 0


def _protocol_lines() -> list[str]:
    """What a measurement would start from here: allocator, the thread policy from the load now,
    and a tiny parallel op timed (tens of µs with free cores, ~8 ms when a worker waits a timeslice)."""
    from demos.engine import protocol
    from demos.engine.devices import torch_device
    from demos.engine.hardware import torch_or_none

    torch_or_none()
    cond = protocol.choose_threads()
    others = "unknown" if cond.others_before is None else f"{cond.others_before:.2f} cores"
    lines = [f"{'allocator':<18} {cond.allocator}",
             f"{'others_busy':<18} {others} (other processes, over 0.1 s)",
             f"{'thread_policy':<18} {cond.stamp()}"]
    if torch_device() == "cuda":  # who else holds the GPU (NVML lists processes with a CUDA context)
        import torch

        torch.zeros(1, device="cuda")
        share = protocol.gpu_reading()
        lines.append(f"{'gpu_sharing':<18} {share.text() if share else 'unknown'}")
    probe = protocol.parallel_probe()
    if probe is not None:
        lines.append(f"{'parallel_probe':<18} 2^18-float add on {probe['threads']} thread{'s' if probe['threads'] != 1 else ''}: median "
                     f"{probe['median_s'] * 1e6:.0f} µs, max {probe['max_s'] * 1e6:.0f} µs")
    return lines


def cmd_bench(args: argparse.Namespace) -> int:
    from demos.engine.bench import bench, table, text_progress
    from demos.engine.entry import name_list
    from demos.engine.outputs import output_file
    from demos.engine.workload_defs import WORKLOADS

    # every refusal before measuring, not after
    out = output_file(args.json, "record", "--json", force=args.force) if args.json is not None else None
    workloads = name_list(args.workload, list(WORKLOADS), "workload")
    backends = name_list(args.backend, list(BACKENDS), "backend")
    t0 = time.perf_counter()
    rec = bench(workloads, backends, quick=args.quick, dtype=args.dtype, progress=text_progress())
    print(table(rec))
    print(f"\n{rec.stamp} · dtype {args.dtype} · {time.perf_counter() - t0:.1f} s wall")
    if out:
        path = rec.save(out)
        print(f"wrote {path}")
    return 0


def _demos(names: str | None = None):
    """The declared demos (all, or those named: ``topic`` or ``topic.name``, comma-separated)."""
    from demos import topics

    if names is not None and not [n for n in names.split(",") if n.strip()]:
        raise DemoError(f"--demo {names!r}: an empty list; name a demo or a topic")
    return select(topics.load(), [n.strip() for n in names.split(",") if n.strip()] if names is not None else None)


def select(demos: list, names: list[str] | None) -> list:
    """Demos whose key (``topic.name``) or topic is in ``names`` (all when None)."""
    if not names:
        return list(demos)
    from demos.engine.errors import unknown_name

    valid = [d.key for d in demos] + sorted({d.topic for d in demos})
    for n in names:
        if n not in valid:
            raise unknown_name("demo", n, valid)
    return [d for d in demos if d.key in names or d.topic in names]


def cmd_record(args: argparse.Namespace) -> int:
    from demos.engine.bench import bench, text_progress
    from demos.engine.errors import one_line
    from demos.engine.outputs import output_file
    from demos.engine.results import Record, default_path
    from demos.introspection.profiling import keeping_traces

    # the output is checked before minutes of measuring, not after; by default a new file
    # named for the device, date and time (a second record the same day never replaces the first)
    demos = _demos(args.demo)
    out = output_file(args.out if args.out is not None else default_path(Record.new()), "record", "--out",
                      force=args.force)
    t0 = time.perf_counter()
    rec = bench(quick=args.quick, progress=text_progress())
    rec.label = "reference run" + (" (quick)" if args.quick else "")
    meta = rec.sections.setdefault("meta", {})
    traces = out.parent / f"{out.stem}-traces"
    for i, demo in enumerate(demos):
        if args.budget_s is not None and time.perf_counter() - t0 > args.budget_s:
            meta["not_recorded"] = [d.key for d in demos[i:]]  # past the budget: the rest are named, not measured
            print(f"past --budget-s {args.budget_s:g}: not recorded: {', '.join(meta['not_recorded'])}",
                  file=sys.stderr, flush=True)
            break
        t1 = time.perf_counter()
        try:
            with keeping_traces(traces / demo.key, relative_to=out.parent):  # raw traces beside the record
                measured = demo.record_into(rec, quick=args.quick)
            claims = demo.check_claims(measured)  # the slide's claims on this machine, as `make check` reads them
            meta.setdefault("claims", {})[demo.key] = claims
            failed = [c for c, ok in claims.items() if not ok]
            said = f"claim fails: {'; '.join(failed)}" if failed else f"{len(claims)} claim(s) hold"
            print(f"recorded {demo.key}: {time.perf_counter() - t1:.1f} s · {said}", file=sys.stderr, flush=True)
        except Exception as exc:  # keep the rest of the record
            rec.sections.setdefault("errors", {})[demo.key] = one_line(exc)
            print(f"  {demo.key}: {one_line(exc)}", file=sys.stderr, flush=True)
        meta["record_wall_s"] = round(time.perf_counter() - t0, 1)
        rec.save(out)  # after every demo: a run that is stopped keeps what it measured
    meta["record_wall_s"] = round(time.perf_counter() - t0, 1)
    path = rec.save(out)
    failing = {k: [c for c, ok in v.items() if not ok] for k, v in meta.get("claims", {}).items()}
    failing = {k: v for k, v in failing.items() if v}
    print(f"wrote {path} ({time.perf_counter() - t0:.1f} s); claims fail in "
          f"{len(failing)} of {len(meta.get('claims', {}))} demos" + (f": {', '.join(failing)}" if failing else ""))
    return 0


def cmd_warm(args: argparse.Namespace) -> int:
    """Compile every demo at its default sizes into the persistent caches in .cache/, in this
    machine's folder (.cache/<fingerprint>/: another kind of machine warms and reads its own)."""
    from demos.engine.env import CACHE_ROOT, cache_problem
    from demos.engine.errors import DemoError, one_line

    problem = cache_problem(shared=True)  # before minutes of compiling into caches nobody keeps
    if problem:
        raise DemoError(problem)
    demos = _demos(args.demo)  # an unknown name is refused before the preload
    t0 = time.perf_counter()
    from demos.topics import preload

    print(f"preloaded what a presenter's kernel loads: {preload():.1f} s", flush=True)  # its compile is cached too
    failed = 0
    for demo in demos:
        t1 = time.perf_counter()
        try:
            demo.forget()  # each demo warms from the declared state, as a live cell measures
            demo.warm_up()
            print(f"warmed {demo.key}: {time.perf_counter() - t1:.1f} s", flush=True)
        except Exception as exc:
            failed += 1
            print(f"  {demo.key}: {one_line(exc)}", flush=True)
    print(f"caches warm in {time.perf_counter() - t0:.1f} s, for this kind of machine: {CACHE_ROOT}")
    return 1 if failed else 0


def cmd_check(args: argparse.Namespace) -> int:
    from demos.deck.check import OUT, main as check_main

    if args.as_kind:  # in a fresh process, as that kind of machine (demos.deck.matrix)
        from demos.deck import matrix

        names = [d.key for d in _demos(args.demo)] if args.demo else None
        return matrix.main([k.strip() for k in args.as_kind.split(",") if k.strip()], names, args.laws,
                           Path(args.out) if args.out else matrix.OUT)
    return check_main(_demos(args.demo), Path(args.out) if args.out else OUT, laws_only=args.laws)


def cmd_records(args: argparse.Namespace) -> int:
    from demos import topics
    from demos.deck import verified

    return verified.main(topics.load(), readme=args.readme)


def cmd_check_matrix(args: argparse.Namespace) -> int:
    from demos.deck import matrix

    names = [d.key for d in _demos(args.demo)] if args.demo else None
    return matrix.main([k.strip() for k in args.kinds.split(",") if k.strip()], names, args.laws)


def cmd_quiz(args: argparse.Namespace) -> int:
    from demos.deck.quiz import main as quiz_main

    return quiz_main(_demos(args.demo), measure=not args.record_only, everything=args.measure, as_json=args.json)


def cmd_spoilers(args: argparse.Namespace) -> int:
    from demos.deck.spoilers import main as spoilers_main

    return spoilers_main(_demos(None))


def cmd_ui_bench(args: argparse.Namespace) -> int:
    from demos.deck.uibench import bench_demos, report

    rows = bench_demos(_demos(args.demo))
    print(report(rows))
    return 0


def cmd_walk(args: argparse.Namespace) -> int:
    from demos.deck.walk import main as walk_main

    return walk_main((["--parts", args.parts] if args.parts is not None else [])
                     + (["--out", args.out] if args.out is not None else []))


def cmd_trace(args: argparse.Namespace) -> int:
    """Read a torch.profiler trace (Kineto Chrome-trace JSON, plain or .gz): one summary line,
    optionally the two-lane timeline figure (--png) and the timeline data (--json)."""
    import json
    from pathlib import Path

    from demos.engine.outputs import output_file, write_atomic

    # refused before reading: empty names, the input itself, a foreign file, an unwritable place
    png = output_file(args.png, "png", "--png", inputs=[args.file], force=args.force) if args.png is not None else None
    out = output_file(args.json, "timeline", "--json", inputs=[args.file], force=args.force) if args.json is not None else None
    if png is not None and out is not None and png.resolve() == out.resolve():
        raise DemoError(f"--png and --json name the same file {png}")
    from demos.introspection import profiling, trace

    run = trace.load_timeline(args.file)
    print(trace.summary_line(run, Path(args.file).name))
    if png:
        from demos.engine.plots import to_png

        fig = profiling.timeline_figure([run], [Path(args.file).name], stamp=_trace_stamp(run))
        write_atomic(png, to_png(fig))
        print(f"wrote {png}")
    if out:
        write_atomic(out, json.dumps(run, indent=1) + "\n")
        print(f"wrote {out}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """``python -m demos export html|pdf …``: the export (demos.deck.export) given the declared
    demos, so a recorded-only export refuses a record that lacks figures before executing anything."""
    from demos.deck.export import main as export_main

    return export_main(args.rest, demos=_demos)


def cmd_inspect(args: argparse.Namespace) -> int:
    """``python -m demos inspect FILE.py[:FUNC]``: what torch.compile (and jax.jit, for a
    ``FUNC_jax`` twin in the same file) do with your function, run in a worker process with a
    time limit and a memory cap."""
    import json
    from pathlib import Path

    from demos.engine.outputs import output_file, write_atomic
    from demos.introspection.inspector_inputs import parse_shape
    from demos.introspection.inspector_report import report_text

    path_text, _, func = args.target.partition(":")
    path = Path(path_text)
    out = output_file(args.json, "inspection", "--json", inputs=[path], force=args.force) if args.json is not None else None
    if not path.is_file():
        raise DemoError(f"{path}: {'is a directory' if path.is_dir() else 'no such file'}; give FILE.py[:FUNC]")
    if func and not func.isidentifier():
        raise DemoError(f"{func!r} is not a function name; give FILE.py[:FUNC]")
    try:
        source = path.read_text()
    except UnicodeDecodeError:
        raise DemoError(f"{path}: not a text file, so not Python source") from None
    except OSError as exc:
        raise DemoError(f"{path}: cannot read ({exc.strerror or exc})") from None
    parse_shape(args.shape)
    if args.timeout <= 0:
        raise DemoError(f"--timeout {args.timeout:g}: must be a positive number of seconds")
    from demos.engine.worker import Worker
    from demos.introspection.inspector import WORKER_PRELOAD, run_isolated

    worker = Worker(preload=WORKER_PRELOAD)
    t0 = time.perf_counter()
    try:
        report = run_isolated(worker, source, func or None, shape=args.shape, dtype=args.dtype, jax=not args.no_jax,
                              sweep_dim=None if args.no_sweep else 0, timeout_s=args.timeout,
                              progress=lambda f, m="": print(f"  … {m}", file=sys.stderr, flush=True) if m else None)
    finally:
        worker.stop()
    print(report_text(report))
    w = report.get("worker") or {}
    print(f"\n{time.perf_counter() - t0:.1f} s wall (worker start {w.get('start_s') or 0:.1f} s, inspection "
          f"{w.get('run_s', 0):.1f} s)")
    if out:
        write_atomic(out, json.dumps({"schema": "jit-deck/inspection@1", **report}, indent=1, default=str) + "\n")
        print(f"wrote {out}")
    return 0


def _trace_stamp(run: dict) -> str:
    meta = run.get("meta", {})
    bits = [meta.get("gpu") or run.get("device", "")]
    if meta.get("root"):
        bits.append(f"window {meta['root']}")
    bits.append(f"trace {meta.get('trace', '')}")
    return " · ".join(b for b in bits if b)


def main(argv: list[str] | None = None) -> int:
    from demos.engine.entry import Parser, guarded

    ap = Parser(prog="python -m demos", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("info", help="machine, devices, versions and which backends work")
    p.add_argument("--check", action="store_true", help="really test-compile with torch.compile")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("bench", help="every workload × every working backend")
    p.add_argument("--quick", action="store_true", help="small sizes (well under a few minutes on 2 cores)")
    p.add_argument("--json", metavar="FILE", help="also write the results record to FILE")
    p.add_argument("--force", action="store_true", help="replace FILE even if it is not a results record")
    p.add_argument("--workload", help="comma-separated subset of workloads")
    p.add_argument("--backend", help="comma-separated subset of backends")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.set_defaults(func=cmd_bench)
    p = sub.add_parser("record", help="run every demo's defaults and write a new assets/results/<device>-<date>-<time>.json")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", metavar="FILE", help="where to write (default: a new assets/results/<device>-<date>-<time>.json)")
    p.add_argument("--force", action="store_true", help="replace FILE even if it is not a results record")
    p.add_argument("--demo", help="comma-separated demos or topics (default: all)")
    p.add_argument("--budget-s", type=float, metavar="S",
                   help="start no demo after S seconds (the rest are named in the record's meta.not_recorded)")
    p.set_defaults(func=cmd_record)
    p = sub.add_parser("ui-bench", help="warm interaction latency of every live panel")
    p.add_argument("--demo", help="comma-separated demos or topics (default: all)")
    p.set_defaults(func=cmd_ui_bench)
    p = sub.add_parser("walk", help="the slideshow in headless chromium: Shift+Enter → figure on every live "
                       "slide, console errors (build/walk/)")
    p.add_argument("--parts", help="comma-separated part numbers (default: all)")
    p.add_argument("--out", help="folder for the report and screenshots (default build/walk)")
    p.set_defaults(func=cmd_walk)
    p = sub.add_parser("check", help="pre-lecture check: every demo at its defaults, its claims, the environment")
    p.add_argument("--demo", help="comma-separated demos or topics (default: all)")
    p.add_argument("--as", dest="as_kind", metavar="KIND",
                   help="in a fresh process, as another kind of machine: native, avx2, one-thread, busy, no-simd "
                        "(comma-separated: a matrix)")
    p.add_argument("--laws", action="store_true", help="only the law claims (counts, structure, bytes)")
    p.add_argument("--out", help="folder for the figures and report (default build/check, with --as build/matrix)")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("records", help="what each committed GPU record verified, and the claims none measured")
    p.add_argument("--readme", action="store_true", help="rewrite README.md's table from the records")
    p.set_defaults(func=cmd_records)
    p = sub.add_parser("check-matrix", help="`check` as every kind of machine, one table of claims by kind "
                       "(build/matrix/)")
    p.add_argument("--kinds", default="native,avx2,one-thread,busy,no-simd", help="comma-separated kinds")
    p.add_argument("--demo", help="comma-separated demos or topics (default: all)")
    p.add_argument("--laws", action="store_true", help="only the law claims")
    p.set_defaults(func=cmd_check_matrix)
    p = sub.add_parser("quiz", help="the lecturer's sheet: every question the slides ask, with this machine's "
                       "answer and the record's")
    p.add_argument("--demo", help="comma-separated demos or topics (default: all)")
    p.add_argument("--record-only", action="store_true", help="measure nothing: the record's answers alone")
    p.add_argument("--measure", action="store_true",
                   help="measure every demo again, also those whose panels open on `make warm`'s result")
    p.add_argument("--json", action="store_true",
                   help="measure nothing; print the questions, the record's answers and make warm's as JSON "
                        "(what the notes window reads)")
    p.set_defaults(func=cmd_quiz)
    p = sub.add_parser("spoilers", help="every vote before its answer: the slides and figures shown since the "
                       "question before must not state a choice (demos.deck.spoilers)")
    p.set_defaults(func=cmd_spoilers)
    p = sub.add_parser("warm", help="compile every demo's defaults into the caches in .cache/")
    p.add_argument("--demo", help="comma-separated demos or topics (default: all)")
    p.set_defaults(func=cmd_warm)
    p = sub.add_parser("trace", help="summarise a torch.profiler trace file (Kineto JSON, .json or .json.gz)")
    p.add_argument("file", metavar="FILE", help="what prof.export_chrome_trace(path) wrote")
    p.add_argument("--png", metavar="OUT", help="also draw the two-lane timeline to OUT (PNG)")
    p.add_argument("--json", metavar="OUT", help="also write the timeline data (lanes, counts) to OUT")
    p.add_argument("--force", action="store_true", help="replace OUT even if it is not what this command writes")
    p.set_defaults(func=cmd_trace)
    p = sub.add_parser("inspect", help="what torch.compile and jax.jit do with your function (FILE.py[:FUNC])")
    p.add_argument("target", metavar="FILE.py[:FUNC]", help="a Python file and the function in it (default: its first)")
    p.add_argument("--shape", default="1024x1024", help="input shape, e.g. 1024x1024 (every input gets it)")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16", "float64"])
    p.add_argument("--no-jax", action="store_true", help="skip the FUNC_jax twin even if the file defines one")
    p.add_argument("--no-sweep", action="store_true", help="skip the recompilation sweep over dimension 0")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds before the worker is stopped (default 180)")
    p.add_argument("--json", metavar="OUT", help="also write the report as JSON")
    p.add_argument("--force", action="store_true", help="replace OUT even if it is not an inspection report")
    p.set_defaults(func=cmd_inspect)
    p = sub.add_parser("export", add_help=False, help="the deck as offline HTML or PDF (python -m demos.deck.export)")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_export)
    # where `make` is absent (Windows): the targets make runs, by name
    p = sub.add_parser("present", add_help=False, help="open the deck as a slideshow, as `make present` does "
                       "(--part N, --port P)")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p = sub.add_parser("plan", add_help=False, help="what setup installs on this machine, as `make plan` prints")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["present"]:  # the presenter and the plan parse their own arguments
        from demos.deck.present import main as present_main

        return present_main(argv[1:])
    if argv[:1] == ["plan"]:
        from demos.engine.setup_plan import main as plan_main

        return plan_main(argv[1:])
    args = ap.parse_args(argv)
    if args.cmd == "export":  # the export parses its own arguments and guards itself
        return cmd_export(args)
    return guarded(f"python -m demos {args.cmd}", lambda: args.func(args))
