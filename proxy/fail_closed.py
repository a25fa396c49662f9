"""Every hook of Groundhog's addons fails closed: an exception answers or ends the flow.

mitmproxy catches an exception raised by an addon hook, logs it, and carries on as if the
addon had not spoken: a request hook that raised is forwarded to the world unjudged, on a
sealed tape, with the resolver frozen (issue 53: one non-UTF-8 byte in `X-Groundhog-Tape`
did it). Try/except in each hook would leave the next hook open; instead `fail_closed_hooks`
wraps every mitmproxy event method of an addon class (`GUARDED_HOOKS`) once, and on any
exception applies that hook's closing move:

- before anything went upstream (`requestheaders`, `request`, `http_connect`): the flow is
  answered with a `refused` problem, and the rest of the addon leaves it alone;
- once the world answered (`responseheaders`, `response`): the world's answer is replaced by
  the problem before a byte of it reaches the worker, or, when it already streams, the
  connection is killed; `error`: the problem replaces mitmproxy's error page;
- WebSocket and TCP messages: the flow is killed; `next_layer`: the connection is closed,
  nothing relayed; `server_connect`: the upstream connection is refused; `client_connected`:
  the client is disconnected.

The wrapper also reaches the failpoint `proxy.hook.<Class>.<hook>` first (engine/failpoints.py),
so a test can raise inside any hook of a real proxy and see it closed.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

from mitmproxy import connection, http
from mitmproxy.proxy import commands, events, layer
from mitmproxy.proxy.server_hooks import ServerConnectionHookData

from engine import failpoints
from proxy import native, problems
from proxy.live import META, FlowState

log = logging.getLogger(__name__)

# The refusal a failed hook chose: every later hook of the flow is skipped, and `response`
# (or `error`) serves it instead of whatever the flow holds by then.
REFUSAL = "groundhog.refusal"

BEFORE_UPSTREAM = frozenset({"requestheaders", "request", "http_connect"})
WORLD_ANSWERED = frozenset({"responseheaders", "response"})
# A captured worker's DNS question (proxy/capture.py) is killed too: unanswered, never asked
# of a real resolver.
KILL_FLOW = frozenset(
    {
        "websocket_start",
        "websocket_message",
        "websocket_end",
        "tcp_start",
        "tcp_message",
        "dns_request",
    }
)
# Hooks after which nothing can be let through (the connection or flow is gone): logged only.
LOG_ONLY = frozenset(
    {
        "client_disconnected",
        "server_connected",
        "server_connect_error",
        "server_disconnected",
        "tcp_end",
        "tcp_error",
        "websocket_error",
    }
)
OTHER_CLOSERS = frozenset({"error", "next_layer", "server_connect", "client_connected"})
GUARDED_HOOKS = BEFORE_UPSTREAM | WORLD_ANSWERED | KILL_FLOW | LOG_ONLY | OTHER_CLOSERS


class ClosedTunnel(layer.Layer):
    """Close the client's connection (and the server's, if open) at once; relay nothing."""

    def _handle_event(self, event: events.Event) -> layer.CommandGenerator[None]:
        if isinstance(event, events.Start):
            if self.context.server.connected:
                yield commands.CloseConnection(self.context.server)
            yield commands.CloseConnection(self.context.client)
        # Whatever arrives afterwards (buffered client bytes included) is dropped.


def _settled(flow: http.HTTPFlow) -> None:
    """The addon's own later hooks see an answered flow, and do nothing more with it."""
    state = flow.metadata.get(META)
    if isinstance(state, FlowState):
        state.mode = "answered"
    else:
        flow.metadata[META] = FlowState()


def _refuse_before_upstream(flow: http.HTTPFlow, hook: str, error: BaseException) -> None:
    _settled(flow)
    flow.request.stream = False  # mitmproxy refuses a response together with a streamed body
    flow.response = flow.metadata[REFUSAL] = problems.proxy_failed(hook, error, world_called=False)


