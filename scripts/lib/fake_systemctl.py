#!/usr/bin/env python3
"""systemctl for a root without systemd (scripts/package-root-check.sh): a unit is started by
running its ExecStartPre= lines, then its ExecStart= in the background, as systemd would: with its
Environment= and then its EnvironmentFile= settings (the file wins), its specifiers (%i, %H), its
${VAR} (one word) and $VAR (split into words) expansions, its User=, StateDirectory= and
WorkingDirectory=. Output goes to /var/log/kfleet-units/UNIT.log and, for ExecStartPre, to this
program's own output too (the journal a user would read). Understands daemon-reload, is-enabled,
is-active, enable [--now], start, stop, restart and try-restart; nothing else."""
import os
import pwd
import re
import shlex
import signal
import socket
import subprocess
import sys

UNIT_DIRS = ["/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"]
LOGS = "/var/log/kfleet-units"
STATE = "/run/fake-systemd"


def unit_file(name):
    m = re.fullmatch(r"(.+)@(.*)\.service", name)
    base, inst = (m.group(1) + "@.service", m.group(2)) if m else (name, "")
    for d in UNIT_DIRS:
        if os.path.exists(os.path.join(d, base)):
            return os.path.join(d, base), inst
    sys.exit(f"Unit {name} not found.")


def props(path):
    out = []
    for line in open(path):
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            k, _, v = line.partition("=")
            out.append((k.strip(), v.strip()))
    return out


def spec(s, inst):
    return s.replace("%i", inst).replace("%H", socket.gethostname())


def environment(ps, inst):
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    for k, v in ps:
        if k == "Environment":
            for w in shlex.split(spec(v, inst)):
                a, _, b = w.partition("=")
                env[a] = b
    for k, v in ps:
        if k == "EnvironmentFile":
            f = v.lstrip("-")
            if not os.path.exists(f):
                if v.startswith("-"):
                    continue
                sys.exit(f"EnvironmentFile {f}: no such file")
            for line in open(f):
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    a, _, b = line.partition("=")
                    env[a.strip()] = b.strip().strip('"')
    return env


def argv(cmd, env, inst):
    out = []
    for w in shlex.split(spec(cmd, inst)):
        if re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", w):
            out += env.get(w[1:], "").split()
        else:
            out.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env.get(m.group(1), ""), w))
    return out


def pidfile(name):
    return os.path.join(STATE, name + ".pid")


def active(name):
    try:
        pid = int(open(pidfile(name)).read())
        os.kill(pid, 0)
        return True
    except (OSError, ValueError):
        return False


def start(name):
    path, inst = unit_file(name)
    ps = props(path)
    env = environment(ps, inst)
    get = lambda key, default="": next((spec(v, inst) for k, v in ps if k == key), default)
    user = get("User")
    for d in get("StateDirectory").split():
        p = os.path.join("/var/lib", d)
        os.makedirs(p, exist_ok=True)
        os.chmod(p, int(get("StateDirectoryMode", "0755"), 8))
        if user:
            pw = pwd.getpwnam(user)
            os.chown(p, pw.pw_uid, pw.pw_gid)
    cwd = get("WorkingDirectory") or "/"
    prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"] if user else []
    os.makedirs(LOGS, exist_ok=True)
    os.makedirs(STATE, exist_ok=True)
    log = open(os.path.join(LOGS, name + ".log"), "a")
    for k, v in ps:
        if k == "ExecStartPre":
            a = argv(v, env, inst)
            print(f"{name}: ExecStartPre: {shlex.join(a)}", flush=True)
            r = subprocess.run(prefix + a, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            sys.stdout.write(r.stdout)
            log.write(r.stdout)
            log.flush()
            if r.returncode != 0:
                print(f"Job for {name} failed because the control process exited with error code "
                      f"(ExecStartPre: status {r.returncode}).", flush=True)
                return 1
    a = argv(get("ExecStart"), env, inst)
    print(f"{name}: ExecStart: {shlex.join(a)}", flush=True)
    p = subprocess.Popen(prefix + a, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    open(pidfile(name), "w").write(str(p.pid))
    open(os.path.join(STATE, name + ".enabled"), "w").close()
    return 0


def stop(name):
    if active(name):
        os.killpg(int(open(pidfile(name)).read()), signal.SIGTERM)
    return 0


def main(args):
    args = [a for a in args if a not in ("--quiet", "--no-pager", "-q")]
    if not args:
        sys.exit("usage: systemctl COMMAND [UNIT...]")
    cmd, units = args[0], [u if "." in u else u + ".service" for u in args[1:] if u != "--now"]
    now = "--now" in args
    if cmd == "daemon-reload":
        return 0
    if cmd == "is-enabled":
        return 0 if all(os.path.exists(os.path.join(STATE, u + ".enabled")) for u in units) else 1
    if cmd == "is-active":
        return 0 if all(active(u) for u in units) else 3
    rc = 0
    for u in units:
        if cmd == "enable":
            os.makedirs(STATE, exist_ok=True)
            open(os.path.join(STATE, u + ".enabled"), "w").close()
            rc |= start(u) if now and not active(u) else 0
        elif cmd == "start":
            rc |= 0 if active(u) else start(u)
        elif cmd == "stop":
            rc |= stop(u)
        elif cmd in ("restart", "try-restart"):
            if cmd == "restart" or active(u):
                stop(u)
                rc |= start(u)
        else:
            sys.exit(f"systemctl (package-root-check): '{cmd}' is not supported")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
