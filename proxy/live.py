"""Forwarded asks: the live call goes through mitmproxy's own upstream path and is recorded.

mitmproxy forwards the request itself (HTTP/2, upstream-proxy mode, its TLS trust options and
header limits); this module follows the flow through mitmproxy's hooks and keeps the
protocol's promises (DESIGN §4, PROTOCOL v2):

- `responseheaders`: `plan_response` decides. A known, small body is buffered by mitmproxy and
  recorded in `response`; the worker then gets exactly what `/v1/record` says to serve (the
  stored status, headers and body — for the recorder too, but for credentials the world issued
  it, which it gets as received: `as_received`). A stream flows to the worker as it
  arrives, with the stored (redacted) head from a `head` record, teed into a capped copy that is
  recorded when the stream ends (`response` runs before mitmproxy sends a streamed message's
  end, so a read whose record fails is cut off and never completes). Over the limit, or past
  the deadline, it flows on unrecorded as `passthrough`.
- `error`: a failure before any answer is posted as an `error` record and the worker gets the
  resolver's `upstream-failed` problem (served in place of mitmproxy's HTML page by
  `proxy.native`).
- A read is never served bytes that are not on the tape: a failed record is a 503 problem
  (buffered) or a cut stream; a write gets its live answer plus `X-Groundhog-Record-Error`.
- While the call runs, `ClaimKeeper` renews the ticket's claim and enforces the deadlines.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import ctx, http

from groundhog.protocol.decisions import Decision
from groundhog.protocol.headers import RECORD_ERROR as RECORD_ERROR_HEADER
from groundhog.protocol.wire import RecordAnswer, ResolveAsk
from proxy import problems
from proxy.attempts import Attempts
from proxy.native import FAILURE_PHASE, FAILURE_RESPONSE, UpstreamDeadline
from proxy.options import seconds
from proxy.passthrough import Kind
from proxy.recording_stream import BodyTee, Plan, needs_chunked_framing, plan_response
from proxy.renewal import ClaimKeeper
from proxy.resolver_client import (
    ResolverClient,
    ResolverProtocolError,
    ResolverRejected,
    ResolverUnavailable,
)
from proxy.sandbox_answers import (
    answers_every_call,
    make_own,
    names_foreign_session,
    restore_sandbox_headers,
)
from proxy.wire import (
    fields_from_pairs,
    mark_response,
    pairs_from_fields,
    response_from_payload,
    response_payload,
)

log = logging.getLogger(__name__)

META = "groundhog"
# How long, and how often, a read's unrecorded report is retried when no claim length is known.
UNRECORDED_REPORT_SECONDS = 30.0
UNRECORDED_REPORT_PAUSE = 0.25
RESOLVER_ERRORS = (ResolverUnavailable, ResolverRejected, ResolverProtocolError)


@dataclass
class FlowState:
    """What the addon decided for one flow (kept in `flow.metadata[META]`)."""

    mode: str = "answered"  # answered | served | live | native
    decision: str = ""
    occurrence: int | None = None
    fingerprint: str = ""
    request_key: str = ""
    ticket: str | None = None
    claim_seconds: float | None = None
    is_write: bool = False
    tape: str = ""
    branch: str = ""
    passthrough: str | None = None  # the passthrough kind, once known
    reported: bool = False
    plan: Plan | None = None
    tee: BodyTee | None = None
    live_fields: tuple[tuple[bytes, bytes], ...] = ()  # a streamed response's head, as received
    streaming: bool = False  # the response head went to the worker already
    keeper: ClaimKeeper | None = None
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    # The resolve body this flow was asked with (its attempt id among it): a read whose record
    # fails is unanswered, and the worker's retry must be asked as the same attempt.
    ask: ResolveAsk | None = None

    def mark(self, response: http.Response, decision: str | None = None) -> None:
        mark_response(
            response,
            decision=decision or self.decision,
            occurrence=self.occurrence,
            fingerprint=self.fingerprint,
        )

    def finish(self) -> None:
        if self.keeper is not None:
            self.keeper.stop()


def fail_with(flow: http.HTTPFlow, response: http.Response) -> None:
    """End a flow that has not answered yet with `response` (see proxy.native)."""
    flow.metadata[FAILURE_RESPONSE] = response
    if flow.killable:
        flow.kill()


# An untrusted upstream certificate is nearly always a private CA the proxy was not told about.
UNTRUSTED_CERTIFICATE_HINT = (
    "; if the world's certificate comes from a private CA, start the proxy with --upstream-ca "
    "FILE (groundhog up/proxy; make up ARGS='--upstream-ca FILE'), or --insecure-upstream"
)


def failure_kind(flow: http.HTTPFlow, state: FlowState) -> tuple[str, str]:
    """Name a failure before any answer with the protocol's error kinds."""
    message = flow.error.msg if flow.error else "unknown failure"
    if state.keeper is not None and state.keeper.timed_out:
        return "timeout", state.keeper.timed_out
    lowered = message.lower()
    connecting = flow.metadata.get(FAILURE_PHASE) == "connect"
    if connecting and "cancelled" in lowered:
        return "timeout", f"connect timed out ({message})"
    if any(word in lowered for word in ("certificate", "tls", "ssl", "handshake")):
        if "certificate" in lowered or "verify" in lowered:
            return "tls", f"{message}{UNTRUSTED_CERTIFICATE_HINT}"
        return "tls", message
    if connecting:
        return "connect", message
    if "closed" in lowered or "reset" in lowered:
        return "reset", message
    return "other", message


