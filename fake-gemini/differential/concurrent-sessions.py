#!/usr/bin/env python3
"""Do concurrent real Gemini CLI runs in one project lose each other's sessions?

Runs the real CLI offline against fake-gemini-api (a scratch HOME, one project directory) in
rounds of overlapping runs, then checks that every session a run answered in is still listed by
`--list-sessions`, still has its file under ~/.gemini/tmp/<project>/chats, and can be resumed.

The CLI's start-up clean-up (cleanupExpiredSessions, on by default) deletes every session file of
the project that holds no resumable message yet, except the starting run's own. A new run's file
holds only a header until its first user message is recorded, which happens after the router
call; so a start that lands in another run's window loses that run's session. A local mock answers
the router in a millisecond; `--router-delay-ms` (default 800) holds each `:generateContent`
request in a small relay, as the real API's round trip does.

    python3 fake-gemini/differential/concurrent-sessions.py                  # every round
    python3 fake-gemini/differential/concurrent-sessions.py --rounds burst   # one round
    python3 fake-gemini/differential/concurrent-sessions.py --rounds server-burst,server-mixed
    FAKE_GEMINI_REAL_CLI=/path/node_modules/.bin/gemini python3 …           # another install

Needs node, the real CLI (FAKE_GEMINI_REAL_CLI, else the differential suite's cache
~/.cache/fake-gemini/differential/gemini-cli-<CLI_VERSION>), and fake-gemini-api
(FAKE_GEMINI_API_BIN, else target/debug/fake-gemini-api: `cargo build -p fake-gemini`).
The `server-*` rounds send the same calls through geminicli-mcp (GEMINICLI_MCP_BIN, else
target/debug/geminicli-mcp) over stdio, to check that its start gate keeps every session; the
`warm-*` rounds do the same on its warm backend (GEMINICLI_MCP_BACKEND=acp: one `gemini --acp`
agent, a session per call, prompted at once), where spare sessions wait with no message yet.
Exit status 0 when no session was lost, 1 when one was, 2 when the harness itself failed.
"""

import argparse
import datetime
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent


def real_cli():
    if os.environ.get("FAKE_GEMINI_REAL_CLI"):
        return os.environ["FAKE_GEMINI_REAL_CLI"]
    version = (HERE / "CLI_VERSION").read_text().strip()
    return str(pathlib.Path.home() / ".cache/fake-gemini/differential"
               / f"gemini-cli-{version}" / "node_modules/.bin/gemini")


def api_bin():
    return os.environ.get("FAKE_GEMINI_API_BIN") or str(REPO / "target/debug/fake-gemini-api")


class Relay:
    """A TCP relay in front of fake-gemini-api that holds each `:generateContent` request (the
    router's call) for `delay` seconds before passing it on; everything else passes at once."""

    def __init__(self, upstream_port, delay):
        self.upstream_port = upstream_port
        self.delay = delay
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            client, _ = self.sock.accept()
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))

        def back():
            try:
                while True:
                    data = upstream.recv(65536)
                    if not data:
                        break
                    client.sendall(data)
            except OSError:
                pass
            finally:
                try:
                    client.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        threading.Thread(target=back, daemon=True).start()
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = client.recv(65536)
                    if not data:
                        return
                    buf += data
                head, rest = buf.split(b"\r\n\r\n", 1)
                m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                length = int(m.group(1)) if m else 0
                while len(rest) < length:
                    data = client.recv(65536)
                    if not data:
                        return
                    rest += data
                body, buf = rest[:length], rest[length:]
                if b":generateContent" in head.split(b"\r\n", 1)[0]:
                    time.sleep(self.delay)
                upstream.sendall(head + b"\r\n\r\n" + body)
        except OSError:
            pass
        finally:
            try:
                upstream.shutdown(socket.SHUT_WR)
            except OSError:
                pass


