#!/usr/bin/env python3
"""Smoke-test an MCP server that speaks the stdio transport.

Starts the server as a child process, performs the handshake
(initialize, then notifications/initialized), lists its tools and,
if asked, calls one. Prints what the server answered and exits non-zero
on the first problem: a non-JSON line on stdout, an error response, a
missing field, or no answer within the timeout.

Usage:
    python3 mcp_smoke.py [--call TOOL] [--args JSON] [--timeout SECONDS] -- COMMAND [ARG...]

Examples:
    python3 mcp_smoke.py -- cargo run --quiet --release
    python3 mcp_smoke.py --call add_note --args '{"text": "hello"}' -- python3 server.py

Standard library only; Python 3.8 or newer.
"""

import argparse
import json
import queue
import subprocess
import sys
import threading

PROTOCOL_VERSION = "2025-06-18"


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


class Server:
    def __init__(self, command, timeout):
        self.timeout = timeout
        self.next_id = 1
        try:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None,  # the server's logs go straight to our stderr
                text=True,
                bufsize=1,
            )
        except OSError as error:
            fail(f"cannot start {command[0]}: {error}")
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message):
        # The stdio transport is one JSON message per line, no embedded newlines.
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def request(self, method, params):
        request_id = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            try:
                line = self.lines.get(timeout=self.timeout)
            except queue.Empty:
                fail(f"no answer to {method} within {self.timeout}s")
            if line is None:
                fail(f"the server exited (status {self.process.poll()}) before answering {method}")
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                fail(f"stdout must carry only JSON-RPC messages; got: {line[:200]}")
            if message.get("id") != request_id:
                # A notification or a request from the server (logging, progress): show it and go on.
                print(f"(server sent {message.get('method', 'a message')})")
                continue
            if "error" in message:
                fail(f"{method} returned an error: {json.dumps(message['error'])}")
            if "result" not in message:
                fail(f"{method} answer has no result: {line[:200]}")
            return message["result"]

    def close(self):
        try:
            self.process.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--call", metavar="TOOL", help="call this tool after listing")
    parser.add_argument("--args", default="{}", help="JSON object of arguments for --call")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each answer")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the server command, after --")
    options = parser.parse_args()
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    if not command:
        parser.error("give the server command after --")
    try:
        arguments = json.loads(options.args)
    except json.JSONDecodeError as error:
        parser.error(f"--args is not JSON: {error}")

    server = Server(command, options.timeout)
    try:
        init = server.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "mcp-smoke", "version": "1.0"},
            },
        )
        info = init.get("serverInfo", {})
        print(f"server: {info.get('name', '?')} {info.get('version', '?')}, protocol {init.get('protocolVersion')}")
        print(f"capabilities: {', '.join(sorted(init.get('capabilities', {}))) or '(none)'}")
        server.notify("notifications/initialized")

        tools = server.request("tools/list", {}).get("tools", [])
        print(f"tools ({len(tools)}):")
        for tool in tools:
            for field in ("name", "inputSchema"):
                if field not in tool:
                    fail(f"a tool has no {field}: {json.dumps(tool)[:200]}")
            if not tool.get("description"):
                print(f"  warning: {tool['name']} has no description; models choose tools by it")
            required = tool["inputSchema"].get("required", [])
            print(f"  - {tool['name']}({', '.join(tool['inputSchema'].get('properties', {}))})"
                  f"{'  required: ' + ', '.join(required) if required else ''}")

        if options.call:
            result = server.request("tools/call", {"name": options.call, "arguments": arguments})
            flag = "ERROR RESULT" if result.get("isError") else "ok"
            print(f"call {options.call}: {flag}")
            for block in result.get("content", []):
                text = block.get("text", json.dumps(block))
                print(f"  {text}")
        print("PASS")
    finally:
        server.close()


if __name__ == "__main__":
    main()