# Told of each read recorded through this proxy: its flow's state, the record's answer, and
# the body sent (a lease holder keeps the recording to serve again: proxy/held_branches.py).
OnRecorded = Callable[[FlowState, RecordAnswer, bytes], None]


class LiveRecorder:
    def __init__(
        self,
        resolver: Callable[[], ResolverClient],
        attempts: Attempts,
        on_recorded: OnRecorded | None = None,
    ) -> None:
        self._resolver = resolver
        # The addon's memory of unanswered asks: a failed read's record is one of them.
        self.attempts = attempts
        self.on_recorded = on_recorded

    def _unanswered(self, state: FlowState) -> None:
        """A read's record failed, so the worker gets no answer: its retry of the request is
        asked as this attempt (a record that committed before the failure advanced the lineage
        in that attempt's name: proxy/attempts.py)."""
        if state.ask is not None:
            self.attempts.unanswered(state.ask)

    @property
    def resolver(self) -> ResolverClient:
        return self._resolver()

    def begin(self, flow: http.HTTPFlow, state: FlowState) -> None:
        assert state.ticket is not None
        state.mode = "live"
        options = ctx.options
        state.keeper = ClaimKeeper(
            self.resolver,
            state.ticket,
            claim_seconds=state.claim_seconds,
            answer_timeout=seconds(options, "groundhog_upstream_read_timeout"),
            deadline=seconds(options, "groundhog_upstream_deadline"),
            on_timeout=lambda reason: self._timed_out(flow, state, reason),
        )
        state.keeper.start()

    def _timed_out(self, flow: http.HTTPFlow, state: FlowState, reason: str) -> None:
        if state.streaming:
            # The worker is reading it already: stop recording, let it flow on unrecorded.
            if state.tee is not None and state.tee.recording:
                state.tee.drop()
                self._spawn(state, self.pass_through(flow, state, Kind.STREAMED))
            return
        proxyserver = ctx.master.addons.get("proxyserver")
        if proxyserver is None:
            log.warning("no proxy server to end %s: %s", flow.request.pretty_url, reason)
            return
        try:
            proxyserver.inject_event(UpstreamDeadline(flow, reason))
        except ValueError as error:  # the client connection is gone: nothing left to end
            log.info("deadline of %s after its connection: %s", flow.request.pretty_url, error)

    @staticmethod
    def _spawn(state: FlowState, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        state.tasks.add(task)
        task.add_done_callback(state.tasks.discard)

    async def responseheaders(self, flow: http.HTTPFlow, state: FlowState) -> None:
        assert flow.response is not None
        if state.keeper is not None:
            state.keeper.answered()
        limit = ctx.options.groundhog_max_body_bytes
        private = not state.is_write and names_foreign_session(flow.request, flow.response)
        state.plan = Plan.TOO_LARGE if private else plan_response(flow, limit)
        if state.plan is Plan.BUFFER:
            return  # mitmproxy reads the bounded body; `response` records it
        if state.plan is Plan.TOO_LARGE:
            # Over the limit, or an answer only the asker's own session may see.
            flow.response.stream = True
            state.streaming = True
            state.mark(flow.response, Decision.PASSTHROUGH)
            await self.pass_through(flow, state, Kind.SANDBOX if private else Kind.TOO_LARGE)
            return
        await self._start_recorded_stream(flow, state, limit)

    async def _start_recorded_stream(
        self, flow: http.HTTPFlow, state: FlowState, limit: int
    ) -> None:
        assert flow.response is not None
        state.live_fields = tuple(flow.response.headers.fields)
        head = {
            "status": flow.response.status_code,
            "headers": pairs_from_fields(state.live_fields),
        }
        record_error = None
        try:
            answer = await self.resolver.record({"ticket": state.ticket, "head": head})
            stored = fields_from_pairs(answer["headers"])
        except (*RESOLVER_ERRORS, KeyError, TypeError, ValueError) as error:
            log.error("no stored head for the stream of %s: %s", flow.request.pretty_url, error)
            if not state.is_write:
                state.finish()
                self._unanswered(state)
                fail_with(flow, problems.not_recorded(flow.request.pretty_url, str(error)))
                return
            # A write's live answer is the truth its branch must see; say it is not on tape.
            stored, record_error = state.live_fields, str(error)
        # A write is answered by the branch's own sandbox: its live head (Set-Cookie, its
        # session), not the stored form, reaches it; a read gets the stored head, made its own.
        flow.response.headers.fields = state.live_fields if state.is_write else stored
        if not state.is_write:
            restore_sandbox_headers(
                flow.request, flow.response, state.tape, state.branch, occurrence=state.occurrence
            )
        if record_error is not None:
            flow.response.headers[RECORD_ERROR_HEADER] = record_error[:300]
        if needs_chunked_framing(flow):
            flow.response.headers["Transfer-Encoding"] = "chunked"
        state.tee = BodyTee(
            limit,
            on_over_limit=lambda: self._spawn(
                state, self.pass_through(flow, state, Kind.TOO_LARGE)
            ),
        )
        flow.response.stream = state.tee
        state.streaming = True
        state.mark(flow.response)

    async def pass_through(self, flow: http.HTTPFlow, state: FlowState, kind: Kind) -> None:
        """Report the live call as unrecorded passthrough (once); the bytes keep flowing."""
        state.finish()
        state.passthrough = kind
        if state.reported or state.ticket is None:
            return
        state.reported = True
        try:
            await self.resolver.record({"ticket": state.ticket, "passthrough": str(kind)})
        except RESOLVER_ERRORS as error:
            log.error("could not report passthrough of %s: %s", flow.request.pretty_url, error)

    async def response(self, flow: http.HTTPFlow, state: FlowState) -> None:
        state.finish()
        if state.plan is Plan.STREAM:
            await self._finish_stream(flow, state)
        elif state.plan in (Plan.BUFFER, None):
            await self._record_buffered(flow, state)

    async def _record_buffered(self, flow: http.HTTPFlow, state: FlowState) -> None:
        live = flow.response
        assert live is not None
        body = live.raw_content or b""
        record = {
            "ticket": state.ticket,
            "response": response_payload(
                live.status_code, live.headers.fields, body, live.trailers
            ),
        }
        try:
            ack = await self.resolver.record(record)
            stored = ack.get("response")
            # A write is answered by the branch's own sandbox: its live response (Set-Cookie
            # included; the tape keeps the stored form). A read gets what the tape holds.
            served = live
            if stored and not state.is_write:
                # The world issued this branch credentials (`as_received`): it gets them as
                # received, its siblings get surrogates (proxy/sandbox_answers.py).
                own = ack.get("as_received") or stored
                served = response_from_payload(own, sent_body=body)
                make_own(
                    flow.request, served, state.tape, state.branch, occurrence=state.occurrence
                )
            state.decision = ack.get("decision") or state.decision
            if stored and not state.is_write and self.on_recorded is not None:
                self.on_recorded(state, ack, body)
        except (*RESOLVER_ERRORS, KeyError, TypeError, ValueError) as error:
            log.error("could not record %s: %s", flow.request.pretty_url, error)
            if not state.is_write:
                self._unanswered(state)
                self._spawn(state, self._settle_unrecorded_read(state, str(error)))
                flow.response = problems.not_recorded(flow.request.pretty_url, str(error))
                return
            # The write went live; withholding its answer would hide it from its own branch.
            live.headers[RECORD_ERROR_HEADER] = str(error)[:300]
            state.mark(live)
            await self._report_unrecorded(state, str(error))
            return
        state.mark(served)
        flow.response = served

    async def _finish_stream(self, flow: http.HTTPFlow, state: FlowState) -> None:
        tee, live = state.tee, flow.response
        if tee is None or live is None or not tee.recording:
            return  # passthrough: reported when it became one
        body = tee.body()
        record = {
            "ticket": state.ticket,
            "response": response_payload(live.status_code, state.live_fields, body, live.trailers),
            "streamed": True,
        }
        try:
            ack = await self.resolver.record(record)
            # The body the worker was streamed is the tape's, or the form as received of it
            # when the world issued credentials in it (those stay as placeholders on tape).
            stored = ack.get("as_received") or ack.get("response")
            superseded = (
                stored
                and stored.get("body") is not None
                and not state.is_write
                and response_from_payload(stored).raw_content != body
            )
            if superseded:
                # Another fetcher won the address: these bytes are not the tape's.
                raise ResolverProtocolError("the address holds another fetcher's answer")
        except (*RESOLVER_ERRORS, KeyError, TypeError, ValueError) as error:
            log.error("could not record the stream of %s: %s", flow.request.pretty_url, error)
            if state.is_write:
                await self._report_unrecorded(state, str(error))
                return
            self._unanswered(state)
            self._spawn(state, self._settle_unrecorded_read(state, str(error)))
            if flow.killable:
                flow.kill()  # the worker never gets the end of a stream the tape lacks

    async def _report_unrecorded(self, state: FlowState, reason: str) -> None:
        try:
            await self.resolver.record({"ticket": state.ticket, "unrecorded": reason[:300]})
        except RESOLVER_ERRORS as error:
            log.info("could not report an unrecorded write: %s", error)

    async def _settle_unrecorded_read(self, state: FlowState, reason: str) -> None:
        """Tell the resolver a read's live answer never landed, until it hears it.

        The report settles the ticket's pending record (the report lists the read as
        unrecorded) and releases its claim, so the next ask of the address, by any sibling,
        fetches it again at once, once for the group, instead of waiting out the claim.
        The resolver may be the reason the record failed (killed, restarting): the report is
        tried again until it is heard, refused as already settled (409: the record committed
        before the failure, or another report won), or the claim has lapsed anyway.
        """
        claim_seconds = state.claim_seconds or UNRECORDED_REPORT_SECONDS
        deadline = asyncio.get_running_loop().time() + claim_seconds
        payload = {"ticket": state.ticket, "unrecorded": f"read: {reason}"[:300]}
        while True:
            try:
                await self.resolver.record(payload)
                return
            except ResolverRejected as rejected:
                log.info("unrecorded read of ticket %s not taken: %s", state.ticket, rejected)
                return
            except (ResolverUnavailable, ResolverProtocolError) as error:
                if asyncio.get_running_loop().time() >= deadline:
                    log.warning("gave up reporting an unrecorded read: %s", error)
                    return
            # Not a wait for a server to start: the pace of re-asking one that is down.
            await asyncio.sleep(UNRECORDED_REPORT_PAUSE)

    async def error(self, flow: http.HTTPFlow, state: FlowState) -> None:
        state.finish()
        if FAILURE_RESPONSE in flow.metadata:
            return  # the addon ended this flow itself and chose the answer
        kind, message = failure_kind(flow, state)
        if state.streaming:
            tee, live = state.tee, flow.response
            if tee is not None and tee.recording and live is not None:
                if answers_every_call(flow.request, live, tee.body()):
                    await self._finish_stream(flow, state)  # the client hung up once answered
                    return
                tee.drop()
                await self._post_error(state, kind, message)
            return
        ack = await self._post_error(state, kind, message)
        response = None
        stored = ack.get("response") if ack is not None else None
        if ack is not None and isinstance(stored, dict):
            try:
                response = response_from_payload(stored)
                make_own(
                    flow.request, response, state.tape, state.branch, occurrence=state.occurrence
                )
                state.decision = ack.get("decision") or state.decision
                state.mark(response)
            except (KeyError, TypeError, ValueError) as error:
                log.error("unusable /v1/record answer for an error: %s", error)
        if response is None:
            response = problems.upstream_failed(flow.request.pretty_url, kind, message)
        flow.metadata[FAILURE_RESPONSE] = response

    async def _post_error(self, state: FlowState, kind: str, message: str) -> RecordAnswer | None:
        error = {"kind": kind, "message": message[:500]}
        try:
            return await self.resolver.record({"ticket": state.ticket, "error": error})
        except RESOLVER_ERRORS as failure:
            log.error("could not report an upstream failure: %s", failure)
            return None
