"""--jobs and --peers: the benchmark as a series of fresh jobs (schedule.py, jobs.py), then
one report over all of them and one --json.

The report: a line per job as it ends; then per (op, dtype) with one job per library the
usual nccl-tests tables (report.py), with several the spread over jobs (report_jobs.py);
then every library side by side (compare_table.py) and, with --history, the history
tables (report_history.py), both from the median over jobs.
"""

from __future__ import annotations

import json
import sys
import tempfile

from .compare_table import print_compare
from .config import BenchConfig
from .jobs import JobRun, run_job
from .json_out import write_jobs_json
from .launch import print_header, under_torchrun
from .plot import write_plot
from .progress import make_progress
from .report import exit_code, in_report_order, print_report
from .report_history import print_history
from .report_jobs import print_run_order, print_spread
from .schedule import Schedule, job_time_limit, schedule
from .spread import fast_state_job_results, spreads, summary_results


def orchestrate(cfg: BenchConfig) -> int:
    """Runs every job, prints the report; the exit code of the command."""
    if under_torchrun():
        print("hccl_go bench: --jobs and --peers launch jobs of their own; run them without torchrun", file=sys.stderr)
        return 2
    if cfg.root >= cfg.world_size:
        print(f"hccl_go bench: --root {cfg.root} is not a rank of a world of {cfg.world_size}", file=sys.stderr)
        return 2
    print_header(cfg, cfg.world_size, {})
    with tempfile.TemporaryDirectory(prefix="hccl_go_bench_jobs_") as tmp:
        plan = schedule(cfg, tmp)
        for name, reason in plan.skipped.items():
            print(f"# {name}: skipped: {reason}")
        sys.stdout.flush()
        runs = run_all(plan, job_time_limit(cfg), cfg.progress)
    names = cfg.backends + tuple(p for p in cfg.peers if p not in plan.skipped)
    print_backend_info(runs)
    job_results = [(run.spec.number, r) for run in runs for r in run.results]
    summary = in_report_order(summary_results(job_results), cfg.ops, names)
    if cfg.jobs is None:
        raw = in_report_order([r for _, r in job_results], cfg.ops, names)
        print_report(raw, names, sys.stdout)
        what = "median time"
    else:
        by_order = {(r.backend, r.op, r.dtype, r.size): i for i, r in enumerate(summary)}
        spread = sorted(spreads(job_results), key=lambda s: by_order[(s.backend, s.op, s.dtype, s.size)])
        print_spread(spread, names, cfg.jobs, sys.stdout)
        print_run_order(spread, [(run.spec.name, run.spec.number) for run in runs], sys.stdout)
        what = f"median over {cfg.jobs} jobs of each job's median time"
    print_compare(summary, names, sys.stdout, what)
    fast = fast_state_job_results(job_results) if cfg.jobs is not None else []
    if fast:
        what = f"over the batches in the machine's fast cross-CPU state, median over {cfg.jobs} jobs"
        print_compare(in_report_order(summary_results(fast), cfg.ops, names), names, sys.stdout, what)
    if cfg.history:
        print_history(summary, names, sys.stdout, "" if cfg.jobs is None else f" (medians over {cfg.jobs} jobs)")
    if cfg.json_path:
        write_jobs_json(cfg.json_path, cfg, runs, plan.skipped, summary)
        print(f"# figures written to {cfg.json_path}")
    if cfg.plot_path and write_plot(cfg.plot_path, summary, names):
        print(f"# plot written to {cfg.plot_path}")
    sys.stdout.flush()
    failed = [run for run in runs if not run.ok]
    return 1 if failed else exit_code([r for _, r in job_results])


def run_all(plan: Schedule, limit_s: float, show_progress: bool) -> list[JobRun]:
    """Runs the jobs in order, a line each as it ends (and the tail of a failed job's output)."""
    total = len(plan.specs)
    progress = make_progress(total, enabled=show_progress)
    runs = []
    try:
        for i, spec in enumerate(plan.specs, 1):
            progress.describe(f"job {i}/{total} {spec.name}")
            run = run_job(spec, limit_s)
            runs.append(run)
            progress.advance()
            status = "ok" if run.ok else f"{run.status}: {run.reason}"
            print(f"# job {i:>{len(str(total))}}/{total} {spec.name} #{spec.number}: {status}, {run.wall_s:.1f} s")
            if not run.ok:
                tail = run.output_tail.rstrip().splitlines()[-20:]
                print("\n".join(f"#   | {line}" for line in tail))
            sys.stdout.flush()
    finally:
        progress.close()
    return runs


def print_backend_info(runs: list[JobRun]) -> None:
    """What each library reported about itself, from its first job that said anything."""
    seen = {}
    for run in runs:
        for name, info in run.backend_info.items():
            seen.setdefault(name, info)
    for name, info in seen.items():
        shown = {k: v for k, v in info.items() if k not in ("rank", "sequence")}
        print(f"# {name}: {json.dumps(shown, separators=(',', ':'))}")
