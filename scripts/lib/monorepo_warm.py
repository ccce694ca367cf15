"""`scripts/monorepo-check --warm ROUNDS`: the real roots initialised again in new checkouts
with a warm store (their lock files committed), against terraform in the same run; with and
without the files' recorded facts.

In each of ROUNDS paired rounds, new copies of both trees (no `.terraform`; tstore's with
its lock files), every root in turn or in one process:

  - terraform:              `terraform init -backend=false` of every root in turn (its
                            plugin cache set; modules fetched again from the local remotes);
  - tstore, one process:    every root in one `tstore init DIR...` (the check's store), its
                            recorded facts of files dropped first (every file parsed), then
                            again in another copy with the facts the first run recorded;
  - tstore, one per root:   `tstore init DIR` of every root in turn with the facts kept
                            (as the one-process sides recorded them), and, last in the
                            round, with the facts dropped before each root (each process
                            parses what it reads);
  - the same, served:       the loop with the facts kept once more while `tstore serve` runs
                            for the store (started before the side is timed, stopped after
                            it; a root the server declines runs its own init, said);
  - the same with FUSE:     where `/dev/fuse` is, the loop with the facts kept once more with
                            the store mounted (tstore's default; the rest of the check runs
                            without FUSE): the mount's daemon holds the index open, so no
                            init's close checkpoints it or remakes its `-wal` and `-shm`
                            files. Mounted before the side is timed and unmounted after it, so that the
                            other sides run with no daemon holding the index.

With `--before TSTORE`, an earlier tstore executable's one-process, per-root and served
sides (facts kept) run beside the current one's, on the same store, the two taking turns
going first: before and after, paired in one run.

Before each timed side the filesystem is synced and left a moment (`settle`): the copies
and the previous side's writes (terraform's module copies above all) are flushed before a
side starts, not charged to the side that happens to run while the disk catches up.

The medians, per root, and each against terraform's time.
"""

import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def settle():
    """Flush what earlier steps wrote, so a timed side does not pay for it."""
    os.sync()
    time.sleep(1)


def drop_facts(store):
    """Forget every recorded fact of the store at `store`."""
    with sqlite3.connect(os.path.join(store, "index.sqlite"), timeout=30) as conn:
        conn.execute("DELETE FROM file_facts")


def fuse_env(work, env):
    """The check's environment with the store mounted by FUSE at a path of its own, or None
    where this machine has no FUSE."""
    if not os.path.exists("/dev/fuse"):
        return None
    mount = os.path.join(work, "warm-fuse-mount")
    os.makedirs(mount, exist_ok=True)
    fenv = {k: v for k, v in env.items() if k != "TSTORE_NO_FUSE"}
    fenv["TSTORE_MOUNT"] = mount
    return fenv


def served_loop(tstore, dirs, env, work):
    """`tstore init DIR` of each of `dirs` in turn while `tstore serve` runs; the time."""
    log_path = os.path.join(work, "warm-serve.log")
    with open(log_path, "w") as log:
        # Root's inits hold CAP_SYS_ADMIN: a server serves them only when told to.
        privileged = ["--privileged-clients"] if os.geteuid() == 0 else []
        server = subprocess.Popen([tstore, "serve", *privileged], env=env,
                                  stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 20
        while "serving the inits" not in open(log_path).read():
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"warm: tstore serve did not start: {open(log_path).read()}")
            time.sleep(0.05)
        settle()
        start = time.monotonic()
        for d in dirs:
            _run([tstore, "init", d], env=env)
        spent = time.monotonic() - start
    finally:
        server.terminate()
        server.wait()
    served = open(log_path).read().count("init exited")
    if served == 0:
        raise SystemExit(f"warm: the server ran none of {len(dirs)} inits")
    if served != len(dirs):
        # A client the server declined ran its own init (as a user's would): counted, said.
        print(f"warm: the server ran {served} of {len(dirs)} inits", file=sys.stderr)
    return spent


