"""What the side-by-side comparison scripts share: loading PyTorch at its best, and
printing tables.

PyTorch is a peer only when measured at its best. Debian's torch uses the system BLAS
(OpenBLAS with libopenblas0-pthread); this machine sets OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE for old OpenBLAS builds, which halve its speed here. So, for the torch
side only (this process), before torch loads OpenBLAS: drop those two, set
OPENBLAS_NUM_THREADS to the thread count and OMP_WAIT_POLICY=passive (threads sleep
rather than spin between calls). headwise runs in a subprocess with the environment the
script was given, unchanged.
"""
import os
import shutil
import sys


def load_torch_at_its_best(threads, who):
    """Returns (torch, environment for headwise subprocesses)."""
    headwise_env = dict(os.environ)
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        os.environ.pop(var, None)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    os.environ["OMP_WAIT_POLICY"] = "passive"
    try:
        import torch
    except ImportError as e:
        sys.exit("%s: cannot import torch (%s); run with /usr/bin/python3" % (who, e))
    torch.set_num_threads(threads)
    return torch, headwise_env


def resolve_headwise(parser, args):
    """args.headwise as an executable path (a name on PATH is looked up), or a usage error."""
    if not (os.path.isfile(args.headwise) and os.access(args.headwise, os.X_OK)):
        found = shutil.which(args.headwise)
        if not found:
            parser.error("headwise binary %r not found (build it, or pass --headwise PATH)"
                         % args.headwise)
        args.headwise = found


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_table(head, rows, markdown):
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
