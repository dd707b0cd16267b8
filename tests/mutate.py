#!/usr/bin/env python3
"""mutate.py — the mutation check behind `make mutate` (data/report/testing.md, "Mutations").

Applies each mutation of tests/mutations.txt to a scratch copy of the tree
(never the working tree), builds, runs the suite (build/kgl_tests --fail-fast,
or the tests the mutation names), and counts the mutation killed when the
suite fails and the failing test, run again alone, fails again (a test that
fails only by timing under load is reported as flaky and the suite rerun). Prints the killed fraction and the survivors; exits 1 when the
score is below --min (default 95) or a survivor has no reason in the list.

  tests/mutate.py [--worktree] [--jobs N] [--min PCT] [--only SUBSTRING] [--keep]
  tests/mutate.py --check     every mutation still finds its text, and each test-name substring of its
                              `tests:` names a TEST of tests/ (no build; .ci/run runs it)

--worktree copies the working tree's tracked files (with uncommitted edits);
the default is the last commit (git archive HEAD), so others' edits in
progress do not enter the measurement. --jobs N runs N mutants at once, each
in its own copy.

The list: records separated by blank lines, `#` lines are comments.
    id:       a short name
    file:     a path in the tree
    find:     the exact text to replace (must occur; `nth: K` picks the K-th, default 1)
    replace:  what replaces it (may be empty)
    breaks:   what the mutation breaks
    tests:    (optional) test-name substrings to run instead of the whole suite
    survives: (optional) why no test can see it; such a survivor is accepted
A value may continue on following lines indented by 4 spaces; `{NL}` in find
and replace is a newline (every other character, backslashes too, is literal).
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMULATED = ("build/vmath_emulated", "build/vmath_emulated_f32", "build/gemm_emulated", "build/gemm_emulated_f32")
FIELDS = ("id", "file", "find", "replace", "breaks", "tests", "survives", "nth")


def parse_list(path):
    muts, cur, key = [], {}, None
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for n, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                muts.append(cur)
            cur, key = {}, None
            continue
        if line.startswith("    ") and key:
            cur[key] += "\n" + line[4:]
            continue
        k, sep, v = line.partition(":")
        if not sep or k not in FIELDS:
            sys.exit(f"{path}:{n}: expected 'field: value' with field one of {', '.join(FIELDS)}")
        if k in cur:
            sys.exit(f"{path}:{n}: {k} given twice in one record")
        key = k
        cur[k] = v[1:] if v.startswith(" ") else v
    if cur:
        muts.append(cur)
    ids = set()
    for m in muts:
        for k in ("id", "file", "find", "breaks"):
            if not m.get(k):
                sys.exit(f"{path}: mutation {m.get('id', '?')}: no {k}")
        m.setdefault("replace", "")
        for k in ("find", "replace"):
            m[k] = m[k].replace("{NL}", "\n")
        if m["id"] in ids:
            sys.exit(f"{path}: id {m['id']} twice")
        ids.add(m["id"])
    return muts


def run(cmd, cwd, timeout=None, env=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, env=env,
                           shell=isinstance(cmd, str), start_new_session=True)
        return p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        return None, (e.stdout or b"").decode("utf-8", "replace")


def make_copy(dest, worktree):
    os.makedirs(dest)
    if worktree:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, stdout=subprocess.PIPE, check=True).stdout
        for rel in files.decode().split("\0"):
            if rel and os.path.isfile(os.path.join(ROOT, rel)):
                os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
                shutil.copy2(os.path.join(ROOT, rel), os.path.join(dest, rel))
    else:
        arch = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE, check=True).stdout
        subprocess.run(["tar", "-x", "-C", dest], input=arch, check=True)


class Copy:
    """One scratch tree, built once; mutants are applied and undone in it."""

    def __init__(self, path, args):
        self.path, self.args = path, args
        self.env = dict(os.environ, KG_DATA=args.kg_data, KGL_CC="gcc", KGL_TEST_TIMEOUT=str(args.test_timeout))
        self.env.pop("MAKEFLAGS", None)
        self.env.pop("MAKELEVEL", None)

    def build(self):
        # everything `make test` builds, the staged install and the example program built against it included
        return run(["make", "-s", "build/kgl", "build/kgl_tests", "build/runner_probe", "build/runner_empty",
                    "build/vmath_emulated", "build/example/predict_family", "build/kgl-f32", "build/kgl_tests_f32",
                    "build/vmath_emulated_f32", "build/gemm_emulated", "build/gemm_emulated_f32",
                    "build/example/predict_family_f32"], self.path, timeout=900,
                   env=self.env)

    def suite(self, filters):
        # the float32 suite (tests/f32, build/kgl_tests_f32) first, then the main one; a test named alone runs
        # in the suite that has it
        f32 = ["build/kgl_tests_f32", "--kgl", "build/kgl-f32", "--fail-fast"]
        main = ["build/kgl_tests", "--kgl", "build/kgl", "--fail-fast"]
        if filters:
            rc, listed = run(f32[:1] + ["--list"], self.path, env=self.env)
            names = {l.split("\t")[0] for l in listed.split("\n") if l.strip()}
            cmd = f32 if rc == 0 and all(f in names for f in filters) else main
            return run(cmd + filters, self.path, timeout=self.args.suite_timeout, env=self.env)
        # the AVX-512 paths on the model of their intrinsics (a few seconds), as make test runs them
        out = ""
        for emulated in EMULATED:
            rc, o = run([emulated], self.path, timeout=self.args.suite_timeout, env=self.env)
            out += o
            if rc != 0:
                return rc, f"FAIL {emulated} (exit {rc})\n" + out  # named first: first_fail reads it
        rc, o = run(f32, self.path, timeout=self.args.suite_timeout, env=self.env)
        if rc != 0:
            return rc, out + o
        rc, out2 = run(main, self.path, timeout=self.args.suite_timeout, env=self.env)
        return rc, out + o + out2


def last_line(text):
    lines = [l for l in text.strip().split("\n") if l.strip()]
    return lines[-1] if lines else ""


def first_fail(text):
    for l in text.split("\n"):
        if l.startswith("FAIL "):
            return l[5:]
    return ""


def locate(root, m):
    """(text of m's file under root, offset of m's find text), or (None, why) when it no longer applies."""
    path = os.path.join(root, m["file"])
    if not os.path.isfile(path):
        return None, f"no file {m['file']}"
    with open(path, encoding="utf-8") as f:
        orig = f.read()
    nth = int(m.get("nth", "1"))
    at = -1
    for _ in range(nth):
        at = orig.find(m["find"], at + 1)
        if at < 0:
            return None, f"'find' text not found ({nth}. occurrence) in {m['file']}"
    return orig, at


def test_names(root):
    """Every TEST(name) of the suites' sources under root/tests."""
    names = set()
    for folder, _, files in os.walk(os.path.join(root, "tests")):
        for f in files:
            if f.endswith(".c"):
                with open(os.path.join(folder, f), encoding="utf-8") as src:
                    names.update(re.findall(r"^TEST\((\w+)\)", src.read(), re.M))
    return names


