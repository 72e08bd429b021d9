#!/usr/bin/env python3
"""Hostile HTTP requests against `headwise serve` (issue 12).

Starts `headwise serve` on stories260K (127.0.0.1, an ephemeral port, --api-key) and
sends it what an attacker or a broken client would: malformed, truncated and deeply
nested JSON, bodies over the limit, wrong types and out-of-range values for every
field, invalid UTF-8, unknown models, routes and methods, a wrong Content-Type, bad
API keys, prompts longer than the context, token ids outside the vocabulary, header
floods, a client that sends half a body and stalls. For each request it checks what
the project promises:

  - a 4xx answer with an OpenAI-style error body ({"error": {"message", "type",
    "param", "code"}}) naming the culprit: the field in "param" where there is one,
    else a message that says what was wrong;
  - an answer within 10 s (the stalled client: the server's read timeout, 5 s);
  - the server still alive and answering /health afterwards (also while a client
    stalls), no sanitizer report on its stderr (ASan build), its peak RSS under
    512 MiB, and exit status 0 at SIGTERM.

Valid controls (a completion, a chat, a stream, token ids) must still answer 200.
Every outcome is counted as in hostile_corpus.py: refused cleanly / unclear message /
crash / hang / silent acceptance / over the bounds. Exit status 0 only when every
hostile request was refused cleanly and every control passed.

  server_hostile.py --headwise BUILD/headwise --shared ../shared [--only REGEX] [-v]
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from hostile_corpus import RSS_LIMIT_MIB, SANITIZER_MARKS, TIME_LIMIT_S, common_arguments, sanitizer_env

KEY = "hostile-test-key"


class Case:
    def __init__(self, name, raw, want=(400,), param=None, msg=None, valid=False, run=None):
        self.name = name
        self.raw = raw          # the request's bytes (or None when `run` drives it)
        self.want = want        # acceptable statuses
        self.param = param      # the error's "param" must be this (when given)
        self.msg = msg          # and its message must match this regex (when given)
        self.valid = valid      # a control: must answer 200
        self.run = run          # a custom driver: run(port) -> (status, body, seconds, note)


# ---- requests -------------------------------------------------------------------------------

def request(method, path, body=b"", auth=True, ctype="application/json", headers=(), length=None):
    if isinstance(body, str):
        body = body.encode()
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    h = [b"%s %s HTTP/1.1" % (method.encode(), path.encode()), b"Host: 127.0.0.1", b"Connection: close"]
    if auth:
        h.append(b"Authorization: Bearer " + KEY.encode())
    if ctype is not None and method in ("POST", "PUT", "PATCH"):
        h.append(b"Content-Type: " + ctype.encode())
    if method in ("POST", "PUT", "PATCH") or body:
        h.append(b"Content-Length: " + str(len(body) if length is None else length).encode())
    h.extend(x if isinstance(x, bytes) else x.encode() for x in headers)
    return b"\r\n".join(h) + b"\r\n\r\n" + body


def post(path, body, **kw):
    return request("POST", path, body, **kw)


def completion(**fields):
    return post("/v1/completions", dict({"prompt": "Once upon a time", "max_tokens": 2}, **fields))


def chat(**fields):
    return post("/v1/chat/completions",
                dict({"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 2}, **fields))


def parse_response(data):
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    if not m:
        return None, body
    if re.search(rb"(?im)^transfer-encoding: *chunked", head):  # a stream: keep the payload lines
        body = b"".join(l + b"\n" for l in body.split(b"\r\n") if l.startswith(b"data:"))
    return int(m.group(1)), body


def complete(data):
    """Whether `data` holds a whole response with a Content-Length."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?im)^content-length: *(\d+)", head) if sep else None
    return bool(m) and len(rest) >= int(m.group(1))


