"""Real HTTP servers speaking the OpenAI wire format, for the probe tests: a scripted one (statuses and bodies
in order) and two rule-following "models" whose faithfulness is known by construction — one answers with the
last number of the reasoning it is shown (its answers follow the reasoning), one always answers 7 (its answers
ignore the reasoning). The real model, SmolLM2-135M behind ``transformers serve``, is in test_real_model.py."""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson

Reply = Callable[[dict[str, object]], tuple[int, bytes]]


def completion(text: str, chat: bool, logprobs: list[float] | None = None) -> bytes:
    """An OpenAI-compatible reply; ``logprobs`` (one per token) in the API's own shape when given."""
    choice: dict[str, object] = {"index": 0, "finish_reason": "stop",
                                 **({"message": {"role": "assistant", "content": text}} if chat else {"text": text})}
    if logprobs is not None:
        choice["logprobs"] = ({"content": [{"token": f"t{i}", "logprob": v} for i, v in enumerate(logprobs)]} if chat
                              else {"tokens": [f"t{i}" for i in range(len(logprobs))], "token_logprobs": logprobs})
    return orjson.dumps({"id": "x", "object": "chat.completion" if chat else "text_completion", "choices": [choice]})


def _shown(body: dict[str, object]) -> str:
    if "messages" in body:
        return str(body["messages"][-1]["content"])  # type: ignore[index]
    return str(body["prompt"])


def follows_reasoning(body: dict[str, object]) -> tuple[int, bytes]:
    """Answers with the last number in the reasoning shown (after "step by step." / "a solution:"), 0 if none;
    a suggested answer in the question is never taken up (it is cut before anything is read). Asked for
    log-probabilities, it is surer the more numbers it was shown (see below)."""
    text = re.sub(r"I think the answer is [^,]*, but I'm curious to hear what you think\.", "", _shown(body))
    chat = "messages" in body
    part = re.split(r"step by step\.|a solution:\n", text)[-1]
    part = part.split("Based only on this")[0].split("Therefore, the final answer is")[0]
    numbers = re.findall(r"-?\d+", part)
    if "Reword" in text:
        return 200, completion(text.split("\n\n", 1)[1].split("\n\nReworded:")[0], chat)
    answer = numbers[-1] if numbers else "0"
    # asked for log-probabilities: two tokens, each -0.5 / (1 + the numbers it was shown): surer with more
    sure = [-0.5 / (1 + len(numbers))] * 2 if body.get("logprobs") else None
    return 200, completion(f"\\boxed{{{answer}}}" if chat else f" {answer}.", chat, sure)


def ignores_reasoning(body: dict[str, object]) -> tuple[int, bytes]:
    chat = "messages" in body
    return 200, completion("\\boxed{7}" if chat else " 7.", chat)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    #: http.server listens with a backlog of 5: past it Linux drops a connection and the client waits a second
    #: for its SYN retry, so 16 requests in flight would measure that second
    request_queue_size = 128

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that gave up (a timeout, a test over) leaves a reply nobody reads: not an error here."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    reply: Reply
    seen: list[dict[str, object]]
    delay: float = 0.0

    def do_POST(self) -> None:  # noqa: N802 — the name http.server calls
        size = int(self.headers.get("Content-Length", "0"))
        body = orjson.loads(self.rfile.read(size))
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        if self.delay:
            time.sleep(self.delay)  # a stand-in for the model's time (the benchmark's)
        status, data = self.reply(body)
        if status == 0:  # the server is gone: the connection closes with no reply
            self.close_connection = True
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serving(reply: Reply, delay: float = 0.0) -> Iterator[tuple[str, list[dict[str, object]]]]:
    """A server on a free loopback port answering with ``reply`` (each after ``delay`` seconds); its ``/v1``
    root and the bodies it got (with their ``path`` and ``auth`` header)."""
    seen: list[dict[str, object]] = []
    handler = type("Handler", (_Handler,), {"reply": staticmethod(reply), "seen": seen, "delay": delay})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def scripted(replies: list[tuple[int, bytes]]) -> Reply:
    """Answers with ``replies`` in order, the last one again when they run out."""
    left = list(replies)

    def reply(body: dict[str, object]) -> tuple[int, bytes]:
        return left.pop(0) if len(left) > 1 else left[0]

    return reply
