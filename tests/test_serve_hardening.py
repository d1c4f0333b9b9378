"""`cky serve` against hostile and careless clients, on the tiny Genesis system of serve_fixtures:
nested JSON, oversized bodies and sentences, cross-site requests (Content-Type, Origin, Host), lone
surrogates, file paths in answers, a full decode queue, clients that went away, and an exception
anywhere: each refused with a one-line JSON error, the server serving on. Starlette's TestClient for
the app, and one real `python -m decoder.serve` on 127.0.0.1 for what only a process shows (a
request that used to kill it)."""
import http.client
import json
import os
import pathlib
import random
import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("starlette", reason="cky serve needs the `serve` extra: pip install cky-decoder[serve]")
import anyio  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from decoder.decoder import Decoder  # noqa: E402
from decoder.serve import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CHARS, create_app  # noqa: E402
from decoder.serve.app import MAX_JSON_DEPTH  # noqa: E402
from decoder.serve.jsonio import encode, nesting_depth  # noqa: E402
from serve_fixtures import TRANSLATION, VERSE, write_genesis_model  # noqa: E402

JSON = {"Content-Type": "application/json"}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return write_genesis_model(tmp_path_factory.mktemp("genesis"))


@pytest.fixture(scope="module")
def decoder(config):
    return Decoder.from_config(config)


def local_client(app, **options) -> TestClient:
    return TestClient(app, base_url="http://localhost:8000", raise_server_exceptions=False, **options)


@pytest.fixture(scope="module")
def client(decoder):
    with local_client(create_app(decoder)) as client:
        yield client


def post(client, body, headers=JSON):
    return client.post("/translate", content=body if isinstance(body, bytes) else json.dumps(body), headers=headers)


def refused(response, status: int, message: str) -> str:
    """Assert `response` is `status` with a one-line JSON {"error": ...} holding `message`; the error."""
    assert response.status_code == status, (response.status_code, response.text[:300])
    assert response.headers["content-type"] == "application/json"
    assert "\n" not in response.text
    error = response.json()["error"]
    assert message in error, error
    return error


def still_serving(client):
    assert post(client, {"sentence": "la tierra"}).json()["text"] == "the earth"


# --- nested JSON -------------------------------------------------------------------------------------


def nested(depth: int) -> bytes:
    return b'{"sentence": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize("body", [nested(30_000), b"[" * 60_000, b'{"a": {"b": {"c": 1}}, "sentence": "la"}',
                                  b'{"sentence": [["la"]]}'])
def test_json_nested_deeper_than_the_api_needs_is_a_400_before_it_is_parsed(client, body):
    # json.loads would recurse 30,000 levels: a RecursionError at the default limit, and past the end of
    # the C stack (the process killed) under a raised one
    refused(post(client, body), 400, f"more than {MAX_JSON_DEPTH} levels deep")
    still_serving(client)


def test_brackets_inside_strings_are_not_nesting(client):
    response = post(client, {"sentence": "la tierra [[[[{{{{ \\\" ]]", "kbest": 1})
    assert response.status_code == 200 and response.json()["text"].startswith("the earth")


def reference_depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(reference_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(reference_depth, value), default=0)
    return 0


def random_json(rng, depth=0):
    kind = rng.choice(["list", "dict", "str", "num", "const"] if depth < 6 else ["str", "num", "const"])
    if kind == "list":
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == "dict":
        return {rng.choice(["a", "[", "}", '"', "\\", "k\\]"]) + str(i): random_json(rng, depth + 1)
                for i in range(rng.randrange(4))}
    if kind == "str":
        return "".join(rng.choice('ab[]{}"\\/\n\u00f3\u4e2d') for _ in range(rng.randrange(8)))
    if kind == "num":
        return rng.choice([0, -3, 2.5, 1e300, 12345678901234567890])
    return rng.choice([None, True, False])


