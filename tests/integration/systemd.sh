#!/bin/sh
# SPDX-License-Identifier: MIT
# systemd glue without systemd: READY=1 / WATCHDOG=1 / STOPPING=1 arrive on
# NOTIFY_SOCKET, and a socket passed with LISTEN_FDS is used.
. "$(dirname "$0")/lib.sh"
if ! "$UCCLSVCD" --version | grep -q '+systemd'; then
	echo "built without libsystemd: skip"; exit 77
fi
command -v python3 >/dev/null || { echo "no python3: skip"; exit 77; }
python3 - "$UCCLSVCD" "$UCCLCTL" "$TMPD" <<'PY'
import os, socket, subprocess, sys, time
daemon, ctl, tmp = sys.argv[1:4]
fails = 0
def check(ok, what):
    global fails
    print(("ok" if ok else "not ok") + " - " + what)
    fails += 0 if ok else 1

# notify socket
nsock = os.path.join(tmp, "notify.sock")
n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
n.bind(nsock)
n.settimeout(5)
# control socket made here and passed as fd 3 (socket activation)
csock = os.path.join(tmp, "act.sock")
l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
l.bind(csock)
l.listen(16)
lfd = l.fileno()
env = dict(os.environ, NOTIFY_SOCKET=nsock, WATCHDOG_USEC="400000", LISTEN_FDS="1")
env.pop("WATCHDOG_PID", None)
log = open(os.path.join(tmp, "daemon.log"), "w")
# the shell keeps its pid across exec, so LISTEN_PID=$$ names the daemon
script = ("[ %d = 3 ] || exec 3<&%d; LISTEN_PID=$$ exec \"$0\" --runtime-dir \"$1\"" % (lfd, lfd))
p = subprocess.Popen(["sh", "-c", script, daemon, os.path.join(tmp, "unused")], env=env,
                     pass_fds=(lfd,), stderr=log)
msgs = []
def wait_for(word, secs=5):
    end = time.time() + secs
    while time.time() < end:
        if any(word in m for m in msgs):
            return True
        try:
            msgs.append(n.recv(4096).decode())
        except socket.timeout:
            pass
    return any(word in m for m in msgs)
check(wait_for("READY=1"), "READY=1 after start-up")
r = subprocess.run([ctl, "--socket", csock, "status"], capture_output=True, text=True)
check(r.returncode == 0 and "version" in r.stdout, "ucclctl answers on the socket-activated socket")
check(not os.path.exists(os.path.join(tmp, "unused", "ucclsvcd.sock")), "no socket of its own was created")
check(wait_for("WATCHDOG=1", 3), "watchdog pings arrive")
p.terminate()
check(wait_for("STOPPING=1"), "STOPPING=1 on SIGTERM")
check(p.wait(10) == 0, "exit status 0")
# two fds where the unit passes one: refused with the reason (they were
# ignored, and the daemon then failed on the unit's own socket path)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
ufd = u.fileno()
log2 = open(os.path.join(tmp, "daemon2.log"), "w")
script2 = ("exec 3<&%d 4<&%d; LISTEN_PID=$$ exec \"$0\" --runtime-dir \"$1\"" % (lfd, ufd))
p2 = subprocess.Popen(["sh", "-c", script2, daemon, os.path.join(tmp, "unused2")],
                      env=dict(env, LISTEN_FDS="2"), pass_fds=(lfd, ufd), stderr=log2)
try:
    rc2 = p2.wait(10)
except subprocess.TimeoutExpired:
    p2.kill()                  # it ran on a socket of its own
    rc2 = p2.wait()
log2.close()
txt = open(os.path.join(tmp, "daemon2.log")).read()
check(rc2 == 1 and "expected one listening unix stream socket (LISTEN_FDS)" in txt,
      "two passed fds are refused, saying why (rc %d)" % rc2)
sys.exit(1 if fails else 0)
PY
rc=$?
DAEMON_PID=
[ $rc -eq 0 ] || FAILS=1
finish
