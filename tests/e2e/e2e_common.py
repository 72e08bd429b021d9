"""Shared plumbing of the end-to-end checks: arguments, prerequisites, running the CLI.

Exit codes of every check script: 0 pass, 1 failure, 77 a prerequisite is missing
(CTest's SKIP_RETURN_CODE).
"""
import argparse
import os
import re
import subprocess
import sys

SKIP = 77
ISAS = ("avx512", "avx2", "scalar")
THREADS = (1, 2)
RUN_TIMEOUT_S = 120  # one CLI run on a ~1M-parameter model takes well under a second


def parse_args(doc):
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("--headwise", required=True, help="the built headwise CLI")
    ap.add_argument("--shared", required=True, help="the shared/ folder (holds models/)")
    ap.add_argument("--workdir", required=True, help="scratch folder for this check")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    if not os.access(args.headwise, os.X_OK):
        fail(f"the headwise CLI {args.headwise} is not an executable")
    return args


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def require_numpy():
    try:
        import numpy  # noqa: F401
    except ImportError:
        skip(f"numpy is not importable by {sys.executable} (install python3-numpy)")


def require_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        skip(f"torch is not importable by {sys.executable} (install python3-torch)")


def models_dir(shared):
    d = os.path.join(shared, "models")
    if not os.path.isdir(d):
        skip(f"{d} is absent (the real models live in ../shared/models; see its README)")
    return d


def require_files(*paths):
    for p in paths:
        if not os.path.isfile(p):
            skip(f"{p} is absent")


def supported_isas():
    """The HEADWISE_ISA values this CPU can run, read from /proc/cpuinfo with the same
    feature sets the runtime's dispatch demands (kernels/dispatch.cpp): a forced ISA the
    CPU lacks is an error there, so it must be skipped here, with a note."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    need = {
        "avx512": {"avx512f", "avx512bw", "avx512dq", "avx512vl", "fma"},
        "avx2": {"avx2", "fma"},
        "scalar": set(),
    }
    isas = []
    for isa in ISAS:
        missing = need[isa] - flags
        if missing:
            print(f"note: skipping HEADWISE_ISA={isa}: the CPU lacks {' '.join(sorted(missing))}")
        else:
            isas.append(isa)
    return isas


def run_cli(headwise, args, isa=None, check=True, timeout=RUN_TIMEOUT_S):
    """Runs `headwise ARGS` (stdout/stderr as bytes). With check, a non-zero exit fails
    the script with the command and its stderr. With isa, forces HEADWISE_ISA and checks
    from the statistics line that the run really used those kernels."""
    env = dict(os.environ)
    env.pop("HEADWISE_ISA", None)
    # Sleeping rather than spinning OpenMP waits: results do not depend on it, but on an
    # oversubscribed machine (ctest -j, shared CI cores) spinning barriers made 2-thread
    # runs of these tiny models up to 100x slower than 1-thread ones. A caller's own
    # setting wins.
    env.setdefault("OMP_WAIT_POLICY", "passive")
    if isa:
        env["HEADWISE_ISA"] = isa
    cmd = [headwise] + [str(a) for a in args]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        fail(f"timed out after {timeout} s: {describe(cmd, isa)}")
    if check:
        if p.returncode != 0:
            fail(f"exit code {p.returncode}: {describe(cmd, isa)}\n"
                 f"stderr: {p.stderr.decode(errors='replace')}")
        if isa and args and args[0] == "run":
            m = re.search(rb"kernels (\w+)", p.stderr)
            if not m or m.group(1).decode() != isa:
                fail(f"HEADWISE_ISA={isa} but the run reports kernels "
                     f"{m.group(1).decode() if m else '(none)'}: {describe(cmd, isa)}")
    return p


def describe(cmd, isa=None):
    text = " ".join(shell_quote(c) for c in cmd)
    return (f"HEADWISE_ISA={isa} " if isa else "") + text


def shell_quote(s):
    s = str(s)
    if len(s) > 200:
        s = s[:200] + "..."
    return s if re.fullmatch(r"[\w./=,:+-]+", s) else "'" + s.replace("'", "'\\''") + "'"


def convert_llama2c(headwise, ckpt, tok, out_dir):
    run_cli(headwise, ["convert", "llama2c", ckpt, "--tokenizer", tok, "-o", out_dir])
    for f in ("model.json", "model.safetensors", "tokenizer.bin"):
        if not os.path.isfile(os.path.join(out_dir, f)):
            fail(f"headwise convert did not write {out_dir}/{f}")
    return out_dir