def test_nesting_depth_and_encode_agree_with_json_on_random_documents():
    rng = random.Random(7)
    for _ in range(500):
        value = random_json(rng)
        text = json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
        assert nesting_depth(text) == reference_depth(value), text
        assert encode(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    assert encode({"x": [float("inf"), float("nan"), -float("inf")], 1: (2,)}) == b'{"x":[null,null,null],"1":[2]}'


def test_encode_writes_any_depth_at_the_default_recursion_limit():
    value = None
    for _ in range(50_000):
        value = {"children": [value]}
    text = encode(value)
    assert text.startswith(b'{"children":[{"children":[') and text.count(b"{") == 50_000
    assert nesting_depth(text.decode()) == 100_000


# --- sizes -------------------------------------------------------------------------------------------


def test_a_body_over_max_body_bytes_is_a_413_by_its_length_and_by_its_bytes(decoder, client):
    padded = {"sentence": "la tierra", "padding": "x" * DEFAULT_MAX_BODY_BYTES}
    refused(post(client, padded), 413, f"at most {DEFAULT_MAX_BODY_BYTES} (cky serve --max-body-bytes)")

    def chunks():  # no Content-Length: the bytes are counted as they arrive
        body = json.dumps(padded).encode()
        for start in range(0, len(body), 4096):
            yield body[start:start + 4096]

    response = client.post("/translate", content=chunks(), headers=JSON)
    refused(response, 413, f"more than {DEFAULT_MAX_BODY_BYTES} bytes")
    with local_client(create_app(decoder, max_body_bytes=30)) as small:
        assert post(small, {"sentence": "la tierra"}).status_code == 200  # 25 bytes
        refused(post(small, {"sentence": "la tierra", "kbest": 2}), 413, "has 37 bytes; this server takes at most 30")
    still_serving(client)


def test_a_sentence_over_max_chars_is_a_413(decoder, client):
    # one "word" passes --max-tokens however long it is
    refused(post(client, {"sentence": "x" * (DEFAULT_MAX_CHARS + 1)}), 413,
            f"has {DEFAULT_MAX_CHARS + 1} characters; this server takes at most {DEFAULT_MAX_CHARS} "
            "(cky serve --max-chars)")
    assert post(client, {"sentence": "x" * DEFAULT_MAX_CHARS}).status_code == 200
    with local_client(create_app(decoder, max_chars=9)) as small:
        assert post(small, {"sentence": "la tierra"}).json()["text"] == "the earth"
        refused(post(small, {"sentence": "la tierra."}), 413, "has 10 characters")


# --- cross-site requests -----------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/jsonx"])
def test_a_post_that_is_not_application_json_is_a_415(client, content_type):
    # what a cross-site page may send without a preflight (text/plain, forms) is never decoded
    headers = {"Content-Type": content_type} if content_type else {}
    refused(post(client, {"sentence": "la tierra"}, headers=headers), 415, "Content-Type: application/json")
    assert post(client, {"sentence": "la tierra"}, {"Content-Type": "Application/JSON; charset=utf-8"}).status_code \
        == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "https://localhost.evil.example", "null",
                                    "http://127.0.0.1.evil.example:8000", "file://"])
def test_a_request_from_a_foreign_origin_is_a_403(client, origin):
    refused(post(client, {"sentence": "la tierra"}, {**JSON, "Origin": origin}), 403, "are refused")
    refused(client.get("/health", headers={"Origin": origin}), 403, "are refused")
    refused(post(client, b'{"sentence": "la tierra"}', {"Content-Type": "text/plain", "Origin": origin}), 403,
            "are refused")


@pytest.mark.parametrize("origin", ["http://localhost:8000", "http://127.0.0.1:5000", "https://LOCALHOST"])
def test_pages_of_the_allowed_hosts_may_call(client, origin):
    assert post(client, {"sentence": "la tierra"}, {**JSON, "Origin": origin}).json()["text"] == "the earth"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "localhost.evil.example", "", "localhost:x",
                                  "[::1", "127.0.0.2"])
def test_a_request_for_another_host_is_a_400(decoder, host):
    # DNS rebinding: a foreign name resolving to 127.0.0.1 still says its name in Host
    with local_client(create_app(decoder)) as client:
        refused(client.get("/health", headers={"Host": host}), 400, "does not answer to the host")
        refused(post(client, {"sentence": "la tierra"}, {**JSON, "Host": host}), 400, "does not answer to the host")
        assert client.get("/health", headers={"Host": "127.0.0.1:8000"}).status_code == 200
    with TestClient(create_app(decoder)) as client:  # TestClient's own "testserver" is no allowed host
        refused(client.get("/"), 400, "localhost")


