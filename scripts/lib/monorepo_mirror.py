"""`scripts/monorepo-check --module-mirror ROUNDS`: the real roots installed cold from a module
mirror, against terraform and tstore cold from the origins, in the same run.

Runner A is the check's own first pass (tstore's checkout with its `.tstore.lock.hcl` files
and its store): it pushes what the lock files pin (`tstore push --modules --recursive`) to
Debian's docker-registry over HTTPS on loopback. Then, in each of ROUNDS paired rounds, new
copies of both trees (no `.terraform`; tstore's with its lock files), of the roots whose
first pass wrote a lock file:

  - terraform: `terraform init -backend=false` of every root in turn, from the origins;
  - tstore origin: every root in one `tstore init DIR...`, an empty store, from the origins;
  - tstore mirror: the same with another empty store and `TSTORE_MODULE_MIRROR`, while the
    origins are unreachable (the bare clones renamed away, the registry answering 503;
    `TSTORE_TRUST_LOCK=1`: the git refs cannot be asked). Every root with a lock file must
    end with the `modules.json` records and installed files of the first pass, and the
    registry must count no request.

Before each timed side the filesystem is synced and left a moment (`settle`): the copies
just made are flushed before a side starts, not charged to the side that runs first.
"""

import os
import shutil
import statistics
import subprocess
import time

from monorepo_warm import settle


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def start_registry(work):
    """A CA and a localhost certificate, docker-registry serving over HTTPS on a free port:
    (process, port, CA file)."""
    d = os.path.join(work, "oci")
    os.makedirs(d, exist_ok=True)
    openssl = [
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=check-ca", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem"],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
         "-keyout", f"{d}/server.key", "-out", f"{d}/server.csr"],
    ]
    for cmd in openssl:
        _run(cmd, check=True)
    with open(f"{d}/san.ext", "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    _run(["openssl", "x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{d}/ca.pem", "-CAkey",
          f"{d}/ca.key", "-CAcreateserial", "-days", "1", "-extfile", f"{d}/san.ext", "-out",
          f"{d}/server.pem"], check=True)
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(f"{d}/registry.yml", "w") as f:
        f.write(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
                f"    rootdirectory: {d}/registry\nhttp:\n  addr: 127.0.0.1:{port}\n"
                f"  secret: check\n  tls:\n    certificate: {d}/server.pem\n"
                f"    key: {d}/server.key\n")
    log = open(f"{d}/registry.log", "w")
    proc = subprocess.Popen(["docker-registry", "serve", f"{d}/registry.yml"], stdout=log,
                            stderr=log)
    for _ in range(100):
        if _run(["curl", "-sf", "--cacert", f"{d}/ca.pem",
                 f"https://localhost:{port}/v2/"]).returncode == 0:
            return proc, port, f"{d}/ca.pem"
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("monorepo-check: docker-registry did not start")


def measure_mirror(work, roots, args, env, server, rounds, tstore, modules_state,
                   modules_records, before=None):
    """Paired rounds (module docs): medians, ratios, and the roots that did not end as the
    first pass did. `before`: an earlier tstore executable, timed from the mirror in the same
    rounds (another empty store; the two take turns going first)."""
    # The roots whose first pass wrote a module lock file: a root without one (its init
    # failed) has nothing to install from a mirror.
    roots = [(label, rel) for label, rel in roots
             if os.path.exists(os.path.join(work, "ours", label, rel, ".tstore.lock.hcl"))]
    proc, port, ca = start_registry(work)
    mirror = f"oci://localhost:{port}/check/modules"
    try:
        penv = dict(env, SSL_CERT_FILE=ca)
        pushed = _run([tstore, "push", "--json", "--modules", mirror, "--recursive",
                       os.path.join(work, "ours")], env=penv)
        if pushed.returncode != 0:
            raise SystemExit("monorepo-check: the push failed:\n" + pushed.stderr)
        times = {"terraform": [], "tstore_origin": [], "tstore_mirror": []}
        mirror_sides = [("tstore_mirror", tstore)]
        if before:
            times["tstore_mirror_before"] = []
            mirror_sides.append(("tstore_mirror_before", before))
        problems = []
        for r in range(rounds):
            dirs = {}
            for side, src, keep_locks in (("terraform", "theirs", False),
                                          ("tstore_origin", "ours", True),
                                          *((name, "ours", True) for name, _ in mirror_sides)):
                dest = os.path.join(work, f"mirror-{side}-{r}")
                ignore = (shutil.ignore_patterns(".terraform") if keep_locks else
                          shutil.ignore_patterns(".terraform", ".terraform.lock.hcl",
                                                 ".tstore.lock.hcl"))
                shutil.copytree(os.path.join(work, src), dest, symlinks=True, ignore=ignore)
                dirs[side] = [os.path.normpath(os.path.join(dest, label, rel))
                              for label, rel in roots]
            settle()
            start = time.monotonic()
            for d in dirs["terraform"]:
                _run([args.terraform, "init", "-backend=false", "-no-color", "-input=false"],
                     cwd=d, env=env)
            times["terraform"].append(time.monotonic() - start)
            oenv = dict(penv, TSTORE_HOME=os.path.join(work, f"mirror-store-o{r}"),
                        TSTORE_MOUNT=os.path.join(work, f"mirror-mount-o{r}"))
            settle()
            start = time.monotonic()
            _run([tstore, "init", *dirs["tstore_origin"]], env=oenv)
            times["tstore_origin"].append(time.monotonic() - start)
            remotes = os.path.join(work, "remotes")
            os.rename(remotes, remotes + ".away")
            server.offline = True
            asked = server.requests
            try:
                turn = mirror_sides if r % 2 == 0 else list(reversed(mirror_sides))
                for side, exe in turn:
                    menv = dict(penv, TSTORE_HOME=os.path.join(work, f"mirror-store-{side}-{r}"),
                                TSTORE_MOUNT=os.path.join(work, f"mirror-mount-{side}-{r}"),
                                TSTORE_MODULE_MIRROR=mirror, TSTORE_TRUST_LOCK="1")
                    settle()
                    start = time.monotonic()
                    _run([exe, "init", *dirs[side]], env=menv)
                    times[side].append(time.monotonic() - start)
            finally:
                server.offline = False
                os.rename(remotes + ".away", remotes)
            if server.requests != asked:
                problems.append(f"round {r}: the registry was asked {server.requests - asked} times")
            for side, _ in mirror_sides:
                for (label, rel), d in zip(roots, dirs[side]):
                    ours = os.path.normpath(os.path.join(work, "ours", label, rel))
                    if modules_records(d) != modules_records(ours):
                        problems.append(f"{side} {label}/{rel}: modules.json records differ")
                    elif modules_state(d) != modules_state(ours):
                        problems.append(f"{side} {label}/{rel}: installed files differ")
    finally:
        proc.kill()
        proc.wait()
    med = {k: statistics.median(v) for k, v in times.items()}
    share = lambda side: statistics.median(  # noqa: E731
        [t / f for t, f in zip(times[side], times["terraform"])])
    result = {"rounds": rounds, "roots": len(roots), "times": times, "median_s": med,
              "mirror_vs_terraform": share("tstore_mirror"),
              "origin_vs_terraform": share("tstore_origin"), "problems": problems,
              "load": open("/proc/loadavg").read().split()[:3]}
    if before:
        result["mirror_before_vs_terraform"] = share("tstore_mirror_before")
        result["mirror_vs_before"] = statistics.median(
            [t / b for t, b in zip(times["tstore_mirror"], times["tstore_mirror_before"])])
    return result