def measure_warm(work, roots, args, env, rounds, tstore, before=None):
    """Paired rounds (module docs); `before`: an earlier tstore executable, whose one-process,
    per-root and served sides (facts kept) run right after the current one's, same store."""
    plugin_cache = os.path.join(work, "plugin-cache")
    os.makedirs(plugin_cache, exist_ok=True)
    tf_env = dict(env, TF_PLUGIN_CACHE_DIR=plugin_cache)
    store = env["TSTORE_HOME"]
    fenv = fuse_env(work, env)
    sides = ("terraform", "one_parsed", "one_facts", "loop_parsed", "loop_facts",
             "loop_served") + (
        ("loop_fuse",) if fenv is not None else ()) + (
        ("one_facts_before", "loop_facts_before", "loop_served_before") if before else ())
    times = {side: [] for side in sides}
    for r in range(rounds):
        dirs = {}
        for side in sides:
            dest = os.path.join(work, f"warm-{side}-{r}")
            src, ignore = (("theirs", shutil.ignore_patterns(".terraform", ".terraform.lock.hcl",
                                                            ".tstore.lock.hcl"))
                           if side == "terraform" else
                           ("ours", shutil.ignore_patterns(".terraform")))
            shutil.copytree(os.path.join(work, src), dest, symlinks=True, ignore=ignore)
            dirs[side] = [os.path.normpath(os.path.join(dest, label, rel)) for label, rel in roots]
        settle()
        start = time.monotonic()
        for d in dirs["terraform"]:
            _run([args.terraform, "init", "-backend=false", "-no-color", "-input=false"],
                 cwd=d, env=tf_env)
        times["terraform"].append(time.monotonic() - start)
        drop_facts(store)
        settle()
        start = time.monotonic()
        _run([tstore, "init", *dirs["one_parsed"]], env=env)
        times["one_parsed"].append(time.monotonic() - start)
        # The two executables take turns going first (the one after pays the first's
        # checkpoints and writeback).
        if before:
            # Facts are recorded per build: the earlier build records its own first
            # (untimed, in a copy of its own), so that its facts-kept sides keep facts too.
            prime = os.path.join(work, f"warm-prime-{r}")
            shutil.copytree(os.path.join(work, "ours"), prime, symlinks=True,
                            ignore=shutil.ignore_patterns(".terraform"))
            _run([before, "init", *[os.path.normpath(os.path.join(prime, label, rel))
                                    for label, rel in roots]], env=env)
        pairs = [("", tstore)] + ([("_before", before)] if before else [])
        if r % 2:
            pairs.reverse()
        for suffix, exe in pairs:
            settle()
            start = time.monotonic()
            _run([exe, "init", *dirs["one_facts" + suffix]], env=env)
            times["one_facts" + suffix].append(time.monotonic() - start)
        for suffix, exe in pairs:
            settle()
            start = time.monotonic()
            for d in dirs["loop_facts" + suffix]:
                _run([exe, "init", d], env=env)
            times["loop_facts" + suffix].append(time.monotonic() - start)
        for suffix, exe in pairs:
            times["loop_served" + suffix].append(
                served_loop(exe, dirs["loop_served" + suffix], env, work))
        if fenv is not None:
            # Mounted for this side only: the daemon's open index would spare the other
            # sides' inits their checkpoints too.
            mounted = _run([tstore, "mount"], env=fenv)
            if mounted.returncode != 0:
                raise SystemExit(f"warm: tstore mount failed: {mounted.stderr.strip()}")
            try:
                settle()
                start = time.monotonic()
                for d in dirs["loop_fuse"]:
                    _run([tstore, "init", d], env=fenv)
                times["loop_fuse"].append(time.monotonic() - start)
            finally:
                _run([tstore, "umount"], env=fenv)
        # Last: it drops the facts before each root, so that the store keeps only the last
        # root's afterwards; the sides above need them all, as the one-process sides left them.
        settle()
        spent = 0.0
        for d in dirs["loop_parsed"]:
            drop_facts(store)
            start = time.monotonic()
            _run([tstore, "init", d], env=env)
            spent += time.monotonic() - start
        times["loop_parsed"].append(spent)
    med = {k: statistics.median(v) for k, v in times.items()}
    against = {side: statistics.median([t / s for s, t in zip(times[side], times["terraform"])])
               for side in sides if side != "terraform"}
    per_root_ms = {side: med[side] * 1000 / len(roots) for side in sides}
    result = {"rounds": rounds, "roots": len(roots), "times": times, "median_s": med,
              "per_root_ms": per_root_ms, "x_faster_than_terraform": against,
              "load": open("/proc/loadavg").read().split()[:3]}
    if before:
        result["new_vs_before"] = {
            side: statistics.median([t / b for t, b in zip(times[side],
                                                            times[side + "_before"])])
            for side in ("one_facts", "loop_facts", "loop_served")}
    return result