def test_allowed_hosts_add_names_and_star_allows_any(decoder):
    with local_client(create_app(decoder, allowed_hosts=["Box.LAN", "::1"])) as client:
        for host in ("box.lan", "box.lan:8000", "[::1]:8000", "localhost"):
            assert client.get("/health", headers={"Host": host}).status_code == 200, host
        assert post(client, {"sentence": "la tierra"}, {**JSON, "Origin": "http://box.lan:8000"}).status_code == 200
        refused(client.get("/health", headers={"Host": "other.lan"}), 400, "box.lan, localhost")
    with local_client(create_app(decoder, allowed_hosts=["*"])) as client:
        assert client.get("/health", headers={"Host": "anything.example"}).status_code == 200


# --- bad text, paths, failures -----------------------------------------------------------------------


@pytest.mark.parametrize("body", [b'{"sentence": "la \\ud800 tierra"}', b'{"sentence": "\\udfff"}'])
def test_a_lone_surrogate_is_a_400(client, body):
    refused(post(client, body), 400, "lone surrogate")
    still_serving(client)


@pytest.mark.parametrize("body, message", [(b'{"sentence": "la", "kbest": ' + b"9" * 5000 + b"}", "not valid JSON"),
                                           (b'\xef\xbb\xbf{"sentence": "la"}', "not valid JSON"),
                                           (b'{"sentence": "la \xed\xa0\x80"}', "not UTF-8")])
def test_other_malformed_bodies_are_400s(client, body, message):
    refused(post(client, body), 400, message)


def test_health_names_the_model_files_without_their_paths(client, config):
    health = client.get("/health")
    assert health.status_code == 200
    info = health.json()
    assert info["store"] == "store" and info["lm"] == "lm.arpa"
    directory = str(pathlib.Path(config).parent)
    assert directory not in health.text and '"/' not in health.text
    assert info["max_body_bytes"] == DEFAULT_MAX_BODY_BYTES and info["pending"] == 0


def test_a_failing_decode_names_no_path(decoder, monkeypatch):
    def failing(self, sentence):
        raise OSError(f"cannot read {self.store.path}/features.npy")

    monkeypatch.setattr(Decoder, "translate", failing)
    with local_client(create_app(decoder)) as client:
        error = refused(post(client, {"sentence": "la tierra"}), 500, "decoding failed: OSError: cannot read")
        assert error.endswith("cannot read features.npy") and "/" not in error