def read_answer(s, t0, timeout, close=True):
    """Reads from `s` until a whole answer (its Content-Length) is in, the server closes
    the connection (a stream ends so), or `timeout` seconds from t0 pass."""
    data, note = b"", ""
    try:
        while time.monotonic() - t0 < timeout and not complete(data):
            s.settimeout(max(0.05, timeout - (time.monotonic() - t0)))
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        note = "no end of answer within %.0f s" % timeout
    except OSError as e:
        note = "connection: %s" % e
    if close:
        s.close()
    return data, note


def exchange(port, raw, timeout=TIME_LIMIT_S):
    """Sends `raw` (from a second thread: the server may answer, e.g. 413, before it has
    read everything) and reads the answer."""
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)

    def send():
        try:
            s.sendall(raw)
        except OSError:
            pass  # the server answered and closed early: what it sent is read below
    threading.Thread(target=send, daemon=True).start()
    data, note = read_answer(s, t0, timeout)
    status, body = parse_response(data)
    return status, body, time.monotonic() - t0, note


def health(port, timeout=5.0):
    try:
        status, _, _, _ = exchange(port, request("GET", "/health", auth=False), timeout)
        return status == 200
    except OSError:
        return False


def stalled(partial, closing_answers):
    """A client that sends `partial` and then nothing: the server must give up within
    the time bound (its read timeout is 5 s) and answer /health meanwhile. With
    `closing_answers`, closing the connection without an answer counts as one (a
    request that never finished its headers has nothing to answer)."""
    def run(port):
        t0 = time.monotonic()
        s = socket.create_connection(("127.0.0.1", port), timeout=TIME_LIMIT_S)
        s.sendall(partial)
        time.sleep(0.5)
        healthy_meanwhile = health(port, 2.0)
        data, note = read_answer(s, t0, TIME_LIMIT_S)
        status, body = parse_response(data)
        if status is None and not note and closing_answers:
            status, body = 408, b'{"error":{"message":"closed (read timeout)","type":"x","param":null,"code":null}}'
        if not healthy_meanwhile:
            note += " /health did not answer while the client stalled"
            status = None
        return status, body, time.monotonic() - t0, note
    return run


def keep_alive_after(first):
    """`first` (refused), its answer, then GET /v1/models on the same keep-alive
    connection: the refused request's body must have been consumed, not parsed as the
    next request. (httplib 0.11 does not take pipelined requests: each waits for the
    answer before it.)"""
    def run(port):
        t0 = time.monotonic()
        s = socket.create_connection(("127.0.0.1", port), timeout=TIME_LIMIT_S)
        try:
            s.sendall(first.replace(b"Connection: close", b"Connection: keep-alive"))
            status, body = parse_response(read_answer(s, t0, TIME_LIMIT_S, close=False)[0])
            s.sendall(request("GET", "/v1/models"))
            second, _ = parse_response(read_answer(s, t0, TIME_LIMIT_S, close=False)[0])
        except OSError as e:
            return None, b"", time.monotonic() - t0, "connection: %s" % e
        finally:
            s.close()
        if second != 200:
            return None, body, time.monotonic() - t0, "the next request on the connection got %s, not 200" % second
        return status, body, time.monotonic() - t0, ""
    return run


# ---- the cases -------------------------------------------------------------------------------