class Project:
    """A scratch HOME and project directory, and the CLI pointed at the relay."""

    def __init__(self, root, base_url, cli):
        self.home = root / "home"
        self.cwd = root / "proj"
        (self.home / ".gemini").mkdir(parents=True)
        self.cwd.mkdir()
        (self.home / ".gemini/settings.json").write_text(
            json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
        self.env = {
            "PATH": os.environ["PATH"], "HOME": str(self.home), "TERM": "dumb", "NO_COLOR": "1",
            "GEMINI_API_KEY": "fake", "GOOGLE_GEMINI_BASE_URL": base_url,
        }
        self.cli = cli
        self.runs = []

    def start(self, label, prompt, resume=None):
        args = [self.cli, "-p", prompt, "-o", "stream-json", "--skip-trust"]
        if resume:
            args.append(f"--resume={resume}")
        p = subprocess.Popen(args, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
        run = {"label": label, "proc": p, "resume": resume, "started": time.time()}
        self.runs.append(run)
        return run

    @staticmethod
    def finish(run, timeout=180):
        try:
            out, err = run["proc"].communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(run["proc"].pid, 9)
            out, err = run["proc"].communicate()
        run["exit"] = run["proc"].returncode
        run["stderr"] = err.decode(errors="replace")
        run["session"] = None
        for line in out.decode(errors="replace").splitlines():
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("type") == "init":
                run["session"] = ev.get("session_id")
        return run

    def plain(self, *args):
        p = subprocess.run([self.cli, *args], cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=180)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

    def listed(self):
        _, out, _ = self.plain("--list-sessions")
        return re.findall(r"\[([0-9a-f-]{36})\]\s*$", out, re.M)

    def files(self):
        chats = list((self.home / ".gemini/tmp").glob("*/chats"))
        return sorted(p.name for c in chats for p in c.glob("session-*")) if chats else []


def wait_minute_boundary(margin):
    """Sleeps until `margin` seconds before the next clock minute."""
    now = datetime.datetime.now()
    left = 60 - now.second - now.microsecond / 1e6 - margin
    if left < 0:
        left += 60
    time.sleep(left)


def slow(tag):
    # Every chunk 400 ms apart: a run stays mid-answer for ~4 s while others start.
    return f"{tag} [[fake-gemini:success count=10 interval-ms=400]]"


def round_burst(pj, n):
    """`n` new runs started at once."""
    runs = [pj.start(f"burst{i}", f"burst {i} [[fake-gemini:success]]") for i in range(n)]
    return [Project.finish(r) for r in runs]


def round_staggered(pj, n):
    """`n` new slow runs, each started 1.5 s after the previous: every start lands while earlier
    runs are mid-answer."""
    runs = []
    for i in range(n):
        runs.append(pj.start(f"stagger{i}", slow(f"stagger {i}")))
        time.sleep(1.5)
    return [Project.finish(r) for r in runs]


def round_resume_mixed(pj, n):
    """Resumes of sessions made before, each concurrent with new runs."""
    base = [Project.finish(pj.start(f"base{i}", f"base {i} [[fake-gemini:success]]"))
            for i in range(2)]
    runs = []
    for i, b in enumerate(base):
        if b["session"]:
            runs.append(pj.start(f"resume{i}", slow(f"resume {i}"), resume=b["session"]))
        runs.append(pj.start(f"mixed{i}", f"mixed {i} [[fake-gemini:success]]"))
    for i in range(max(0, n - len(runs))):
        runs.append(pj.start(f"mixed-extra{i}", slow(f"extra {i}")))
    return base + [Project.finish(r) for r in runs]


def round_minute(pj, n):
    """Sessions made just before a clock minute, resumed after it, concurrent with new runs."""
    wait_minute_boundary(12)
    base = [pj.start(f"pre-minute{i}", f"pre {i} [[fake-gemini:success]]") for i in range(2)]
    base = [Project.finish(r) for r in base]
    wait_minute_boundary(-1)  # one second into the next minute
    runs = []
    for i, b in enumerate(base):
        if b["session"]:
            runs.append(pj.start(f"post-minute-resume{i}", slow(f"post {i}"), resume=b["session"]))
    for i in range(max(1, n - len(runs))):
        runs.append(pj.start(f"post-minute-new{i}", f"new {i} [[fake-gemini:success]]"))
    return base + [Project.finish(r) for r in runs]


class Server:
    """geminicli-mcp over stdio in the project, running the real CLI."""

    def __init__(self, pj, backend="oneshot"):
        exe = os.environ.get("GEMINICLI_MCP_BIN") or str(REPO / "target/debug/geminicli-mcp")
        env = dict(pj.env, GEMINI_CLI_BIN=pj.cli, GEMINICLI_MCP_MAX_CONCURRENCY="8",
                   GEMINICLI_MCP_BACKEND=backend)
        self.proc = subprocess.Popen([exe], cwd=pj.cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.replies = {}
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "concurrent-sessions", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.proc.stdout:
            msg = json.loads(line)
            if "id" in msg and ("result" in msg or "error" in msg):
                with self.cv:
                    self.replies[msg["id"]] = msg
                    self.cv.notify_all()

    def _send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def start(self, method, params):
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, rid, timeout=300):
        with self.cv:
            self.cv.wait_for(lambda: rid in self.replies, timeout)
            return self.replies.get(rid)

    def request(self, method, params):
        return self.wait(self.start(method, params))

    def call(self, label, prompt, resume=None):
        args = {"prompt": prompt}
        if resume:
            args["session_id"] = resume
        return {"label": label, "rid": self.start("tools/call", {"name": "gemini_prompt",
                                                                 "arguments": args}),
                "resume": resume}

    def finish(self, run):
        reply = self.wait(run["rid"]) or {}
        sc = reply.get("result", {}).get("structuredContent", {})
        run["exit"] = 1 if reply.get("result", {}).get("isError", True) else 0
        run["session"] = sc.get("sessionId")
        run["stderr"] = sc.get("message", json.dumps(reply)[:300])
        return run

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def round_server_burst(pj, n, backend="oneshot"):
    """`n` new calls at once through the server, half of them slow."""
    srv = Server(pj, backend)
    runs = [srv.call(f"server{i}", slow(f"server {i}") if i % 2 else f"server {i} [[fake-gemini:success]]")
            for i in range(n)]
    runs = [srv.finish(r) for r in runs]
    srv.close()
    return runs


def round_server_mixed(pj, n, backend="oneshot"):
    """Through the server: two sessions made, then resumed while new calls start."""
    srv = Server(pj, backend)
    base = [srv.finish(srv.call(f"server-base{i}", f"base {i} [[fake-gemini:success]]"))
            for i in range(2)]
    runs = []
    for i, b in enumerate(base):
        if b["session"]:
            runs.append(srv.call(f"server-resume{i}", slow(f"resume {i}"), resume=b["session"]))
        runs.append(srv.call(f"server-mixed{i}", f"mixed {i} [[fake-gemini:success]]"))
    for i in range(max(0, n - len(runs))):
        runs.append(srv.call(f"server-extra{i}", slow(f"extra {i}")))
    runs = base + [srv.finish(r) for r in runs]
    srv.close()
    return runs


def round_warm_two_bursts(pj, n):
    """Warm backend: a burst of `n` calls, then a second one (half slow) while the agent's spare
    sessions wait; the listings that judge the round are CLI starts, so their clean-up runs after."""
    srv = Server(pj, "acp")
    first = [srv.call(f"warm-a{i}", f"a {i} [[fake-gemini:success]]") for i in range(n)]
    first = [srv.finish(r) for r in first]
    time.sleep(1)
    second = [srv.call(f"warm-b{i}", slow(f"b {i}") if i % 2 else f"b {i} [[fake-gemini:success]]")
              for i in range(n)]
    second = [srv.finish(r) for r in second]
    srv.close()
    return first + second


ROUNDS = {
    "burst": round_burst,
    "staggered": round_staggered,
    "resume-mixed": round_resume_mixed,
    "minute": round_minute,
    "server-burst": round_server_burst,
    "server-mixed": round_server_mixed,
    "warm-burst": lambda pj, n: round_server_burst(pj, n, "acp"),
    "warm-mixed": lambda pj, n: round_server_mixed(pj, n, "acp"),
    "warm-two-bursts": lambda pj, n: round_warm_two_bursts(pj, n),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", default="burst,staggered,resume-mixed,minute",
                    help="comma-separated: " + ", ".join(ROUNDS) + " (default: the CLI alone)")
    ap.add_argument("-n", type=int, default=5, help="runs per round (default 5)")
    ap.add_argument("--router-delay-ms", type=int, default=800)
    ap.add_argument("--keep", action="store_true", help="keep the scratch directories")
    a = ap.parse_args()

    cli, api = real_cli(), api_bin()
    for path, what in ((cli, "the real CLI"), (api, "fake-gemini-api")):
        if not os.path.exists(path):
            print(f"missing {what}: {path}", file=sys.stderr)
            return 2
    version = subprocess.run([cli, "--version"], capture_output=True, text=True).stdout.strip()
    server = subprocess.Popen([api, "--port", "0"], stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    relay = Relay(int(url.rsplit(":", 1)[1]), a.router_delay_ms / 1000)
    base_url = f"http://127.0.0.1:{relay.port}"
    print(f"gemini {version}; router delay {a.router_delay_ms} ms; {a.n} runs per round")

    lost_total = 0
    try:
        for name in a.rounds.split(","):
            root = pathlib.Path(tempfile.mkdtemp(prefix=f"concurrent-{name}-"))
            pj = Project(root, base_url, cli)
            began = time.time()
            runs = ROUNDS[name](pj, a.n)
            took = time.time() - began
            # A later start is what runs the clean-up: list twice (two starts) before judging.
            pj.listed()
            listed = set(pj.listed())
            files = pj.files()
            lost = []
            print(f"\n== round {name} ({root}), {took:.1f} s")
            for r in runs:
                sid = r["session"]
                short = sid[:8] if sid else None
                has_file = bool(short) and any(f.endswith(f"-{short}.jsonl") for f in files)
                ok = r["exit"] == 0 and sid in listed and has_file
                print(f"  {r['label']:<22} exit {r['exit']} session {sid} "
                      f"listed={sid in listed} file={has_file}")
                if r["exit"] != 0:
                    print("    stderr: " + r["stderr"].strip().replace("\n", "\n    "))
                if not ok:
                    lost.append(r)
            # Every session that survived must resume; resumes run one at a time.
            for sid in sorted(s for s in {r["session"] for r in runs} if s in listed):
                resumed = Project.finish(pj.start("check", "check [[fake-gemini:success]]", resume=sid))
                if resumed["exit"] != 0 or resumed["session"] != sid:
                    print(f"  resume of {sid}: exit {resumed['exit']}: {resumed['stderr'].strip()}")
                    lost.append(resumed)
            print(f"  listed after the round: {len(listed)}; files: {len(files)}")
            for f in files:
                print(f"    {f}")
            print(f"  lost: {len(lost)} of {len(runs)}")
            lost_total += len(lost)
            if not a.keep:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        server.kill()
    print(f"\nsessions lost in all rounds: {lost_total}")
    return 1 if lost_total else 0


if __name__ == "__main__":
    sys.exit(main())
