#!/usr/bin/env python3
"""The files of the server's src/ whose code one `gemini_prompt` call runs, measured, not read.

Runs the server under valgrind's callgrind with instrumentation off, answers a first call in a
scratch workspace (on the warm backend, that starts the agent), then switches instrumentation on
for the second call alone and lists every file of src/ a function executed in that window came
from (inlined code counts where it was written; background work the call set off, such as a spare
session, counts too). fake-gemini stands in for the CLI.

Usage: python3 examples/files_per_call.py [acp|oneshot] [BIN_DIR]
  BIN_DIR: where a debug build's geminicli-mcp and fake-gemini are (default: target/debug).
Needs valgrind (callgrind, callgrind_control, callgrind_annotate) on PATH.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "acp"
    bins = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "target/debug"))
    with tempfile.TemporaryDirectory() as tmp:
        home, ws, out = (os.path.join(tmp, n) for n in ("home", "ws", "callgrind.out"))
        os.makedirs(home)
        os.makedirs(ws)
        env = dict(
            os.environ,
            HOME=home,
            GEMINI_CLI_BIN=os.path.join(bins, "fake-gemini"),
            GEMINICLI_MCP_BACKEND=backend,
        )
        server = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no",
             f"--callgrind-out-file={out}", os.path.join(bins, "geminicli-mcp")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, cwd=ws,
        )

        def send(message: dict) -> None:
            server.stdin.write((json.dumps(message) + "\n").encode())
            server.stdin.flush()

        def answer(request_id: int) -> dict:
            for line in server.stdout:
                message = json.loads(line)
                if message.get("id") == request_id:
                    return message
            raise SystemExit(f"the server closed stdout before answering request {request_id}")

        def prompt(request_id: int, text: str) -> None:
            send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
                "name": "gemini_prompt",
                "arguments": {"prompt": f'[[fake-gemini:success text="{text}"]]', "workspace": ws},
            }})
            result = answer(request_id)["result"]
            if result.get("isError"):
                raise SystemExit(f"the call failed: {result['content'][0]['text']}")

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "files-per-call", "version": "1"}}})
        answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        prompt(2, "first")
        time.sleep(3)  # the first call's aftermath (spare sessions) settles outside the window
        subprocess.run(["callgrind_control", "-i", "on", str(server.pid)], check=True,
                       capture_output=True)
        prompt(3, "second")
        subprocess.run(["callgrind_control", "-i", "off", str(server.pid)], check=True,
                       capture_output=True)
        server.stdin.close()
        server.wait(timeout=120)
        listing = subprocess.run(["callgrind_annotate", "--threshold=100", out],
                                 capture_output=True, text=True, check=True).stdout
    src = os.path.join(ROOT, "src") + os.sep
    files = sorted({m[len(src):] for m in re.findall(re.escape(src) + r"[^:> ]+\.rs", listing)})
    print(f"{backend}: a call runs code of {len(files)} files of src/")
    for f in files:
        print(f"  {f}")


if __name__ == "__main__":
    main()
