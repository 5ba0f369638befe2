"""What the numerics scripts share: running hearth, failing a check, and the
test loop that prints one line per test ("ok  " or "FAIL", the seconds, and
notes on failure or with -v) and counts the results."""

import argparse
import os
import shutil
import struct
import subprocess
import time
import traceback

import numpy as np

TIMEOUT_S = 120


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def run(cmd, timeout=TIMEOUT_S):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"timed out after {timeout}s: {' '.join(cmd)}")
    p.elapsed = time.time() - t0
    p.out = p.stdout.decode("utf-8", "replace")
    p.err = p.stderr.decode("utf-8", "replace")
    return p


def crashed(p):
    return p.returncode < 0 or p.returncode >= 128 or any(
        s in p.err for s in ("Segmentation", "Aborted", "terminate called", "AddressSanitizer",
                             "runtime error:", "core dumped"))


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def shared_audio(name="jfk.wav"):
    """The shared audio folder (../shared/audio beside the repository, or shared/audio in
    it) when it holds `name`, else None."""
    for d in (os.path.join(ROOT, "..", "shared", "audio"), os.path.join(ROOT, "shared", "audio")):
        if os.path.isfile(os.path.join(d, name)):
            return d
    return None


def float_wav(path, samples, rate=16000):
    """A mono IEEE-float WAV: the exact float32 samples reach hearth."""
    data = np.asarray(samples, dtype="<f4").tobytes()
    fmt = struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", len(body)) + body)


class Tests:
    """The test loop; a suite sets self.args (with .k and .verbose)."""
    passed = failed = 0

    def test(self, name, fn):
        if getattr(self.args, "k", None) and not any(k in name for k in self.args.k):
            return
        notes = []
        t0 = time.time()
        try:
            fn(notes)
            self.passed += 1
            status = "ok  "
        except Exception as e:  # a bug in the test or an unreadable output: still a failure
            self.failed += 1
            status = "FAIL"
            notes.insert(0, str(e) if isinstance(e, Failure) else f"{type(e).__name__}: {e}")
            if self.args.verbose:
                traceback.print_exc()
        line = f"{status} {name} ({time.time() - t0:.1f}s)"
        if notes and (status == "FAIL" or self.args.verbose):
            line += "\n       " + "\n       ".join(notes)
        print(line, flush=True)


class Checks:
    """One line per named check, "ok  " or "FAIL" and the detail, counted."""
    passed = failed = 0

    def check(self, name, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def main(suite, description, label, options=()):
    """Runs suite(args).run_all() with --hearth, -k, -v and `options` ((flags, kwargs) pairs),
    removes the suite's tmp folder, prints "label: N passed, M failed"; the exit status."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--hearth", required=True)
    ap.add_argument("-k", action="append", help="only the tests whose names hold this")
    ap.add_argument("-v", "--verbose", action="store_true")
    for flags, kwargs in options:
        ap.add_argument(*flags, **kwargs)
    s = suite(ap.parse_args())
    try:
        s.run_all()
    finally:
        shutil.rmtree(s.tmp, ignore_errors=True)
    print(f"{label}: {s.passed} passed, {s.failed} failed")
    return 1 if s.failed else 0