def unmatched_tests(m, names):
    """The substrings of m's `tests:` that no test name contains (the runner would refuse them)."""
    return [f for f in (m.get("tests") or "").split() if not any(f in n for n in names)]


def check(muts):
    """--check: every mutation still finds its text in this tree and names tests that exist (no build, no
    run): CI runs it."""
    stale = []
    names = test_names(ROOT)
    for m in muts:
        orig, at = locate(ROOT, m)
        if orig is None:
            stale.append(f"{m['id']}: {at}")
        missing = unmatched_tests(m, names)
        if missing:
            stale.append(f"{m['id']}: no test name contains {', '.join(repr(f) for f in missing)} (its tests:)")
    for line in stale:
        print(f"stale: {line}")
    n_stale = len({line.split(":")[0] for line in stale})
    print(f"{len(muts) - n_stale} of {len(muts)} mutations apply")
    return 1 if stale else 0


def apply_one(copy, m):
    path = os.path.join(copy.path, m["file"])
    orig, at = locate(copy.path, m)
    if orig is None:
        return "stale", at
    # a filter that matches no test makes the runner exit 1 before running anything: not a kill
    missing = unmatched_tests(m, test_names(copy.path))
    if missing:
        return "stale", f"no test name contains {', '.join(repr(f) for f in missing)} (its tests:)"
    mutated = orig[:at] + m["replace"] + orig[at + len(m["find"]):]
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(mutated)
        rc, out = copy.build()
        if rc != 0:
            return "nobuild", last_line(out)
        filters = m["tests"].split() if m.get("tests") else []
        t0 = time.time()
        flaky = []
        for attempt in range(3):
            rc, out = copy.suite(filters)
            secs = time.time() - t0
            if rc is None:
                return "killed", f"suite timed out after {secs:.0f} s"
            if rc == 0:
                break
            # A kill must repeat: the failing test, run again alone on the
            # mutant, fails again (a test that fails by timing, under load,
            # is not a kill); otherwise the suite is run once more.
            name = first_fail(out).split(" (")[0]
            if name in EMULATED:
                rc2, _ = run([name], copy.path, timeout=copy.args.suite_timeout, env=copy.env)
                if rc2 != 0:
                    return "killed", f"{first_fail(out)}, again alone  [{secs:.0f} s]"
                flaky.append(name)
                continue
            if not name:
                return "killed", f"{last_line(out)}  [{secs:.0f} s]"
            rc2, out2 = copy.suite([name])
            if rc2 != 0:
                note = f"  (flaky, not counted: {', '.join(flaky)})" if flaky else ""
                return "killed", f"{first_fail(out)}, again alone  [{secs:.0f} s]{note}"
            flaky.append(name)
        note = f"  (flaky, not counted: {', '.join(flaky)})" if flaky else ""
        return "survived", f"{last_line(out)}  [{secs:.0f} s]{note}"
    finally:
        with open(path, "w", encoding="utf-8") as f:
            f.write(orig)
        os.utime(path, None)  # newer than the mutant's objects: make rebuilds them


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", default=os.path.join(ROOT, "tests", "mutations.txt"))
    ap.add_argument("--worktree", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--min", type=float, default=95.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", action="store_true", help="keep the scratch copies")
    ap.add_argument("--kg-data", default=os.path.abspath(os.environ.get("KG_DATA", os.path.join(ROOT, "data", "kg"))))
    ap.add_argument("--test-timeout", type=int, default=120)
    ap.add_argument("--suite-timeout", type=int, default=1800)
    ap.add_argument("--check", action="store_true", help="only check that every mutation still applies")
    args = ap.parse_args()
    muts = [m for m in parse_list(args.list) if args.only in m["id"]]
    if not muts:
        sys.exit("no mutation selected")
    if args.check:
        sys.exit(check(muts))
    scratch = tempfile.mkdtemp(prefix="kgl-mutate-")
    print(f"{len(muts)} mutations; scratch copies in {scratch} ({'working tree' if args.worktree else 'HEAD'})",
          flush=True)
    copies = []
    try:
        for j in range(max(1, args.jobs)):
            c = Copy(os.path.join(scratch, f"tree{j}"), args)
            make_copy(c.path, args.worktree)
            rc, out = c.build()
            if rc != 0:
                sys.exit(f"the unmutated tree does not build:\n{out[-3000:]}")
            copies.append(c)
        # as for a mutant, a failure counts when the failing test fails again alone; one that fails only by
        # timing, under load, is reported as flaky and the suite is run again
        for attempt in range(3):
            rc, out = copies[0].suite([])
            name = first_fail(out).split(" (")[0]
            if rc == 0 or not name or copies[0].suite([name])[0] != 0:
                break
            print(f"baseline: {name} failed, then passed alone: flaky under load, the suite runs again", flush=True)
        if rc != 0:
            sys.exit(f"the unmutated suite fails ({first_fail(out) or last_line(out)}): fix that first")
        print(f"baseline: {last_line(out)}", flush=True)

        free = list(copies)
        lock = threading.Lock()
        results = {}

        def work(m):
            with lock:
                c = free.pop()
            try:
                res = apply_one(c, m)
            finally:
                with lock:
                    free.append(c)
            with lock:
                results[m["id"]] = res
                print(f"{res[0]:8} {m['id']:32} {res[1]}", flush=True)
            return res

        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(copies)) as ex:
            list(ex.map(work, muts))
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)

    killed = [m for m in muts if results[m["id"]][0] == "killed"]
    survived = [m for m in muts if results[m["id"]][0] == "survived"]
    invalid = [m for m in muts if results[m["id"]][0] in ("stale", "nobuild")]
    valid = len(killed) + len(survived)
    score = 100.0 * len(killed) / valid if valid else 0.0
    print(f"\n{len(killed)} of {valid} mutations killed: {score:.1f}% ({time.time() - t0:.0f} s)")
    unexplained = []
    for m in survived:
        why = m.get("survives")
        print(f"  survivor {m['id']} ({m['file']}): breaks {m['breaks']}")
        print(f"    {'reason: ' + why if why else 'NO REASON GIVEN: add a test that kills it, or a survives: line'}")
        if not why:
            unexplained.append(m)
    for m in invalid:
        print(f"  invalid {m['id']}: {results[m['id']][0]}: {results[m['id']][1]}")
    ok = score >= args.min and not unexplained and not invalid
    print(f"mutation score {score:.1f}% (min {args.min:g}%): {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
