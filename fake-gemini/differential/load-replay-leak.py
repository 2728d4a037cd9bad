#!/usr/bin/env python3
"""Does a continued session's old history leak into the answer? The real Gemini CLI against
fake-gemini-api, through geminicli-mcp: sessions with 300 KB-1 MB of history (big answers, a
turn with thoughts, one with a tool call) are made by one server, then continued (`session_id`
of `gemini_prompt`, `SESSION_ID` of the acp set's `gemini`) by a fresh server, whose agents must
`session/load` them. A continuation leaks when its answer is not exactly its own text (any byte
of an earlier answer in front of it, or only old text). Some continuations read the server's
answer slowly (the client sleeps before it reads).

    python3 fake-gemini/differential/load-replay-leak.py --sessions 50 \\
        --server target/debug/geminicli-mcp [--server OLD_BINARY ...]

Each `--server` continues every session once, in its own fresh server (and agents), and reports
its count. Offline: a fake API key, the scripted API on loopback, a private HOME.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time


def here(*p):
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), *p)


class Server:
    """One geminicli-mcp over stdio, with the MCP handshake done."""

    def __init__(self, binary, env, cwd):
        self.p = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(env["HOME"], "server.err"), "ab"),
                                  env=env, cwd=cwd)
        self.next = 1
        self.call_raw("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "load-replay-leak", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, m):
        self.p.stdin.write((json.dumps(m) + "\n").encode())
        self.p.stdin.flush()

    def call_raw(self, method, params, slow=0.0):
        i = self.next
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        if slow:
            time.sleep(slow)
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its stdout")
            m = json.loads(line)
            if m.get("id") == i and "method" not in m:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]

    def tool(self, name, args, slow=0.0):
        return self.call_raw("tools/call", {"name": name, "arguments": args}, slow)

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def answer_of(result, acp):
    sc = result.get("structuredContent") or {}
    if result.get("isError"):
        return None, (sc.get("message") or sc.get("error") or json.dumps(result)[:300])
    return (sc.get("agent_messages") if acp else sc.get("response")), None


def big(tag, size):
    # An answer that opens a code fence: the CLI's loop detection leaves it alone.
    unit = f"```{tag} "
    n = max(1, size // len(unit))
    return f'[[fake-gemini:success text="{unit}" repeat={n | 1}]]'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--server", action="append", required=True)
    ap.add_argument("--gemini", default=os.environ.get("FAKE_GEMINI_REAL_CLI", ""))
    ap.add_argument("--api", default="")
    ap.add_argument("--seed", type=int, default=41)
    a = ap.parse_args()
    if not a.gemini:
        sys.exit("--gemini (or FAKE_GEMINI_REAL_CLI): the real CLI's bin/gemini")
    api_bin = a.api or os.path.join(os.path.dirname(os.path.abspath(a.server[0])), "fake-gemini-api")
    rnd = random.Random(a.seed)
    root = tempfile.mkdtemp(prefix="load-replay-leak-")
    home, proj = os.path.join(root, "home"), os.path.join(root, "proj")
    os.makedirs(os.path.join(home, ".gemini"))
    os.makedirs(proj)
    with open(os.path.join(home, ".gemini", "settings.json"), "w") as f:
        json.dump({"security": {"auth": {"selectedType": "gemini-api-key"}}}, f)
    api = subprocess.Popen([api_bin, "--port", "0"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
    url = api.stdout.readline().decode().strip()
    env = {"PATH": os.environ["PATH"], "HOME": home, "GEMINI_API_KEY": "fake",
           "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_CLI_BIN": a.gemini, "NO_COLOR": "1",
           "TERM": "dumb", "GEMINI_TELEMETRY_ENABLED": "false", "GEMINICLI_MCP_TOOLSETS": "acp",
           "GEMINICLI_MCP_ACP_MAX_TURNS": "1000"}
    try:
        # The sessions: histories of 300 KB-1 MB, with thoughts and a tool call on the way.
        made = []
        s = Server(a.server[-1], env, proj)
        t0 = time.time()
        for n in range(a.sessions):
            acp = n % 2 == 1
            total = rnd.randint(300_000, 1_000_000)
            first = rnd.randint(total // 4, total // 2)
            turns = ["[[fake-gemini:thinking]]", big(f"s{n}-old-a", first),
                     "[[fake-gemini:tool-call]]", big(f"s{n}-old-b", total - first)]
            sid = None
            for prompt in turns:
                if acp:
                    args = {"prompt": prompt} | ({"SESSION_ID": sid} if sid else {})
                    r = s.tool("gemini", args)
                    sid = sid or (r.get("structuredContent") or {}).get("SESSION_ID")
                    if sid is None or r.get("isError"):
                        raise RuntimeError(f"making session {n}: {json.dumps(r)[:300]}")
                    # The acp set reuses one session per workspace: start the next one afresh.
                else:
                    args = {"prompt": prompt} | ({"session_id": sid} if sid else {})
                    r = s.tool("gemini_prompt", args)
                    if r.get("isError"):
                        raise RuntimeError(f"making session {n}: {json.dumps(r)[:300]}")
                    sid = sid or r["structuredContent"]["sessionId"]
            if acp:
                s.tool("reset_session", {})
            made.append((sid, acp, total))
            print(f"made session {n + 1}/{a.sessions}: {sid} ({total // 1000} KB of answers, "
                  f"{'acp gemini' if acp else 'gemini_prompt'})", flush=True)
        s.close()
        print(f"made {len(made)} sessions in {time.time() - t0:.0f} s", flush=True)
        for binary in a.server:
            leaks, failures = 0, 0
            s = Server(binary, env, proj)
            t0 = time.time()
            for n, (sid, acp, total) in enumerate(made):
                want = f"fresh answer {n} via {os.path.basename(binary)}"
                prompt = f'[[fake-gemini:success text="{want}"]]'
                slow = 2.0 if n % 10 == 9 else 0.0
                if acp:
                    r = s.tool("gemini", {"prompt": prompt, "SESSION_ID": sid}, slow)
                else:
                    r = s.tool("gemini_prompt", {"prompt": prompt, "session_id": sid}, slow)
                got, err = answer_of(r, acp)
                if err is not None:
                    failures += 1
                    print(f"  {n}: error: {err[:200]}", flush=True)
                elif got != want:
                    leaks += 1
                    print(f"  {n}: LEAK ({total // 1000} KB history): answer of {len(got)} "
                          f"characters, starting {got[:40]!r}", flush=True)
            s.close()
            print(f"{binary}: {leaks} of {len(made)} continuations leaked old history, "
                  f"{failures} failed ({time.time() - t0:.0f} s)", flush=True)
    finally:
        api.kill()
        if os.environ.get("KEEP"):
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