def test_any_exception_is_a_one_line_json_500_and_the_server_goes_on(decoder, monkeypatch):
    import decoder.serve.app as app_module

    original = app_module.parse_request
    calls = []

    def breaking(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise KeyError("unexpected")
        return original(*args, **kwargs)

    monkeypatch.setattr(app_module, "parse_request", breaking)
    with local_client(create_app(decoder)) as client:
        refused(post(client, {"sentence": "la tierra"}), 500, "internal error (KeyError)")
        still_serving(client)
        refused(client.get("/no-such-page"), 404, "Not Found")
        refused(client.get("/translate"), 405, "Method Not Allowed")


# --- the queue and clients that went away ------------------------------------------------------------


def blocking_translate(monkeypatch):
    """Decoder.translate made to wait for `release`; `entered` is set when a decode starts, `calls`
    lists the sentences decoded. A timer releases it anyway, so a test without the fix ends."""
    entered, release, calls = threading.Event(), threading.Event(), []
    original = Decoder.translate

    def blocking(self, sentence):
        calls.append(sentence)
        entered.set()
        release.wait(20)
        return original(self, sentence)

    monkeypatch.setattr(Decoder, "translate", blocking)
    timer = threading.Timer(20, release.set)
    timer.start()
    return entered, release, calls, timer


def test_a_full_queue_is_a_503_at_once(decoder, monkeypatch):
    entered, release, calls, timer = blocking_translate(monkeypatch)
    try:
        with local_client(create_app(decoder, max_queue=1)) as client:
            first = []
            worker = threading.Thread(target=lambda: first.append(post(client, {"sentence": "la tierra"})))
            worker.start()
            assert entered.wait(10)
            assert client.get("/health").json()["pending"] == 1
            started = time.monotonic()
            response = post(client, {"sentence": "dios"})
            assert time.monotonic() - started < 5 and not release.is_set()
            refused(response, 503, "1 sentences are waiting or decoding, the most it takes (cky serve --max-queue)")
            assert response.headers["retry-after"] == "1"
            release.set()
            worker.join(20)
            assert first[0].json()["text"] == "the earth"
            assert post(client, {"sentence": "dios"}).json()["text"] == "god"
            assert calls == ["la tierra", "dios"]
    finally:
        release.set()
        timer.cancel()


def test_a_sentence_whose_client_went_away_is_not_decoded(decoder, monkeypatch):
    """Two requests over the ASGI interface: the first decodes (blocked), the second waits its turn and
    its client disconnects meanwhile; when its turn comes it is dropped, never decoded."""
    entered, release, calls, timer = blocking_translate(monkeypatch)
    app = create_app(decoder)

    def scope(body: bytes) -> dict:
        return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                "scheme": "http", "path": "/translate", "raw_path": b"/translate", "query_string": b"",
                "root_path": "", "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
                "headers": [(b"host", b"localhost:8000"), (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]}

    async def request(body: bytes, gone: anyio.Event, statuses: list, read: anyio.Event):
        async def receive():
            if not read.is_set():
                read.set()
                return {"type": "http.request", "body": body, "more_body": False}
            if not gone.is_set():  # as uvicorn: a disconnect already seen is returned without waiting
                await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message):
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        await app(scope(body), receive, send)

    async def scenario():
        first_gone, second_gone = anyio.Event(), anyio.Event()
        first_read, second_read = anyio.Event(), anyio.Event()
        first, second = [], []
        second_gone.set()  # the second client is gone by the time anything asks
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(request, b'{"sentence": "la tierra"}', first_gone, first, first_read)
            with anyio.fail_after(10):
                while not entered.is_set():
                    await anyio.sleep(0.01)
            tasks.start_soon(request, b'{"sentence": "dios"}', second_gone, second, second_read)
            await second_read.wait()
            await anyio.sleep(0.1)  # the second request now waits its turn
            release.set()
        first_gone.set()
        return first, second

    try:
        first, second = anyio.run(scenario)
    finally:
        release.set()
        timer.cancel()
    assert first == [200] and second == [499]
    assert calls == ["la tierra"]


# --- one real server ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ask(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body, headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_a_real_server_survives_deep_json_and_bad_requests_and_answers_the_next(config):
    """`python -m decoder.serve --max-tokens 20000` on 127.0.0.1, given 200 KB of nested brackets (past the
    end of the C stack for json.loads where a long --max-tokens raises the recursion limit: SIGSEGV)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "decoder.serve", "--config", config, "--host", "127.0.0.1", "--port", str(port),
         "--max-tokens", "20000", "--max-body-bytes", "300000", "--allowed-host", "box.lan"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if ask(port, "GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("cky serve did not start")
            time.sleep(0.1)

        for body in (nested(100_000), b"[" * 250_000):  # about 200 KB each
            status, answer = ask(port, "POST", "/translate", body, JSON)
            assert status == 400 and b"levels deep" in answer and answer.count(b"\n") == 0
            assert process.poll() is None
        assert ask(port, "POST", "/translate", b'{"sentence": "\\ud800"}', JSON)[0] == 400
        assert ask(port, "POST", "/translate", b"x" * 300_001, JSON)[0] == 413
        assert ask(port, "POST", "/translate", b'{"sentence": "la tierra"}', {"Content-Type": "text/plain"})[0] == 415
        assert ask(port, "POST", "/translate", b'{"sentence": "la tierra"}',
                   {"Content-Type": "text/plain", "Origin": "http://evil.example"})[0] == 403
        assert ask(port, "GET", "/health", headers={"Host": "evil.example"})[0] == 400
        status, health = ask(port, "GET", "/health", headers={"Host": f"box.lan:{port}"})
        assert status == 200 and json.loads(health)["store"] == "store" and config.encode() not in health

        status, answer = ask(port, "POST", "/translate", json.dumps({"sentence": VERSE}).encode(),
                             {**JSON, "Origin": f"http://127.0.0.1:{port}"})
        assert status == 200 and json.loads(answer)["text"] == TRANSLATION
        assert process.poll() is None
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log = process.stdout.read().decode(errors="replace")
        process.stdout.close()
    assert "Traceback" not in log, log
