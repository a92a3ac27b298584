#!/usr/bin/env python3
"""A misbehaving kernel program for failure-class tests (FAILED, LOST_OUTPUT,
CHECK_FAILED, TIMEOUT, OUT_OF_MEMORY): a real program that follows the
contract's arguments and then does what `--variant` says."""

import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
for flag in ("--n", "--d", "--threads", "--repeats", "--warmup", "--device", "--dtype", "--variant", "--out"):
    p.add_argument(flag, required=flag in ("--n", "--out"))
p.add_argument("--check", action="store_true")
p.add_argument("--sleep", type=float, default=0.0)
a = p.parse_args()
ns = [int(v) for v in a.n.split(",")]
header = "kernel,impl,variant,device,dtype,n,d,threads,repeat,time_s,first_call_s,rel_err\n"


def write(rel_err: str) -> None:
    with open(a.out + ".tmp", "w") as f:
        f.write(header)
        for n in ns:
            for r in range(int(a.repeats or 1)):
                f.write(f"fake,py,{a.variant},cpu,fp32,{n},{a.d or 64},{a.threads or 1},{r},{1e-6 * n},{2e-6 * n},{rel_err}\n")
    os.replace(a.out + ".tmp", a.out)


mode = a.variant
if mode == "ok":
    write("1e-7")
elif mode == "exit3":
    print("failing on purpose", file=sys.stderr)
    sys.exit(3)
elif mode == "nooutput":
    pass  # exit 0, no CSV: LOST_OUTPUT
elif mode == "garbage":
    with open(a.out, "w") as f:
        f.write("this,is\nnot,a result\n")
elif mode == "badcheck":
    write("0.5")
elif mode == "sleep":
    time.sleep(a.sleep)
    write("1e-7")
elif mode == "oom":
    blob = bytearray(int(os.environ.get("FAKE_OOM_MB", "3000")) * 1024 * 1024)
    time.sleep(5)
    write("1e-7")
else:
    sys.exit(f"unknown mode {mode}")