def _refuse_world_answer(flow: http.HTTPFlow, hook: str, error: BaseException) -> None:
    state = flow.metadata.get(META)
    _settled(flow)
    refusal = problems.proxy_failed(hook, error, world_called=True)
    streaming = isinstance(state, FlowState) and state.streaming
    if hook == "responseheaders" and not streaming:
        # Nothing sent yet: the body is read as usual, then `response` swaps the answer.
        if flow.response is not None:
            flow.response.stream = False
        flow.metadata[REFUSAL] = refusal
        return
    if hook == "response" and not streaming and not (flow.response and flow.response.stream):
        flow.response = refusal
        return
    if flow.killable:
        flow.kill()  # its head already reached the worker: the connection ends mid-answer


def close(subject: Any, hook: str, error: BaseException) -> None:
    """Apply `hook`'s closing move to the object mitmproxy passed it."""
    if hook in LOG_ONLY:
        return
    if isinstance(subject, http.HTTPFlow):
        if hook in BEFORE_UPSTREAM:
            _refuse_before_upstream(subject, hook, error)
        elif hook in WORLD_ANSWERED:
            _refuse_world_answer(subject, hook, error)
        elif hook == "error":
            _settled(subject)
            if subject.response is None:
                refusal = problems.proxy_failed(hook, error, world_called=True)
                subject.metadata[native.FAILURE_RESPONSE] = refusal
        elif subject.killable:
            subject.kill()
    elif hasattr(subject, "kill") and getattr(subject, "killable", False):
        subject.kill()  # a TCP or DNS flow
    elif isinstance(subject, layer.NextLayer):
        subject.layer = ClosedTunnel(subject.context)
    elif isinstance(subject, ServerConnectionHookData):
        subject.server.error = f"Groundhog's {hook} hook failed: {error!r}"
    elif isinstance(subject, connection.Client):
        subject.error = f"Groundhog's {hook} hook failed: {error!r}"


def _pending_refusal(hook: str, subject: Any) -> bool:
    """Serve the refusal a failed `responseheaders` left; True if the hook is to be skipped."""
    if not isinstance(subject, http.HTTPFlow) or REFUSAL not in subject.metadata:
        return False
    if hook == "response":
        subject.response = subject.metadata[REFUSAL]
    elif hook == "error" and subject.response is None:
        subject.metadata[native.FAILURE_RESPONSE] = subject.metadata[REFUSAL]
    return True


def guarded(hook: Callable[..., Any]) -> Callable[..., Any]:
    """`hook`, closing its subject on any exception instead of letting mitmproxy go on."""
    name = hook.__name__
    failpoint = f"{failpoints.HOOK_PREFIX}{hook.__qualname__}"

    def failed(subject: Any, error: BaseException) -> None:
        log.exception("%s hook failed; failing closed", name)
        try:
            close(subject, name, error)
        except Exception:  # closing must not raise into mitmproxy either: kill what we can
            log.exception("closing after a failed %s hook failed", name)
            if getattr(subject, "killable", False):
                subject.kill()

    if inspect.iscoroutinefunction(hook):

        @functools.wraps(hook)
        async def guarded_async(self: Any, subject: Any, *args: Any) -> Any:
            if _pending_refusal(name, subject):
                return None
            try:
                failpoints.raise_if_armed(failpoint)
                return await hook(self, subject, *args)
            except Exception as error:
                failed(subject, error)
                return None

        guarded_async.__groundhog_guarded__ = True  # type: ignore[attr-defined]
        return guarded_async

    @functools.wraps(hook)
    def guarded_sync(self: Any, subject: Any, *args: Any) -> Any:
        if _pending_refusal(name, subject):
            return None
        try:
            failpoints.raise_if_armed(failpoint)
            return hook(self, subject, *args)
        except Exception as error:
            failed(subject, error)
            return None

    guarded_sync.__groundhog_guarded__ = True  # type: ignore[attr-defined]
    return guarded_sync


def is_guarded(method: Any) -> bool:
    return bool(getattr(method, "__groundhog_guarded__", False))


def fail_closed_hooks[AddonClass: type](cls: AddonClass) -> AddonClass:
    """Wrap every mitmproxy event hook `cls` defines (class decorator)."""
    for name in GUARDED_HOOKS:
        method = cls.__dict__.get(name)
        if method is not None and not is_guarded(method):
            setattr(cls, name, guarded(method))
    return cls