def build_cases():
    C = []
    add = lambda *a, **k: C.append(Case(*a, **k))
    body_re = r"request body"

    # Controls: the same server answers good requests.
    add("control-completion", completion(), valid=True)
    add("control-chat", chat(), valid=True)
    add("control-stream", completion(stream=True), valid=True)
    add("control-token-ids", post("/v1/completions", {"prompt": [1, 400, 511], "max_tokens": 2}), valid=True)
    add("control-health-no-key", request("GET", "/health", auth=False), valid=True)
    # RFC 8259 lets a parser ignore a UTF-8 byte order mark.
    add("control-bom", post("/v1/completions", b'\xef\xbb\xbf{"prompt": "a", "max_tokens": 1}'), valid=True)
    add("control-json-charset", post("/v1/completions", {"prompt": "a", "max_tokens": 1},
                                     ctype="application/json; charset=utf-8"), valid=True)

    # Malformed and truncated JSON.
    for name, text in [("truncated", b'{"prompt": "Once upon'), ("truncated-object", b'{"prompt": "a", '),
                       ("unquoted", b"{prompt: a}"), ("empty-body", b""), ("null", b"null"),
                       ("array", b"[]"), ("string", b'"prompt"'), ("number", b"42"),
                       ("trailing-garbage", b'{"prompt": "a"}}'), ("two-objects", b'{"prompt": "a"}{"prompt": "b"}'),
                       ("nan-literal", b'{"prompt": "a", "temperature": NaN}'),
                       ("inf-literal", b'{"prompt": "a", "temperature": Infinity}'),
                       ("single-quotes", b"{'prompt': 'a'}"), ("comment", b'{"prompt": "a" /* x */}'),
                       ("nul-byte", b'{"prompt": "a\x00b"}')]:
        add("json-" + name, post("/v1/completions", text), msg=body_re)
        if name in ("truncated", "empty-body", "array"):
            add("chat-json-" + name, post("/v1/chat/completions", text), msg=body_re)
    add("json-duplicate-key", post("/v1/completions", b'{"prompt": "a", "prompt": [1, 2]}'), msg="duplicate key 'prompt'")
    add("json-duplicate-nested-key", chat_raw(b'{"messages": [{"role": "user", "role": "system", "content": "x"}]}'),
        msg="duplicate key")

    # Deep nesting: 100,000 levels (200 KB, inside the body limit) in several places.
    deep = "[" * 100000 + "]" * 100000
    add("deep-array-body", post("/v1/completions", deep), msg="nested deeper")
    add("deep-prompt", post("/v1/completions", '{"prompt": ' + deep + "}"), msg="nested deeper")
    add("deep-object", post("/v1/completions", '{"a":' * 100000 + "1" + "}" * 100000), msg="nested deeper")
    add("deep-messages", post("/v1/chat/completions", '{"messages": ' + deep + "}"), msg="nested deeper")
    add("deep-unclosed", post("/v1/completions", "[" * 100000), msg="nested deeper|request body")

    # Bodies over the limit (1 MiB by default): sent, or only announced.
    add("body-2MiB", post("/v1/completions", b'{"prompt": "' + b"a" * (2 << 20) + b'"}'), want=(413,),
        msg="larger than")
    add("body-announced-2^40", post("/v1/completions", b"", length=1 << 40), want=(413,), msg="larger than")
    add("body-length-garbage", post("/v1/completions", b'{"prompt":"a"}', length="14x"), param="Content-Length")
    add("body-length-negative", post("/v1/completions", b'{"prompt":"a"}', length="-1"), param="Content-Length")
    add("body-length-twice", post("/v1/completions", b'{"prompt":"a"}', headers=["Content-Length: 4"]),
        param="Content-Length")
    add("body-length-and-chunked", post("/v1/completions", b'{"prompt":"a"}', headers=["Transfer-Encoding: chunked"]),
        param="Content-Length")

    # Wrong types for every field of both endpoints.
    wrong = {"model": [123, [], {}], "stream": ["yes", 1, []], "stream_options": ["x", 1, []],
             "temperature": ["hot", [], True], "top_p": ["1", {}], "n": ["5", 1.5, []],
             "seed": ["x", 1.5, {}], "stop": [5, {}, [1], ["a", None]], "presence_penalty": ["x", []],
             "frequency_penalty": [{}, "0"], "logit_bias": [[], "x", 5], "max_tokens": ["10", 2.5, [], True]}
    for field, values in wrong.items():
        for v in values:
            tag = json.dumps(v)[:12]
            add("type-completion-%s-%s" % (field, tag), completion(**{field: v}), param=field)
            add("type-chat-%s-%s" % (field, tag), chat(**{field: v}), param=field)
    add("type-include_usage", completion(stream=True, stream_options={"include_usage": "yes"}),
        param="stream_options.include_usage")
    for field, values in {"logprobs": ["x", 1.5, []], "best_of": ["2", {}], "echo": ["yes", 1],
                          "prompt": [5, {}, True, [1.5], ["a", 1], [[1, "x"]], [{}]]}.items():
        for v in values:
            add("type-completion-%s-%s" % (field, json.dumps(v)[:12]), completion(**{field: v}), param=field)
    for field, values in {"logprobs": ["yes", 1], "top_logprobs": ["3", 2.5], "max_completion_tokens": ["5", []],
                          "messages": ["hi", {}, 5, True]}.items():
        for v in values:
            add("type-chat-%s-%s" % (field, json.dumps(v)[:12]), chat(**{field: v}), param=field)
    add("type-chat-message-not-object", chat(messages=["hi"]), param="messages[0]")
    add("type-chat-role-number", chat(messages=[{"role": 5, "content": "x"}]), param="messages[0].role")
    add("type-chat-role-missing", chat(messages=[{"content": "x"}]), param="messages[0].role")
    add("type-chat-content-number", chat(messages=[{"role": "user", "content": 5}]), param="messages[0].content")
    add("type-chat-content-missing", chat(messages=[{"role": "user"}]), param="messages[0].content")
    add("type-chat-content-part", chat(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}]),
        param="messages[0].content")
    add("type-chat-content-part-text-number", chat(messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}]),
        param="messages[0].content")
    add("type-chat-second-message", chat(messages=[{"role": "user", "content": "x"}, {"role": "user", "content": {}}]),
        param="messages[1].content")

    # Out-of-range values.
    for field, values in {"max_tokens": [-1, 0, 2 ** 40, 2 ** 63, 2 ** 64 - 1, -2 ** 63],
                          "temperature": [-1, 2.5, 1e999, -1e999, 1e308],
                          "top_p": [0, 2, -0.5, 1e999], "n": [5, 0, -1, 2 ** 40],
                          "seed": [2 ** 64, 2 ** 70],
                          "presence_penalty": [1, 3, 1e999], "frequency_penalty": [-2.5, 0.5],
                          "logit_bias": [{"1": 5}]}.items():
        for v in values:
            text = '{"prompt": "a", "%s": %s}' % (field, "1e999" if v == 1e999 else "-1e999" if v == -1e999
                                                  else json.dumps(v))
            add("range-%s-%s" % (field, text.split(": ")[-1][:-1][:14]), post("/v1/completions", text), param=field)
    add("range-stop-1000", completion(stop=["x%d" % i for i in range(1000)]), param="stop")
    add("range-stop-huge", completion(stop="s" * 500000), param="stop")
    add("range-stop-empty", completion(stop=[""]), param="stop")
    add("range-logprobs-100", completion(logprobs=100), param="logprobs")
    add("range-logprobs-neg", completion(logprobs=-1), param="logprobs")
    add("range-best_of", completion(best_of=3), param="best_of")
    add("range-echo", completion(echo=True), param="echo")
    add("range-suffix", completion(suffix="x"), param="suffix")
    add("range-tools", chat(tools=[{"type": "function"}]), param="tools")
    add("range-top_logprobs-alone", chat(top_logprobs=3), param="top_logprobs")
    add("range-top_logprobs-99", chat(logprobs=True, top_logprobs=99), param="top_logprobs")
    add("range-max_completion_tokens", chat(max_completion_tokens=-5), param="max_completion_tokens")
    add("range-chat-no-messages", chat(messages=[]), param="messages")
    add("range-chat-role-tool", chat(messages=[{"role": "tool", "content": "x"}]), param="messages[0].role")
    add("range-chat-role-empty", chat(messages=[{"role": "", "content": "x"}]), param="messages[0].role")
    add("range-prompt-missing", post("/v1/completions", {"max_tokens": 2}), param="prompt")
    add("range-prompt-empty-array", completion(prompt=[]), param="prompt")
    add("range-prompt-batch", completion(prompt=["a", "b"]), param="prompt")
    add("range-prompt-empty-nested", completion(prompt=[[]]), param="prompt")

    # Invalid UTF-8: raw bytes in a prompt, a key, a chat message, the model name; escaped
    # lone surrogates.
    for name, text in [("prompt-ff", b'{"prompt": "a\xff\xfeb"}'), ("prompt-overlong", b'{"prompt": "\xc0\xaf"}'),
                       ("prompt-truncated-seq", b'{"prompt": "\xe2\x82"}'),
                       ("prompt-surrogate-bytes", b'{"prompt": "\xed\xa0\x80"}'),
                       ("key", b'{"pr\xffompt": "a"}'), ("model", b'{"prompt": "a", "model": "\xff"}'),
                       ("escaped-lone-surrogate", b'{"prompt": "\\ud800"}'),
                       ("escaped-low-surrogate", b'{"prompt": "\\udc00x"}'),
                       ("stop", b'{"prompt": "a", "stop": ["\xff"]}')]:
        add("utf8-" + name, post("/v1/completions", text), msg=body_re)
    add("utf8-chat-content", post("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "\xf8\x88\x80"}]}'),
        msg=body_re)

    # Unknown model, routes, methods.
    add("model-unknown", completion(model="gpt-4"), param="model")
    add("model-unknown-chat", chat(model="../../etc/passwd"), param="model")
    add("model-huge-name", completion(model="m" * 500000), param="model")
    add("route-unknown", request("GET", "/v1/nothing"), want=(404,), msg="no such endpoint")
    add("route-v2", post("/v2/completions", {"prompt": "a"}), want=(404,), msg="no such endpoint")
    add("route-traversal", request("GET", "/../../etc/passwd"), want=(400, 404), msg="no such endpoint|request")
    add("method-delete", request("DELETE", "/v1/completions"), want=(404, 405), msg="no such endpoint")
    add("method-get-completions", request("GET", "/v1/completions"), want=(404, 405), msg="no such endpoint")
    add("method-put-health", request("PUT", "/health", b"{}"), want=(404, 405), msg="no such endpoint")
    add("method-garbage", request("BREW", "/v1/completions"), want=(400, 404, 405, 501), msg="request|endpoint")
    add("request-line-garbage", b"\x00\x01\x02 garbage\r\n\r\n", want=(400,), msg="request line|request")
    add("uri-16KiB", request("GET", "/v1/" + "a" * 16384), want=(414, 400), msg="URI")
    add("http-version-9", b"GET /health HTTP/9.9\r\n\r\n", want=(400, 505), msg="request|HTTP")

    # Content-Type that is not JSON.
    for t in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml",
              "image/png", "application/jsonx"]:
        add("ctype-" + t.split(";")[0].replace("/", "-"), post("/v1/completions", {"prompt": "a"}, ctype=t),
            want=(415,), param="Content-Type")

    # Authorization.
    auth_re = "API key"
    add("auth-missing", post("/v1/completions", {"prompt": "a"}, auth=False), want=(401,), msg=auth_re)
    add("auth-wrong-key", post("/v1/completions", {"prompt": "a"}, auth=False, headers=["Authorization: Bearer nope"]),
        want=(401,), msg=auth_re)
    add("auth-basic", post("/v1/completions", {"prompt": "a"}, auth=False, headers=["Authorization: Basic a2V5Og=="]),
        want=(401,), msg=auth_re)
    add("auth-garbage-bytes", post("/v1/completions", {"prompt": "a"}, auth=False,
                                   headers=[b"Authorization: \xff\xfe\x01"]), want=(401,), msg=auth_re)
    add("auth-key-prefix", post("/v1/completions", {"prompt": "a"}, auth=False,
                                headers=["Authorization: Bearer " + KEY[:-1]]), want=(401,), msg=auth_re)
    add("auth-long", post("/v1/completions", {"prompt": "a"}, auth=False, headers=["Authorization: Bearer " + "k" * 8000]),
        want=(401,), msg=auth_re)
    add("auth-models", request("GET", "/v1/models", auth=False), want=(401,), msg=auth_re)
    add("auth-chat-hostile-body", post("/v1/chat/completions", "[" * 50000, auth=False), want=(401,), msg=auth_re)

    # Keep-alive: a refused request's body does not become the next request.
    smuggled = b"GET /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n"
    add("keepalive-after-401", None, want=(401,), msg=auth_re,
        run=keep_alive_after(post("/v1/completions", smuggled, auth=False)))
    add("keepalive-after-415", None, want=(415,), param="Content-Type",
        run=keep_alive_after(post("/v1/completions", smuggled, ctype="text/plain")))
    add("keepalive-after-400", None, param="prompt",
        run=keep_alive_after(post("/v1/completions", {"prompt": 5})))

    # Prompts longer than the context (512), token ids outside the vocabulary (512).
    add("context-token-ids", completion(prompt=[1] * 600), param="prompt", msg="longer than the context")
    add("context-text", completion(prompt="Once upon a time " * 20000), param="prompt", msg="longer than the context")
    add("context-chat", chat(messages=[{"role": "user", "content": "hello there " * 20000}]), param="messages",
        msg="longer than the context")
    add("context-max-ids-in-limit", completion(prompt=list(range(512)) * 200), param="prompt")
    for v in [512, 99999, -1, 2 ** 31, 2 ** 63 - 1, -2 ** 63]:
        add("token-id-%d" % v, completion(prompt=[1, v]), param="prompt")
    add("token-id-nested", completion(prompt=[[1, 512]]), param="prompt")

    # Header floods and stalls (connection-level: httplib answers these itself).
    flood = ["X-Flood-%d: %s" % (i, "v" * 100) for i in range(20000)]
    add("headers-20000", post("/v1/completions", {"prompt": "a"}, headers=flood), want=(431,), msg="header fields")
    add("headers-101", post("/v1/completions", {"prompt": "a"}, headers=flood[:101]), want=(431,), msg="header fields")
    add("header-line-64KiB", post("/v1/completions", {"prompt": "a"}, headers=["X-Big: " + "a" * 65536]),
        want=(400, 431), msg="header|request")
    add("stalled-half-body", None, want=(400, 408), msg="stalled after 10 of its Content-Length 1000",
        run=stalled(post("/v1/completions", b"", length=1000) + b'{"prompt":', False))
    add("stalled-headers", None, want=(400, 408), msg="could not be read|closed",
        run=stalled(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", True))
    return C


def chat_raw(text):
    return post("/v1/chat/completions", text)


# ---- running ------------------------------------------------------------------------------------

def classify(c, status, body, elapsed, note):
    if status is None:
        return "hang" if "within" in note or "held" in note or "did not answer" in note else "unclear_message", note
    if elapsed > TIME_LIMIT_S:
        return "over_bounds", "%.1f s" % elapsed
    if c.valid:
        return ("control_ok", "") if status == 200 else ("control_refused", "HTTP %d" % status)
    if 200 <= status < 300:
        return "silent_acceptance", "HTTP %d" % status
    try:
        err = json.loads(body)["error"]
        message = err["message"]
        assert isinstance(message, str) and message and isinstance(err["type"], str)
        assert "param" in err and "code" in err
    except Exception:
        return "unclear_message", "HTTP %d, not an OpenAI error body: %r" % (status, body[:120])
    if status not in c.want:
        return "unclear_message", "HTTP %d, expected %s: %s" % (status, c.want, message[:160])
    if c.param is not None and err.get("param") != c.param:
        return "unclear_message", "param %r, expected %r: %s" % (err.get("param"), c.param, message[:160])
    if c.msg and not re.search(c.msg, message):
        return "unclear_message", "message does not match /%s/: %s" % (c.msg, message[:160])
    return "refused_cleanly", message[:160]


def start_server(hw, shared, env, errfile):
    model = os.path.join(shared, "models/stories260K")
    argv = [hw, "serve", os.path.join(model, "stories260K.bin"), "--tokenizer", os.path.join(model, "tok512.bin"),
            "--port", "0", "--api-key", KEY, "--chat-template", "chatml", "--threads", "1", "--max-sessions", "2",
            "--shutdown-grace", "2", "--model-name", "stories260K"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errfile, stdin=subprocess.DEVNULL, env=env)
    t0 = time.monotonic()
    line = p.stdout.readline().decode("utf-8", "replace")  # the "listening on" line, or EOF when it failed
    m = re.search(r"listening on http://[^:]+:(\d+)", line)
    if not m:
        p.kill()
        p.wait()
        errfile.seek(0)
        sys.exit("server_hostile: the server did not start (%.1f s): %s%s" % (
            time.monotonic() - t0, line, errfile.read().decode("utf-8", "replace")[-2000:]))
    return p, int(m.group(1))


def peak_rss_mib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def main():
    a = common_arguments(__doc__)
    if not os.path.exists(os.path.join(a.shared, "models/stories260K/stories260K.bin")):
        print("server_hostile: %s/models/stories260K is missing (the shared models)" % a.shared, file=sys.stderr)
        return 1
    env = sanitizer_env()
    env.pop("HEADWISE_API_KEY", None)
    cases = [c for c in build_cases() if re.search(a.only, c.name)]
    counts, results = {}, []
    t_start = time.monotonic()
    with tempfile.TemporaryFile() as errfile:
        proc, port = start_server(os.path.abspath(a.headwise), a.shared, env, errfile)
        dead = False
        try:
            for c in cases:
                t_case = time.monotonic()
                if dead:
                    verdict, why = "crash", "the server had already died"
                else:
                    status, body, elapsed, note = c.run(port) if c.run else exchange(port, c.raw)
                    verdict, why = classify(c, status, body, elapsed, note)
                    if proc.poll() is not None:
                        dead = True
                        verdict, why = "crash", "the server died (exit %d) %s" % (proc.returncode, why)
                    elif not health(port):
                        verdict, why = "hang", "/health did not answer afterwards; " + why
                counts[verdict] = counts.get(verdict, 0) + 1
                results.append({"case": c.name, "verdict": verdict, "why": why,
                                "seconds": round(time.monotonic() - t_case, 2)})
                if verdict not in ("refused_cleanly", "control_ok") or a.verbose:
                    print("%-45s %-18s %s" % (c.name, verdict, why))
            rss = peak_rss_mib(proc.pid)
        finally:
            exit_code = None
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    exit_code = proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            else:
                exit_code = proc.returncode
        errfile.seek(0)
        err = errfile.read().decode("utf-8", "replace")
    problems = []
    if exit_code != 0:
        problems.append("exit status %s at SIGTERM (expected 0)" % exit_code)
    if any(m in err for m in SANITIZER_MARKS):
        problems.append("a sanitizer report on the server's stderr:\n" + err[-4000:])
    if rss > RSS_LIMIT_MIB:
        problems.append("peak RSS %.0f MiB over %d MiB" % (rss, RSS_LIMIT_MIB))
    hostile = sum(v for k, v in counts.items() if not k.startswith("control"))
    controls = counts.get("control_ok", 0) + counts.get("control_refused", 0)
    print("server_hostile: %d hostile requests: %d refused cleanly, %d unclear message, %d crashes, %d hangs, "
          "%d silent acceptances, %d over the time bound; %d/%d valid controls answered; server peak RSS %.0f MiB, "
          "exit %s at SIGTERM; %.0f s" % (
              hostile, counts.get("refused_cleanly", 0), counts.get("unclear_message", 0), counts.get("crash", 0),
              counts.get("hang", 0), counts.get("silent_acceptance", 0), counts.get("over_bounds", 0),
              counts.get("control_ok", 0), controls, rss, exit_code, time.monotonic() - t_start))
    for p in problems:
        print("server_hostile: " + p)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"counts": counts, "results": results, "problems": problems}, f, indent=1)
    ok = counts.get("refused_cleanly", 0) == hostile and counts.get("control_ok", 0) == controls and not problems
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
